/*
 * nghttp2_shim — the libnghttp2 functions the native transport's HTTP/2
 * codec (h2.h) calls, resolved from libnghttp2.so.14 loaded with dlopen()
 * on first use (common/dlshim.h): an agent that never opens a TLS
 * connection never maps it.
 *
 * Usage: nghttp2_shim_load() (idempotent, sticky outcome) before the first
 * call through `ng`; only nghttp2's header is used at build time, nothing
 * is linked.
 */
#ifndef GA_ADAPTERS_HTTP_NGHTTP2_SHIM_H
#define GA_ADAPTERS_HTTP_NGHTTP2_SHIM_H

#include <nghttp2/nghttp2.h>

#include "common/err.h"

#define NGHTTP2_SHIM_LIBRARY "libnghttp2.so.14"

struct nghttp2_shim {
	int (*callbacks_new)(nghttp2_session_callbacks **);
	void (*callbacks_del)(nghttp2_session_callbacks *);
	void (*set_on_begin_headers)(nghttp2_session_callbacks *,
	                             nghttp2_on_begin_headers_callback);
	void (*set_on_header)(nghttp2_session_callbacks *, nghttp2_on_header_callback);
	void (*set_on_data_chunk_recv)(nghttp2_session_callbacks *,
	                               nghttp2_on_data_chunk_recv_callback);
	void (*set_on_frame_recv)(nghttp2_session_callbacks *, nghttp2_on_frame_recv_callback);
	void (*set_on_stream_close)(nghttp2_session_callbacks *, nghttp2_on_stream_close_callback);
	int (*client_new)(nghttp2_session **, const nghttp2_session_callbacks *, void *);
	void (*session_del)(nghttp2_session *);
	int (*submit_settings)(nghttp2_session *, uint8_t, const nghttp2_settings_entry *, size_t);
	int32_t (*submit_request)(nghttp2_session *, const nghttp2_priority_spec *,
	                          const nghttp2_nv *, size_t, const nghttp2_data_provider *,
	                          void *);
	ssize_t (*mem_recv)(nghttp2_session *, const uint8_t *, size_t);
	ssize_t (*mem_send)(nghttp2_session *, const uint8_t **);
	int (*want_read)(nghttp2_session *);
	int (*want_write)(nghttp2_session *);
	const char *(*strerror)(int);
	const char *(*http2_strerror)(uint32_t);
};

extern struct nghttp2_shim ng;

/* Loads libnghttp2.so.14 and resolves the table. 0, or -1 with err. */
int nghttp2_shim_load(struct ga_err *err);

#endif
