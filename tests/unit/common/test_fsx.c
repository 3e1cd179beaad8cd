/* fsx: atomic writes (and what a crash leaves behind), JSONL append/read with
 * torn and bad lines, rotation, move-aside, path helpers. Each test works in
 * its own mkdtemp directory, removed afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/log.h"

static char tmpdir[256];

static int setup(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ga-test-fsx-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	return remove(p);
}

static int teardown(void **state)
{
	log_init(LOG_LEVEL_INFO, 0, NULL);
	return nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static char *path_of(const char *name)
{
	return fsx_join(tmpdir, name);
}

static void write_raw(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static char *slurp(const char *path)
{
	struct ga_err e = {{0}};
	char *s = fsx_read_file(path, 1 << 20, NULL, &e);
	if (!s)
		fail_msg("cannot read %s: %s", path, e.msg);
	return s;
}

static void assert_file(const char *path, const char *want)
{
	char *s = slurp(path);
	assert_string_equal(s, want);
	free(s);
}

static int count_entries(void)
{
	DIR *d = opendir(tmpdir);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_atomic_write_replaces(void **state)
{
	char *p = path_of("state.json");
	struct ga_err e = {{0}};
	assert_int_equal(fsx_write_atomic(p, "one", 3, &e), 0);
	assert_file(p, "one");
	assert_int_equal(fsx_write_atomic(p, "second", 6, &e), 0);
	assert_file(p, "second");
	assert_int_equal(fsx_write_atomic(p, "", 0, &e), 0);
	assert_file(p, "");
	assert_int_equal(count_entries(), 1); /* no temp file left */
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	free(p);
}

static void test_atomic_write_crash_leftover(void **state)
{
	char *p = path_of("state.json");
	struct ga_err e = {{0}};
	assert_int_equal(fsx_write_atomic(p, "{\"v\":1}", 7, &e), 0);
	/* a crash after writing half of the temp file, before the rename */
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", p, (long)getpid());
	write_raw(tmp, "{\"v\":2,\"hal", 12);
	char other[512];
	snprintf(other, sizeof(other), "%s.tmp.99999999", p);
	write_raw(other, "junk", 4);
	/* the old content is intact and readable */
	assert_file(p, "{\"v\":1}");
	/* the next write succeeds over the leftover of this pid */
	assert_int_equal(fsx_write_atomic(p, "{\"v\":3}", 7, &e), 0);
	assert_file(p, "{\"v\":3}");
	assert_false(fsx_exists(tmp));
	assert_file(other, "junk"); /* other processes' temps are not ours */

	/* a temp name planted as a symlink is replaced, not written through */
	char *victim = path_of("victim");
	write_raw(victim, "precious", 8);
	assert_int_equal(symlink(victim, tmp), 0);
	assert_int_equal(fsx_write_atomic(p, "{\"v\":4}", 7, &e), 0);
	assert_file(p, "{\"v\":4}");
	assert_file(victim, "precious");
	free(victim);
	free(p);
}

static void test_atomic_write_errors(void **state)
{
	char *p = path_of("no/such/dir/f.json");
	struct ga_err e = {{0}};
	assert_int_equal(fsx_write_atomic(p, "x", 1, &e), -1);
	assert_non_null(strstr(e.msg, p));
	assert_non_null(strstr(e.msg, "No such file or directory"));
	free(p);
}

static void test_read_file(void **state)
{
	char *p = path_of("f.txt");
	char data[100];
	memset(data, 'z', sizeof(data));
	write_raw(p, data, sizeof(data));
	struct ga_err e = {{0}};
	size_t len = 0;
	char *s = fsx_read_file(p, 99, &len, &e);
	assert_null(s);
	assert_non_null(strstr(e.msg, "file is larger than 99 bytes"));
	assert_non_null(strstr(e.msg, p));
	s = fsx_read_file(p, 100, &len, &e);
	assert_non_null(s);
	assert_int_equal(len, 100);
	assert_int_equal(s[100], '\0');
	free(s);
	s = fsx_read_file(p, 1 << 20, NULL, NULL);
	assert_non_null(s);
	free(s);
	s = fsx_read_file(p, SIZE_MAX, &len, &e); /* no wrap-around in the bound */
	assert_non_null(s);
	assert_int_equal(len, 100);
	free(s);
	/* an empty file is an empty string */
	char *empty = path_of("empty");
	write_raw(empty, "", 0);
	s = fsx_read_file(empty, 10, &len, &e);
	assert_non_null(s);
	assert_int_equal(len, 0);
	assert_string_equal(s, "");
	free(s);
	free(empty);
	free(p);

	p = path_of("missing.txt");
	errno = 0;
	assert_null(fsx_read_file(p, 100, &len, &e));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(e.msg, p));
	assert_false(fsx_exists(p));
	free(p);
}

static void test_mkdir_p_and_join(void **state)
{
	char *p = path_of("a/b/c");
	struct ga_err e = {{0}};
	assert_int_equal(fsx_mkdir_p(p, &e), 0);
	assert_true(fsx_exists(p));
	assert_int_equal(fsx_mkdir_p(p, &e), 0); /* already there */
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	char *f = path_of("a/file");
	write_raw(f, "x", 1);
	char *under = path_of("a/file/sub");
	assert_int_equal(fsx_mkdir_p(under, &e), -1);
	assert_non_null(strstr(e.msg, "a/file"));
	assert_int_equal(fsx_mkdir_p(f, &e), -1);
	assert_int_equal(fsx_mkdir_p("", &e), -1);
	free(p);
	free(f);
	free(under);

	const char *cases[][3] = {{"a", "b", "a/b"},    {"a/", "b", "a/b"},
	                          {"a//", "/b", "a/b"}, {"/", "x", "/x"},
	                          {"", "x", "x"},       {"/srv/m", "f.json", "/srv/m/f.json"},
	                          {"//", "x", "/x"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *j = fsx_join(cases[i][0], cases[i][1]);
		assert_string_equal(j, cases[i][2]);
		free(j);
	}
}

struct collected {
	int n;
	int64_t vals[64];
	size_t linenos[64];
	int stop_after;
};

static int collect(void *ud, const cJSON *v, size_t lineno)
{
	struct collected *c = ud;
	const cJSON *a = cJSON_GetObjectItem(v, "a");
	c->vals[c->n] = cJSON_IsNumber(a) ? (int64_t)a->valuedouble : -1;
	c->linenos[c->n] = lineno;
	c->n++;
	return c->stop_after && c->n >= c->stop_after;
}

static void read_jsonl(const char *p, size_t max_line, struct collected *c,
                       struct fsx_jsonl_stats *st)
{
	struct ga_err e = {{0}};
	memset(c, 0, sizeof(*c));
	if (fsx_jsonl_read(p, max_line, collect, c, st, &e) != 0)
		fail_msg("jsonl read failed: %s", e.msg);
}

static void test_jsonl_append_and_read(void **state)
{
	char *p = path_of("log.jsonl");
	struct ga_err e = {{0}};
	for (int i = 1; i <= 3; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "a", i);
		cJSON_AddStringToObject(o, "s", "multi\nline text");
		assert_int_equal(fsx_append_json(p, o, &e), 0);
		cJSON_Delete(o);
	}
	assert_int_equal(fsx_append_line(p, "{\"a\":4}", 7, &e), 0);
	assert_int_equal(fsx_append_line(p, "{\"a\":5}\n{\"a\":6}", 15, &e), -1);
	assert_non_null(strstr(e.msg, "newline"));
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	struct collected c;
	struct fsx_jsonl_stats s;
	read_jsonl(p, 4096, &c, &s);
	assert_int_equal(c.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(c.vals[i], i + 1);
		assert_int_equal(c.linenos[i], (size_t)i + 1);
	}
	assert_int_equal(s.lines_ok, 4);
	assert_int_equal(s.lines_bad, 0);
	assert_false(s.torn_tail);

	/* early stop */
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	assert_int_equal(fsx_jsonl_read(p, 4096, collect, &c, &s, &e), 0);
	assert_int_equal(c.n, 2);
	free(p);

	/* a missing file is zero lines, not an error */
	p = path_of("missing.jsonl");
	read_jsonl(p, 4096, &c, &s);
	assert_int_equal(c.n, 0);
	assert_int_equal(s.lines_ok + s.lines_bad + s.lines_empty, 0);
	free(p);
}

static void test_jsonl_torn_tail(void **state)
{
	char *p = path_of("torn.jsonl");
	const char data[] = "{\"a\":1}\n{\"a\":2}\n{\"a\":3,\"hal";
	write_raw(p, data, sizeof(data) - 1);
	char *logbuf = NULL;
	size_t loglen = 0;
	FILE *lf = open_memstream(&logbuf, &loglen);
	log_init(LOG_LEVEL_INFO, 0, lf);
	struct collected c;
	struct fsx_jsonl_stats s;
	read_jsonl(p, 4096, &c, &s);
	log_init(LOG_LEVEL_INFO, 0, NULL);
	fclose(lf);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.vals[1], 2);
	assert_int_equal(s.lines_ok, 2);
	assert_int_equal(s.lines_bad, 1);
	assert_true(s.torn_tail);
	/* the warning names the file and the line */
	assert_non_null(strstr(logbuf, "WARN  fsx: skipping bad JSONL line"));
	assert_non_null(strstr(logbuf, p));
	assert_non_null(strstr(logbuf, " line=3 "));
	free(logbuf);

	/* a complete value without its '\n' is still delivered */
	write_raw(p, "{\"a\":1}\n{\"a\":2}", 15);
	read_jsonl(p, 4096, &c, &s);
	assert_int_equal(c.n, 2);
	assert_int_equal(s.lines_bad, 0);
	assert_true(s.torn_tail);
	free(p);
}

static void test_jsonl_bad_lines_keep_neighbours(void **state)
{
	char *p = path_of("bad.jsonl");
	/* line 2: invalid JSON, line 3: unclosed object (must not swallow
	 * line 4), line 5: invalid UTF-8, then blank lines */
	const char data[] = "{\"a\":1}\n"
	                    "not json\n"
	                    "{\"a\":3\n"
	                    "{\"a\":4}\n"
	                    "{\"a\":\"\xff\"}\n"
	                    "\n"
	                    "   \r\n"
	                    "{\"a\":8}\r\n"
	                    "{\"a\":9} trailing\n"
	                    "{\"a\":10}\n";
	write_raw(p, data, sizeof(data) - 1);
	struct collected c;
	struct fsx_jsonl_stats s;
	read_jsonl(p, 4096, &c, &s);
	assert_int_equal(c.n, 4);
	int64_t want[] = {1, 4, 8, 10};
	size_t lines[] = {1, 4, 8, 10};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(c.vals[i], want[i]);
		assert_int_equal(c.linenos[i], lines[i]);
	}
	assert_int_equal(s.lines_bad, 4);
	assert_int_equal(s.lines_empty, 2);
	assert_false(s.torn_tail);
	free(p);
}

static void test_jsonl_overlong_lines(void **state)
{
	char *p = path_of("long.jsonl");
	/* exactly max_line bytes is fine; one more is bad */
	char line64[65];
	snprintf(line64, sizeof(line64), "{\"a\":2,\"pad\":\"%0*d\"}", 64 - 16, 0);
	assert_int_equal(strlen(line64), 64);
	char line65[66];
	snprintf(line65, sizeof(line65), "{\"a\":3,\"pad\":\"%0*d\"}", 65 - 16, 0);
	FILE *f = fopen(p, "wb");
	fprintf(f, "{\"a\":1}\n%s\n%s\n{\"a\":4}\n", line64, line65);
	/* a line far longer than the read chunk */
	fputs("{\"a\":5,\"pad\":\"", f);
	for (int i = 0; i < 300000; i++)
		fputc('x', f);
	fputs("\"}\n{\"a\":6}\n", f);
	fclose(f);
	struct collected c;
	struct fsx_jsonl_stats s;
	read_jsonl(p, 64, &c, &s);
	assert_int_equal(c.n, 4);
	int64_t want[] = {1, 2, 4, 6};
	for (int i = 0; i < 4; i++)
		assert_int_equal(c.vals[i], want[i]);
	assert_int_equal(c.linenos[3], 6);
	assert_int_equal(s.lines_bad, 2);
	/* with a big enough limit the long line is fine */
	read_jsonl(p, 400000, &c, &s);
	assert_int_equal(c.n, 6);
	assert_int_equal(s.lines_bad, 0);
	/* an over-long torn tail */
	f = fopen(p, "ab");
	for (int i = 0; i < 100; i++)
		fputc('y', f);
	fclose(f);
	read_jsonl(p, 64, &c, &s);
	assert_int_equal(c.n, 4);
	assert_int_equal(s.lines_bad, 3);
	assert_true(s.torn_tail);
	/* max_line 0: every non-empty line is too long, nothing is delivered */
	read_jsonl(p, 0, &c, &s);
	assert_int_equal(c.n, 0);
	assert_int_equal(s.lines_bad, 7);
	/* a huge limit is a limit, not an allocation */
	read_jsonl(p, SIZE_MAX, &c, &s);
	assert_int_equal(c.n, 6);
	free(p);
}

static void test_rotate(void **state)
{
	char *p = path_of("decisions.jsonl");
	char name[512];
	struct ga_err e = {{0}};
	assert_int_equal(fsx_rotate(p, 10, 3, &e), 0); /* missing: nothing to do */
	write_raw(p, "small", 5);
	assert_int_equal(fsx_rotate(p, 10, 3, &e), 0);
	assert_file(p, "small");
	for (int gen = 1; gen <= 5; gen++) {
		char content[32];
		snprintf(content, sizeof(content), "generation-%d", gen);
		write_raw(p, content, strlen(content));
		assert_int_equal(fsx_rotate(p, 10, 3, &e), 1);
		assert_false(fsx_exists(p));
	}
	for (int i = 1; i <= 3; i++) {
		snprintf(name, sizeof(name), "%s.%d", p, i);
		char want[32];
		snprintf(want, sizeof(want), "generation-%d", 6 - i);
		assert_file(name, want);
	}
	snprintf(name, sizeof(name), "%s.4", p);
	assert_false(fsx_exists(name));
	assert_int_equal(count_entries(), 3);

	/* keep 0: the file is emptied in place, no backups */
	char *q = path_of("other.log");
	write_raw(q, "0123456789abc", 13);
	assert_int_equal(fsx_rotate(q, 10, 0, &e), 1);
	assert_file(q, "");
	snprintf(name, sizeof(name), "%s.1", q);
	assert_false(fsx_exists(name));
	free(q);
	free(p);
}

static void test_move_aside(void **state)
{
	char *p = path_of("state.json");
	struct ga_err e = {{0}};
	char *names[3];
	for (int i = 0; i < 3; i++) {
		char content[8];
		snprintf(content, sizeof(content), "v%d", i);
		write_raw(p, content, strlen(content));
		assert_int_equal(fsx_move_aside(p, &names[i], &e), 0);
		assert_false(fsx_exists(p));
		/* "<path>.corrupt-YYYYMMDDTHHMMSSZ" plus an optional suffix */
		size_t pl = strlen(p);
		assert_memory_equal(names[i], p, pl);
		assert_memory_equal(names[i] + pl, ".corrupt-", 9);
		const char *stamp = names[i] + pl + 9;
		for (int k = 0; k < 16; k++) {
			if (k == 8)
				assert_int_equal(stamp[k], 'T');
			else if (k == 15)
				assert_int_equal(stamp[k], 'Z');
			else
				assert_true(stamp[k] >= '0' && stamp[k] <= '9');
		}
	}
	/* three calls, three files: none overwrote another */
	assert_string_not_equal(names[0], names[1]);
	assert_string_not_equal(names[1], names[2]);
	assert_string_not_equal(names[0], names[2]);
	for (int i = 0; i < 3; i++) {
		char want[8];
		snprintf(want, sizeof(want), "v%d", i);
		assert_file(names[i], want);
		free(names[i]);
	}

	/* Deterministic collision (on a fresh name): occupy the names for this
	 * second and the next few, then move aside: the first numeric suffix
	 * is used and none of the occupants is touched. */
	free(p);
	p = path_of("fresh.json");
	time_t now = time(NULL);
	char occupied[6][512];
	for (int i = 0; i < 6; i++) {
		time_t t = now + i;
		struct tm tm;
		gmtime_r(&t, &tm);
		char stamp[32];
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		snprintf(occupied[i], sizeof(occupied[i]), "%s.corrupt-%s", p, stamp);
		write_raw(occupied[i], "occupant", 8);
	}
	write_raw(p, "latest", 6);
	char *got = NULL;
	assert_int_equal(fsx_move_aside(p, &got, &e), 0);
	assert_non_null(got);
	size_t gl = strlen(got);
	assert_string_equal(got + gl - 2, "-1");
	assert_file(got, "latest");
	for (int i = 0; i < 6; i++)
		assert_file(occupied[i], "occupant");
	free(got);

	/* NULL new_path is fine; a missing file is an error naming it */
	write_raw(p, "x", 1);
	assert_int_equal(fsx_move_aside(p, NULL, &e), 0);
	assert_int_equal(fsx_move_aside(p, NULL, &e), -1);
	assert_non_null(strstr(e.msg, p));
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_atomic_write_replaces, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_atomic_write_crash_leftover, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_atomic_write_errors, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_mkdir_p_and_join, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_jsonl_append_and_read, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_jsonl_torn_tail, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_jsonl_bad_lines_keep_neighbours, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_jsonl_overlong_lines, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_rotate, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_move_aside, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
