/*
 * trust — verification of a server's certificate chain against the system
 * trust store, loading only the CA certificates that issued that chain
 * (tls.h says why: the whole store costs ~4 MB of heap once parsed).
 *
 * trust_verify() reads the CA bundle (the first of TRUST_BUNDLES that
 * exists, plus the PEM file named by TLS_EXTRA_CA_ENV when set), keeps the
 * certificates whose subject name equals the issuer name of any certificate
 * the server sent, and has GnuTLS verify the chain against those for the
 * host name and the TLS server purpose. Nothing is kept afterwards.
 */
#ifndef GA_ADAPTERS_HTTP_TRUST_H
#define GA_ADAPTERS_HTTP_TRUST_H

#include <stddef.h>

#include "adapters/http/gnutls_shim.h"

#define TRUST_BUNDLES                                                                              \
	{                                                                                          \
		"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",          \
		        "/etc/ssl/cert.pem", NULL                                                  \
	}

/* 0 when the session's peer chain is valid for host, else -1 with msg (a
 * sentence without the host name). */
int trust_verify(gnutls_session_t s, const char *host, char *msg, size_t cap);

#endif
