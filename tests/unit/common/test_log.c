/* log: text and JSON lines, levels, quoting, the length bound, and secret
 * redaction everywhere a secret could show up. Output goes to an
 * open_memstream FILE so every line can be inspected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"

static char *cap_buf;
static size_t cap_len;
static FILE *cap_file;

static void cap_begin(enum log_level lvl, int json)
{
	cap_buf = NULL;
	cap_len = 0;
	cap_file = open_memstream(&cap_buf, &cap_len);
	assert_non_null(cap_file);
	log_init(lvl, json, cap_file);
}

/* Returns everything written since cap_begin (caller frees). */
static char *cap_end(void)
{
	fclose(cap_file);
	cap_file = NULL;
	log_init(LOG_LEVEL_INFO, 0, NULL);
	char *s = cap_buf;
	cap_buf = NULL;
	return s;
}

static int teardown(void **state)
{
	if (cap_file) {
		fclose(cap_file);
		cap_file = NULL;
		free(cap_buf);
	}
	log_clear_secrets();
	log_init(LOG_LEVEL_INFO, 0, NULL);
	return 0;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Parses a one-line JSON log record (with its '\n'). */
static cJSON *parse_line(const char *s)
{
	size_t len = strlen(s);
	assert_true(len > 0);
	assert_int_equal(s[len - 1], '\n');
	assert_int_equal(count_lines(s), 1);
	cJSON *v = cJSON_ParseWithLength(s, len - 1);
	if (!v)
		fail_msg("not JSON: %s", s);
	return v;
}

static const char *jstr(const cJSON *v, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(v, k);
	if (!cJSON_IsString(it))
		fail_msg("field %s is not a string", k);
	return it->valuestring;
}

static void test_text_format(void **state)
{
	cap_begin(LOG_LEVEL_DEBUG, 0);
	log_kv(LOG_LEVEL_INFO, "space", "member joined", "name", "Ada", "id", "a b");
	char *out = cap_end();
	/* "2026-11-22T10:00:00.000Z INFO  space: member joined name=Ada id=\"a b\"\n" */
	assert_true(strlen(out) > TIME_ISO_LEN);
	char ts[TIME_ISO_LEN + 1];
	memcpy(ts, out, TIME_ISO_LEN);
	ts[TIME_ISO_LEN] = '\0';
	int64_t ms;
	assert_int_equal(time_parse_iso(ts, &ms), 0);
	assert_string_equal(out + TIME_ISO_LEN,
	                    " INFO  space: member joined name=Ada id=\"a b\"\n");
	free(out);

	cap_begin(LOG_LEVEL_DEBUG, 0);
	log_debug("c", "n=%d", 5);
	log_warn("c", "w");
	log_error(NULL, "e");
	log_kv(LOG_LEVEL_INFO, "c", "m", "count", LOG_INT(-42));
	out = cap_end();
	assert_int_equal(count_lines(out), 4);
	assert_non_null(strstr(out, " DEBUG c: n=5\n"));
	assert_non_null(strstr(out, " WARN  c: w\n"));
	assert_non_null(strstr(out, " ERROR -: e\n"));
	assert_non_null(strstr(out, " INFO  c: m count=-42\n"));
	free(out);
}

static void test_text_quoting(void **state)
{
	cap_begin(LOG_LEVEL_DEBUG, 0);
	log_kv(LOG_LEVEL_INFO, "q", "m", "sp", "a b", "qt", "say \"hi\"", "eq", "a=b", "empty", "",
	       "nl", "a\nb", "bs", "c:\\x", "nul", NULL, "plain", "caf\xc3\xa9", "bad key!", "v");
	char *out = cap_end();
	assert_non_null(strstr(out, " sp=\"a b\""));
	assert_non_null(strstr(out, " qt=\"say \\\"hi\\\"\""));
	assert_non_null(strstr(out, " eq=\"a=b\""));
	assert_non_null(strstr(out, " empty=\"\""));
	assert_non_null(strstr(out, " nl=\"a\\nb\""));
	assert_non_null(strstr(out, " bs=\"c:\\\\x\""));
	assert_non_null(strstr(out, " nul=(null)"));
	assert_non_null(strstr(out, " plain=caf\xc3\xa9"));
	assert_non_null(strstr(out, " bad_key_=v"));
	assert_int_equal(count_lines(out), 1);
	free(out);

	/* control characters and invalid UTF-8 in a message stay on one line,
	 * and the line stays valid UTF-8 */
	cap_begin(LOG_LEVEL_DEBUG, 0);
	log_write(LOG_LEVEL_INFO, "q", "line1\nline2\r\x01\xff", NULL);
	out = cap_end();
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, "line1\\nline2\\r\\x01\\xff\n"));
	assert_true(utf8_valid(out, strlen(out)));
	free(out);
}

static void test_json_format(void **state)
{
	cap_begin(LOG_LEVEL_DEBUG, 1);
	log_kv(LOG_LEVEL_WARN, "space", "member \"joined\"\n", "name", "Ada", "id", "a b", "nul",
	       NULL, "ctl", "\x01\t", "uni", "caf\xc3\xa9", "bad", "x\xffy");
	char *out = cap_end();
	cJSON *v = parse_line(out);
	int64_t ms;
	assert_int_equal(time_parse_iso(jstr(v, "ts"), &ms), 0);
	assert_string_equal(jstr(v, "level"), "warn");
	assert_string_equal(jstr(v, "component"), "space");
	assert_string_equal(jstr(v, "msg"), "member \"joined\"\n");
	assert_string_equal(jstr(v, "name"), "Ada");
	assert_string_equal(jstr(v, "id"), "a b");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(v, "nul")));
	assert_string_equal(jstr(v, "ctl"), "\x01\t");
	assert_string_equal(jstr(v, "uni"), "caf\xc3\xa9");
	assert_string_equal(jstr(v, "bad"), "x\xef\xbf\xbdy"); /* U+FFFD */
	/* JSON.stringify-style escaping on the wire */
	assert_non_null(strstr(out, "\"ctl\":\"\\u0001\\t\""));
	assert_non_null(strstr(out, "\"msg\":\"member \\\"joined\\\"\\n\""));
	assert_string_equal(cJSON_GetArrayItem(v, 0)->string, "ts");
	cJSON_Delete(v);
	free(out);
}

static void test_level_filtering(void **state)
{
	enum log_level l;
	assert_int_equal(log_level_parse("debug", &l), 0);
	assert_int_equal(l, LOG_LEVEL_DEBUG);
	assert_int_equal(log_level_parse("WARN", &l), 0);
	assert_int_equal(l, LOG_LEVEL_WARN);
	assert_int_equal(log_level_parse("Off", &l), 0);
	assert_int_equal(l, LOG_LEVEL_OFF);
	assert_int_equal(log_level_parse("verbose", &l), -1);
	assert_int_equal(log_level_parse(NULL, &l), -1);
	assert_string_equal(log_level_name(LOG_LEVEL_ERROR), "error");

	cap_begin(LOG_LEVEL_WARN, 0);
	assert_int_equal(log_get_level(), LOG_LEVEL_WARN);
	log_debug("c", "d1");
	log_info("c", "i1");
	log_warn("c", "w1");
	log_error("c", "e1");
	log_set_level(LOG_LEVEL_ERROR);
	log_warn("c", "w2");
	log_set_level(LOG_LEVEL_OFF);
	log_error("c", "e2");
	log_set_level(LOG_LEVEL_DEBUG);
	log_debug("c", "d2");
	log_write(LOG_LEVEL_OFF, "c", "never", NULL); /* OFF is not a level to write at */
	char *out = cap_end();
	assert_int_equal(count_lines(out), 3);
	assert_null(strstr(out, "d1"));
	assert_null(strstr(out, "i1"));
	assert_non_null(strstr(out, "w1"));
	assert_non_null(strstr(out, "e1"));
	assert_null(strstr(out, "w2"));
	assert_null(strstr(out, "e2"));
	assert_non_null(strstr(out, "d2"));
	assert_null(strstr(out, "never"));
	free(out);
}

static void test_log_format_env(void **state)
{
	setenv("LOG_FORMAT", "JSON", 1);
	cap_begin(LOG_LEVEL_INFO, -1);
	log_info("env", "hello");
	char *out = cap_end();
	cJSON *v = parse_line(out);
	assert_string_equal(jstr(v, "msg"), "hello");
	cJSON_Delete(v);
	free(out);

	setenv("LOG_FORMAT", "text", 1);
	cap_begin(LOG_LEVEL_INFO, -1);
	log_info("env", "hello");
	out = cap_end();
	assert_non_null(strstr(out, " INFO  env: hello\n"));
	free(out);

	/* an explicit choice wins over the environment */
	setenv("LOG_FORMAT", "json", 1);
	cap_begin(LOG_LEVEL_INFO, 0);
	log_info("env", "hello");
	out = cap_end();
	assert_int_not_equal(out[0], '{');
	free(out);

	unsetenv("LOG_FORMAT");
	cap_begin(LOG_LEVEL_INFO, -1);
	log_info("env", "hello");
	out = cap_end();
	assert_int_not_equal(out[0], '{');
	free(out);
}

#define TRUNC_MARK "\xe2\x80\xa6[truncated]"

static void test_line_length_bound(void **state)
{
	size_t big = LOG_LINE_MAX * 3;
	char *msg = malloc(big + 1);
	/* multi-byte characters so a byte cut would split one */
	for (size_t i = 0; i + 2 < big; i += 2)
		memcpy(msg + i, "\xc3\xa9", 2);
	msg[big - (big % 2)] = '\0';

	for (int json = 0; json <= 1; json++) {
		cap_begin(LOG_LEVEL_INFO, json);
		log_write(LOG_LEVEL_INFO, "c", msg, NULL);
		log_info("c", "%s", msg);
		log_kv(LOG_LEVEL_INFO, "c", "m", "k", msg);
		log_kv(LOG_LEVEL_INFO, "c", "m", "k1", msg, "k2", "v2");
		char *out = cap_end();
		assert_int_equal(count_lines(out), 4);
		assert_true(utf8_valid(out, strlen(out)));
		char *line = out;
		for (int i = 0; i < 4; i++) {
			char *nl = strchr(line, '\n');
			size_t len = (size_t)(nl - line) + 1;
			assert_true(len <= LOG_LINE_MAX);
			assert_true(len > LOG_LINE_MAX - 64); /* cut near the limit, not early */
			char *one = strndup(line, len);
			if (json) {
				cJSON *v = parse_line(one);
				const char *m = jstr(v, i < 2 ? "msg" : i == 2 ? "k" : "k1");
				size_t ml = strlen(m);
				assert_true(ml > strlen(TRUNC_MARK));
				assert_string_equal(m + ml - strlen(TRUNC_MARK), TRUNC_MARK);
				assert_null(cJSON_GetObjectItem(v, "k2"));
				cJSON_Delete(v);
			} else {
				assert_non_null(strstr(one, TRUNC_MARK "\n"));
			}
			free(one);
			line = nl + 1;
		}
		free(out);
	}
	free(msg);

	/* many short fields: the cut falls between fields, JSON stays valid */
	const char *kv[2 * 2000 + 1];
	char keys[2000][8];
	for (int i = 0; i < 2000; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = "v";
	}
	kv[4000] = NULL;
	cap_begin(LOG_LEVEL_INFO, 1);
	log_write(LOG_LEVEL_INFO, "c", "m", kv);
	char *out = cap_end();
	assert_true(strlen(out) <= LOG_LINE_MAX);
	cJSON *v = parse_line(out);
	assert_non_null(cJSON_GetObjectItem(v, "k0"));
	assert_null(cJSON_GetObjectItem(v, "k1999"));
	cJSON_Delete(v);
	free(out);
}

#define SECRET "hunter2-SECRET-token"

static void assert_no_secret(const char *out, const char *secret)
{
	if (strstr(out, secret))
		fail_msg("secret leaked in: %s", out);
}

static void test_secret_redaction_everywhere(void **state)
{
	log_add_secret(SECRET);
	for (int json = 0; json <= 1; json++) {
		cap_begin(LOG_LEVEL_DEBUG, json);
		log_write(LOG_LEVEL_INFO, "c", "token is " SECRET, NULL);
		log_info("c", "formatted %s and again %s", SECRET, SECRET);
		log_kv(LOG_LEVEL_INFO, "c", "m", "auth", SECRET);
		log_kv(LOG_LEVEL_INFO, "c", "m", SECRET, "v");
		log_kv(LOG_LEVEL_INFO, "c", "m", "adj", "x" SECRET SECRET "y");
		log_kv(LOG_LEVEL_INFO, "c", "m", "q", "quoted \"" SECRET "\" value");
		log_write(LOG_LEVEL_INFO, SECRET, "in the component", NULL);
		char *out = cap_end();
		assert_int_equal(count_lines(out), 7);
		assert_no_secret(out, SECRET);
		assert_no_secret(out, "hunter2-SECRET"); /* not even a prefix */
		/* the redaction is visible, and the rest of the text survives */
		assert_non_null(strstr(out, "token is [redacted]"));
		assert_non_null(strstr(out, "formatted [redacted] and again [redacted]"));
		assert_non_null(strstr(out, "x[redacted][redacted]y"));
		if (json) {
			char *line = out;
			for (int i = 0; i < 7; i++) {
				char *nl = strchr(line, '\n');
				char *one = strndup(line, (size_t)(nl - line) + 1);
				cJSON_Delete(parse_line(one));
				free(one);
				line = nl + 1;
			}
			assert_non_null(strstr(out, "\"auth\":\"[redacted]\""));
		} else {
			assert_non_null(strstr(out, " auth=[redacted]"));
		}
		free(out);
	}
}

/* A rotated token: forgotten when removed, and rotating far more than
 * LOG_MAX_SECRETS times never fills the table (the newest is redacted). */
static void test_secret_rotation(void **state)
{
	(void)state;
	log_add_secret("long-lived-api-key");
	char tok[64];
	for (int i = 0; i < 10 * LOG_MAX_SECRETS; i++) {
		snprintf(tok, sizeof tok, "session-token-%04d", i);
		log_add_secret(tok);
		if (i + 1 < 10 * LOG_MAX_SECRETS)
			log_remove_secret(tok);
	}
	log_remove_secret(NULL);
	log_remove_secret("never-registered");
	cap_begin(LOG_LEVEL_INFO, 0);
	log_kv(LOG_LEVEL_INFO, "c", "m", "new", tok, "old", "session-token-0000", "key",
	       "long-lived-api-key");
	char *out = cap_end();
	assert_no_secret(out, tok);
	assert_no_secret(out, "long-lived-api-key");
	assert_non_null(strstr(out, "old=session-token-0000")); /* removed: shown */
	assert_null(strstr(out, "more than"));
	free(out);
}

static void test_secret_needing_escapes(void **state)
{
	/* In JSON a '"' or '\' inside the secret is escaped on the wire, so a
	 * redaction that only looked at the finished line would miss it. */
	const char *s = "pa\"ss\\word";
	log_add_secret(s);
	for (int json = 0; json <= 1; json++) {
		cap_begin(LOG_LEVEL_INFO, json);
		log_kv(LOG_LEVEL_INFO, "c", s, "k", s);
		char *out = cap_end();
		assert_no_secret(out, s);
		assert_no_secret(out, "pa\\\"ss\\\\word");
		assert_no_secret(out, "ss\\");
		free(out);
	}
}

static void test_secret_cut_by_length_bound(void **state)
{
	/* Slide the secret across the truncation point: no prefix of it may
	 * survive the cut, in the message or in a value. */
	const char *s = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz";
	size_t sl = strlen(s);
	log_add_secret(s);
	char *buf = malloc(LOG_LINE_MAX + 200);
	for (int json = 0; json <= 1; json++) {
		for (size_t pad = LOG_LINE_MAX - 200; pad < LOG_LINE_MAX + 10; pad += 3) {
			memset(buf, '.', pad);
			memcpy(buf + pad, s, sl + 1);
			cap_begin(LOG_LEVEL_INFO, json);
			log_write(LOG_LEVEL_INFO, "c", buf, NULL);
			log_info("c", "%s", buf);
			log_kv(LOG_LEVEL_INFO, "c", "m", "k", buf);
			char *out = cap_end();
			assert_no_secret(out, "ABCDEFGH");
			free(out);
		}
	}
	/* a message longer than the format buffer: the secret straddles the
	 * vsnprintf cut itself */
	size_t pad = LOG_LINE_MAX - 10;
	memset(buf, '.', pad);
	memcpy(buf + pad, s, sl + 1);
	cap_begin(LOG_LEVEL_INFO, 0);
	log_info("c", "%s", buf);
	char *out = cap_end();
	assert_no_secret(out, "ABCDEFGH");
	free(out);
	free(buf);
}

static void test_secret_across_pieces(void **state)
{
	/* the finished-line pass catches a secret spanning component and message */
	log_add_secret("space: hello");
	cap_begin(LOG_LEVEL_INFO, 0);
	log_info("space", "hello world");
	char *out = cap_end();
	assert_no_secret(out, "space: hello");
	assert_non_null(strstr(out, "[redacted] world"));
	free(out);
}

static void test_secret_rules(void **state)
{
	log_add_secret("abc"); /* too short: ignored, would redact everything */
	log_add_secret(NULL);
	log_add_secret("abcd-1234");
	log_add_secret("abcd-1234"); /* duplicate: no second slot */
	log_add_secret("abcd");      /* a shorter secret inside a longer one */
	cap_begin(LOG_LEVEL_INFO, 0);
	log_info("c", "abc abcd-1234 abcd!");
	char *out = cap_end();
	assert_non_null(strstr(out, "c: abc [redacted] [redacted]!\n"));
	free(out);

	log_clear_secrets();
	cap_begin(LOG_LEVEL_INFO, 0);
	log_info("c", "abcd-1234");
	out = cap_end();
	assert_non_null(strstr(out, "c: abcd-1234\n"));
	free(out);

	/* the limit: the 33rd secret is refused loudly, without its value */
	char sec[LOG_MAX_SECRETS + 1][16];
	cap_begin(LOG_LEVEL_INFO, 0);
	for (int i = 0; i <= LOG_MAX_SECRETS; i++) {
		snprintf(sec[i], sizeof(sec[i]), "secret-%03d", i);
		log_add_secret(sec[i]);
	}
	out = cap_end();
	assert_int_equal(count_lines(out), 1);
	assert_non_null(strstr(out, "ERROR log:"));
	assert_no_secret(out, sec[LOG_MAX_SECRETS]);
	free(out);
	cap_begin(LOG_LEVEL_INFO, 0);
	for (int i = 0; i < LOG_MAX_SECRETS; i++)
		log_kv(LOG_LEVEL_INFO, "c", "m", "v", sec[i]);
	out = cap_end();
	for (int i = 0; i < LOG_MAX_SECRETS; i++)
		assert_no_secret(out, sec[i]);
	free(out);
}

static void test_itoa(void **state)
{
	char b[24];
	assert_string_equal(log_itoa(b, 0), "0");
	assert_string_equal(log_itoa(b, -9223372036854775807LL - 1), "-9223372036854775808");
	assert_string_equal(LOG_INT(123), LOG_TYPED_MARK "123");
	assert_string_equal(log_num((char[LOG_NUM_BUF]){0}, -9223372036854775807LL - 1),
	                    LOG_TYPED_MARK "-9223372036854775808");
}

/* JSON lines carry numbers as numbers and booleans as
 * booleans; text lines show them bare; a forged mark is only a string. */
static void test_typed_values(void **state)
{
	cap_begin(LOG_LEVEL_INFO, 1);
	log_kv(LOG_LEVEL_INFO, "space", "listening", "port", LOG_INT(7777), "neg", LOG_INT(-12),
	       "min", LOG_INT(-9223372036854775807LL - 1), "ok", LOG_BOOL(1), "paused", LOG_BOOL(0),
	       "name", "Ada", "digits", "0042", "frac", LOG_TYPED_MARK "1.5e-3");
	char *out = cap_end();
	cJSON *v = parse_line(out);
	cJSON *port = cJSON_GetObjectItem(v, "port");
	assert_true(cJSON_IsNumber(port));
	assert_int_equal((int)cJSON_GetNumberValue(port), 7777);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(v, "neg")));
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "neg")), -12);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(v, "min")));
	assert_non_null(strstr(out, "\"min\":-9223372036854775808"));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(v, "ok")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(v, "paused")));
	assert_string_equal(jstr(v, "name"), "Ada");
	/* an untyped value that looks like a number stays a string */
	assert_string_equal(jstr(v, "digits"), "0042");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(v, "frac")));
	assert_null(strchr(out, 0x1e));
	cJSON_Delete(v);
	free(out);

	cap_begin(LOG_LEVEL_INFO, 0);
	log_kv(LOG_LEVEL_INFO, "space", "listening", "port", LOG_INT(7777), "ok", LOG_BOOL(1),
	       "paused", LOG_BOOL(0));
	out = cap_end();
	assert_non_null(strstr(out, "space: listening port=7777 ok=true paused=false\n"));
	assert_null(strchr(out, 0x1e));
	free(out);

	/* A value that carries the mark but is no number or boolean (from a
	 * peer, say) cannot inject JSON: it is an escaped string. */
	static const char *const forged[] = {LOG_TYPED_MARK "1,\"admin\":true",
	                                     LOG_TYPED_MARK "",
	                                     LOG_TYPED_MARK "01",
	                                     LOG_TYPED_MARK "1.",
	                                     LOG_TYPED_MARK "-",
	                                     LOG_TYPED_MARK "1e",
	                                     LOG_TYPED_MARK "NaN",
	                                     LOG_TYPED_MARK "truex",
	                                     LOG_TYPED_MARK "{}",
	                                     NULL};
	for (int i = 0; forged[i]; i++) {
		cap_begin(LOG_LEVEL_INFO, 1);
		log_kv(LOG_LEVEL_INFO, "c", "m", "v", forged[i]);
		out = cap_end();
		v = parse_line(out);
		assert_string_equal(jstr(v, "v"), forged[i]);
		assert_null(cJSON_GetObjectItem(v, "admin"));
		cJSON_Delete(v);
		free(out);
		cap_begin(LOG_LEVEL_INFO, 0);
		log_kv(LOG_LEVEL_INFO, "c", "m", "v", forged[i]);
		out = cap_end();
		assert_non_null(strstr(out, "\\x1e"));
		free(out);
	}

	/* A number that is a registered secret is redacted, and the line stays
	 * valid JSON: the value becomes the string "[redacted]". */
	log_add_secret("31415926");
	cap_begin(LOG_LEVEL_INFO, 1);
	log_kv(LOG_LEVEL_INFO, "c", "m", "pin", LOG_INT(31415926), "n", LOG_INT(3));
	out = cap_end();
	v = parse_line(out);
	assert_string_equal(jstr(v, "pin"), "[redacted]");
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(v, "n")));
	assert_null(strstr(out, "31415926"));
	cJSON_Delete(v);
	free(out);
}

/* The echo: a compact copy (no time) of the lines at its level and above,
 * redacted like the log; the log itself keeps every line. */
static void test_echo(void **state)
{
	(void)state;
	char *ebuf = NULL;
	size_t elen = 0;
	FILE *ef = open_memstream(&ebuf, &elen);
	assert_non_null(ef);
	cap_begin(LOG_LEVEL_INFO, 1);
	log_add_secret("hunter2-secret");
	log_set_echo(ef, LOG_LEVEL_WARN);
	log_kv(LOG_LEVEL_INFO, "daemon", "feature on", "feature", "model");
	log_kv(LOG_LEVEL_WARN, "github", "GitHub not usable", "error",
	       "token hunter2-secret refused");
	log_kv(LOG_LEVEL_ERROR, "dashboard", "no dashboard", "port", LOG_INT(7780));
	log_set_echo(NULL, LOG_LEVEL_WARN);
	log_write(LOG_LEVEL_ERROR, "daemon", "after the echo", NULL);
	char *all = cap_end();
	fclose(ef);
	assert_int_equal(count_lines(all), 4);
	assert_string_equal(ebuf,
	                    "WARN  github: GitHub not usable error=\"token [redacted] refused\"\n"
	                    "ERROR dashboard: no dashboard port=7780\n");
	free(all);
	free(ebuf);
}

/* log_to_file: lines go to the file; past its bound it becomes .1 (one
 * backup) and a new file starts; log_close_file goes back to the stream. */
static void test_file_rotation(void **state)
{
	(void)state;
	char dir[] = "/tmp/ga-test-log-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[300], old[310];
	snprintf(path, sizeof path, "%s/daemon.log", dir);
	snprintf(old, sizeof old, "%s.1", path);
	/* a file already over the bound is rotated at open */
	FILE *f = fopen(path, "w");
	for (int i = 0; i < 50; i++)
		fputs("0123456789012345678901234567890123456789\n", f);
	fclose(f);
	cap_begin(LOG_LEVEL_INFO, 0);
	struct ga_err err = {{0}};
	assert_int_equal(log_to_file(path, 1000, &err), 0);
	struct stat st;
	assert_int_equal(stat(old, &st), 0);
	assert_int_equal(st.st_size, 50 * 41);
	for (int i = 0; i < 40; i++)
		log_kv(LOG_LEVEL_INFO, "test", "a line of about sixty bytes", "n", LOG_INT(i));
	/* rotated again while writing: .1 holds up to the bound, the file the rest */
	assert_int_equal(stat(old, &st), 0);
	assert_true(st.st_size >= 1000 && st.st_size < 1000 + LOG_LINE_MAX);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size < 1000);
	log_close_file();
	log_write(LOG_LEVEL_INFO, "test", "back on the stream", NULL);
	char *s = cap_end();
	assert_non_null(strstr(s, "back on the stream"));
	assert_int_equal(count_lines(s), 1);
	free(s);
	/* an unwritable place: an error naming it, and the stream stays */
	cap_begin(LOG_LEVEL_INFO, 0);
	assert_int_equal(log_to_file("/nonexistent-dir/x/daemon.log", 1000, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/x/daemon.log"));
	log_write(LOG_LEVEL_INFO, "test", "still here", NULL);
	s = cap_end();
	assert_non_null(strstr(s, "still here"));
	free(s);
	unlink(path);
	unlink(old);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_teardown(test_text_format, teardown),
	        cmocka_unit_test_teardown(test_text_quoting, teardown),
	        cmocka_unit_test_teardown(test_json_format, teardown),
	        cmocka_unit_test_teardown(test_typed_values, teardown),
	        cmocka_unit_test_teardown(test_level_filtering, teardown),
	        cmocka_unit_test_teardown(test_log_format_env, teardown),
	        cmocka_unit_test_teardown(test_line_length_bound, teardown),
	        cmocka_unit_test_teardown(test_secret_redaction_everywhere, teardown),
	        cmocka_unit_test_teardown(test_secret_rotation, teardown),
	        cmocka_unit_test_teardown(test_secret_needing_escapes, teardown),
	        cmocka_unit_test_teardown(test_secret_cut_by_length_bound, teardown),
	        cmocka_unit_test_teardown(test_secret_across_pieces, teardown),
	        cmocka_unit_test_teardown(test_secret_rules, teardown),
	        cmocka_unit_test_teardown(test_itoa, teardown),
	        cmocka_unit_test_teardown(test_echo, teardown),
	        cmocka_unit_test_teardown(test_file_rotation, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
