/*
 * libcurl, loaded at the first http/request rather than linked: linked, its
 * ~35 libraries cost every instance ~10 ms in the dynamic loader and their
 * relocated pages, though most sessions never make a request.  The code
 * calls curl_* as usual; the names below go through the table that
 * http_curl_load() fills from libcurl.so.4 (the soname of the libcurl the
 * headers come from, the libcurl4-openssl-dev build-time dependency).
 */
#ifndef EXECD_HTTP_CURL_H
#define EXECD_HTTP_CURL_H

#include <stddef.h>

#define CURL_DISABLE_TYPECHECK	/* its checks are macros over the names redirected below */
#include <curl/curl.h>

#define HTTP_CURL_SONAME	"libcurl.so.4"

struct http_curl_fn {
	__typeof__(curl_global_init)		*global_init;
	__typeof__(curl_global_cleanup)		*global_cleanup;
	__typeof__(curl_easy_init)		*easy_init;
	__typeof__(curl_easy_cleanup)		*easy_cleanup;
	__typeof__(curl_easy_reset)		*easy_reset;
	__typeof__(curl_easy_setopt)		*easy_setopt;
	__typeof__(curl_easy_getinfo)		*easy_getinfo;
	__typeof__(curl_easy_pause)		*easy_pause;
	__typeof__(curl_easy_strerror)		*easy_strerror;
	__typeof__(curl_multi_init)		*multi_init;
	__typeof__(curl_multi_cleanup)		*multi_cleanup;
	__typeof__(curl_multi_setopt)		*multi_setopt;
	__typeof__(curl_multi_add_handle)	*multi_add_handle;
	__typeof__(curl_multi_remove_handle)	*multi_remove_handle;
	__typeof__(curl_multi_assign)		*multi_assign;
	__typeof__(curl_multi_socket_action)	*multi_socket_action;
	__typeof__(curl_multi_info_read)	*multi_info_read;
	__typeof__(curl_multi_strerror)		*multi_strerror;
	__typeof__(curl_slist_append)		*slist_append;
	__typeof__(curl_slist_free_all)		*slist_free_all;
	__typeof__(curl_version_info)		*version_info;
};
extern struct http_curl_fn	http_curl;

/* 0 once libcurl is loaded (the first call loads it); -1, logged, if it cannot be. */
int	http_curl_load(void);
/*
 * Of the content codings the reference's client asks for and decodes
 * (zstd, gzip), those this libcurl decodes: the Accept-Encoding list, or
 * NULL for none.  http_curl_decodes(): one coding's name is among them.
 */
const char	*http_curl_encodings(void);
int		 http_curl_decodes(const char *coding);

#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init	http_curl.global_init
#define curl_global_cleanup	http_curl.global_cleanup
#define curl_easy_init		http_curl.easy_init
#define curl_easy_cleanup	http_curl.easy_cleanup
#define curl_easy_reset		http_curl.easy_reset
#define curl_easy_setopt	http_curl.easy_setopt
#define curl_easy_getinfo	http_curl.easy_getinfo
#define curl_easy_pause		http_curl.easy_pause
#define curl_easy_strerror	http_curl.easy_strerror
#define curl_multi_init		http_curl.multi_init
#define curl_multi_cleanup	http_curl.multi_cleanup
#define curl_multi_setopt	http_curl.multi_setopt
#define curl_multi_add_handle	http_curl.multi_add_handle
#define curl_multi_remove_handle http_curl.multi_remove_handle
#define curl_multi_assign	http_curl.multi_assign
#define curl_multi_socket_action http_curl.multi_socket_action
#define curl_multi_info_read	http_curl.multi_info_read
#define curl_multi_strerror	http_curl.multi_strerror
#define curl_slist_append	http_curl.slist_append
#define curl_version_info	http_curl.version_info
#define curl_slist_free_all	http_curl.slist_free_all

#endif
