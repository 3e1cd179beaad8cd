/*
 * gnutls_shim — the GnuTLS functions the native HTTP transport calls,
 * resolved from libgnutls.so.30 loaded with dlopen() on first use
 * (common/dlshim.h), so a bare agent never maps GnuTLS and its closure.
 *
 * Usage: gnutls_shim_load() (idempotent) before the first call through
 * `gt`; only GnuTLS's headers are used at build time, nothing is linked.
 */
#ifndef GA_ADAPTERS_HTTP_GNUTLS_SHIM_H
#define GA_ADAPTERS_HTTP_GNUTLS_SHIM_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/err.h"

#define GNUTLS_SHIM_LIBRARY "libgnutls.so.30"

struct gnutls_shim {
	int (*global_init)(void);
	const char *(*strerror)(int);
	int (*error_is_fatal)(int);
	int (*init)(gnutls_session_t *, unsigned int);
	void (*deinit)(gnutls_session_t);
	int (*set_default_priority)(gnutls_session_t);
	int (*credentials_set)(gnutls_session_t, gnutls_credentials_type_t, void *);
	int (*cert_alloc)(gnutls_certificate_credentials_t *);
	void (*cert_set_verify_function)(gnutls_certificate_credentials_t,
	                                 gnutls_certificate_verify_function *);
	const gnutls_datum_t *(*cert_get_peers)(gnutls_session_t, unsigned int *);
	int (*status_print)(unsigned int, gnutls_certificate_type_t, gnutls_datum_t *, unsigned);
	int (*server_name_set)(gnutls_session_t, gnutls_server_name_type_t, const void *, size_t);
	int (*alpn_set_protocols)(gnutls_session_t, const gnutls_datum_t *, unsigned, unsigned);
	int (*alpn_get_selected)(gnutls_session_t, gnutls_datum_t *);
	void (*session_set_ptr)(gnutls_session_t, void *);
	void *(*session_get_ptr)(gnutls_session_t);
	void (*transport_set_ptr)(gnutls_session_t, gnutls_transport_ptr_t);
	void (*transport_set_push)(gnutls_session_t, gnutls_push_func);
	void (*transport_set_pull)(gnutls_session_t, gnutls_pull_func);
	void (*transport_set_errno)(gnutls_session_t, int);
	int (*handshake)(gnutls_session_t);
	ssize_t (*record_send)(gnutls_session_t, const void *, size_t);
	ssize_t (*record_recv)(gnutls_session_t, void *, size_t);
	size_t (*record_check_pending)(gnutls_session_t);
	int (*crt_init)(gnutls_x509_crt_t *);
	void (*crt_deinit)(gnutls_x509_crt_t);
	int (*crt_import)(gnutls_x509_crt_t, const gnutls_datum_t *, gnutls_x509_crt_fmt_t);
	int (*crt_get_raw_issuer_dn)(gnutls_x509_crt_t, gnutls_datum_t *);
	int (*tl_init)(gnutls_x509_trust_list_t *, unsigned int);
	void (*tl_deinit)(gnutls_x509_trust_list_t, unsigned int);
	int (*tl_add_cas)(gnutls_x509_trust_list_t, const gnutls_x509_crt_t *, unsigned, unsigned);
	int (*tl_verify_crt2)(gnutls_x509_trust_list_t, gnutls_x509_crt_t *, unsigned int,
	                      gnutls_typed_vdata_st *, unsigned int, unsigned int, unsigned int *,
	                      gnutls_verify_output_function);
	gnutls_free_function *free; /* the address of GnuTLS's gnutls_free variable */
};

extern struct gnutls_shim gt;

/* Loads libgnutls.so.30 and resolves the table. 0, or -1 with err. */
int gnutls_shim_load(struct ga_err *err);

#endif
