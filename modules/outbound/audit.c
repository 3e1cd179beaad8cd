/* The send audit: one JSONL line per attempt, rotated by size. */
#include "modules/outbound/audit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* A copy of s cut at AUDIT_FIELD_MAX bytes on a UTF-8 boundary; invalid
 * UTF-8 is replaced wholesale (the audit must stay valid JSON). */
static char *field(const char *s)
{
	if (!s)
		s = "";
	size_t n = utf8_cut(s, strlen(s), AUDIT_FIELD_MAX);
	if (!utf8_valid(s, n))
		return xstrdup("(invalid UTF-8)");
	return xstrndup(s, n);
}

static void add_str(cJSON *o, const char *k, const char *v)
{
	char *f = field(v);
	cJSON_AddStringToObject(o, k, f);
	free(f);
}

int audit_append(const char *memory_dir, const struct audit_entry *e, struct ga_err *err)
{
	char *path = fsx_join(memory_dir, AUDIT_FILE_NAME);
	if (fsx_mkdir_p(memory_dir, err) < 0 ||
	    fsx_rotate(path, AUDIT_MAX_BYTES, AUDIT_KEEP, err) < 0) {
		free(path);
		return -1;
	}
	cJSON *o = cJSON_CreateObject();
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(o, "time", time_format_iso(e->time_ms, iso));
	cJSON_AddNumberToObject(o, "time_ms", (double)e->time_ms);
	add_str(o, "source", e->source);
	add_str(o, "target", e->target);
	cJSON_AddStringToObject(o, "verdict", e->allowed ? "allow" : "deny");
	if (e->pattern && e->pattern[0])
		add_str(o, "pattern", e->pattern);
	else
		cJSON_AddNullToObject(o, "pattern");
	add_str(o, "reason", e->reason);
	int rc = fsx_append_json(path, o, err);
	cJSON_Delete(o);
	free(path);
	return rc;
}

struct tail {
	cJSON *ring[AUDIT_TAIL_MAX];
	size_t n, head, cap;
};

static int tail_cb(void *ud, const cJSON *v, size_t lineno)
{
	(void)lineno;
	struct tail *t = ud;
	size_t idx = (t->head + t->n) % t->cap;
	if (t->n == t->cap) {
		cJSON_Delete(t->ring[t->head]);
		idx = t->head;
		t->head = (t->head + 1) % t->cap;
	} else {
		t->n++;
	}
	t->ring[idx] = cJSON_Duplicate(v, 1);
	return 0;
}

cJSON *audit_tail(const char *memory_dir, int n)
{
	cJSON *arr = cJSON_CreateArray();
	if (n <= 0)
		return arr;
	struct tail *t = xcalloc(1, sizeof *t);
	t->cap = (size_t)(n > AUDIT_TAIL_MAX ? AUDIT_TAIL_MAX : n);
	char *path = fsx_join(memory_dir, AUDIT_FILE_NAME);
	fsx_jsonl_read(path, 64 * 1024, tail_cb, t, NULL, NULL);
	free(path);
	for (size_t i = 0; i < t->n; i++)
		cJSON_AddItemToArray(arr, t->ring[(t->head + i) % t->cap]);
	free(t);
	return arr;
}
