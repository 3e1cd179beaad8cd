/*
 * test_skills — the SKILL.md loader: the shipped skills load and render
 * with their variables, a home skill overrides a shipped one, sections and
 * subsections, front matter, errors naming the unknown skill or the
 * missing variable, bad files, and reload keeping the old set on failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/fsx.h"
#include "modules/skills/skills.h"

static char tmp[64];
static char shipped[512];

static void write_skill(const char *name, const char *text)
{
	char dir[256], path[300];
	snprintf(dir, sizeof dir, "%s/%s", tmp, name);
	mkdir(dir, 0700);
	snprintf(path, sizeof path, "%s/SKILL.md", dir);
	assert_int_equal(fsx_write_atomic(path, text, strlen(text), NULL), 0);
}

static int setup(void **state)
{
	strcpy(tmp, "/tmp/ga-skills-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	const char *src = getenv("GA_SOURCE_DIR");
	snprintf(shipped, sizeof shipped, "%s/skills", src ? src : GA_SOURCE_DIR);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_shipped_skills_render(void **state)
{
	const char *dirs[] = {shipped};
	struct skills s;
	struct ga_err e = {{0}};
	assert_int_equal(skills_load(&s, dirs, 1, &e), 0);
	static const char *names[] = {"bluesky-reply", "github-reply", "owner-communication",
	                              "space-participation"};
	for (size_t i = 0; i < 4; i++)
		assert_non_null(skills_find(&s, names[i]));
	struct skill_var vars[] = {{"blueskyUsername", "agent.bsky.social"},
	                           {"ownerHandle", "owner.bsky.social"}};
	char *p = skills_render(&s, "owner-communication", NULL, vars, 2, &e);
	assert_non_null(p);
	assert_non_null(strstr(p, "@agent.bsky.social"));
	assert_non_null(strstr(p, "@owner.bsky.social"));
	/* the whole section, subsections included — not just its first paragraph */
	assert_non_null(strstr(p, "### Choosing what to create on GitHub"));
	assert_null(strstr(p, "{{"));
	assert_null(strstr(p, "# Owner conversation")); /* only the section */
	free(p);
	p = skills_render(&s, "space-participation", NULL, NULL, 0, &e);
	assert_non_null(p);
	assert_non_null(strstr(p, "space_decision"));
	assert_null(strstr(p, "User Message Template"));
	free(p);
	/* the user template needs its variables, and says which is missing */
	assert_null(skills_render(&s, "space-participation", "User Message Template", NULL, 0, &e));
	assert_string_equal(e.msg, "skill 'space-participation' section 'User Message Template' "
	                           "uses {{detectedRepo}} but no value was given");
	assert_string_equal(skill_meta(skills_find(&s, "bluesky-reply"), "name"), "bluesky-reply");
	skills_free(&s);
}

static void test_unknown_skill_and_missing_section(void **state)
{
	write_skill("alpha", "## System Prompt\nHi {{who}}.\n");
	const char *dirs[] = {tmp};
	struct skills s;
	struct ga_err e = {{0}};
	assert_int_equal(skills_load(&s, dirs, 1, &e), 0);
	assert_null(skills_render(&s, "beta", NULL, NULL, 0, &e));
	assert_string_equal(e.msg, "unknown skill 'beta'; loaded: alpha");
	assert_null(skills_render(&s, "alpha", "Nope", NULL, 0, &e));
	assert_non_null(strstr(e.msg, "skill 'alpha' has no section 'Nope'"));
	assert_null(skills_render(&s, "alpha", NULL, NULL, 0, &e));
	assert_string_equal(e.msg,
	                    "skill 'alpha' section 'System Prompt' uses {{who}} but no value "
	                    "was given");
	struct skill_var v[] = {{"who", "you"}};
	char *p = skills_render(&s, "alpha", NULL, v, 1, &e);
	assert_string_equal(p, "Hi you.");
	free(p);
	skills_free(&s);
}

static void test_sections_subsections_front_matter(void **state)
{
	write_skill("multi", "---\nname: multi\ndescription: a test: with colons\n---\n\n"
	                     "# Title\n\nIntro.\n\n## First\n\nOne {{ a }}.\n\n### Sub A\n\nsub a "
	                     "text\n\n### Sub B\n\nsub b text\n\n```\n## not a heading\n```\n\n"
	                     "## Second\n\nTwo.\n");
	write_skill(".hidden", "## System Prompt\nx\n");
	write_skill("old.template", "## System Prompt\nx\n");
	const char *dirs[] = {tmp};
	struct skills s;
	assert_int_equal(skills_load(&s, dirs, 1, NULL), 0);
	assert_int_equal(s.n, 1);
	const struct skill *sk = skills_find(&s, "multi");
	assert_int_equal(sk->n_sections, 2);
	assert_string_equal(skill_meta(sk, "description"), "a test: with colons");
	struct skill_var v[] = {{"a", "1"}};
	char *p = skills_render(&s, "multi", "First/Sub B", v, 1, NULL);
	assert_string_equal(p, "sub b text\n\n```\n## not a heading\n```");
	free(p);
	p = skills_render(&s, "multi", "Second", NULL, 0, NULL);
	assert_string_equal(p, "Two.");
	free(p);
	/* no System Prompt section: the whole body */
	p = skills_render(&s, "multi", NULL, v, 1, NULL);
	assert_non_null(strstr(p, "# Title"));
	assert_non_null(strstr(p, "One 1."));
	free(p);
	skills_free(&s);
}

static void test_home_overrides_shipped(void **state)
{
	write_skill("bluesky-reply", "## System Prompt\nmy own reply rules\n");
	const char *dirs[] = {tmp, shipped};
	struct skills s;
	assert_int_equal(skills_load(&s, dirs, 2, NULL), 0);
	char *p = skills_render(&s, "bluesky-reply", NULL, NULL, 0, NULL);
	assert_string_equal(p, "my own reply rules");
	free(p);
	assert_non_null(skills_find(&s, "github-reply"));
	skills_free(&s);
}

static void test_bad_files_and_reload(void **state)
{
	write_skill("good", "## System Prompt\nfine\n");
	const char *dirs[] = {tmp, "/nonexistent/skills"};
	struct skills s;
	struct ga_err e = {{0}};
	assert_int_equal(skills_load(&s, dirs, 2, &e), 0);
	write_skill("broken", "## System Prompt\nbad \xff\xfe bytes\n");
	assert_int_equal(skills_reload(&s, dirs, 2, &e), -1);
	assert_non_null(strstr(e.msg, "broken/SKILL.md is not valid UTF-8"));
	assert_non_null(skills_find(&s, "good")); /* the old set still works */
	write_skill("broken", "---\nname: x\nnever closed\n");
	assert_int_equal(skills_reload(&s, dirs, 2, &e), -1);
	assert_non_null(strstr(e.msg, "never closed"));
	write_skill("broken", "## System Prompt\n{{unclosed\n");
	assert_int_equal(skills_reload(&s, dirs, 2, &e), 0);
	assert_null(skills_render(&s, "broken", NULL, NULL, 0, &e));
	assert_non_null(strstr(e.msg, "never closed with '}}'"));
	skills_free(&s);
}

static void test_system_prompt_assembly(void **state)
{
	char *p = skills_system_prompt("SOUL", "SELF", "SKILL");
	assert_string_equal(p, "SOUL\n\n---\n\nSELF\n\n---\n\nSKILL");
	free(p);
	p = skills_system_prompt("SOUL", "", "SKILL");
	assert_string_equal(p, "SOUL\n\n---\n\nSKILL");
	free(p);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_shipped_skills_render),
	        T(test_unknown_skill_and_missing_section),
	        T(test_sections_subsections_front_matter),
	        T(test_home_overrides_shipped),
	        T(test_bad_files_and_reload),
	        T(test_system_prompt_assembly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
