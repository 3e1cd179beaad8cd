/* Fuzz target: what the conversation store and the decision log read back
 * from disk. The input is parsed as JSON and handed to
 * conv_store_load_json (its bounds must hold whatever the file says; a
 * saved copy must load back to the same JSON) and to
 * decision_record_from_json (a record that parses must write a line that
 * parses back to the same record); the raw bytes also go through
 * utf8_cut, whose result must never end inside a sequence it keeps. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/log.h"
#include "common/utf8.h"
#include "modules/conversation/store.h"
#include "modules/decisions/log.h"

#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c))                                                                          \
			abort();                                                                   \
	} while (0)

static void store_round_trip(const cJSON *v)
{
	struct conv_store *s = conv_store_new();
	if (conv_store_load_json(s, v) == 0) {
		CHECK(conv_store_count(s) <= CONV_STORE_MAX_CONVERSATIONS);
		for (size_t i = 0; i < conv_store_count(s); i++) {
			size_t n;
			const char *key = conv_store_key_at(s, i, &n, NULL);
			CHECK(n <= CONV_STORE_MAX_MESSAGES);
			for (size_t k = 0; k < n; k++)
				CHECK(conv_store_message_at(s, key, k)->text_len <=
				      CONV_STORE_MAX_TEXT_BYTES);
			CHECK(conv_store_derived_chain(s, key, NULL) <= (int64_t)n);
		}
		cJSON *a = conv_store_to_json(s, NULL);
		struct conv_store *t = conv_store_new();
		CHECK(conv_store_load_json(t, a) == 0);
		cJSON *b = conv_store_to_json(t, NULL);
		char *sa = json_print(a), *sb = json_print(b);
		CHECK(strcmp(sa, sb) == 0);
		free(sa);
		free(sb);
		cJSON_Delete(a);
		cJSON_Delete(b);
		conv_store_free(t);
	}
	conv_store_free(s);
}

static void record_round_trip(const cJSON *v)
{
	struct decision_record r;
	if (decision_record_from_json(v, &r) != 0)
		return;
	char *line = decision_record_to_line(&r);
	CHECK(!strchr(line, '\n'));
	cJSON *back = json_parse(line, strlen(line), NULL);
	CHECK(back);
	struct decision_record r2;
	CHECK(decision_record_from_json(back, &r2) == 0);
	CHECK(r2.stage == r.stage && r2.decision.verdict == r.decision.verdict);
	CHECK(strlen(r2.decision.reason) < DECISION_REASON_MAX);
	char *line2 = decision_record_to_line(&r2);
	CHECK(strcmp(line, line2) == 0);
	free(line2);
	cJSON_Delete(back);
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		log_set_level(LOG_LEVEL_OFF);
		quiet = 1;
	}
	const char *s = (const char *)data;
	for (size_t max = 0; max <= size && max < 8; max++) {
		size_t n = utf8_cut(s, size, max);
		CHECK(n <= max);
		if (n < size && n < max) /* cut short: s[n] starts the sequence left out */
			CHECK(((unsigned char)s[n] & 0xC0) != 0x80);
	}
	cJSON *v = json_parse(s, size, NULL);
	if (v) {
		store_round_trip(v);
		record_round_trip(v);
		cJSON_Delete(v);
	}
	return 0;
}
