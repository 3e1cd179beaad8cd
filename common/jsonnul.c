/*
 * jsonnul — see jsonnul.h.
 */
#include "common/jsonnul.h"

#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/xalloc.h"

/* Calls fn(at) for each "\u0000" escape inside a string of buf (at = the
 * offset of its backslash); returns how many. Only the string structure is
 * followed: for valid JSON this finds exactly the NUL escapes, and invalid
 * JSON is refused by the validation pass whatever was found. */
static size_t find_nul_escapes(const char *buf, size_t len, size_t *at, size_t cap)
{
	size_t n = 0;
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];
		if (!in_string) {
			if (c == '"')
				in_string = true;
			continue;
		}
		if (c == '"') {
			in_string = false;
		} else if (c == '\\' && i + 1 < len) {
			if (buf[i + 1] == 'u' && i + 5 < len &&
			    memcmp(buf + i + 2, "0000", 4) == 0) {
				if (at && n < cap)
					at[n] = i;
				n++;
			}
			i += buf[i + 1] == 'u' ? 5 : 1;
		}
	}
	return n;
}

cJSON *json_parse_nul(const char *buf, size_t len, struct ga_err *err)
{
	size_t n = buf ? find_nul_escapes(buf, len, NULL, 0) : 0;
	if (n == 0)
		return json_parse(buf, len, err);

	size_t *at = xcalloc(n, sizeof *at);
	find_nul_escapes(buf, len, at, n);
	/* Pass 1: the same text with "\u0001" for each "\u0000" must be
	 * strictly valid (same structure, same UTF-8 check). */
	char *check = xmalloc(len);
	memcpy(check, buf, len);
	for (size_t k = 0; k < n; k++)
		check[at[k] + 5] = '1';
	cJSON *v = json_parse(check, len, err);
	free(check);
	if (!v) {
		free(at);
		return NULL;
	}
	cJSON_Delete(v);

	/* Pass 2: each six-byte escape becomes the one-byte marker, which
	 * cJSON copies into the string like any byte above 0x7F. */
	char *marked = xmalloc(len + 1);
	size_t out = 0, from = 0;
	for (size_t k = 0; k < n; k++) {
		memcpy(marked + out, buf + from, at[k] - from);
		out += at[k] - from;
		marked[out++] = JSON_NUL_MARK;
		from = at[k] + 6;
	}
	memcpy(marked + out, buf + from, len - from);
	out += len - from;
	marked[out] = '\0';
	free(at);
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(marked, out, &end, 0);
	free(marked);
	if (!root)
		err_set(err, "invalid JSON: cJSON could not parse this value");
	return root;
}

bool json_has_nul_mark(const char *s)
{
	return s && strchr(s, JSON_NUL_MARK) != NULL;
}

size_t json_unmark_nul(char *s)
{
	size_t len = strlen(s);
	for (char *p = s; (p = memchr(p, JSON_NUL_MARK, len - (size_t)(p - s))); p++)
		*p = '\0';
	return len;
}

int json_put_string_nul(struct strbuf *sb, const char *s, size_t len)
{
	return sb_put_json_string_marked(sb, s, len, (unsigned char)JSON_NUL_MARK);
}
