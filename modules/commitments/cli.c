/* `general-agent commitments`. See cli.h. */
#include "modules/commitments/cli.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "modules/commitments/ledger.h"
#include "modules/journal/journal.h"

struct list {
	FILE *out;
	bool json;
	struct journal *j;
	size_t n;
};

static const char *artifact_of(const struct list *l, const char *id)
{
	if (!l->j)
		return NULL;
	char key[LEDGER_IDEM_KEY_MAX];
	ledger_idem_key(id, key);
	return journal_artifact(l->j, key);
}

static void one(void *ud, const struct ledger_entry *e)
{
	struct list *l = ud;
	const char *artifact = artifact_of(l, e->id);
	char iso[TIME_ISO_LEN + 1];
	l->n++;
	if (l->json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", e->id);
		cJSON_AddStringToObject(o, "status", ledger_status_name(e->status));
		cJSON_AddStringToObject(o, "action", e->action);
		cJSON_AddStringToObject(o, "source", e->source);
		cJSON_AddNumberToObject(o, "attempts", e->attempts);
		cJSON_AddStringToObject(o, "createdAt", time_format_iso(e->created_ms, iso));
		cJSON_AddStringToObject(o, "updatedAt", time_format_iso(e->updated_ms, iso));
		if (e->params)
			cJSON_AddItemToObject(o, "params", cJSON_Duplicate(e->params, 1));
		if (artifact)
			cJSON_AddStringToObject(o, "artifact", artifact);
		if (e->error)
			cJSON_AddStringToObject(o, "error", e->error);
		char *line = cJSON_PrintUnformatted(o);
		fprintf(l->out, "%s\n", line ? line : "{}");
		free(line);
		cJSON_Delete(o);
		return;
	}
	fprintf(l->out, "%s  %-11s %-14s %-6s attempts %d  since %s", e->id,
	        ledger_status_name(e->status), e->action, e->source, e->attempts,
	        time_format_iso(e->updated_ms, iso));
	if (artifact)
		fprintf(l->out, "  %s", artifact);
	else if (e->error)
		fprintf(l->out, "  (%s)", e->error);
	fputc('\n', l->out);
}

int commitments_cli(const char *memory_dir, int argc, char **argv, FILE *out, FILE *err)
{
	struct list l = {.out = out};
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			l.json = true;
		} else {
			fprintf(err,
			        "general-agent commitments: unknown option '%s'\n"
			        "usage: general-agent commitments [--json]\n",
			        argv[i]);
			return 64;
		}
	}
	struct ledger ledger;
	struct ga_err e;
	err_clear(&e);
	if (ledger_open(&ledger, memory_dir, &e) != 0) {
		fprintf(err, "general-agent commitments: %s\n", e.msg);
		return 1;
	}
	err_clear(&e);
	l.j = journal_open(memory_dir, &e); /* NULL: no artifacts to show */
	ledger_each(&ledger, one, &l);
	if (!l.json) {
		fprintf(out,
		        "%zu commitment(s): %zu pending, %zu in progress, %zu failed, %zu "
		        "completed, "
		        "%zu abandoned\n",
		        l.n, ledger_count(&ledger, LEDGER_PENDING),
		        ledger_count(&ledger, LEDGER_IN_PROGRESS),
		        ledger_count(&ledger, LEDGER_FAILED),
		        ledger_count(&ledger, LEDGER_COMPLETED),
		        ledger_count(&ledger, LEDGER_ABANDONED));
	}
	journal_close(l.j);
	ledger_close(&ledger);
	return 0;
}
