/*
 * mhd_shim — libmicrohttpd, loaded when the dashboard starts.
 *
 * Why: Debian's libmicrohttpd12 has GnuTLS among its NEEDED libraries, and
 * GnuTLS brings p11-kit, nettle, hogweed, gmp, tasn1, idn2, unistring and
 * libffi. Linked directly, every general-agent process (DASHBOARD_ADDR=off
 * and the one-shot commands included) paid for them. Loaded with dlopen()
 * (common/dlshim.h) when the dashboard starts, an agent without it stays
 * small. Same pattern as adapters/http/curl_shim.h.
 *
 * What the dashboard costs once loaded (bench/footprint.sh, "what the
 * dashboard adds"; bench/footprint.md): about 2.5 MB of RSS, of which
 * 2.2 MB are clean pages of the libraries' code and tables, shared with
 * every other process that maps them (PSS +0.4 MB), and 0.3 MB private
 * (relocations, 72 kB of heap). Three quarters come from mapping and
 * relocating the libraries, a quarter from gnutls_global_init(), which
 * libmicrohttpd's own constructor (MHD_init) calls during dlopen() whatever
 * the MHD_start_daemon() flags, so GNUTLS_NO_IMPLICIT_INIT changes nothing;
 * p11-kit loads no module during that init, so its settings change nothing
 * either; every one of these libraries is linked with BIND_NOW, so
 * RTLD_LAZY changes nothing (all measured). The dashboard never uses TLS.
 *
 * Usage: include this header instead of <microhttpd.h>; call
 * mhd_shim_load() (idempotent) before the first MHD_* call. The MHD_* names
 * the dashboard uses are macros that call through the loaded table.
 */
#ifndef GA_MODULES_DASHBOARD_MHD_SHIM_H
#define GA_MODULES_DASHBOARD_MHD_SHIM_H

#include <microhttpd.h>

#include "common/err.h"

/* The SONAME of Debian's libmicrohttpd-dev runtime (libmicrohttpd12). */
#define MHD_SHIM_LIBRARY "libmicrohttpd.so.12"

struct mhd_shim {
	struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
	                                   MHD_AccessHandlerCallback, void *, ...);
	void (*stop_daemon)(struct MHD_Daemon *);
	enum MHD_Result (*run)(struct MHD_Daemon *);
	enum MHD_Result (*get_timeout)(struct MHD_Daemon *, MHD_UNSIGNED_LONG_LONG *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
	                                               ...);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
	                                                       enum MHD_ConnectionInfoType, ...);
	const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
	                                       const char *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
	                                                    enum MHD_ResponseMemoryMode);
	struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t,
	                                                      MHD_ContentReaderCallback, void *,
	                                                      MHD_ContentReaderFreeCallback);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
	                                  struct MHD_Response *);
	void (*destroy_response)(struct MHD_Response *);
	void (*suspend_connection)(struct MHD_Connection *);
	enum MHD_Result (*resume_connection)(struct MHD_Connection *);
};

extern struct mhd_shim mhd_shim;

/* Loads libmicrohttpd and resolves every function above. 0, or -1 with err
 * naming the library or the missing symbol. Later calls return the first
 * outcome at once. */
int mhd_shim_load(struct ga_err *err);

#define MHD_start_daemon                  mhd_shim.start_daemon
#define MHD_stop_daemon                   mhd_shim.stop_daemon
#define MHD_run                           mhd_shim.run
#define MHD_get_timeout                   mhd_shim.get_timeout
#define MHD_get_daemon_info               mhd_shim.get_daemon_info
#define MHD_get_connection_info           mhd_shim.get_connection_info
#define MHD_lookup_connection_value       mhd_shim.lookup_connection_value
#define MHD_create_response_from_buffer   mhd_shim.create_response_from_buffer
#define MHD_create_response_from_callback mhd_shim.create_response_from_callback
#define MHD_add_response_header           mhd_shim.add_response_header
#define MHD_queue_response                mhd_shim.queue_response
#define MHD_destroy_response              mhd_shim.destroy_response
#define MHD_suspend_connection            mhd_shim.suspend_connection
#define MHD_resume_connection             mhd_shim.resume_connection

#endif
