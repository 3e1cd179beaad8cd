/*
 * Fuzz target for the parsers in common/ that see outside bytes: json_parse,
 * the UTF-8 functions and time_parse_iso. Besides "does not crash under
 * ASan/UBSan" it checks invariants that must hold for any input:
 *   - json_parse never accepts invalid UTF-8, and what it accepts prints
 *     and re-parses;
 *   - grapheme truncation returns a prefix that is a whole number of
 *     clusters and, for valid input, valid UTF-8;
 *   - case folding is defined exactly for valid UTF-8;
 *   - a parsed timestamp formats and parses back to the same instant.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/timeutil.h"
#include "common/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	bool valid = utf8_valid(s, size);

	struct ga_err err;
	cJSON *v = json_parse(s, size, &err);
	if (v) {
		if (!valid)
			abort();
		char *out = json_print(v);
		cJSON *again = json_parse(out, strlen(out), &err);
		if (!again)
			abort();
		cJSON_Delete(again);
		free(out);
		cJSON_Delete(v);
	} else if (err.msg[0] == '\0') {
		abort(); /* a failure must say why */
	}

	size_t g = utf8_graphemes(s, size);
	if (g > size)
		abort();
	size_t half = utf8_truncate_graphemes(s, size, g / 2);
	if (half > size || utf8_graphemes(s, half) != g / 2)
		abort();
	if (valid && !utf8_valid(s, half))
		abort();

	char *folded = utf8_nfkc_casefold(s, size);
	if ((folded != NULL) != valid)
		abort();
	free(folded);

	/* time_parse_iso wants a C string: bound it and NUL-terminate */
	char ts[64];
	size_t n = size < sizeof(ts) - 1 ? size : sizeof(ts) - 1;
	memcpy(ts, data, n);
	ts[n] = '\0';
	int64_t ms;
	if (time_parse_iso(ts, &ms) == 0) {
		char iso[TIME_ISO_LEN + 1];
		int64_t back;
		time_format_iso(ms, iso);
		/* in the four-digit-year range the round trip is exact */
		if (ms >= -62167219200000LL && ms <= 253402300799999LL &&
		    (time_parse_iso(iso, &back) != 0 || back != ms))
			abort();
	}
	return 0;
}
