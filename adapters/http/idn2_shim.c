/*
 * idn2_shim — dlopen() of libidn2 for the native HTTP transport (see
 * idn2_shim.h; common/dlshim.c does the loading).
 */
#include "adapters/http/idn2_shim.h"

#include "common/dlshim.h"

struct idn2_shim idn;

#define SYM(field, name) DLSHIM_SYM(struct idn2_shim, field, name)
static const struct dlshim_sym idn_syms[] = {
        SYM(lookup_u8, "idn2_lookup_u8"),
        SYM(free, "idn2_free"),
        SYM(strerror, "idn2_strerror"),
};
#undef SYM

static struct dlshim idn_loader = {
        .names = {IDN2_SHIM_LIBRARY},
        .install_hint = "install the libidn2-0 package",
        .missing_hint = "libidn2 is too old (need 2.0+)",
        .syms = idn_syms,
        .nsyms = sizeof idn_syms / sizeof idn_syms[0],
        .table = &idn,
        .table_size = sizeof idn,
};

int idn2_shim_load(struct ga_err *err)
{
	return dlshim_load(&idn_loader, err);
}
