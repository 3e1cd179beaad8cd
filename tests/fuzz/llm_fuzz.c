/*
 * Fuzz target for what the model gateway reads from outside: the chat
 * completion answer (llm_parse_http, every status class and content type),
 * Retry-After values, tool-call arguments checked against a tool schema,
 * the JSON-object extraction used when a required tool is answered in
 * plain text, and {{variable}} substitution. Invariants checked:
 *   - a successful parse has a finish_reason and tool calls with id, name
 *     and arguments; a failure always has a message;
 *   - an extracted JSON object parses and is an object;
 *   - truncation never returns more than the limit plus its note.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/llm/llm.h"
#include "common/json.h"
#include "modules/compose/compose.h"
#include "modules/compose/schema.h"
#include "modules/skills/skills.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char decision_schema[] =
        "{\"type\":\"object\",\"properties\":{\"shouldSpeak\":{\"type\":\"boolean\"},\"reason\":"
        "{\"type\":\"string\",\"maxLength\":40},\"commitments\":{\"type\":\"array\",\"maxItems\":4,"
        "\"items\":{\"type\":\"object\",\"properties\":{\"type\":{\"type\":\"string\",\"enum\":["
        "\"create_issue\",\"post_bluesky\"]},\"issue_number\":{\"type\":\"integer\",\"minimum\":1}}"
        ","
        "\"required\":[\"type\"]}}},\"required\":[\"shouldSpeak\"],\"additionalProperties\":false}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const long statuses[] = {200, 200, 200, 429, 502, 401, 402, 403, 404, 400, 301, 0};
	long status = statuses[data[0] % (sizeof statuses / sizeof statuses[0])];
	const char *ctype = (data[0] & 0x10) ? "text/html" : "application/json";
	const char *body = (const char *)data + 1;
	size_t len = size - 1;

	struct llm_config cfg;
	llm_config_init(&cfg, "https://ai-gateway.example/v1",
	                (data[0] & 0x20) ? "k3y-secret" : NULL, "m");
	struct llm_response resp;
	struct llm_error err;
	enum llm_error_kind k = llm_parse_http(
	        &cfg, status ? HTTP_OK : HTTP_ERR_TRANSPORT, "transport failed", status, ctype,
	        (data[0] & 0x40) ? "120" : NULL, body, len, 0, &resp, &err);
	if (k == LLM_OK) {
		if (!resp.finish_reason)
			abort();
		for (size_t i = 0; i < resp.n_tool_calls; i++)
			if (!resp.tool_calls[i].id || !resp.tool_calls[i].name ||
			    !resp.tool_calls[i].arguments)
				abort();
	} else if (!err.msg[0]) {
		abort();
	}
	llm_response_free(&resp);
	llm_config_free(&cfg);

	char *text = malloc(len + 1);
	memcpy(text, body, len);
	text[len] = '\0';

	int64_t delay;
	http_parse_retry_after(text, 1700000000000, &delay);

	char *obj = compose_extract_json_object(text);
	if (obj) {
		cJSON *v = json_parse(obj, strlen(obj), NULL);
		if (!v || !cJSON_IsObject(v))
			abort();
		cJSON *schema = cJSON_Parse(decision_schema);
		char msg[256];
		schema_validate(schema, v, msg, sizeof msg);
		cJSON_Delete(schema);
		cJSON_Delete(v);
		free(obj);
	}

	char *cut = compose_truncate(text, 64);
	if (strlen(cut) > 64 * 4 + 128)
		abort();
	free(cut);

	struct skill_var vars[] = {{"a", "x"}, {"who", "{{who}}"}};
	struct ga_err e;
	char *r = skills_substitute(text, vars, 2, "fuzz", &e);
	free(r);
	free(text);
	return 0;
}
