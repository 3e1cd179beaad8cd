/* One message's story, checked to be one walk. See support_story.h. */
#include "support_story.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

static const char *const stages[] = {"event", "gate", "compose", "validator", "outbound", "record"};

static int stage_index(const char *s)
{
	for (int i = 0; s && i < (int)(sizeof stages / sizeof *stages); i++)
		if (strcmp(s, stages[i]) == 0)
			return i;
	return -1;
}

int story_id_of(const char *home, const char *text, char *id, size_t cap)
{
	char *log = home_read(home, "memory/decisions.jsonl");
	int rc = -1;
	for (char *save = NULL, *line = log ? strtok_r(log, "\n", &save) : NULL; line && rc;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(j, "stage"));
		const char *mid = cJSON_GetStringValue(cJSON_GetObjectItem(j, "messageId"));
		const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(j, "reason"));
		if (stage && mid && reason && strcmp(stage, "event") == 0 && strstr(reason, text)) {
			snprintf(id, cap, "%s", mid);
			rc = 0;
		}
		cJSON_Delete(j);
	}
	free(log);
	return rc;
}

bool story_is_one_walk(const char *home, const char *id, const char *record_rule, char *why,
                       size_t cap)
{
	char *out = NULL, *err = NULL;
	int code =
	        proc_run(home, (const char *const[]){"why", id, "--json", NULL}, NULL, &out, &err);
	bool ok = code == 0;
	if (!ok)
		snprintf(why, cap, "`general-agent why %s --json` exited %d: %s", id, code,
		         err ? err : "");
	int last = -1, records = 0;
	const char *last_rule = NULL;
	char *copy = out ? strdup(out) : NULL;
	for (char *save = NULL, *line = ok && copy ? strtok_r(copy, "\n", &save) : NULL; line && ok;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		const char *stage = cJSON_GetStringValue(cJSON_GetObjectItem(j, "stage"));
		const char *rule = cJSON_GetStringValue(cJSON_GetObjectItem(j, "rule"));
		int s = stage_index(stage);
		if (s < 0) {
			ok = false;
			snprintf(why, cap, "a line that is not a decision: %.200s", line);
		} else if (s < last) {
			ok = false;
			snprintf(why, cap, "%s after %s: not in stage order:\n%s", stage,
			         stages[last], out);
		} else if (records) {
			ok = false;
			snprintf(why, cap, "a decision after the record:\n%s", out);
		}
		if (s == 5) {
			records++;
			last_rule = rule;
			if (ok && record_rule && (!rule || strcmp(rule, record_rule) != 0)) {
				ok = false;
				snprintf(why, cap, "the record is %s, not %s:\n%s",
				         rule ? rule : "?", record_rule, out);
			}
		}
		if (s > last)
			last = s;
		cJSON_Delete(j);
	}
	if (ok && records != 1) {
		ok = false;
		snprintf(why, cap, "%d record decisions (one expected)%s:\n%s", records,
		         last_rule ? "" : ", none", out ? out : "");
	}
	free(copy);
	free(out);
	free(err);
	return ok;
}
