/*
 * mhd_shim — dlopen() of libmicrohttpd when the dashboard starts. See
 * mhd_shim.h.
 */
#include "modules/dashboard/mhd_shim.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct mhd_shim mhd_shim;

static int loaded; /* 1 ok, -1 failed */
static char failure[GA_ERR_MSG_MAX];

int mhd_shim_load(struct ga_err *err)
{
	if (loaded > 0)
		return 0;
	if (loaded < 0)
		return err_set(err, "%s", failure);
	void *h = dlopen(MHD_SHIM_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(failure, sizeof failure,
		         "cannot load %s (%s): install the libmicrohttpd12 package", MHD_SHIM_LIBRARY,
		         dlerror());
		loaded = -1;
		return err_set(err, "%s", failure);
	}
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
#define SYM(field, name) {name, offsetof(struct mhd_shim, field)}
	        SYM(start_daemon, "MHD_start_daemon"),
	        SYM(stop_daemon, "MHD_stop_daemon"),
	        SYM(run, "MHD_run"),
	        SYM(get_timeout, "MHD_get_timeout"),
	        SYM(get_daemon_info, "MHD_get_daemon_info"),
	        SYM(get_connection_info, "MHD_get_connection_info"),
	        SYM(lookup_connection_value, "MHD_lookup_connection_value"),
	        SYM(create_response_from_buffer, "MHD_create_response_from_buffer"),
	        SYM(create_response_from_callback, "MHD_create_response_from_callback"),
	        SYM(add_response_header, "MHD_add_response_header"),
	        SYM(queue_response, "MHD_queue_response"),
	        SYM(destroy_response, "MHD_destroy_response"),
	        SYM(suspend_connection, "MHD_suspend_connection"),
	        SYM(resume_connection, "MHD_resume_connection"),
#undef SYM
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		void *f = dlsym(h, syms[i].name);
		if (!f) {
			snprintf(failure, sizeof failure, "%s has no %s: libmicrohttpd is too old",
			         MHD_SHIM_LIBRARY, syms[i].name);
			loaded = -1;
			dlclose(h);
			return err_set(err, "%s", failure);
		}
		/* POSIX: data and function pointers convert through dlsym;
		 * memcpy keeps it well defined in C. */
		memcpy((char *)&mhd_shim + syms[i].offset, &f, sizeof f);
	}
	/* Open for the life of the process: GnuTLS keeps global state. */
	loaded = 1;
	return 0;
}
