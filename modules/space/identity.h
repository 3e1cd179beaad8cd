/*
 * modules/space/identity — who this agent says it is in the agent-space:
 * the identity summary and the stable agent id.
 *
 * Summary (space-protocol.md §7.3, runtime-bluesky.md §2.1, §2.3), built
 * from SOUL.md and SELF.md as ts-general-agent builds it, so a room's
 * members read the same fields from every agent:
 *   coreValues       the first five fragments of SOUL.md (split on '.',
 *                    ',' and ';', headings skipped, white space collapsed)
 *                    that are 4..39 characters long;
 *   currentInterests the first five bullets of SELF.md "## Current
 *                    Interest(s)";
 *   voice            the first non-empty line of "## Voice", at most 120
 *                    bytes (cut at a character boundary), else
 *                    "unique voice";
 *   expertise        the first five bullets of "## What I'm Learning";
 *   recentWork       given by the caller (at most 100 bytes), else
 *                    "No recent completed work";
 *   soulEssence      the first three sentences of SOUL.md.
 * The runtime adds "githubLogin" when GitHub is in use (runtime.h).
 * List items are cut to SPACE_IDENTITY_ITEM_MAX bytes so the summary stays
 * small (the room repeats it in every presence).
 *
 * Agent id: "<name>-<ms since epoch, base 36>", the form peers expect
 * (§7.2), made once and kept in the state file "space_identity" ({"name",
 * "id"}), so the id survives restarts; a changed AGENT_NAME gets a fresh id.
 */
#ifndef GA_MODULES_SPACE_IDENTITY_H
#define GA_MODULES_SPACE_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "adapters/space/wire.h"
#include "modules/identity/self.h"
#include "modules/state/state.h"

#define SPACE_IDENTITY_STATE_NAME "space_identity"
#define SPACE_IDENTITY_ITEM_MAX   120
#define SPACE_ESSENCE_MAX         1024

/* Fills out (free with spc_identity_free). soul_text and self may be NULL
 * (empty lists, defaults); recent_work may be NULL. */
void space_identity_build(const char *soul_text, const struct self_doc *self,
                          const char *recent_work, struct spc_identity *out);

/* "<name>-<base36 ms>" into out (cap bytes). Returns out. */
char *space_identity_make_id(const char *name, int64_t now_ms, char *out, size_t cap);

/* The persisted id for name, made and saved when missing, invalid or
 * made for another name. st may be NULL (then a fresh id, not saved).
 * A failed save is logged, not fatal. out must hold SPC_ID_MAX_UNITS*4+1
 * bytes at least (use SPACE_ID_BUF). Returns out. */
#define SPACE_ID_BUF 512
char *space_identity_agent_id(const struct state_store *st, const char *name, int64_t now_ms,
                              char out[SPACE_ID_BUF]);

#endif
