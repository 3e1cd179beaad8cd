/*
 * curl_shim — dlopen() of libcurl on first use. See curl_shim.h.
 */
#include "adapters/http/curl_shim.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct curl_shim curl_shim;

static int loaded;  /* 1 ok, -1 failed */
static char failure[GA_ERR_MSG_MAX];

int curl_shim_load(struct ga_err *err)
{
	if (loaded > 0)
		return 0;
	if (loaded < 0)
		return err_set(err, "%s", failure);
	void *h = dlopen(CURL_SHIM_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(failure, sizeof failure,
			 "cannot load %s (%s): install the libcurl4 package", CURL_SHIM_LIBRARY,
			 dlerror());
		loaded = -1;
		return err_set(err, "%s", failure);
	}
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
#define SYM(field, name) {name, offsetof(struct curl_shim, field)}
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
#undef SYM
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			snprintf(failure, sizeof failure, "%s has no %s: libcurl is too old (need 7.85+)",
				 CURL_SHIM_LIBRARY, syms[i].name);
			loaded = -1;
			dlclose(h);
			return err_set(err, "%s", failure);
		}
		/* POSIX guarantees data and function pointers convert through
		 * dlsym; memcpy keeps the conversion well defined in C. */
		memcpy((char *)&curl_shim + syms[i].offset, &f, sizeof f);
	}
	/* The handle stays open for the life of the process: libcurl keeps
	 * global state (OpenSSL) that must not be unloaded. */
	loaded = 1;
	return 0;
}
