/*
 * curl_shim — libcurl, loaded on first use.
 *
 * Why: linking libcurl makes the dynamic loader map and relocate libcurl
 * and everything it depends on (libssl, GnuTLS via librtmp and libldap,
 * Kerberos, libssh2, nghttp2 …) at every start, which costs about 5 MB of
 * resident memory and 6 ms of start-up even when the agent has no
 * credentials and will never make a request (bench/footprint.sh: 3.7 MB →
 * 9.0 MB idle). Loading it with dlopen() when the first HTTP client is
 * created keeps an agent without outside services small, and costs nothing
 * once an agent does use HTTP. The loading is common/dlshim.h's.
 *
 * Which libcurl (bench/footprint.md has the measurements): Debian's GnuTLS
 * build, libcurl-gnutls.so.4 (package libcurl3-gnutls), when present, else
 * the OpenSSL one, libcurl.so.4. Both map GnuTLS and OpenSSL's libcrypto
 * (through libldap/librtmp and libssh2), but with the OpenSSL build
 * curl_global_init() also initialises OpenSSL — its configuration, the
 * default provider, the algorithm tables: 1.7 MB more resident, for a
 * backend that is already there. Same features either way: certificate
 * verification against the system store, HTTP/2 by ALPN, HTTPS and SOCKS
 * proxies from the environment.
 *
 * libssh2_init: curl_global_init() calls it unconditionally, and Debian's
 * libssh2 then initialises OpenSSL for SCP and SFTP, protocols every
 * request here refuses (CURLOPT_PROTOCOLS_STR "http,https", http.c). The
 * daemon defines libssh2_init itself as a no-op and exports it
 * (--export-dynamic-symbol, adapters/http/CMakeLists.txt), so libcurl's
 * call binds to it: the executable comes first in the lookup scope even
 * for a library loaded RTLD_LOCAL. libssh2 is never used otherwise, and
 * its libssh2_exit does nothing when its init has not run.
 *
 * Usage: include this header instead of <curl/curl.h>; call
 * curl_shim_load() (idempotent) before the first curl_* call. The curl_*
 * names below are macros that call through the loaded table, so the code
 * reads like plain libcurl code.
 */
#ifndef GA_ADAPTERS_HTTP_CURL_SHIM_H
#define GA_ADAPTERS_HTTP_CURL_SHIM_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "common/err.h"

/* The SONAMEs tried, in order: Debian's libcurl3-gnutls, then libcurl4
 * (OpenSSL). The headers are the same for both (libcurl4-*-dev). */
#define CURL_SHIM_LIBRARY_GNUTLS  "libcurl-gnutls.so.4"
#define CURL_SHIM_LIBRARY_OPENSSL "libcurl.so.4"

struct curl_shim {
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	void (*free)(void *);
	time_t (*getdate)(const char *, const time_t *);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLU *(*url)(void);
	void (*url_cleanup)(CURLU *);
	CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
	CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
	const char *(*url_strerror)(CURLUcode);
};

extern struct curl_shim curl_shim;

/* Loads libcurl and resolves every function above. Returns 0, or -1 with
 * err naming the library or the missing symbol. Later calls return the
 * first outcome at once. */
int curl_shim_load(struct ga_err *err);

/* The no-op that stands in for libssh2's (see above); never call it. */
int libssh2_init(int flags);

#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#define curl_global_init         curl_shim.global_init
#define curl_global_cleanup      curl_shim.global_cleanup
#define curl_easy_init           curl_shim.easy_init
#define curl_easy_cleanup        curl_shim.easy_cleanup
#define curl_easy_setopt         curl_shim.easy_setopt
#define curl_easy_getinfo        curl_shim.easy_getinfo
#define curl_easy_strerror       curl_shim.easy_strerror
#define curl_free                curl_shim.free
#define curl_getdate             curl_shim.getdate
#define curl_multi_init          curl_shim.multi_init
#define curl_multi_cleanup       curl_shim.multi_cleanup
#define curl_multi_add_handle    curl_shim.multi_add_handle
#define curl_multi_remove_handle curl_shim.multi_remove_handle
#define curl_multi_assign        curl_shim.multi_assign
#define curl_multi_setopt        curl_shim.multi_setopt
#define curl_multi_socket_action curl_shim.multi_socket_action
#define curl_multi_info_read     curl_shim.multi_info_read
#define curl_slist_append        curl_shim.slist_append
#define curl_slist_free_all      curl_shim.slist_free_all
#define curl_url                 curl_shim.url
#define curl_url_cleanup         curl_shim.url_cleanup
#define curl_url_get             curl_shim.url_get
#define curl_url_set             curl_shim.url_set
#define curl_url_strerror        curl_shim.url_strerror

#endif
