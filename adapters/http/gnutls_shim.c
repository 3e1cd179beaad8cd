/*
 * gnutls_shim — dlopen() of GnuTLS for the native HTTP transport (see
 * gnutls_shim.h; common/dlshim.c does the loading).
 */
#include "adapters/http/gnutls_shim.h"

#include "common/dlshim.h"

struct gnutls_shim gt;

#define SYM(field, name) DLSHIM_SYM(struct gnutls_shim, field, name)
static const struct dlshim_sym gt_syms[] = {
        SYM(global_init, "gnutls_global_init"),
        SYM(strerror, "gnutls_strerror"),
        SYM(error_is_fatal, "gnutls_error_is_fatal"),
        SYM(init, "gnutls_init"),
        SYM(deinit, "gnutls_deinit"),
        SYM(set_default_priority, "gnutls_set_default_priority"),
        SYM(credentials_set, "gnutls_credentials_set"),
        SYM(cert_alloc, "gnutls_certificate_allocate_credentials"),
        SYM(cert_set_verify_function, "gnutls_certificate_set_verify_function"),
        SYM(cert_get_peers, "gnutls_certificate_get_peers"),
        SYM(status_print, "gnutls_certificate_verification_status_print"),
        SYM(server_name_set, "gnutls_server_name_set"),
        SYM(alpn_set_protocols, "gnutls_alpn_set_protocols"),
        SYM(alpn_get_selected, "gnutls_alpn_get_selected_protocol"),
        SYM(session_set_ptr, "gnutls_session_set_ptr"),
        SYM(session_get_ptr, "gnutls_session_get_ptr"),
        SYM(transport_set_ptr, "gnutls_transport_set_ptr"),
        SYM(transport_set_push, "gnutls_transport_set_push_function"),
        SYM(transport_set_pull, "gnutls_transport_set_pull_function"),
        SYM(transport_set_errno, "gnutls_transport_set_errno"),
        SYM(handshake, "gnutls_handshake"),
        SYM(record_send, "gnutls_record_send"),
        SYM(record_recv, "gnutls_record_recv"),
        SYM(record_check_pending, "gnutls_record_check_pending"),
        SYM(crt_init, "gnutls_x509_crt_init"),
        SYM(crt_deinit, "gnutls_x509_crt_deinit"),
        SYM(crt_import, "gnutls_x509_crt_import"),
        SYM(crt_get_raw_issuer_dn, "gnutls_x509_crt_get_raw_issuer_dn"),
        SYM(tl_init, "gnutls_x509_trust_list_init"),
        SYM(tl_deinit, "gnutls_x509_trust_list_deinit"),
        SYM(tl_add_cas, "gnutls_x509_trust_list_add_cas"),
        SYM(tl_verify_crt2, "gnutls_x509_trust_list_verify_crt2"),
        SYM(free, "gnutls_free"),
};
#undef SYM

/* Open for the life of the process: GnuTLS keeps global state. */
static struct dlshim gt_loader = {
        .names = {GNUTLS_SHIM_LIBRARY},
        .install_hint = "install the libgnutls30 package",
        .missing_hint = "GnuTLS is too old (need 3.6+)",
        .syms = gt_syms,
        .nsyms = sizeof gt_syms / sizeof gt_syms[0],
        .table = &gt,
        .table_size = sizeof gt,
};

int gnutls_shim_load(struct ga_err *err)
{
	return dlshim_load(&gt_loader, err);
}
