/*
 * The HTTP side of a WebSocket listener: http_upgrade_parse() on whatever
 * a client sends before the upgrade.  The first byte picks whether a token
 * is required; the rest is the bytes received so far.
 */
#include "config.h"

#include <sys/mman.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/http_upgrade.h"
#include "fuzz.h"

#define TOKEN	"0123456789abcdef0123456789abcdef"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	http_upgrade_init(TOKEN, NULL);
	return 0;
}

static void
check(const struct http_result *r, size_t len)
{
	switch (r->verdict) {
	case HTTP_INCOMPLETE:
		if (len >= HTTP_HEAD_MAX)
			abort();	/* the head bound must answer, not wait for ever */
		break;
	case HTTP_RESPOND:
	case HTTP_UPGRADE:
		if (r->resp_len == 0 || r->resp_len >= sizeof(r->resp) ||
		    memcmp(r->resp, "HTTP/1.", 7) != 0 || r->resp[8] != ' ' ||
		    (r->resp[7] != '1' && (r->resp[7] != '0' || !r->http10)) ||
		    r->head_len > len)
			abort();
		/* an HTTP/1.0 client is answered as HTTP/1.0, except the 101 */
		if (r->verdict == HTTP_UPGRADE && (r->status != 101 || r->resp[7] != '1'))
			abort();
		break;
	}
}

/*
 * The bytes end right before an inaccessible page: a read past what was
 * received faults at once, even through libc code ASan does not watch
 * (sscanf reading its input, for one).
 */
static char *
guarded_copy(const uint8_t *p, size_t n, void **map, size_t *maplen)
{
	size_t	pg = (size_t)sysconf(_SC_PAGESIZE), len = (n + pg - 1) / pg * pg + pg;
	char	*m;

	if ((m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) ==
	    MAP_FAILED)
		abort();
	if (mprotect(m + len - pg, pg, PROT_NONE) == -1)
		abort();
	*map = m;
	*maplen = len;
	memcpy(m + len - pg - n, p, n);
	return m + len - pg - n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_result	 r;
	char			*copy;
	void			*map;
	size_t			 n, maplen;

	if (size == 0)
		return 0;
	n = size - 1;
	copy = guarded_copy(data + 1, n, &map, &maplen);
	http_upgrade_parse(copy, n, data[0] & 1, &r);
	check(&r, n);
	/* as the sniffer sees it: every prefix the socket may have delivered */
	if (n > 0 && (data[0] & 2)) {
		http_upgrade_parse(copy, n / 2, data[0] & 1, &r);
		check(&r, n / 2);
	}
	munmap(map, maplen);
	return 0;
}
