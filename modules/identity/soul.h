/*
 * soul — SOUL.md, the agent's immutable core, and its pin.
 *
 * SOUL.md must exist, be valid UTF-8 and hold more than white space. On the
 * first start its SHA-256 is pinned in the memory directory (state file
 * "soul", which survives version upgrades through a migration hook). Every
 * later start compares: a missing, empty or changed SOUL.md refuses to run
 * (the daemon exits 78) with a message that tells the owner what changed and
 * how to re-pin it on purpose (`general-agent soul --accept`).
 *
 * A pin that exists but cannot be read (permission, I/O) is never taken
 * for corrupt or absent: the check fails (SOUL_DENIED for a permission
 * problem, SOUL_INVALID otherwise), the pin stays where it is, and nothing is
 * pinned again. An empty or missing SOUL.md before any pin asks the owner to
 * write one (what it is for, where); after a pin, to restore it. So an
 * edited or truncated SOUL.md never goes unnoticed (runtime-bluesky.md
 * §2.1).
 */
#ifndef GA_MODULES_IDENTITY_SOUL_H
#define GA_MODULES_IDENTITY_SOUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules/state/state.h"

#define SOUL_MAX_BYTES  (256 * 1024)
#define SOUL_STATE_NAME "soul"

enum soul_status {
	SOUL_OK,      /* matches the pin */
	SOUL_PINNED,  /* first start (or --accept): pinned now */
	SOUL_MISSING, /* no SOUL.md */
	SOUL_EMPTY,   /* only white space */
	SOUL_INVALID, /* not valid UTF-8, or too large, or unreadable */
	SOUL_CHANGED, /* differs from the pin */
	SOUL_DENIED,  /* SOUL.md or its pin exists but this process may not
	               * read it (EACCES, EPERM): nothing was moved or re-pinned */
};

struct soul {
	char *text; /* owned; NUL-terminated */
	size_t len;
	char sha256[65];
};

struct soul_check {
	enum soul_status status;
	char pinned_sha256[65]; /* "" when nothing was pinned */
	char pinned_at[32];
	char message[1024]; /* a sentence for the owner */
};

enum soul_check_mode {
	SOUL_CHECK_READONLY,  /* never writes: `doctor`; an unpinned SOUL is OK */
	SOUL_CHECK_PIN_FIRST, /* daemon start: pin when nothing is pinned yet */
	SOUL_CHECK_ACCEPT,    /* `soul --accept`: re-pin whatever valid SOUL is there */
};

/* Checks SOUL.md at path against the pin in st (st may be NULL in
 * READONLY mode only: SOUL.md alone is checked, as if nothing were pinned). On success (OK, PINNED,
 * or an unpinned SOUL in READONLY mode, reported as SOUL_OK with an empty pinned_sha256) returns 0
 * and, if out is non-NULL, fills it (free with soul_free). Otherwise returns -1 and res->message
 * says what is wrong and what to do. */
int soul_check(const char *path, const struct state_store *st, int64_t now_ms,
               enum soul_check_mode mode, struct soul *out, struct soul_check *res);

void soul_free(struct soul *s);

const char *soul_status_name(enum soul_status s);

/* The first `n` sentences of the SOUL text (markdown headings skipped,
 * white space collapsed), at most cap-1 bytes, cut at a character boundary.
 * Returns buf. */
char *soul_essence(const char *text, int n, char *buf, size_t cap);

#endif
