/* SOUL.md: pin on first start, refuse a missing/empty/changed/invalid SOUL,
 * re-pin on --accept, keep the pin across a version upgrade. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "modules/identity/soul.h"
#include "testutil.h"

struct fx {
	char *dir;
	char soul[600];
	struct state_store st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	f->dir = tu_tempdir();
	snprintf(f->soul, sizeof f->soul, "%s/SOUL.md", f->dir);
	char mem[600];
	snprintf(mem, sizeof mem, "%s/memory", f->dir);
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&f->st, mem, "1.0.0", &err), 0);
	log_set_level(LOG_LEVEL_OFF);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	state_store_free(&f->st);
	tu_rmrf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static void test_first_start_pins(void **state)
{
	struct fx *f = *state;
	tu_write(f->dir, "SOUL.md", "You are kind. You are curious.\n");
	struct soul s;
	struct soul_check res;
	assert_int_equal(soul_check(f->soul, &f->st, 1000, SOUL_CHECK_PIN_FIRST, &s, &res), 0);
	assert_int_equal(res.status, SOUL_PINNED);
	assert_string_equal(res.pinned_sha256, s.sha256);
	soul_free(&s);
	assert_int_equal(soul_check(f->soul, &f->st, 2000, SOUL_CHECK_PIN_FIRST, &s, &res), 0);
	assert_int_equal(res.status, SOUL_OK);
	soul_free(&s);
}

static void test_changed_refuses(void **state)
{
	struct fx *f = *state;
	tu_write(f->dir, "SOUL.md", "You are kind.\n");
	struct soul_check res;
	assert_int_equal(soul_check(f->soul, &f->st, 1000, SOUL_CHECK_PIN_FIRST, NULL, &res), 0);
	char pinned[65];
	memcpy(pinned, res.pinned_sha256, sizeof pinned);

	tu_write(f->dir, "SOUL.md", "You are unkind.\n");
	assert_int_equal(soul_check(f->soul, &f->st, 2000, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_CHANGED);
	assert_non_null(strstr(res.message, "has changed"));
	assert_non_null(strstr(res.message, "general-agent soul --accept"));
	/* read-only check (doctor) agrees */
	assert_int_equal(soul_check(f->soul, &f->st, 2000, SOUL_CHECK_READONLY, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_CHANGED);

	/* --accept re-pins */
	assert_int_equal(soul_check(f->soul, &f->st, 3000, SOUL_CHECK_ACCEPT, NULL, &res), 0);
	assert_int_equal(res.status, SOUL_PINNED);
	assert_string_not_equal(res.pinned_sha256, pinned);
	assert_int_equal(soul_check(f->soul, &f->st, 4000, SOUL_CHECK_PIN_FIRST, NULL, &res), 0);
	assert_int_equal(res.status, SOUL_OK);
}

static void test_missing_empty_invalid(void **state)
{
	struct fx *f = *state;
	struct soul_check res;
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_MISSING);
	assert_non_null(strstr(res.message, "not found"));

	tu_write(f->dir, "SOUL.md", "  \n\t\n");
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_EMPTY);

	tu_write(f->dir, "SOUL.md", "bad \xc3\x28 bytes");
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_INVALID);
	assert_non_null(strstr(res.message, "UTF-8"));

	/* Nothing was pinned by the failures. */
	tu_write(f->dir, "SOUL.md", "Real soul.\n");
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), 0);
	assert_int_equal(res.status, SOUL_PINNED);

	/* Missing after pinning names the pin. */
	char p[700];
	snprintf(p, sizeof p, "%s/SOUL.md", f->dir);
	unlink(p);
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_MISSING);
	assert_non_null(strstr(res.message, "pinned"));
	tu_write(f->dir, "SOUL.md", "");
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_EMPTY);
}

static void test_readonly_does_not_pin(void **state)
{
	struct fx *f = *state;
	tu_write(f->dir, "SOUL.md", "A soul.\n");
	struct soul_check res;
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_READONLY, NULL, &res), 0);
	assert_string_equal(res.pinned_sha256, "");
	assert_int_equal(tu_count_prefix(f->st.dir, "soul.json"), 0);
}

static void test_pin_survives_upgrade(void **state)
{
	struct fx *f = *state;
	tu_write(f->dir, "SOUL.md", "A soul.\n");
	struct soul_check res;
	assert_int_equal(soul_check(f->soul, &f->st, 1, SOUL_CHECK_PIN_FIRST, NULL, &res), 0);
	/* Same memory, newer agent version: the pin must migrate, so a SOUL
	 * edited during the upgrade is still caught. */
	struct state_store st2;
	struct ga_err err = {{0}};
	assert_int_equal(state_store_init(&st2, f->st.dir, "2.0.0", &err), 0);
	tu_write(f->dir, "SOUL.md", "An edited soul.\n");
	assert_int_equal(soul_check(f->soul, &st2, 2, SOUL_CHECK_PIN_FIRST, NULL, &res), -1);
	assert_int_equal(res.status, SOUL_CHANGED);
	state_store_free(&st2);
}

static void test_essence(void **state)
{
	(void)state;
	char buf[256];
	soul_essence("# Soul\n\nYou are kind.  You are\ncurious! Are you? A fourth one.", 3, buf,
	             sizeof buf);
	assert_string_equal(buf, "You are kind. You are curious! Are you?");
	soul_essence("No terminator here", 3, buf, sizeof buf);
	assert_string_equal(buf, "No terminator here");
	/* A cut never splits a UTF-8 sequence. */
	char small[8];
	soul_essence("héhéhéhé.", 3, small, sizeof small);
	assert_string_equal(small, "héhéh"); /* 7 bytes; the next é would not fit */
	soul_essence("v1.2 is out. Next.", 1, buf, sizeof buf);
	assert_string_equal(buf, "v1.2 is out.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_first_start_pins, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_changed_refuses, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_missing_empty_invalid, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_readonly_does_not_pin, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pin_survives_upgrade, setup, teardown),
	        cmocka_unit_test(test_essence),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
