/*
 * decision — the room's space_decision parse. See decision.h.
 */
#include "modules/participation/decision.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"

void part_decision_clear(struct part_decision *d)
{
	if (!d)
		return;
	free(d->reason);
	free(d->message);
	cmt_list_clear(&d->commitments);
	cJSON_Delete(d->adjust);
	memset(d, 0, sizeof *d);
}

/* --- the decision ------------------------------------------------------ */

int part_decision_from_json(const cJSON *args, bool social_only, struct part_decision *out,
                            struct ga_err *err)
{
	part_decision_clear(out);
	if (!cJSON_IsObject(args))
		return err_set(err, "the decision must be a JSON object");
	const cJSON *speak = cJSON_GetObjectItemCaseSensitive(args, "shouldSpeak");
	if (!speak)
		return err_set(err, "shouldSpeak: required (true or false)");
	if (!cJSON_IsBool(speak))
		return err_set(err, "shouldSpeak: must be a boolean (true or false), not a %s",
		               cJSON_IsString(speak) ? "string" : "non-boolean value");
	char why[CMT_DROP_REASON_MAX];
	if (cmt_take_string(args, "reason", PART_REASON_MAX_BYTES, &out->reason, why, sizeof why) <
	            0 ||
	    cmt_take_string(args, "message", PART_MESSAGE_MAX_BYTES, &out->message, why,
	                    sizeof why) < 0) {
		part_decision_clear(out);
		return err_set(err, "%s", why);
	}
	if (!out->reason)
		out->reason = xstrdup("");
	out->should_speak = cJSON_IsTrue(speak);
	const cJSON *cs = cJSON_GetObjectItemCaseSensitive(args, "commitments");
	if (cs && !cJSON_IsNull(cs) && !cJSON_IsArray(cs)) {
		part_decision_clear(out);
		return err_set(err, "commitments: must be an array of objects");
	}
	cmt_validate(cs, social_only, &out->commitments);
	const cJSON *adj = cJSON_GetObjectItemCaseSensitive(args, "adjustBehavior");
	if (cJSON_IsObject(adj))
		out->adjust = cJSON_Duplicate(adj, true);
	return 0;
}

int part_decision_from_text(const char *text, size_t len, bool social_only,
                            struct part_decision *out, struct ga_err *err)
{
	part_decision_clear(out);
	const char *a = text ? memchr(text, '{', len) : NULL;
	const char *b = NULL;
	for (size_t i = len; text && i > 0; i--)
		if (text[i - 1] == '}') {
			b = text + i - 1;
			break;
		}
	if (!a || !b || b < a)
		return err_set(err,
		               "the model answered in prose with no decision object "
		               "(no {...} in %zu bytes)",
		               len);
	struct ga_err jerr = {{0}};
	cJSON *j = json_parse(a, (size_t)(b - a) + 1, &jerr);
	if (!j)
		return err_set(err, "the model's prose answer holds {...} that is not JSON: %s",
		               jerr.msg);
	int rc = part_decision_from_json(j, social_only, out, err);
	cJSON_Delete(j);
	if (rc == 0)
		out->from_text = true;
	return rc;
}
