/*
 * dlshim — load a shared library with dlopen() on first use and fill a
 * struct of function pointers from a {symbol name, offset} table.
 *
 * Why: some libraries (libcurl with OpenSSL, libmicrohttpd with GnuTLS)
 * cost megabytes of resident memory the moment they are mapped, so the
 * daemon loads them only when a feature that needs them starts
 * (adapters/http/curl_shim.h, modules/dashboard/mhd_shim.h). This is the
 * one loader those shims share.
 *
 * Rules of use:
 * - One `struct dlshim` per library, static storage, fields before `state`
 *   filled by a designated initialiser (DLSHIM_SYM builds the table).
 * - dlshim_load() is idempotent and its outcome is sticky: after the first
 *   success it returns 0 at once; after the first failure it returns -1
 *   with the same message, without trying again (a missing library does not
 *   appear while the process runs, and a retry per request would only cost
 *   a failed dlopen each time).
 * - On failure the whole table is zeroed: nobody can call through a
 *   half-filled table.
 * - The handle stays open for the life of the process: these libraries keep
 *   global state (TLS libraries, atexit handlers) that must not be unmapped.
 * - Not thread-safe: call it from the thread that owns the feature (the
 *   libuv loop thread in this daemon), before any call through the table.
 */
#ifndef GA_COMMON_DLSHIM_H
#define GA_COMMON_DLSHIM_H

#include <stddef.h>

#include "err.h"

/* At most this many library names are tried (the rest are ignored). */
#define DLSHIM_NAMES_MAX 4

struct dlshim_sym {
	const char *name; /* symbol passed to dlsym() */
	size_t offset;    /* where its address goes in the table */
};

/* One entry of a table for `struct type`: field `field` gets symbol `sym`. */
#define DLSHIM_SYM(type, field, sym)                                                               \
	{                                                                                          \
		(sym), offsetof(type, field)                                                       \
	}

struct dlshim {
	/* Filled by the owner. SONAMEs tried in order; the first NULL ends
	 * the list. */
	const char *names[DLSHIM_NAMES_MAX];
	/* What a user does when none loads: "install the libcurl4 package". */
	const char *install_hint;
	/* What a missing symbol means: "libcurl is too old (need 7.85+)". */
	const char *missing_hint;
	const struct dlshim_sym *syms;
	size_t nsyms;
	void *table;       /* struct of function pointers to fill */
	size_t table_size; /* sizeof that struct; offsets are checked against it */
	int dlopen_flags;  /* 0 means RTLD_NOW | RTLD_LOCAL */

	/* Owned by dlshim_load(). */
	int state;                    /* 0 not tried, 1 loaded, -1 failed */
	const char *loaded_name;      /* the name that loaded, once state is 1 */
	char failure[GA_ERR_MSG_MAX]; /* the sticky message, once state is -1 */
};

/* Loads the first of s->names that dlopen() accepts and resolves every
 * symbol of s->syms into s->table. Returns 0, or -1 with err (may be NULL)
 * holding a sentence naming the library and what is missing:
 *   "cannot load libcurl.so.4 (<dlerror>): install the libcurl4 package"
 *   "libcurl.so.4 has no curl_url_strerror: libcurl is too old (need 7.85+)"
 * A table entry whose offset does not fit table_size, or an empty name list,
 * is refused the same way (a programming error, named in the message). */
int dlshim_load(struct dlshim *s, struct ga_err *err);

#endif
