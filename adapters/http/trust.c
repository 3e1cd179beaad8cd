/*
 * trust — per-handshake lookup of the issuing CAs in the PEM bundle, and
 * the chain verification (see trust.h).
 */
#include "adapters/http/trust.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/http/tls.h"
#include "common/base64.h"
#include "common/fsx.h"

struct names {
	gnutls_datum_t dn[TLS_MAX_CHAIN]; /* issuer names of the peer chain (gnutls_free) */
	unsigned n;
};

static void names_free(struct names *nm)
{
	for (unsigned i = 0; i < nm->n; i++)
		(*gt.free)(nm->dn[i].data);
	nm->n = 0;
}

/* One DER element at p (n bytes): its total length, and where its content
 * starts. 0 when it does not fit. */
static size_t der_element(const uint8_t *p, size_t n, size_t *content)
{
	if (n < 2)
		return 0;
	size_t len = p[1], hdr = 2;
	if (len & 0x80) {
		size_t k = len & 0x7f;
		if (k == 0 || k > 4 || n < 2 + k)
			return 0;
		len = 0;
		for (size_t i = 0; i < k; i++)
			len = (len << 8) | p[2 + i];
		hdr += k;
	}
	if (len > n - hdr)
		return 0;
	*content = hdr;
	return hdr + len;
}

/* The subject Name of a DER certificate (the whole element). */
static int der_subject(const uint8_t *der, size_t n, const uint8_t **out, size_t *out_len)
{
	size_t c;
	if (!der_element(der, n, &c)) /* Certificate */
		return -1;
	const uint8_t *p = der + c;
	size_t left = n - c;
	size_t tbs_len = der_element(p, left, &c); /* TBSCertificate */
	if (!tbs_len)
		return -1;
	p += c;
	left = tbs_len - c;
	/* [0] version (optional), serial, signature, issuer, validity, subject */
	int skip = (left && p[0] == 0xa0) ? 5 : 4;
	for (int i = 0; i <= skip; i++) {
		size_t e = der_element(p, left, &c);
		if (!e)
			return -1;
		if (i == skip) {
			*out = p;
			*out_len = e;
			return 0;
		}
		p += e;
		left -= e;
	}
	return -1;
}

static bool wanted(const struct names *nm, const uint8_t *dn, size_t len)
{
	for (unsigned i = 0; i < nm->n; i++)
		if (nm->dn[i].size == len && memcmp(nm->dn[i].data, dn, len) == 0)
			return true;
	return false;
}

static void add_ca(gnutls_x509_trust_list_t tl, const uint8_t *der, size_t len)
{
	gnutls_x509_crt_t crt;
	if (gt.crt_init(&crt) < 0)
		return;
	gnutls_datum_t d = {(unsigned char *)der, (unsigned)len};
	if (gt.crt_import(crt, &d, GNUTLS_X509_FMT_DER) < 0 || gt.tl_add_cas(tl, &crt, 1, 0) != 1)
		gt.crt_deinit(crt);
}

/* Adds every certificate of a PEM bundle whose subject is wanted. */
static void scan_bundle(const char *path, const struct names *nm, gnutls_x509_trust_list_t tl)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----",
	                  end[] = "-----END CERTIFICATE-----";
	size_t len = 0;
	char *pem = fsx_read_file(path, TLS_CA_BUNDLE_MAX, &len, NULL);
	if (!pem)
		return;
	unsigned char *der = malloc(len / 4 * 3 + 3);
	for (char *s = strstr(pem, begin); der && s; s = strstr(s, begin)) {
		s += sizeof begin - 1;
		char *e = strstr(s, end);
		if (!e)
			break;
		long n = base64_decode(s, (size_t)(e - s), der, NULL);
		const uint8_t *dn;
		size_t dn_len;
		if (n > 0 && der_subject(der, (size_t)n, &dn, &dn_len) == 0 &&
		    wanted(nm, dn, dn_len))
			add_ca(tl, der, (size_t)n);
		s = e;
	}
	free(der);
	free(pem);
}

static void scan_trust(const struct names *nm, gnutls_x509_trust_list_t tl)
{
	static const char *const bundles[] = TRUST_BUNDLES;
	for (size_t i = 0; bundles[i]; i++) {
		if (access(bundles[i], R_OK) == 0) {
			scan_bundle(bundles[i], nm, tl);
			break;
		}
	}
	const char *extra = getenv(TLS_EXTRA_CA_ENV);
	if (extra && *extra)
		scan_bundle(extra, nm, tl);
}

static void status_msg(unsigned status, char *msg, size_t cap)
{
	gnutls_datum_t out = {NULL, 0};
	if (gt.status_print(status, GNUTLS_CRT_X509, &out, 0) == 0 && out.data) {
		snprintf(msg, cap, "the certificate was refused: %s", (char *)out.data);
		(*gt.free)(out.data);
	} else {
		snprintf(msg, cap, "the certificate was refused (status 0x%x)", status);
	}
}

static int verify_chain(gnutls_x509_crt_t *chain, unsigned n, const char *host, char *msg,
                        size_t cap)
{
	struct names nm = {.n = 0};
	for (unsigned i = 0; i < n; i++)
		if (gt.crt_get_raw_issuer_dn(chain[i], &nm.dn[nm.n]) == 0)
			nm.n++;
	gnutls_x509_trust_list_t tl;
	if (gt.tl_init(&tl, 0) < 0) {
		names_free(&nm);
		snprintf(msg, cap, "out of memory verifying the certificate");
		return -1;
	}
	scan_trust(&nm, tl);
	gnutls_typed_vdata_st data[2] = {
	        {GNUTLS_DT_DNS_HOSTNAME, (unsigned char *)host, 0},
	        {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER, 0},
	};
	unsigned status = 0;
	int rc = gt.tl_verify_crt2(tl, chain, n, data, 2, 0, &status, NULL);
	gt.tl_deinit(tl, 1);
	names_free(&nm);
	if (rc < 0) {
		snprintf(msg, cap, "the certificate could not be verified: %s", gt.strerror(rc));
		return -1;
	}
	if (status) {
		status_msg(status, msg, cap);
		return -1;
	}
	return 0;
}

int trust_verify(gnutls_session_t s, const char *host, char *msg, size_t cap)
{
	unsigned n = 0;
	const gnutls_datum_t *peers = gt.cert_get_peers(s, &n);
	if (!peers || n == 0) {
		snprintf(msg, cap, "the server sent no certificate");
		return -1;
	}
	if (n > TLS_MAX_CHAIN)
		n = TLS_MAX_CHAIN;
	gnutls_x509_crt_t chain[TLS_MAX_CHAIN];
	unsigned got = 0;
	int rc = -1;
	for (; got < n; got++) {
		if (gt.crt_init(&chain[got]) < 0)
			break;
		if (gt.crt_import(chain[got], &peers[got], GNUTLS_X509_FMT_DER) < 0) {
			gt.crt_deinit(chain[got]);
			break;
		}
	}
	if (got == n)
		rc = verify_chain(chain, n, host, msg, cap);
	else
		snprintf(msg, cap, "the server's certificate could not be parsed");
	for (unsigned i = 0; i < got; i++)
		gt.crt_deinit(chain[i]);
	return rc;
}
