/*
 * state — versioned state files. See state.h.
 */
#include "modules/state/state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

bool state_errno_denied(int e)
{
	return e == EACCES || e == EPERM || e == EROFS;
}

/* 0 if this process may use dir (read, write, enter) or create it (its
 * deepest existing ancestor is writable and enterable); else the errno of
 * the check that failed, with err naming the path. */
static int dir_denied(const char *dir, struct ga_err *err)
{
	char *p = xstrdup(dir);
	int rc = 0;
	for (;;) {
		struct stat sb;
		bool whole = strcmp(p, dir) == 0;
		if (stat(p, &sb) == 0) {
			int mode = whole ? R_OK | W_OK | X_OK : W_OK | X_OK;
			if (S_ISDIR(sb.st_mode) && access(p, mode) != 0 &&
			    state_errno_denied(errno)) {
				rc = errno;
				err_set(err,
				        "%s%s: %s (this process runs as uid %ld; the memory "
				        "directory must be readable and writable by it)",
				        whole ? "memory directory "
				              : "cannot create the memory "
				                "directory in ",
				        p, strerror(rc), (long)geteuid());
			}
			break;
		}
		if (errno != ENOENT) {
			if (state_errno_denied(errno)) {
				rc = errno;
				err_set(err,
				        "memory directory %s: %s (this process runs as uid %ld; "
				        "it cannot reach that path)",
				        dir, strerror(rc), (long)geteuid());
			}
			break;
		}
		char *slash = strrchr(p, '/');
		if (!slash)
			break; /* a relative name in the cwd: mkdir says the rest */
		if (slash == p)
			slash[1] = '\0'; /* the parent is "/", which exists */
		else
			*slash = '\0';
	}
	free(p);
	return rc;
}

int state_store_init(struct state_store *st, const char *dir, const char *version,
                     struct ga_err *err)
{
	memset(st, 0, sizeof *st);
	int denied = dir_denied(dir, err);
	if (denied) {
		errno = denied;
		return -1;
	}
	if (fsx_mkdir_p(dir, err) != 0) {
		errno = EIO; /* not a permission problem (that was checked above) */
		return -1;
	}
	st->dir = xstrdup(dir);
	st->version = xstrdup(version);
	return 0;
}

void state_store_free(struct state_store *st)
{
	if (!st)
		return;
	free(st->dir);
	free(st->version);
	memset(st, 0, sizeof *st);
}

const char *state_status_name(enum state_load_status s)
{
	switch (s) {
	case STATE_MISSING:
		return "missing";
	case STATE_LOADED:
		return "loaded";
	case STATE_MIGRATED:
		return "migrated";
	case STATE_RESET:
		return "reset";
	case STATE_CORRUPT:
		return "corrupt";
	case STATE_UNREADABLE:
		return "unreadable";
	}
	return "unknown";
}

static int valid_name(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > STATE_NAME_MAX)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			return 0;
	return 1;
}

static char *state_path(const struct state_store *st, const char *name)
{
	char file[STATE_NAME_MAX + 8];
	snprintf(file, sizeof file, "%s.json", name);
	return fsx_join(st->dir, file);
}

static void set_info(struct state_load_info *info, enum state_load_status s)
{
	if (info)
		info->status = s;
}

static cJSON *corrupt(const char *path, const char *why, struct state_load_info *info)
{
	char *moved = NULL;
	struct ga_err err = {{0}};
	if (fsx_move_aside(path, &moved, &err) != 0) {
		log_kv(LOG_LEVEL_WARN, "state", "corrupt state file could not be moved aside",
		       "file", path, "reason", why, "error", err.msg);
	} else {
		log_kv(LOG_LEVEL_WARN, "state", "corrupt state file moved aside; starting empty",
		       "file", path, "reason", why, "moved_to", moved);
	}
	set_info(info, STATE_CORRUPT);
	if (info)
		snprintf(info->detail, sizeof info->detail, "%s%s%s", why,
		         moved ? "; moved to " : "", moved ? moved : "");
	free(moved);
	return NULL;
}

cJSON *state_load(const struct state_store *st, const char *name, state_migrate_fn migrate,
                  void *ud, struct state_load_info *info)
{
	if (info)
		memset(info, 0, sizeof *info);
	if (!valid_name(name)) {
		set_info(info, STATE_MISSING);
		if (info)
			snprintf(info->detail, sizeof info->detail, "invalid state name '%.64s'",
			         name);
		return NULL;
	}
	char *path = state_path(st, name);
	size_t len = 0;
	struct ga_err err = {{0}};
	errno = 0;
	char *text = fsx_read_file(path, STATE_MAX_BYTES, &len, &err);
	if (!text) {
		if (errno == ENOENT) {
			set_info(info, STATE_MISSING);
			free(path);
			return NULL;
		}
		if (errno != EFBIG) {
			/* Permission or I/O: the file may be fine; this process
			 * cannot read it. Never moved aside. */
			set_info(info, STATE_UNREADABLE);
			if (info) {
				info->sys_errno = errno;
				snprintf(info->detail, sizeof info->detail, "%.*s",
				         (int)sizeof info->detail - 1, err.msg);
			}
			free(path);
			return NULL;
		}
		cJSON *r = corrupt(path, err.msg, info);
		free(path);
		return r;
	}

	cJSON *root = json_parse(text, len, &err);
	free(text);
	if (!root) {
		cJSON *r = corrupt(path, err.msg, info);
		free(path);
		return r;
	}
	const char *version = NULL;
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
	if (!cJSON_IsObject(root) || json_get_string(root, "version", &version, &err) != 0 ||
	    !data) {
		cJSON_Delete(root);
		cJSON *r = corrupt(path,
		                   err.msg[0] ? err.msg
		                              : "not a state envelope {version, savedAt, data}",
		                   info);
		free(path);
		return r;
	}

	cJSON *out = cJSON_DetachItemFromObjectCaseSensitive(root, "data");
	if (strcmp(version, st->version) == 0) {
		cJSON_Delete(root);
		free(path);
		set_info(info, STATE_LOADED);
		return out;
	}

	if (info)
		snprintf(info->from_version, sizeof info->from_version, "%s", version);
	if (migrate && migrate(ud, out, version) == 0) {
		log_kv(LOG_LEVEL_INFO, "state", "state file migrated", "file", path, "from",
		       version, "to", st->version);
		cJSON_Delete(root);
		struct ga_err serr = {{0}};
		if (state_save(st, name, out, time_now_ms(), &serr) != 0)
			log_kv(LOG_LEVEL_WARN, "state", "could not re-save migrated state", "file",
			       path, "error", serr.msg);
		free(path);
		set_info(info, STATE_MIGRATED);
		return out;
	}
	log_kv(LOG_LEVEL_INFO, "state", "state file from another version reset", "file", path,
	       "from", version, "to", st->version);
	cJSON_Delete(out);
	cJSON_Delete(root);
	free(path);
	set_info(info, STATE_RESET);
	return NULL;
}

int state_save(const struct state_store *st, const char *name, const cJSON *data, int64_t now_ms,
               struct ga_err *err)
{
	if (!valid_name(name))
		return err_set(err, "invalid state name '%.64s'", name);
	char iso[TIME_ISO_LEN + 1];
	cJSON *env = cJSON_CreateObject();
	cJSON_AddStringToObject(env, "version", st->version);
	cJSON_AddStringToObject(env, "savedAt", time_format_iso(now_ms, iso));
	cJSON_AddItemToObject(env, "data", cJSON_Duplicate(data, 1));
	char *text = json_print(env);
	cJSON_Delete(env);
	char *path = state_path(st, name);
	size_t n = strlen(text);
	text[n] = '\0';
	int rc = fsx_write_atomic(path, text, n, err);
	free(text);
	free(path);
	return rc;
}
