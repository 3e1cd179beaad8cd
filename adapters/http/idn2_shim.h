/*
 * idn2_shim — international host names for the native transport: the
 * libidn2 call that turns a UTF-8 host name into its ASCII (punycode) form,
 * "bücher.example" → "xn--bcher-kva.example", resolved from libidn2.so.0
 * loaded with dlopen() on first use (common/dlshim.h). GnuTLS already maps
 * libidn2, so after the first TLS connection this costs nothing; an agent
 * whose URLs are all ASCII never loads it.
 *
 * Usage: idn2_shim_load() (idempotent, sticky outcome) before the first
 * call through `idn`; only libidn2's header is used at build time.
 */
#ifndef GA_ADAPTERS_HTTP_IDN2_SHIM_H
#define GA_ADAPTERS_HTTP_IDN2_SHIM_H

#include <idn2.h>

#include "common/err.h"

#define IDN2_SHIM_LIBRARY "libidn2.so.0"

struct idn2_shim {
	int (*lookup_u8)(const uint8_t *, uint8_t **, int);
	void (*free)(void *);
	const char *(*strerror)(int);
};

extern struct idn2_shim idn;

/* Loads libidn2.so.0 and resolves the table. 0, or -1 with err. */
int idn2_shim_load(struct ga_err *err);

#endif
