#include "config.h"

#include <sys/random.h>
#include <sys/types.h>

#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "log.h"
#include "session/session.h"
#include "session/resume.h"
#include "rpc/rpc_serde.h"
#include "uri.h"

static const char	*session_gate(const struct rpc_method *);
static void		 session_connection_reset(void);
static int		 session_initialized(void);

const struct rpc_gate session_lifecycle = {
	session_gate, session_connection_reset, session_initialized,
};

static struct {
	int	 init_done;		/* initialize answered on this connection */
	int	 initialized;		/* initialized received on this connection */
	int	 has_id;		/* the session exists (it outlives connections) */
	char	 id[37];
	json_t	*caps;
} sess;

static void	m_initialize(struct rpc_req *, json_t *);
static void	m_environment_info(struct rpc_req *, json_t *);
static void	m_environment_status(struct rpc_req *, json_t *);

const struct rpc_method session_methods[] = {
	{ "initialize", NULL, m_initialize, 0 },
	{ "environment/info", "environment info", m_environment_info, RPC_SELF_GATED },
	{ "environment/status", "environment status", m_environment_status, RPC_SELF_GATED },
	{ NULL, NULL, NULL, 0 },
};

static const char *
session_gate(const struct rpc_method *m)
{
	static char	msg[256];

	if (m->group == NULL)
		return NULL;
	if (!sess.init_done)
		snprintf(msg, sizeof(msg), "client must call initialize before using %s methods",
		    m->group);
	else if (!sess.initialized)
		snprintf(msg, sizeof(msg), "client must send initialized before using %s methods",
		    m->group);
	else
		return NULL;
	return msg;
}

static void
session_connection_reset(void)
{
	sess.init_done = 0;
	sess.initialized = 0;
}

static int
session_initialized(void)
{
	/* initialized before a successful initialize is a protocol violation */
	if (!sess.init_done)
		return -1;
	sess.initialized = 1;
	return 0;
}

void
session_set_capability(const char *name, int on)
{
	if (sess.caps == NULL && (sess.caps = json_object()) == NULL)
		fatalx("out of memory");
	json_object_set_new(sess.caps, name, json_boolean(on));
}

static void
session_new_id(void)
{
	unsigned char	u[16];

	if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u))
		fatal("getrandom");
	u[6] = (u[6] & 0x0f) | 0x40;	/* version 4 */
	u[8] = (u[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	snprintf(sess.id, sizeof(sess.id),
	    "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
	    u[12], u[13], u[14], u[15]);
}

static json_t *
session_shell(void)
{
	const char	*path = getenv("SHELL"), *name;
	struct passwd	*pw;

	if (path == NULL || *path == '\0') {
		pw = getpwuid(getuid());
		path = pw != NULL && pw->pw_shell != NULL && *pw->pw_shell != '\0' ?
		    pw->pw_shell : "/bin/sh";
	}
	name = strrchr(path, '/');
	name = name != NULL ? name + 1 : path;
	return json_pack("{s:s,s:s}", "name", name, "path", path);
}

static json_t *
uri_or_null(const char *path)
{
	char	*u;
	json_t	*j;

	if (path == NULL || (u = path_to_uri(path)) == NULL)
		return json_null();
	j = json_string(u);
	free(u);
	return j;
}

json_t *
session_environment_info(void)
{
	char		 cwd[PATH_MAX];
	const char	*home = getenv("HOME"), *tmp = getenv("TMPDIR");
	struct passwd	*pw;
	json_t		*info, *tmps;

	if (home == NULL && (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	tmps = json_array();
	if (tmp != NULL && *tmp != '\0')
		json_array_append_new(tmps, uri_or_null(tmp));
	if (json_object_get(sess.caps, "networkProxyLaunch") == NULL)
		session_set_capability("networkProxyLaunch", 0);
	info = json_pack("{s:o,s:s,s:s,s:o,s:o,s:s,s:[],s:o,s:o,s:O}",
	    "shell", session_shell(),
	    "executorVersion", PACKAGE_VERSION,
	    "providerId", "execd",
	    "cwd", uri_or_null(getcwd(cwd, sizeof(cwd))),
	    "userHomeDir", uri_or_null(home),
	    "platformOs", "linux",
	    "prependPathDirs",
	    "temporaryDirectories", tmps,
	    "tempDir", uri_or_null(tmp != NULL && *tmp != '\0' ? tmp : "/tmp"),
	    "capabilities", sess.caps);
	return info;
}

/* A fresh instance asked for another's session: hand it our connection. */
static void
session_resume_elsewhere(struct rpc_req *req, const char *resume, json_t *params)
{
	struct rpc_transport	*t = rpc_transport();
	int			 fd = -1, r = -1;

	if (!sess.has_id && t != NULL && t->takeover_fd != NULL &&
	    (t->flush == NULL || t->flush(t->ctx) == 0))
		fd = t->takeover_fd(t->ctx);
	if (fd != -1)
		r = resume_handoff(resume, fd, rpc_req_id(req), params);
	if (r == 0) {
		log_info("connection handed to session %.8s...", resume);
		t->abandon(t->ctx);
		rpc_reply(req, json_null());	/* dropped: the connection is gone */
	} else if (r == -2)
		rpc_fail(req, RPC_SESSION_ATTACHED,
		    "session %s is already attached to another connection", resume);
	else
		rpc_fail(req, RPC_INVALID_REQUEST, "unknown session id %s", resume);
}

/*
 * The session id is what a resume must name: a bearer secret.  The log
 * shows its first 8 characters, enough to tell sessions apart.
 */
static void	session_begin(struct rpc_req *, const char *, const char *);

static int
init_decode(json_t *o, void *arg, struct jx_err *e)
{
	const char	**s = arg;	/* clientName, resumeSessionId */
	size_t		 len;

	s[0] = s[1] = NULL;
	/* any string names the client, NUL and all, as in the reference: it is only logged */
	return jx_struct(o, "InitializeParams", e) == -1 ||
	    jx_str(o, "clientName", JX_REQ, &s[0], &len, e) == -1 ||
	    jx_str(o, "resumeSessionId", JX_OPT, &s[1], NULL, e) == -1 ? -1 : 0;
}

static void
m_initialize(struct rpc_req *req, json_t *params)
{
	static const char *const fields[] = { "clientName", "resumeSessionId", NULL };
	static const struct serde_struct init_struct = { "InitializeParams", fields, 1UL << 1 };
	struct jx_err		 e;
	const char		*resume, *s[2];
	char			*shown;
	json_t			*o;
	long			 n;
	int			 rc;

	/* as the reference: params are decoded before the repetition is judged */
	o = serde_struct_params(params, &init_struct, &n);
	rc = jx_in_order(o, init_decode, s, &e);
	resume = s[1];
	if (serde_struct_seq_end(&init_struct, n, rc, &e) == -1)
		rpc_fail_params(req, &e);
	else if (sess.init_done)
		rpc_fail(req, RPC_INVALID_REQUEST, "initialize may only be sent once per connection");
	else if (resume != NULL && !(sess.has_id && strcmp(resume, sess.id) == 0))
		session_resume_elsewhere(req, resume, params);
	else {
		/* logged as JSON writes it: escaped, never cut at a NUL */
		shown = json_dumps(json_object_get(o, "clientName"), JSON_ENCODE_ANY);
		session_begin(req, shown != NULL ? shown : "?", resume);
		free(shown);
	}
	json_decref(o);
}

/* A new session, or our own resumed in place. */
static void
session_begin(struct rpc_req *req, const char *client, const char *resume)
{
	struct rpc_transport	*t;

	if (resume == NULL) {
		session_new_id();
		sess.has_id = 1;
		t = rpc_transport();
		/* only a WebSocket client can come back: publish where it can find us */
		if (t != NULL && t->takeover_fd != NULL && t->takeover_fd(t->ctx) != -1)
			resume_publish(sess.id);
		log_info("session %.8s... for client %s", sess.id, client);
	} else
		log_info("session %.8s... resumed by client %s", sess.id, client);
	sess.init_done = 1;
	rpc_reply(req, json_pack("{s:s,s:o}", "sessionId", sess.id,
	    "environmentInfo", session_environment_info()));
}

static void
m_environment_info(struct rpc_req *req, json_t *params)
{
	struct jx_err	e;

	if (jx_unit(params, &e) == -1) {
		rpc_fail_params(req, &e);
		return;
	}
	if (rpc_admit(req))
		rpc_reply(req, session_environment_info());
}

static void
m_environment_status(struct rpc_req *req, json_t *params)
{
	struct jx_err	e;

	if (jx_unit(params, &e) == -1) {
		rpc_fail_params(req, &e);
		return;
	}
	if (rpc_admit(req))
		rpc_reply(req, json_pack("{s:s}", "status", "ready"));
}
