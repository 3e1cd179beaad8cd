/*
 * curl_shim — dlopen() of libcurl on first use (common/dlshim.c does the
 * loading). See curl_shim.h.
 */
#include "adapters/http/curl_shim.h"

#include "common/dlshim.h"

struct curl_shim curl_shim;

#define SYM(field, name) DLSHIM_SYM(struct curl_shim, field, name)
static const struct dlshim_sym curl_syms[] = {
        SYM(global_init, "curl_global_init"),
        SYM(global_cleanup, "curl_global_cleanup"),
        SYM(easy_init, "curl_easy_init"),
        SYM(easy_cleanup, "curl_easy_cleanup"),
        SYM(easy_setopt, "curl_easy_setopt"),
        SYM(easy_getinfo, "curl_easy_getinfo"),
        SYM(easy_strerror, "curl_easy_strerror"),
        SYM(free, "curl_free"),
        SYM(getdate, "curl_getdate"),
        SYM(multi_init, "curl_multi_init"),
        SYM(multi_cleanup, "curl_multi_cleanup"),
        SYM(multi_add_handle, "curl_multi_add_handle"),
        SYM(multi_remove_handle, "curl_multi_remove_handle"),
        SYM(multi_assign, "curl_multi_assign"),
        SYM(multi_setopt, "curl_multi_setopt"),
        SYM(multi_socket_action, "curl_multi_socket_action"),
        SYM(multi_info_read, "curl_multi_info_read"),
        SYM(slist_append, "curl_slist_append"),
        SYM(slist_free_all, "curl_slist_free_all"),
        SYM(url, "curl_url"),
        SYM(url_cleanup, "curl_url_cleanup"),
        SYM(url_get, "curl_url_get"),
        SYM(url_set, "curl_url_set"),
        SYM(url_strerror, "curl_url_strerror"),
};
#undef SYM

/* The handle stays open for the life of the process: libcurl keeps global
 * state (its TLS library's) that must not be unloaded. */
static struct dlshim curl_loader = {
        .names = {CURL_SHIM_LIBRARY_GNUTLS, CURL_SHIM_LIBRARY_OPENSSL},
        .install_hint = "install the libcurl3-gnutls (or libcurl4) package",
        .missing_hint = "libcurl is too old (need 7.85+)",
        .syms = curl_syms,
        .nsyms = sizeof curl_syms / sizeof curl_syms[0],
        .table = &curl_shim,
        .table_size = sizeof curl_shim,
};

int curl_shim_load(struct ga_err *err)
{
	return dlshim_load(&curl_loader, err);
}

/* See curl_shim.h: keeps curl_global_init() from initialising OpenSSL for
 * SSH, which no request here may use. */
int libssh2_init(int flags)
{
	(void)flags;
	return 0;
}
