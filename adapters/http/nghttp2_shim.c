/*
 * nghttp2_shim — dlopen() of libnghttp2 for the native HTTP transport (see
 * nghttp2_shim.h; common/dlshim.c does the loading).
 */
#include "adapters/http/nghttp2_shim.h"

#include "common/dlshim.h"

struct nghttp2_shim ng;

#define SYM(field, name) DLSHIM_SYM(struct nghttp2_shim, field, name)
static const struct dlshim_sym ng_syms[] = {
        SYM(callbacks_new, "nghttp2_session_callbacks_new"),
        SYM(callbacks_del, "nghttp2_session_callbacks_del"),
        SYM(set_on_begin_headers, "nghttp2_session_callbacks_set_on_begin_headers_callback"),
        SYM(set_on_header, "nghttp2_session_callbacks_set_on_header_callback"),
        SYM(set_on_data_chunk_recv, "nghttp2_session_callbacks_set_on_data_chunk_recv_callback"),
        SYM(set_on_frame_recv, "nghttp2_session_callbacks_set_on_frame_recv_callback"),
        SYM(set_on_stream_close, "nghttp2_session_callbacks_set_on_stream_close_callback"),
        SYM(client_new, "nghttp2_session_client_new"),
        SYM(session_del, "nghttp2_session_del"),
        SYM(submit_settings, "nghttp2_submit_settings"),
        SYM(submit_request, "nghttp2_submit_request"),
        SYM(mem_recv, "nghttp2_session_mem_recv"),
        SYM(mem_send, "nghttp2_session_mem_send"),
        SYM(want_read, "nghttp2_session_want_read"),
        SYM(want_write, "nghttp2_session_want_write"),
        SYM(strerror, "nghttp2_strerror"),
        SYM(http2_strerror, "nghttp2_http2_strerror"),
};
#undef SYM

static struct dlshim ng_loader = {
        .names = {NGHTTP2_SHIM_LIBRARY},
        .install_hint = "install the libnghttp2-14 package",
        .missing_hint = "libnghttp2 is too old (need 1.43+)",
        .syms = ng_syms,
        .nsyms = sizeof ng_syms / sizeof ng_syms[0],
        .table = &ng,
        .table_size = sizeof ng,
};

int nghttp2_shim_load(struct ga_err *err)
{
	return dlshim_load(&ng_loader, err);
}
