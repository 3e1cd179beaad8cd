/*
 * ledger — durable commitment intake. See ledger.h.
 */
#include "modules/commitments/ledger.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LEDGER_LINE_MAX (1024 * 1024)

static void remember(struct ledger *l, const char key[17])
{
	memcpy(l->recent[l->next], key, 17);
	l->next = (l->next + 1) % LEDGER_RECENT_MAX;
	if (l->n_recent < LEDGER_RECENT_MAX)
		l->n_recent++;
}

static int seen(const struct ledger *l, const char key[17])
{
	for (unsigned i = 0; i < l->n_recent; i++)
		if (memcmp(l->recent[i], key, 16) == 0)
			return 1;
	return 0;
}

static int load_one(const cJSON *v, size_t lineno, void *ud)
{
	(void)lineno;
	const char *id = json_string_or(v, "id", NULL);
	/* "commitment-<ms>-<16 hex>": the key is the last 16 characters. */
	if (id && strlen(id) > 16) {
		char key[17];
		memcpy(key, id + strlen(id) - 16, 17);
		remember(ud, key);
	}
	return 0;
}

int ledger_open(struct ledger *l, const char *memory_dir, struct ga_err *err)
{
	memset(l, 0, sizeof *l);
	if (fsx_mkdir_p(memory_dir, err) != 0)
		return -1;
	l->path = fsx_join(memory_dir, LEDGER_FILE);
	struct fsx_jsonl_stats st;
	if (fsx_jsonl_read(l->path, LEDGER_LINE_MAX, load_one, l, &st, err) != 0) {
		free(l->path);
		l->path = NULL;
		return -1;
	}
	return 0;
}

void ledger_close(struct ledger *l)
{
	if (!l)
		return;
	free(l->path);
	memset(l, 0, sizeof *l);
}

int ledger_add(struct ledger *l, const char *action, const char *source, const cJSON *params,
	       int64_t now_ms, char id_out[LEDGER_ID_MAX], struct ga_err *err)
{
	if (!l->path)
		return err_set(err, "the commitment ledger could not be opened; nothing can be "
				    "queued (see the log at start)");
	char *p = params ? json_print(params) : xstrdup("{}");
	char *material = xasprintf("%s:%s:%s", source, action, p);
	free(p);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(material, strlen(material), hex);
	free(material);
	char key[17];
	memcpy(key, hex, 16);
	key[16] = '\0';
	snprintf(id_out, LEDGER_ID_MAX, "commitment-%lld-%s", (long long)now_ms, key);
	if (seen(l, key)) {
		log_kv(LOG_LEVEL_INFO, "commitments", "duplicate commitment not queued", "action",
		       action, "source", source, "key", key);
		return LEDGER_DUPLICATE;
	}
	struct ga_err rerr = {{0}};
	if (fsx_rotate(l->path, LEDGER_MAX_BYTES, LEDGER_KEEP, &rerr) < 0)
		log_kv(LOG_LEVEL_WARN, "commitments", "ledger rotation failed", "error", rerr.msg);
	char iso[TIME_ISO_LEN + 1];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", id_out);
	cJSON_AddStringToObject(o, "createdAt", time_format_iso(now_ms, iso));
	cJSON_AddStringToObject(o, "action", action);
	cJSON_AddStringToObject(o, "source", source);
	cJSON_AddStringToObject(o, "status", "pending");
	cJSON_AddItemToObject(o, "params", params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject());
	int rc = fsx_append_json(l->path, o, err);
	cJSON_Delete(o);
	if (rc != 0)
		return -1;
	remember(l, key);
	log_kv(LOG_LEVEL_INFO, "commitments", "commitment queued", "id", id_out, "action", action,
	       "source", source);
	return LEDGER_ADDED;
}
