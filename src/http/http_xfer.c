#include "config.h"

#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evloop.h"
#include "http/http_xfer_int.h"
#include "log.h"

#define RECV_BUFSIZE	(256 * 1024)

TAILQ_HEAD(xfer_list, xfer);

static struct {
	struct xfer_list xfers;
	char		*proxy;
	char		*proxy_ca;	/* the proxy's bundle, or NULL */
	int		 settling;
	int		 resume_pending;
} hx;

static struct curl_slist *
slist_add(struct curl_slist *l, const char *name, const char *value, int *err)
{
	struct curl_slist	*n;
	char			*line;

	/* "name;" is how libcurl sends an empty value ("name:" would delete it) */
	if (asprintf(&line, *value ? "%s: %s" : "%s;", name, value) == -1) {
		*err = 1;
		return l;
	}
	if ((n = curl_slist_append(l, line)) == NULL)
		*err = 1;
	free(line);
	return n ? n : l;
}

static int
headers_to_slist(struct xfer *x)
{
	json_t		*vals, *v;
	const char	*name;
	size_t		 i;
	int		 err = 0;

	json_object_foreach(x->hop_headers, name, vals)
		json_array_foreach(vals, i, v)
			x->slist = slist_add(x->slist, name, json_string_value(v), &err);
	if (json_object_get(x->hop_headers, "accept") == NULL)
		x->slist = slist_add(x->slist, "accept", "*/*", &err);
	/* what libcurl would add on its own and the reference does not send */
	if (json_object_get(x->hop_headers, "content-type") == NULL &&
	    (x->slist = curl_slist_append(x->slist, "Content-Type:")) == NULL)
		err = 1;
	if (json_object_get(x->hop_headers, "expect") == NULL &&
	    (x->slist = curl_slist_append(x->slist, "Expect:")) == NULL)
		err = 1;
	return err ? -1 : 0;
}

static int
hop_options(struct xfer *x, CURL *e)
{
	uint64_t	now = ev_now();
	CURLcode	rc = CURLE_OK;

#define SET(opt, val)	do { if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, val); } while (0)
	SET(CURLOPT_PRIVATE, x);
	SET(CURLOPT_URL, x->hop.target);
	SET(CURLOPT_CUSTOMREQUEST, x->method);
	if (strcmp(x->method, "HEAD") == 0)
		SET(CURLOPT_NOBODY, 1L);
	if (x->hop_body && x->spec->body != NULL) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->spec->bodylen);
		SET(CURLOPT_POSTFIELDS, x->spec->body);
	}
	SET(CURLOPT_HTTPHEADER, x->slist);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PATH_AS_IS, 1L);		/* the path is normalised already */
	/* never a proxy from execd's own environment; only the configured one */
	SET(CURLOPT_PROXY, hx.proxy ? hx.proxy : "");
	SET(CURLOPT_NOPROXY, hx.proxy ? "" : "*");
	/* the proxy inspects HTTPS (limited mode): targets show its CA's leaves */
	if (hx.proxy != NULL && hx.proxy_ca != NULL)
		SET(CURLOPT_CAINFO, hx.proxy_ca);
	SET(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
	/*
	 * As the reference's client: ask for zstd and gzip unless the client
	 * names its own Accept-Encoding (its header then goes instead), and
	 * decode such a body whatever was asked (http_resp.c decides per
	 * response; a reused handle may carry the last one's "no").
	 */
	SET(CURLOPT_ACCEPT_ENCODING, http_curl_encodings());
	SET(CURLOPT_HTTP_CONTENT_DECODING, 1L);
	/*
	 * Large reads for streams; a buffered answer keeps libcurl's default, so
	 * the reused handle keeps its buffer rather than trading it for 256 KiB
	 * (freed and taken again) on every small request.
	 */
	if (x->spec->stream)
		SET(CURLOPT_BUFFERSIZE, (long)RECV_BUFSIZE);
	SET(CURLOPT_HEADERFUNCTION, http_resp_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_WRITEFUNCTION, http_resp_body);
	SET(CURLOPT_WRITEDATA, x);
	SET(CURLOPT_ERRORBUFFER, x->errbuf);
	if (x->deadline != 0)
		SET(CURLOPT_TIMEOUT_MS, (long)(x->deadline > now ? x->deadline - now : 1));
#undef SET
	if (rc != CURLE_OK) {
		log_warnx("http/request %s: %s", x->hop.href, curl_easy_strerror(rc));
		return -1;
	}
	return 0;
}

static int
hop_start(struct xfer *x)
{
	CURL	*e;

	json_object_clear(x->resp_headers);
	x->status = 0;
	x->head_done = x->follow_next = 0;
	x->discarded = 0;
	x->errbuf[0] = '\0';
	if (http_multi_ready() == -1 || headers_to_slist(x) == -1 ||
	    (e = http_multi_easy()) == NULL) {
		log_warnx("http/request %s: cannot set up the transfer", x->hop.href);
		return -1;
	}
	if (hop_options(x, e) == -1 || http_multi_add(e) == -1) {
		http_multi_release(e, 1);
		return -1;
	}
	x->easy = e;
	return 0;
}

static void
hop_release(struct xfer *x)
{
	if (x->easy != NULL) {
		/* only a stream pauses (stream_body) */
		http_multi_release(x->easy, !x->spec->stream);
		x->easy = NULL;
	}
	if (x->slist != NULL)	/* libcurl may not be loaded */
		curl_slist_free_all(x->slist);
	x->slist = NULL;
}

static int
set_header(json_t *map, const char *name, const char *value)
{
	json_t	*vals = json_array();

	if (vals == NULL || json_array_append_new(vals, json_string(value)) == -1 ||
	    json_object_set_new(map, name, vals) == -1)
		return -1;
	return 0;
}

/* The next request of a redirect, edited as the reference's client does. */
static int
redirect(struct xfer *x)
{
	static const char *const sensitive[] = { "authorization", "cookie", "cookie2",
	    "proxy-authorization", "www-authenticate" };
	static const char *const content[] = { "transfer-encoding", "content-encoding",
	    "content-type", "content-length" };
	char	*referer = NULL;
	size_t	 i;
	int	 same = http_url_same_origin(&x->hop, &x->next);

	if (x->status == 301 || x->status == 302 || x->status == 303) {
		x->hop_body = 0;
		for (i = 0; i < sizeof(content) / sizeof(content[0]); i++)
			json_object_del(x->hop_headers, content[i]);
		if (strcmp(x->method, "GET") != 0 && strcmp(x->method, "HEAD") != 0) {
			free(x->method);
			if ((x->method = strdup("GET")) == NULL)
				return -1;
		}
	}
	if (!same)
		for (i = 0; i < sizeof(sensitive) / sizeof(sensitive[0]); i++)
			json_object_del(x->hop_headers, sensitive[i]);
	if (!(x->hop.https && !x->next.https)) {
		if (asprintf(&referer, same ? "%s" : "%s/", same ? x->hop.target :
		    x->hop.origin) == -1 || set_header(x->hop_headers, "referer", referer) == -1) {
			free(referer);
			return -1;
		}
		free(referer);
	}
	http_url_free(&x->hop);
	x->hop = x->next;
	memset(&x->next, 0, sizeof(x->next));
	x->redirects++;
	log_debug("http/request: redirected to %s", x->hop.href);
	if (x->deadline != 0 && ev_now() >= x->deadline)
		return -1;
	return hop_start(x);
}

static void
hop_done(struct xfer *x, CURLcode rc)
{
	hop_release(x);
	if (x->dead)
		return;
	if (rc != CURLE_OK && x->fail[0] == '\0')
		log_info("http/request %s %s: %s", x->method, x->hop.href,
		    x->errbuf[0] ? x->errbuf : curl_easy_strerror(rc));
	if (x->fail[0] != '\0') {
		if (!x->head_done)
			http_resp_fail(x, RPC_INTERNAL_ERROR, "http/request failed: %s", x->fail);
		else if (!x->spec->stream)
			http_resp_fail(x, RPC_INTERNAL_ERROR, "%s", x->fail);
		else {
			http_resp_flush(x);
			http_resp_delta(x, "", 0, 1, x->fail);
			x->dead = 1;
		}
	} else if (x->follow_next) {
		if (redirect(x) == -1)
			http_resp_fail(x, RPC_INTERNAL_ERROR, "http/request failed: error "
			    "sending request for url (%s)", x->hop.href);
	} else if (!x->head_done)
		http_resp_fail(x, RPC_INTERNAL_ERROR,
		    "http/request failed: error sending request for url (%s)", x->hop.href);
	else if (x->spec->stream) {
		http_resp_flush(x);
		http_resp_delta(x, "", 0, 1, rc == CURLE_OK ? NULL : "error decoding response body");
		x->dead = 1;
	} else if (rc == CURLE_OK) {
		http_resp_result(x, buf_head(&x->body), buf_avail(&x->body));
		x->dead = 1;
	} else
		http_resp_fail(x, RPC_INTERNAL_ERROR, "failed to read http/request response "
		    "body: error decoding response body");
}

static void
xfer_free(struct xfer *x)
{
	hop_release(x);
	if (x->req != NULL)
		rpc_fail(x->req, RPC_INTERNAL_ERROR, "http/request failed: cancelled");
	http_spec_free(x->spec);
	http_url_free(&x->hop);
	http_url_free(&x->next);
	free(x->method);
	json_decref(x->hop_headers);
	json_decref(x->resp_headers);
	buf_free(&x->body);
	free(x);
}

static void
reap_dead(void)
{
	struct xfer	*x, *next;

	for (x = TAILQ_FIRST(&hx.xfers); x != NULL; x = next) {
		next = TAILQ_NEXT(x, entry);
		if (!x->dead)
			continue;
		TAILQ_REMOVE(&hx.xfers, x, entry);
		xfer_free(x);
	}
}

static void
resume_paused(void)
{
	struct xfer	*x;

	TAILQ_FOREACH(x, &hx.xfers, entry) {
		if (!x->paused || x->dead || x->easy == NULL)
			continue;
		x->paused = 0;
		http_multi_resume(x->easy);
		if (rpc_congested())
			break;
	}
}

/* After libcurl ran: finish transfers, free the dead, resume paused streams. */
static void
settle(void)
{
	struct xfer	*x;
	CURLcode	 rc;
	int		 again;

	if (http_multi_inside() || hx.settling)
		return;
	hx.settling = 1;
	do {
		while ((x = http_multi_done(&rc)) != NULL)
			hop_done(x, rc);
		TAILQ_FOREACH(x, &hx.xfers, entry)
			if (!x->dead && x->spec->stream)
				http_resp_flush(x);
		reap_dead();
		again = hx.resume_pending && !rpc_congested();
		if (again) {
			hx.resume_pending = 0;
			resume_paused();
		}
	} while (again);
	hx.settling = 0;
}

static void
on_drain(void)
{
	hx.resume_pending = 1;
	settle();
}

static void
cancel_all(void)
{
	struct xfer	*x;

	TAILQ_FOREACH(x, &hx.xfers, entry)
		x->dead = 1;
	/* reaps now, or once libcurl has returned */
	settle();
}

void
http_spec_free(struct http_spec *spec)
{
	if (spec == NULL)
		return;
	free(spec->method);
	http_url_free(&spec->url);
	json_decref(spec->headers);
	free(spec->body);
	free(spec->request_id);
	free(spec);
}

void
http_xfer_start(struct rpc_req *req, struct http_spec *spec)
{
	struct xfer	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL ||
	    (x->hop_headers = json_deep_copy(spec->headers)) == NULL ||
	    (x->resp_headers = json_object()) == NULL ||
	    (x->method = strdup(spec->method)) == NULL) {
		if (x != NULL) {
			json_decref(x->hop_headers);
			json_decref(x->resp_headers);
			free(x);
		}
		http_spec_free(spec);
		rpc_fail(req, RPC_INTERNAL_ERROR, "http/request failed: out of memory");
		return;
	}
	x->spec = spec;
	x->req = req;
	x->hop = spec->url;
	memset(&spec->url, 0, sizeof(spec->url));
	x->next.port = -1;
	x->hop_body = 1;
	x->seq = 1;
	/* beyond a century means no timeout (and no overflow) */
	if (spec->timeout_ms != 0 && spec->timeout_ms < 100ULL * 365 * 86400 * 1000)
		x->deadline = ev_now() + spec->timeout_ms;
	TAILQ_INSERT_TAIL(&hx.xfers, x, entry);
	log_debug("http/request %s %s%s", x->method, x->hop.href,
	    spec->stream ? " (streamed)" : "");
	if (hop_start(x) == -1) {
		http_resp_fail(x, RPC_INTERNAL_ERROR, "http/request failed: error sending "
		    "request for url (%s)", x->hop.href);
		settle();
	}
}

int
http_xfer_stream_active(const char *request_id)
{
	struct xfer	*x;

	TAILQ_FOREACH(x, &hx.xfers, entry)
		if (!x->dead && x->spec->stream &&
		    strcmp(x->spec->request_id, request_id) == 0)
			return 1;
	return 0;
}

int
http_xfer_set_proxy(const char *url, const char *cainfo)
{
	char	*p = NULL, *ca = NULL;

	if ((url != NULL && (p = strdup(url)) == NULL) ||
	    (url != NULL && cainfo != NULL && (ca = strdup(cainfo)) == NULL)) {
		free(p);
		return -1;
	}
	free(hx.proxy);
	free(hx.proxy_ca);
	hx.proxy = p;
	hx.proxy_ca = ca;
	return 0;
}

int
http_xfer_init(size_t max_message)
{
	http_resp_init(max_message);
	TAILQ_INIT(&hx.xfers);
	if (http_multi_init(settle) == -1)
		return -1;
	rpc_on_detach(cancel_all);
	rpc_on_drain(on_drain);
	return 0;
}

void
http_xfer_shutdown(void)
{
	cancel_all();
	http_multi_shutdown();
	free(hx.proxy);
	free(hx.proxy_ca);
	hx.proxy = hx.proxy_ca = NULL;
}
