/*
 * Reading execd-proxy.conf(5).  A configuration is built completely
 * before anyone sees it, so a bad file never disturbs the one in force.
 */
#include "config.h"

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "b64.h"
#include "log.h"
#include "tcplocal.h"
#include "policy/policy.h"

#define CONF_LINE_MAX	4096
#define CONF_WORDS_MAX	64

struct parse {
	struct proxy_conf	*conf;
	const char		*path;
	int			 line;
	char			*err;
	size_t			 errlen;
};

static int	perr(struct parse *, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));

static int
perr(struct parse *p, const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%d: %s", p->path, p->line, msg);
	return -1;
}

static int
is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in	*sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6	*sin6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
}

static int
parse_bool(const char *s, int *v)
{
	if (strcmp(s, "yes") == 0 || strcmp(s, "on") == 0)
		*v = 1;
	else if (strcmp(s, "no") == 0 || strcmp(s, "off") == 0)
		*v = 0;
	else
		return -1;
	return 0;
}

/* "30" or "30s" seconds, "500ms" milliseconds. */
static int
parse_duration(const char *s, unsigned *ms)
{
	char		*end;
	unsigned long	 v;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || v > 86400UL * 1000)
		return -1;
	if (*end == '\0' || strcmp(end, "s") == 0)
		v *= 1000;
	else if (strcmp(end, "ms") != 0)
		return -1;
	if (v == 0 || v > 86400UL * 1000)
		return -1;
	*ms = (unsigned)v;
	return 0;
}

static int
parse_count(const char *s, unsigned *v)
{
	unsigned long	n;

	if (parse_number(s, 1000000, &n) == -1)
		return -1;
	*v = (unsigned)n;
	return 0;
}

/*
 * "host" keeps the host's algorithm; a name must be one the kernel gives
 * this process now (a reload as another user is checked again then).
 */
static int
parse_loopback_cc(struct parse *p, const char *name)
{
	if (strcmp(name, "host") == 0) {
		p->conf->loopback_cc[0] = '\0';
		return 0;
	}
	if (!tcp_cc_name_ok(name))
		return perr(p, "loopback-congestion-control takes host or an algorithm's name "
		    "(1-15 of a-z, 0-9, _)");
	if (tcp_cc_probe(name) == -1)
		return perr(p, "loopback-congestion-control %s: %s", name,
		    errno == ENOENT ? "not available (net.ipv4.tcp_available_congestion_control)" :
		    errno == EPERM ? "not allowed (net.ipv4.tcp_allowed_congestion_control)" :
		    strerror(errno));
	snprintf(p->conf->loopback_cc, sizeof(p->conf->loopback_cc), "%s", name);
	return 0;
}

/* "http://[user:pass@]host[:port][/]" */
static int
parse_upstream(struct parse *p, const char *url)
{
	struct upstream	*up;
	const char	*rest, *at, *host, *port = NULL, *rb;
	char		 cred[512], auth[PROXY_HOST_MAX + 16], portbuf[8];
	size_t		 n, hl;

	if (strcmp(url, "none") == 0)
		return 0;
	if (strncasecmp(url, "http://", 7) != 0)
		return perr(p, "upstream must be an http:// proxy URL");
	rest = url + 7;
	if ((up = calloc(1, sizeof(*up))) == NULL)
		return perr(p, "out of memory");
	p->conf->upstream = up;
	n = strcspn(rest, "/");
	if (rest[n] != '\0' && strcmp(rest + n, "/") != 0)
		return perr(p, "upstream URL must not have a path");
	if ((at = memchr(rest, '@', n)) != NULL) {
		hl = (size_t)(at - rest);
		if (hl >= sizeof(cred) || memchr(rest, ':', hl) == NULL)
			return perr(p, "upstream credentials must be user:password");
		memcpy(cred, rest, hl);
		cred[hl] = '\0';
		if ((up->auth = b64_encode(cred, hl, NULL)) == NULL)
			return perr(p, "out of memory");
		n -= hl + 1;
		rest = at + 1;
	}
	if (n >= sizeof(auth))
		return perr(p, "bad upstream host");
	memcpy(auth, rest, n);
	auth[n] = '\0';
	host = auth;
	if (auth[0] == '[') {
		if ((rb = strchr(auth, ']')) == NULL || (rb[1] != '\0' && rb[1] != ':'))
			return perr(p, "bad upstream address");
		host = auth + 1;
		if (rb[1] == ':')
			port = rb + 2;
		auth[rb - auth] = '\0';
	} else if ((rb = strchr(auth, ':')) != NULL) {
		port = rb + 1;
		auth[rb - auth] = '\0';
	}
	if (*host == '\0' || strlen(host) > PROXY_HOST_MAX)
		return perr(p, "bad upstream host");
	snprintf(up->host, sizeof(up->host), "%s", host);
	up->port = 3128;
	if (port != NULL) {
		snprintf(portbuf, sizeof(portbuf), "%s", port);
		if (strlen(port) >= sizeof(portbuf) || parse_port(portbuf, &up->port) == -1)
			return perr(p, "bad upstream port");
	}
	return 0;
}

static int
set_string(struct parse *p, char **dst, const char *v)
{
	free(*dst);
	if ((*dst = strdup(v)) == NULL)
		return perr(p, "out of memory");
	return 0;
}

static int
kw_listen(struct parse *p, char **w, int n)
{
	struct sockaddr_storage	*ss;
	int			*has;

	if (n != 3)
		return perr(p, "usage: listen http|socks5 ADDRESS:PORT");
	if (strcmp(w[1], "http") == 0) {
		ss = &p->conf->http_addr;
		has = &p->conf->has_http;
	} else if (strcmp(w[1], "socks5") == 0) {
		ss = &p->conf->socks_addr;
		has = &p->conf->has_socks;
	} else
		return perr(p, "unknown listener \"%s\" (http or socks5)", w[1]);
	if (parse_hostport(w[2], ss, 0) == -1)
		return perr(p, "bad listen address \"%s\"", w[2]);
	if (!is_loopback(ss))
		return perr(p, "listen address %s is not a loopback address", w[2]);
	*has = 1;
	return 0;
}

static int
kw_audit(struct parse *p, char **w, int n)
{
	struct proxy_conf *c = p->conf;

	if (n == 2 && strcmp(w[1], "stderr") == 0)
		c->audit = AUDIT_STDERR;
	else if (n == 2 && strcmp(w[1], "syslog") == 0)
		c->audit = AUDIT_SYSLOG;
	else if (n == 2 && strcmp(w[1], "none") == 0)
		c->audit = AUDIT_NONE;
	else if (n == 3 && strcmp(w[1], "file") == 0) {
		if (w[2][0] != '/')
			return perr(p, "audit file must be an absolute path");
		c->audit = AUDIT_FILE;
		return set_string(p, &c->audit_path, w[2]);
	} else
		return perr(p, "usage: audit file PATH | stderr | syslog | none");
	return 0;
}

static int
kw_dns(struct parse *p, char **w, int n)
{
	struct sockaddr_storage	 ss;
	char			*csv;
	int			 i;
	size_t			 len;

	if (n < 2)
		return perr(p, "usage: dns-server ADDRESS[:PORT] ...");
	for (i = 1; i < n; i++) {
		if (parse_hostport(w[i], &ss, 53) == -1)
			return perr(p, "bad DNS server \"%s\"", w[i]);
		len = (p->conf->dns_servers ? strlen(p->conf->dns_servers) + 1 : 0) +
		    strlen(w[i]) + 1;
		if ((csv = malloc(len)) == NULL)
			return perr(p, "out of memory");
		snprintf(csv, len, "%s%s%s", p->conf->dns_servers ? p->conf->dns_servers : "",
		    p->conf->dns_servers ? "," : "", w[i]);
		free(p->conf->dns_servers);
		p->conf->dns_servers = csv;
	}
	return 0;
}

static int
kw_policy(struct parse *p, char **w, int n)
{
	struct policy	*pol = &p->conf->policy;
	char		 err[256];
	int		 i, deny;

	if (strcmp(w[0], "allow") == 0 || strcmp(w[0], "deny") == 0) {
		deny = w[0][0] == 'd';
		if (n < 2)
			return perr(p, "usage: %s PATTERN ...", w[0]);
		for (i = 1; i < n; i++)
			if (policy_add_pattern(pol, deny, w[i], err, sizeof(err)) == -1)
				return perr(p, "%s", err);
		return 0;
	}
	if (strcmp(w[0], "ports") == 0) {
		if (n < 2)
			return perr(p, "usage: ports PORT|LOW-HIGH ...");
		for (i = 1; i < n; i++)
			if (policy_add_ports(pol, w[i]) == -1)
				return perr(p, "bad port or range \"%s\"", w[i]);
		return 0;
	}
	/* only this function's own keywords: others take other arguments */
	if (strcmp(w[0], "allow-local") != 0 && strcmp(w[0], "socks5-udp") != 0 &&
	    strcmp(w[0], "mode") != 0)
		return 1;
	if (n != 2)
		return perr(p, "usage: %s VALUE", w[0]);
	if (strcmp(w[0], "allow-local") == 0) {
		if (parse_bool(w[1], &pol->allow_local) == -1)
			return perr(p, "allow-local takes yes or no");
	} else if (strcmp(w[0], "socks5-udp") == 0) {
		if (parse_bool(w[1], &pol->socks5_udp) == -1)
			return perr(p, "socks5-udp takes yes or no");
	} else if (strcmp(w[0], "mode") == 0) {
		if (strcmp(w[1], "full") == 0)
			pol->mode = MODE_FULL;
		else if (strcmp(w[1], "limited") == 0)
			pol->mode = MODE_LIMITED;
		else
			return perr(p, "mode takes full or limited");
	}
	return 0;
}

static int
kw_limit(struct parse *p, char **w, int n)
{
	static const struct {
		const char	*kw;
		size_t		 off;
		int		 duration;
	} lim[] = {
		{ "max-connections", offsetof(struct proxy_conf, max_conns), 0 },
		{ "max-connections-per-client",
		    offsetof(struct proxy_conf, max_conns_client), 0 },
		{ "max-pending", offsetof(struct proxy_conf, max_pending), 0 },
		{ "max-pending-per-source",
		    offsetof(struct proxy_conf, max_pending_source), 0 },
		{ "idle-timeout", offsetof(struct proxy_conf, idle_ms), 1 },
		{ "connect-timeout", offsetof(struct proxy_conf, connect_ms), 1 },
		{ "header-timeout", offsetof(struct proxy_conf, header_ms), 1 },
		{ "dns-timeout", offsetof(struct proxy_conf, dns_ms), 1 },
		{ "handshake-timeout", offsetof(struct proxy_conf, handshake_ms), 1 },
		{ "leaf-cache", offsetof(struct proxy_conf, leaf_cache), 0 },
	};
	unsigned	*v;
	size_t		 i;

	for (i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		if (strcmp(w[0], lim[i].kw) != 0)
			continue;
		v = (unsigned *)((char *)p->conf + lim[i].off);
		if (n != 2)
			return perr(p, "usage: %s %s", w[0], lim[i].duration ?
			    "SECONDS|MILLISECONDSms" : "NUMBER");
		if ((lim[i].duration ? parse_duration(w[1], v) : parse_count(w[1], v)) == -1)
			return perr(p, "bad value \"%s\" for %s", w[1], w[0]);
		return 0;
	}
	return 1;
}

/* an absolute path for a keyword that takes one */
static int
set_path(struct parse *p, char **dst, const char *kw, const char *v)
{
	if (v[0] != '/')
		return perr(p, "%s must be an absolute path", kw);
	return set_string(p, dst, v);
}

static int
add_inspect_hosts(struct parse *p, char **w, int n)
{
	struct proxy_conf	*c = p->conf;
	char			**v, *h, *q;
	int			  i;

	if (n < 2)
		return perr(p, "usage: inspect-host PATTERN ...");
	if ((v = reallocarray(c->inspect_hosts, c->ninspect_hosts + (size_t)n,
	    sizeof(*v))) == NULL)
		return perr(p, "out of memory");
	c->inspect_hosts = v;
	for (i = 1; i < n; i++) {
		if ((h = strdup(w[i])) == NULL)
			return perr(p, "out of memory");
		for (q = h; *q != '\0'; q++)
			*q = (char)tolower((unsigned char)*q);
		c->inspect_hosts[c->ninspect_hosts++] = h;
	}
	return 0;
}

/* HTTPS inspection: 1 when w[0] is none of its keywords. */
static int
kw_inspect(struct parse *p, char **w, int n)
{
	struct proxy_conf	*c = p->conf;

	if (strcmp(w[0], "inspect-host") == 0)
		return add_inspect_hosts(p, w, n);
	if (strcmp(w[0], "inspect-ca") == 0) {
		if (n != 3)
			return perr(p, "usage: inspect-ca CERTIFICATE KEY");
		if (set_path(p, &c->inspect_ca_cert, w[0], w[1]) == -1)
			return -1;
		return set_path(p, &c->inspect_ca_key, w[0], w[2]);
	}
	if (n != 2)
		return 1;
	if (strcmp(w[0], "inspect") == 0) {
		if (parse_bool(w[1], &c->inspect) == -1)
			return perr(p, "inspect takes yes or no");
		return 0;
	}
	if (strcmp(w[0], "state-directory") == 0)
		return set_path(p, &c->state_dir, w[0], w[1]);
	if (strcmp(w[0], "upstream-ca") == 0)
		return set_path(p, &c->upstream_ca, w[0], w[1]);
	if (strcmp(w[0], "system-ca") == 0)
		return set_path(p, &c->system_ca, w[0], w[1]);
	return 1;
}

static int
parse_line(struct parse *p, char *line)
{
	char	*w[CONF_WORDS_MAX], *s, *tok;
	int	 n = 0, r;

	if ((s = strchr(line, '#')) != NULL)
		*s = '\0';
	for (tok = strtok_r(line, " \t\r\n", &s); tok != NULL;
	    tok = strtok_r(NULL, " \t\r\n", &s)) {
		if (n == CONF_WORDS_MAX)
			return perr(p, "too many words on one line");
		w[n++] = tok;
	}
	if (n == 0)
		return 0;
	if (strcmp(w[0], "listen") == 0)
		return kw_listen(p, w, n);
	if (strcmp(w[0], "audit") == 0)
		return kw_audit(p, w, n);
	if (strcmp(w[0], "dns-server") == 0)
		return kw_dns(p, w, n);
	if ((r = kw_policy(p, w, n)) <= 0)
		return r;
	if ((r = kw_limit(p, w, n)) <= 0)
		return r;
	if ((r = kw_inspect(p, w, n)) <= 0)
		return r;
	if (n != 2)
		return perr(p, "unknown keyword or wrong arguments: \"%s\"", w[0]);
	if (strcmp(w[0], "control") == 0) {
		if (w[1][0] != '/')
			return perr(p, "control socket must be an absolute path");
		if (strlen(w[1]) >= 100)
			return perr(p, "control socket path too long");
		return set_string(p, &p->conf->control_path, w[1]);
	}
	if (strcmp(w[0], "upstream") == 0) {
		if (p->conf->upstream != NULL)
			free(p->conf->upstream->auth);
		free(p->conf->upstream);
		p->conf->upstream = NULL;
		return parse_upstream(p, w[1]);
	}
	if (strcmp(w[0], "audit-overflow") == 0) {
		if (strcmp(w[1], "block") == 0)
			p->conf->audit_overflow = AUDIT_BLOCK;
		else if (strcmp(w[1], "drop") == 0)
			p->conf->audit_overflow = AUDIT_DROP;
		else
			return perr(p, "audit-overflow takes block or drop");
		return 0;
	}
	if (strcmp(w[0], "splice") == 0) {
		if (parse_bool(w[1], &p->conf->splice) == -1)
			return perr(p, "splice takes yes or no");
		return 0;
	}
	if (strcmp(w[0], "loopback-congestion-control") == 0)
		return parse_loopback_cc(p, w[1]);
	if (strcmp(w[0], "ca-bundle") == 0) {
		if (w[1][0] != '/')
			return perr(p, "ca-bundle must be an absolute path");
		return set_string(p, &p->conf->ca_bundle, w[1]);
	}
	return perr(p, "unknown keyword \"%s\"", w[0]);
}

static struct proxy_conf *
conf_new(void)
{
	struct proxy_conf *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->refs = 1;
	policy_defaults(&c->policy);
	c->max_conns = 16384;
	c->max_conns_client = 1024;
	c->max_pending = 4096;
	c->max_pending_source = 1024;
	c->idle_ms = 300 * 1000;
	c->connect_ms = 10 * 1000;
	c->header_ms = 10 * 1000;
	c->dns_ms = 2000;
	c->splice = 1;
	snprintf(c->loopback_cc, sizeof(c->loopback_cc), "%s", TCP_LOCAL_CC);
	c->inspect = 1;
	c->handshake_ms = 10 * 1000;
	c->leaf_cache = 1024;
	c->audit = AUDIT_STDERR;
	return c;
}

/*
 * What runs when there is no configuration file at all: loopback listeners,
 * any public destination, nothing local or private, audit on stderr.
 */
static const char builtin_conf[] =
	"listen http 127.0.0.1:3128\n"
	"listen socks5 127.0.0.1:1080\n"
	"allow *\n"
	"allow-local no\n"
	"audit stderr\n";

struct proxy_conf *
conf_load(const char *path, char *err, size_t errlen)
{
	struct parse	 p = { .path = path ? path : "(built-in configuration)",
			    .err = err, .errlen = errlen };
	FILE		*f;
	char		 line[CONF_LINE_MAX];
	int		 r = 0;

	if ((p.conf = conf_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (path == NULL)
		f = fmemopen((void *)builtin_conf, sizeof(builtin_conf) - 1, "r");
	else
		f = fopen(path, "re");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		conf_unref(p.conf);
		return NULL;
	}
	while (r == 0 && fgets(line, sizeof(line), f) != NULL) {
		p.line++;
		if (strchr(line, '\n') == NULL && !feof(f))
			r = perr(&p, "line too long");
		else
			r = parse_line(&p, line);
	}
	if (r == 0 && ferror(f))
		r = perr(&p, "read error");
	fclose(f);
	if (r == 0 && !p.conf->has_http && !p.conf->has_socks) {
		p.line = 0;
		r = perr(&p, "no listener: add \"listen http 127.0.0.1:3128\"");
	}
	if (r == 0 && p.conf->control_path == NULL &&
	    set_string(&p, &p.conf->control_path, RUNSTATEDIR "/execd-proxy/control.sock") == -1)
		r = -1;
	if (r == 0 && p.conf->state_dir == NULL &&
	    set_string(&p, &p.conf->state_dir, LOCALSTATEDIR "/lib/execd-proxy") == -1)
		r = -1;
	if (r == 0 && p.conf->system_ca == NULL &&
	    set_string(&p, &p.conf->system_ca, "/etc/ssl/certs/ca-certificates.crt") == -1)
		r = -1;
	if (r == -1) {
		conf_unref(p.conf);
		return NULL;
	}
	return p.conf;
}

struct proxy_conf *
conf_ref(struct proxy_conf *c)
{
	c->refs++;
	return c;
}

void
conf_unref(struct proxy_conf *c)
{
	if (c == NULL || --c->refs > 0)
		return;
	policy_clear(&c->policy);
	free(c->control_path);
	free(c->dns_servers);
	free(c->ca_bundle);
	free(c->state_dir);
	free(c->inspect_ca_cert);
	free(c->inspect_ca_key);
	free(c->upstream_ca);
	free(c->bundle_dir);
	free(c->system_ca);
	while (c->ninspect_hosts > 0)
		free(c->inspect_hosts[--c->ninspect_hosts]);
	free(c->inspect_hosts);
	free(c->audit_path);
	if (c->upstream != NULL)
		free(c->upstream->auth);
	free(c->upstream);
	free(c);
}
