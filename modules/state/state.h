/*
 * state — versioned JSON state files in the memory directory.
 *
 * Each state file NAME.json holds
 *   {"version": "<agent version>", "savedAt": "<ISO-8601>", "data": <any JSON>}
 * and is written atomically (fsx_write_atomic), so a crash leaves either the
 * old or the new file, never a mix.
 *
 * Loading decides between five outcomes (state_load_status):
 *   - missing:  no file yet → start empty;
 *   - loaded:   same version → the data;
 *   - migrated: older/other version and the caller passed a migration hook
 *               that accepted it → the migrated data, re-saved at once with
 *               the current version (discovered peers and the SOUL pin use
 *               this so an upgrade never forgets them);
 *   - reset:    other version and no hook (or the hook refused) → start
 *               empty, logged;
 *   - corrupt:  not JSON, not the envelope above, or larger than
 *               STATE_MAX_BYTES → the file is moved aside as
 *               NAME.json.corrupt-<timestamp>, a warning is logged, start
 *               empty. Never fatal.
 *   - unreadable: the file exists but cannot be read (permission, I/O):
 *               nothing is known about its content, so it is left where it
 *               is, untouched; info->sys_errno and info->detail say why. The
 *               caller decides (the SOUL pin refuses to start: it cannot
 *               tell whether SOUL.md changed).
 */
#ifndef GA_MODULES_STATE_STATE_H
#define GA_MODULES_STATE_STATE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/err.h"

#define STATE_MAX_BYTES (16 * 1024 * 1024)
#define STATE_NAME_MAX  64

enum state_load_status {
	STATE_MISSING,
	STATE_LOADED,
	STATE_MIGRATED,
	STATE_RESET,
	STATE_CORRUPT,
	STATE_UNREADABLE,
};

struct state_store {
	char *dir;     /* owned */
	char *version; /* owned: the running agent's version */
};

/* Migration hook: given the stored data (owned by the caller of the hook;
 * the hook may modify it in place) and the version it was saved with, return
 * 0 to keep it as the current version's data, -1 to reset. */
typedef int (*state_migrate_fn)(void *ud, cJSON *data, const char *from_version);

struct state_load_info {
	enum state_load_status status;
	char from_version[64]; /* for migrated/reset */
	char detail[256];      /* for corrupt: what was wrong; moved-aside path;
	                        * for unreadable: the read error */
	int sys_errno;         /* for unreadable: the errno of the read */
};

/* True for the errno values that mean "not allowed" rather than "broken":
 * EACCES, EPERM, EROFS. */
bool state_errno_denied(int e);

/* Creates dir (mkdir -p) if needed. Returns -1 with err if it cannot; errno
 * is then EACCES, EPERM or EROFS (state_errno_denied) when this process is
 * not allowed to use or create it (err names the path and the uid), and
 * EIO otherwise (a file in the way, a bad path). */
int state_store_init(struct state_store *st, const char *dir, const char *version,
                     struct ga_err *err);
void state_store_free(struct state_store *st);

/* Returns the data (caller frees with cJSON_Delete) for loaded/migrated, NULL
 * otherwise; info (may be NULL) says which. `name` is a bare name such as
 * "soul" (letters, digits, '-', '_'); an invalid name is a corrupt-free error:
 * NULL with info->status = STATE_MISSING and detail set. */
cJSON *state_load(const struct state_store *st, const char *name, state_migrate_fn migrate,
                  void *ud, struct state_load_info *info);

/* Writes the envelope atomically. data is borrowed. */
int state_save(const struct state_store *st, const char *name, const cJSON *data, int64_t now_ms,
               struct ga_err *err);

const char *state_status_name(enum state_load_status s);

#endif
