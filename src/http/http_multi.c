#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>

#include "evloop.h"
#include "http/http_xfer_int.h"
#include "log.h"

/* A socket libcurl asked us to watch; freed only outside the io dispatch. */
struct sock {
	struct ev_io		 io;
	TAILQ_ENTRY(sock)	 entry;
};

TAILQ_HEAD(sock_list, sock);

static struct {
	CURLM		*multi;
	CURL		*spare;		/* a finished transfer's handle, reset */
	struct ev_timer	 timer;		/* libcurl's one timeout */
	struct ev_timer	 reap;		/* frees sockets after the io batch */
	struct sock_list graveyard;
	int		 in_curl;	/* inside a libcurl call (callbacks may run) */
	void		(*after)(void);
} hm;

static void
on_socket_ready(struct ev_io *io, uint32_t events, void *arg)
{
	int	action = 0, running;

	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		action |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		action |= CURL_CSELECT_OUT;
	if (events & EPOLLERR)
		action |= CURL_CSELECT_ERR;
	hm.in_curl++;
	curl_multi_socket_action(hm.multi, io->fd, action, &running);
	hm.in_curl--;
	hm.after();
}

static void
on_timeout(struct ev_timer *t, void *arg)
{
	int	running;

	hm.in_curl++;
	curl_multi_socket_action(hm.multi, CURL_SOCKET_TIMEOUT, 0, &running);
	hm.in_curl--;
	hm.after();
}

static void
on_reap(struct ev_timer *t, void *arg)
{
	struct sock	*sk;

	while ((sk = TAILQ_FIRST(&hm.graveyard)) != NULL) {
		TAILQ_REMOVE(&hm.graveyard, sk, entry);
		free(sk);
	}
}

static int
curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct sock	*sk = socketp;
	uint32_t	 events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (sk != NULL) {
			ev_io_del(&sk->io);
			TAILQ_INSERT_TAIL(&hm.graveyard, sk, entry);
			ev_timer_start(&hm.reap, 0);
			curl_multi_assign(hm.multi, s, NULL);
		}
		return 0;
	}
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= EPOLLIN;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= EPOLLOUT;
	if (sk != NULL)
		return ev_io_set(&sk->io, events) == -1 ? -1 : 0;
	if ((sk = calloc(1, sizeof(*sk))) == NULL) {
		log_warn("http/request: socket");
		return -1;
	}
	if (ev_io_add(&sk->io, s, events, on_socket_ready, sk) == -1) {
		free(sk);
		return -1;
	}
	curl_multi_assign(hm.multi, s, sk);
	return 0;
}

static int
curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	if (timeout_ms < 0)
		ev_timer_stop(&hm.timer);
	else
		ev_timer_start(&hm.timer, (uint64_t)timeout_ms);
	return 0;
}

/*
 * A handle for the next transfer: the last one's, reset, when there is one.
 * Requests mostly come one after another, and a fresh handle costs its
 * allocation and buffers every time.
 */
CURL *
http_multi_easy(void)
{
	CURL	*e;

	if ((e = hm.spare) != NULL) {
		hm.spare = NULL;
		return e;
	}
	return curl_easy_init();
}

/*
 * Out of the multi; kept as the spare, options reset, or freed.  Only a
 * handle that never paused is kept: libcurl may hold a paused transfer's
 * unread data past a reset (multi_done skips freeing it while an HTTP/2
 * connection still carries other streams).
 */
void
http_multi_release(CURL *e, int never_paused)
{
	curl_multi_remove_handle(hm.multi, e);
	if (hm.spare != NULL || !never_paused) {
		curl_easy_cleanup(e);
		return;
	}
	curl_easy_reset(e);
	hm.spare = e;
}

int
http_multi_add(CURL *e)
{
	CURLMcode	rc;

	if ((rc = curl_multi_add_handle(hm.multi, e)) != CURLM_OK) {
		log_warnx("curl_multi_add_handle: %s", curl_multi_strerror(rc));
		return -1;
	}
	return 0;
}

struct xfer *
http_multi_done(CURLcode *rc)
{
	struct xfer	*x;
	CURLMsg		*m;
	int		 left;

	if (hm.multi == NULL)	/* libcurl not loaded: no transfer ever ran */
		return NULL;
	while ((m = curl_multi_info_read(hm.multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE ||
		    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &x) != CURLE_OK)
			continue;
		*rc = m->data.result;
		return x;
	}
	return NULL;
}

void
http_multi_resume(CURL *e)
{
	hm.in_curl++;
	curl_easy_pause(e, CURLPAUSE_CONT);
	hm.in_curl--;
}

int
http_multi_inside(void)
{
	return hm.in_curl > 0;
}

int
http_multi_init(void (*after)(void))
{
	TAILQ_INIT(&hm.graveyard);
	ev_timer_init(&hm.timer, on_timeout, NULL);
	ev_timer_init(&hm.reap, on_reap, NULL);
	hm.after = after;
	return 0;
}

/* libcurl and its multi handle, at the first transfer (http_curl.h). */
int
http_multi_ready(void)
{
	if (hm.multi != NULL)
		return 0;
	/* a failure (no descriptor left, say) is tried again at the next request */
	if (http_curl_load() == -1)
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_warnx("curl_global_init failed");
		return -1;
	}
	if ((hm.multi = curl_multi_init()) == NULL ||
	    curl_multi_setopt(hm.multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb) != CURLM_OK ||
	    curl_multi_setopt(hm.multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb) != CURLM_OK) {
		log_warnx("cannot set up libcurl's multi interface");
		if (hm.multi != NULL)
			curl_multi_cleanup(hm.multi);
		hm.multi = NULL;
		curl_global_cleanup();
		return -1;
	}
	return 0;
}

void
http_multi_shutdown(void)
{
	if (hm.multi == NULL)
		return;
	if (hm.spare != NULL)
		curl_easy_cleanup(hm.spare);
	hm.spare = NULL;
	/* closing the connection cache may still call the socket callback */
	curl_multi_cleanup(hm.multi);
	hm.multi = NULL;
	ev_timer_stop(&hm.timer);
	ev_timer_stop(&hm.reap);
	on_reap(NULL, NULL);
	curl_global_cleanup();
}
