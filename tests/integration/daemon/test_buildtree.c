/*
 * general-agent run where it was built (build/general-agent, a
 * CMakeCache.txt beside it): it finds the shipped data of its source tree —
 * SELF.md.template as well as the skills — when the agent's home has none
 * of its own, and a template in the home still wins over the shipped one
 * (cmd/datadir.h). Every run has its own home and room URL (nothing
 * listens on 127.0.0.1:1), so no user's agent or room is touched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc.h"

static const char *const ENV[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1", NULL};
static const char *const ONCE_ENV[] = {"AGENT_NAME=Ada", "SPACE_URL=ws://127.0.0.1:1",
                                       "GA_EXIT_WHEN_IDLE=1", NULL};
static const char *const NOTERM[] = {"--no-terminal", NULL};

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("expected to find '%s' in:\n%s", needle, hay ? hay : "(null)");
}

/* A fresh home with SOUL.md only: no SELF.md.template of its own. */
static int setup(void **state)
{
	char *home = home_new();
	char p[1024];
	snprintf(p, sizeof p, "%s/SELF.md.template", home);
	if (unlink(p) != 0)
		return -1;
	*state = home;
	return 0;
}

static int teardown(void **state)
{
	home_remove(*state);
	return 0;
}

static const char *src_dir(void)
{
	const char *s = getenv("GA_SOURCE_DIR");
	assert_non_null(s);
	return s;
}

static void test_binary_is_in_a_build_tree(void **state)
{
	(void)state;
	const char *b = getenv("GA_BUILD_DIR");
	assert_non_null(b);
	char p[1024];
	struct stat st;
	snprintf(p, sizeof p, "%s/general-agent", b);
	assert_int_equal(stat(p, &st), 0);
	snprintf(p, sizeof p, "%s/CMakeCache.txt", b);
	assert_int_equal(stat(p, &st), 0);
}

static void test_doctor_sees_the_source_template(void **state)
{
	const char *home = *state;
	char *out = NULL, *err = NULL;
	/* 2: SPACE_URL names a closed port; nothing else is down */
	assert_int_equal(proc_run(home, (const char *const[]){"doctor", NULL}, ENV, &out, &err), 2);
	assert_contains(out, "verdict: the daemon can start, but the room did not answer");
	assert_contains(out, "it will be written from the template at first start");
	free(out), free(err);
}

static void test_first_start_writes_self_from_the_source_template(void **state)
{
	const char *home = *state;
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, NOTERM, ONCE_ENV, &out, &err), 0);
	char want[1200];
	snprintf(want, sizeof want, "template=%s/SELF.md.template", src_dir());
	assert_contains(err, "SELF.md written from the template");
	assert_contains(err, want);
	free(out), free(err);

	/* Every line of the template without a placeholder is in SELF.md. */
	char *self = home_read(home, "SELF.md");
	assert_non_null(self);
	assert_int_equal(strncmp(self, "# Ada\n", 6), 0);
	char *tpl = home_read(src_dir(), "SELF.md.template");
	assert_non_null(tpl);
	int lines = 0;
	for (char *save = NULL, *l = strtok_r(tpl, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (strstr(l, "{{"))
			continue;
		assert_contains(self, l);
		lines++;
	}
	assert_true(lines > 5);
	free(tpl);
	free(self);
}

static void test_home_template_wins(void **state)
{
	const char *home = *state;
	home_write(home, "SELF.md.template",
	           "# {{AGENT_NAME}}\n\nmarker: the home's own template\n");
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, NOTERM, ONCE_ENV, &out, &err), 0);
	char want[1200];
	snprintf(want, sizeof want, "template=%s/SELF.md.template", home);
	assert_contains(err, want);
	free(out), free(err);
	char *self = home_read(home, "SELF.md");
	assert_non_null(self);
	assert_contains(self, "marker: the home's own template");
	free(self);
}

/* The skills of the source tree load too (as many as it has). */
static void test_skills_from_the_source_tree(void **state)
{
	const char *home = *state;
	char dir[1200];
	snprintf(dir, sizeof dir, "%s/skills", src_dir());
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char p[1600];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s/SKILL.md", dir, e->d_name);
		if (e->d_name[0] != '.' && stat(p, &st) == 0)
			n++;
	}
	closedir(d);
	assert_true(n > 0);
	char *out = NULL, *err = NULL;
	assert_int_equal(proc_run(home, NOTERM, ONCE_ENV, &out, &err), 0);
	char want[64];
	snprintf(want, sizeof want, "skills loaded count=%d", n);
	assert_contains(err, want);
	free(out), free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_binary_is_in_a_build_tree),
	        cmocka_unit_test_setup_teardown(test_doctor_sees_the_source_template, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_first_start_writes_self_from_the_source_template, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_home_template_wins, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_skills_from_the_source_tree, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
