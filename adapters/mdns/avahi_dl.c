/*
 * adapters/mdns/avahi_dl — avahi-client loaded on first use. See
 * avahi_dl.h.
 */
#include "adapters/mdns/avahi_dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

struct avahi_dl avahi_dl;

static int loaded; /* 0 = not tried, 1 = ok, -1 = failed */
static char load_error[256];

#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)(&avahi_dl.field) = dlsym(h, name);                                      \
		if (!avahi_dl.field) {                                                             \
			snprintf(load_error, sizeof load_error, "%s has no symbol %s",             \
			         AVAHI_DL_LIBRARY, name);                                          \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

static int resolve(void *h)
{
	SYM(client_new, "avahi_client_new");
	SYM(client_free, "avahi_client_free");
	SYM(client_errno, "avahi_client_errno");
	/* avahi-common's, found through the client library's dependencies */
	SYM(strerror, "avahi_strerror");
	SYM(service_browser_new, "avahi_service_browser_new");
	SYM(service_browser_free, "avahi_service_browser_free");
	SYM(service_browser_get_client, "avahi_service_browser_get_client");
	SYM(service_resolver_new, "avahi_service_resolver_new");
	SYM(service_resolver_free, "avahi_service_resolver_free");
	SYM(service_resolver_get_client, "avahi_service_resolver_get_client");
	SYM(address_snprint, "avahi_address_snprint");
	return 0;
}

int avahi_dl_load(struct ga_err *err)
{
	if (loaded == 0) {
		void *h = dlopen(AVAHI_DL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			const char *why = dlerror();
			snprintf(load_error, sizeof load_error, "cannot load %s: %s",
			         AVAHI_DL_LIBRARY, why ? why : "unknown error");
			loaded = -1;
		} else if (resolve(h) != 0) {
			memset(&avahi_dl, 0, sizeof avahi_dl);
			loaded = -1;
		} else {
			loaded = 1;
		}
	}
	if (loaded < 0)
		return err_set(err, "%s", load_error);
	return 0;
}
