/*
 * Loading libcurl at the first http/request (http_curl.h says why).
 *
 * dlopen() rather than a helper process that links libcurl: a helper would
 * cost a process and a copy of every request and body through a socket
 * pair; loading costs the first request ~10 ms once, and a session that
 * never asks pays nothing.  The instance's allow-list already has what
 * loading needs (openat, mmap, mprotect; threads for the resolver).
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "dlsyms.h"
#include "http/http_curl.h"

struct http_curl_fn	http_curl;

static const struct dl_sym symbols[] = {
#define SYM(field, name)	{ #name, offsetof(struct http_curl_fn, field) }
	SYM(global_init, curl_global_init),
	SYM(global_cleanup, curl_global_cleanup),
	SYM(easy_init, curl_easy_init),
	SYM(easy_cleanup, curl_easy_cleanup),
	SYM(easy_reset, curl_easy_reset),
	SYM(easy_setopt, curl_easy_setopt),
	SYM(easy_getinfo, curl_easy_getinfo),
	SYM(easy_pause, curl_easy_pause),
	SYM(easy_strerror, curl_easy_strerror),
	SYM(multi_init, curl_multi_init),
	SYM(multi_cleanup, curl_multi_cleanup),
	SYM(multi_setopt, curl_multi_setopt),
	SYM(multi_add_handle, curl_multi_add_handle),
	SYM(multi_remove_handle, curl_multi_remove_handle),
	SYM(multi_assign, curl_multi_assign),
	SYM(multi_socket_action, curl_multi_socket_action),
	SYM(multi_info_read, curl_multi_info_read),
	SYM(multi_strerror, curl_multi_strerror),
	SYM(slist_append, curl_slist_append),
	SYM(slist_free_all, curl_slist_free_all),
	SYM(version_info, curl_version_info),
#undef SYM
};

static int	loaded;
static int	has_zstd, has_gzip;

int
http_curl_load(void)
{
	curl_version_info_data	*info;

	if (loaded)
		return 0;
	if (dl_load(HTTP_CURL_SONAME, symbols, sizeof(symbols) / sizeof(symbols[0]), &http_curl,
	    "http/request") == -1)
		return -1;
	loaded = 1;
	info = curl_version_info(CURLVERSION_NOW);
	has_zstd = info != NULL && (info->features & CURL_VERSION_ZSTD) != 0;
	has_gzip = info != NULL && (info->features & CURL_VERSION_LIBZ) != 0;
	return 0;
}

const char *
http_curl_encodings(void)
{
	if (has_zstd && has_gzip)
		return "zstd,gzip";
	return has_zstd ? "zstd" : has_gzip ? "gzip" : NULL;
}

int
http_curl_decodes(const char *coding)
{
	return (has_zstd && strcmp(coding, "zstd") == 0) ||
	    (has_gzip && strcmp(coding, "gzip") == 0);
}
