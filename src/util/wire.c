#include "config.h"

#include <string.h>

#include "util/wire.h"

void
wire_u32(struct wire_out *w, uint32_t v)
{
	if (buf_append(&w->b, &v, sizeof(v)) == -1)
		w->failed = 1;
}

/* As two u32s, low half first. */
void
wire_u64(struct wire_out *w, uint64_t v)
{
	wire_u32(w, (uint32_t)v);
	wire_u32(w, (uint32_t)(v >> 32));
}

/* Stored with a NUL after the bytes, so the reader can point into the message. */
static void
put_counted(struct wire_out *w, const void *p, size_t n)
{
	static const char nul;

	if (n >= WIRE_NONE) {
		w->failed = 1;
		return;
	}
	wire_u32(w, (uint32_t)n);
	if (buf_append(&w->b, p, n) == -1 || buf_append(&w->b, &nul, 1) == -1)
		w->failed = 1;
}

void
wire_str(struct wire_out *w, const char *s)
{
	if (s == NULL)
		wire_u32(w, WIRE_NONE);
	else
		put_counted(w, s, strlen(s));
}

void
wire_bytes(struct wire_out *w, const void *p, size_t n)
{
	put_counted(w, p, n);
}

void
wire_fd(struct wire_out *w, int fd)
{
	if (fd == -1) {
		wire_u32(w, WIRE_NONE);
		return;
	}
	if (w->nfds == WIRE_MAX_FDS) {
		w->failed = 1;
		return;
	}
	wire_u32(w, (uint32_t)w->nfds);
	w->fds[w->nfds++] = fd;
}

uint32_t
wire_get_u32(struct wire_in *r)
{
	uint32_t	v;

	if (r->bad || (size_t)(r->end - r->p) < sizeof(v)) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, sizeof(v));
	r->p += sizeof(v);
	return v;
}

uint64_t
wire_get_u64(struct wire_in *r)
{
	uint64_t	lo = wire_get_u32(r);

	return lo | (uint64_t)wire_get_u32(r) << 32;
}

static const void *
get_counted(struct wire_in *r, size_t *n, int *none)
{
	const uint8_t	*s;
	uint32_t	 len = wire_get_u32(r);

	*none = len == WIRE_NONE;
	if (r->bad || *none)
		return NULL;
	if ((size_t)(r->end - r->p) < (size_t)len + 1 || r->p[len] != '\0') {
		r->bad = 1;
		return NULL;
	}
	s = r->p;
	r->p += (size_t)len + 1;
	*n = len;
	return s;
}

const char *
wire_get_str(struct wire_in *r)
{
	const char	*s;
	size_t		 n;
	int		 none;

	/* a string holds no NUL of its own */
	if ((s = get_counted(r, &n, &none)) != NULL && strlen(s) != n) {
		r->bad = 1;
		return NULL;
	}
	return s;
}

const void *
wire_get_bytes(struct wire_in *r, size_t *n)
{
	const void	*p;
	int		 none;

	if ((p = get_counted(r, n, &none)) == NULL && none)
		r->bad = 1;
	return p;
}

int
wire_get_fd(struct wire_in *r)
{
	uint32_t	i = wire_get_u32(r);

	if (r->bad || i == WIRE_NONE)
		return -1;
	if (i >= r->nfds) {
		r->bad = 1;
		return -1;
	}
	return r->fds[i];
}
