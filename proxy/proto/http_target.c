/*
 * What a refused HTTP request aimed at, for its audit record only: read
 * from the raw head (complete or not, as a 431 leaves it), never used to
 * decide or to connect.  The URL's authority when it names a host, else
 * the Host field; a host that does not parse is kept as written.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "proto/proto.h"
#include "proto/http_head.h"
#include "relay/relay.h"

/* The value of the first Host line in p..end, trimmed; NULL when there is none. */
static const char *
find_host_field(const char *p, const char *end, size_t *len)
{
	const char	*nl, *v, *e;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		p = nl + 1;
		if (end - p < 5 || strncasecmp(p, "host:", 5) != 0)
			continue;
		v = p + 5;
		e = memchr(v, '\n', (size_t)(end - v));
		if (e == NULL)
			e = end;
		while (v < e && (*v == ' ' || *v == '\t'))
			v++;
		while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		*len = (size_t)(e - v);
		return v;
	}
	return NULL;
}

static void
note(struct conn *c, const char *auth, size_t alen, uint16_t defport)
{
	int	had;

	if (parse_authority(auth, alen, c->host, sizeof(c->host), &c->lit, &c->port,
	    defport, &had) == -1) {
		c->host[0] = '\0';
		conn_raw_host(c, auth, alen);
	}
}

void
http_note_target(struct conn *c, const char *head, size_t len)
{
	const char	*end = head + len, *t, *te, *auth, *s, *at;
	size_t		 alen = 0;
	int		 connect;

	if (c->host[0] != '\0')
		return;
	if ((t = memchr(head, ' ', len)) == NULL)
		return;
	connect = t - head == 7 && memcmp(head, "CONNECT", 7) == 0;
	if (c->method[0] == '\0' && (size_t)(t - head) < sizeof(c->method)) {
		memcpy(c->method, head, (size_t)(t - head));
		c->method[t - head] = '\0';
	}
	for (te = ++t; te < end && *te != ' ' && *te != '\r' && *te != '\n'; te++)
		;
	auth = NULL;
	if (connect) {
		auth = t;
		alen = (size_t)(te - t);
	} else if (te - t > 7 && strncasecmp(t, "http://", 7) == 0) {
		auth = t + 7;
		for (s = auth; s < te && *s != '/' && *s != '?' && *s != '#'; s++)
			;
		/* userinfo is never recorded */
		if ((at = memchr(auth, '@', (size_t)(s - auth))) != NULL)
			auth = at + 1;
		alen = (size_t)(s - auth);
	}
	/* a URL that names a host: that, valid or not */
	if (auth != NULL && alen > 0 && auth[0] != ':') {
		if (!c->has_rawhost)
			note(c, auth, alen, connect ? 443 : 80);
		return;
	}
	/* none (http:///, http://:PORT/, origin form): the Host field it gave */
	if ((auth = find_host_field(te, end, &alen)) != NULL) {
		c->has_rawhost = 0;
		note(c, auth, alen, 80);
	}
}
