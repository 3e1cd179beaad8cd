/*
 * mhd_shim — dlopen() of libmicrohttpd when the dashboard starts
 * (common/dlshim.c does the loading). See mhd_shim.h.
 */
#include "modules/dashboard/mhd_shim.h"

#include "common/dlshim.h"

struct mhd_shim mhd_shim;

#define SYM(field, name) DLSHIM_SYM(struct mhd_shim, field, name)
static const struct dlshim_sym mhd_syms[] = {
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
};
#undef SYM

/* Open for the life of the process: GnuTLS keeps global state. */
static struct dlshim mhd_loader = {
        .names = {MHD_SHIM_LIBRARY},
        .install_hint = "install the libmicrohttpd12 package",
        .missing_hint = "libmicrohttpd is too old",
        .syms = mhd_syms,
        .nsyms = sizeof mhd_syms / sizeof mhd_syms[0],
        .table = &mhd_shim,
        .table_size = sizeof mhd_shim,
};

int mhd_shim_load(struct ga_err *err)
{
	return dlshim_load(&mhd_loader, err);
}
