/*
 * libFuzzer target for what the model and the files hand to
 * modules/reflection: arbitrary bytes in, never a crash, a leak or an
 * out-of-bounds access. Byte 0 picks the parser; the rest is the input:
 *   0  reflect_check_output with the bytes as self_update's arguments
 *   1  voice_parse as a generated answer (fence stripping, placeholders)
 *   2  voice_parse as the file
 *   3  peers: the bytes as a state file's data, migrated then loaded, then
 *      rendered
 *   4  the bytes as a summary (reflect_summary_cut)
 *   5  self_diff of the bytes split at the first NUL against each other
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/reflection/cli.h"
#include "modules/reflection/peers.h"
#include "modules/reflection/reflection.h"
#include "modules/reflection/voice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	size_t len = size - 1;
	switch (data[0] % 6) {
	case 0: {
		struct llm_tool_call call = {.id = "c", .name = REFLECT_TOOL, .arguments = s};
		struct llm_response resp = {.tool_calls = &call, .n_tool_calls = 1};
		struct reflect_result r;
		reflect_check_output(&resp, "# A\n\n## V\nx\n", &r);
		reflect_result_free(&r);
		break;
	}
	case 1:
	case 2: {
		struct voice_phrases p;
		struct ga_err e = {{0}};
		if (voice_parse(s, len, data[0] % 6 == 1, &p, &e) == 0) {
			char *t = voice_to_text(&p, 0);
			free(t);
			voice_phrases_free(&p);
		}
		break;
	}
	case 3: {
		cJSON *v = cJSON_ParseWithLength(s, len);
		if (v) {
			struct peer_memory pm;
			peers_init(&pm);
			if (peers_migrate(NULL, v, "0") == 0)
				peers_from_json(&pm, v);
			peers_apply_notes(&pm, v, 1);
			char *txt = peers_render(&pm, NULL, 0);
			free(txt);
			peers_free(&pm);
			cJSON_Delete(v);
		}
		break;
	}
	case 4: {
		char *c = reflect_summary_cut(s);
		free(c);
		break;
	}
	default: {
		const char *a = s, *b = s + strlen(s);
		FILE *out = fopen("/dev/null", "w");
		if (out) {
			self_diff(a, b, "a", "b", out);
			fclose(out);
		}
		break;
	}
	}
	free(s);
	return 0;
}
