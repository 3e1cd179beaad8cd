/* dlshim: a real dlopen() of libm, a symbol libm does not have, a library
 * that does not exist, the fallback to a second name, and the sticky
 * outcome. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <string.h>

#include "common/dlshim.h"

/* libm's SONAME on glibc systems (Debian: libc6). */
#define LIBM "libm.so.6"

struct math_table {
	double (*cos)(double);
	double (*sqrt)(double);
	double (*missing)(double);
};

static const struct dlshim_sym math_syms[] = {
        DLSHIM_SYM(struct math_table, cos, "cos"),
        DLSHIM_SYM(struct math_table, sqrt, "sqrt"),
};

static const struct dlshim_sym math_syms_with_missing[] = {
        DLSHIM_SYM(struct math_table, cos, "cos"),
        DLSHIM_SYM(struct math_table, missing, "ga_dlshim_no_such_symbol"),
        DLSHIM_SYM(struct math_table, sqrt, "sqrt"),
};

/* A loader for libm's table t; names and hints are set by each test. */
static struct dlshim math_loader(struct math_table *t, const struct dlshim_sym *syms, size_t nsyms)
{
	return (struct dlshim){
	        .names = {LIBM},
	        .syms = syms,
	        .nsyms = nsyms,
	        .table = t,
	        .table_size = sizeof *t,
	};
}

static void test_loads_libm_and_calls_through_the_table(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms, 2);
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), 0);
	assert_int_equal(s.state, 1);
	assert_string_equal(s.loaded_name, LIBM);
	assert_non_null(t.cos);
	assert_non_null(t.sqrt);
	assert_null(t.missing);
	assert_true(t.cos(0.0) == 1.0);
	assert_true(t.sqrt(16.0) == 4.0);
	/* Idempotent: a second call neither fails nor changes the table. */
	double (*cos_before)(double) = t.cos;
	assert_int_equal(dlshim_load(&s, &e), 0);
	assert_ptr_equal(t.cos, cos_before);
}

static void test_missing_symbol_names_library_and_symbol_and_sticks(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms_with_missing, 3);
	s.missing_hint = "libm is too old";
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), -1);
	assert_string_equal(e.msg, LIBM " has no ga_dlshim_no_such_symbol: libm is too old");
	assert_int_equal(s.state, -1);
	/* cos was resolved before the failure: the table is cleared so no
	 * caller can use a half-filled one. */
	assert_null(t.cos);
	assert_null(t.sqrt);

	/* Sticky: the same message, and no new attempt even if the table
	 * would now resolve. */
	s.syms = math_syms;
	s.nsyms = 2;
	struct ga_err e2 = {{0}};
	assert_int_equal(dlshim_load(&s, &e2), -1);
	assert_string_equal(e2.msg, e.msg);
	assert_null(t.cos);
	/* A NULL err is accepted. */
	assert_int_equal(dlshim_load(&s, NULL), -1);
}

static void test_missing_library_names_it_and_the_hint(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms, 2);
	s.names[0] = "libga-dlshim-absent.so.9";
	s.install_hint = "install the ga-absent package";
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), -1);
	assert_non_null(strstr(e.msg, "cannot load libga-dlshim-absent.so.9 ("));
	assert_non_null(strstr(e.msg, "): install the ga-absent package"));
	assert_null(s.loaded_name);
	struct ga_err e2 = {{0}};
	assert_int_equal(dlshim_load(&s, &e2), -1);
	assert_string_equal(e2.msg, e.msg);
}

static void test_falls_back_to_the_next_name(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms, 2);
	s.names[0] = "libga-dlshim-absent.so.9";
	s.names[1] = LIBM;
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), 0);
	assert_string_equal(s.loaded_name, LIBM);
	assert_true(t.sqrt(9.0) == 3.0);
}

static void test_every_name_missing_lists_them_all(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms, 2);
	s.names[0] = "libga-dlshim-a.so.1";
	s.names[1] = "libga-dlshim-b.so.2";
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), -1);
	const char *a = strstr(e.msg, "cannot load libga-dlshim-a.so.1 (");
	const char *b = strstr(e.msg, " or libga-dlshim-b.so.2 (");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	/* No hint given: a generic one, still a full sentence. */
	assert_non_null(strstr(e.msg, "): the library is not installed"));
}

static void test_refuses_a_slot_outside_the_table(void **state)
{
	(void)state;
	struct math_table t = {0};
	struct dlshim s = math_loader(&t, math_syms, 2);
	/* sqrt's slot starts at sizeof(void *) and does not fit. */
	s.table_size = sizeof(void *) + 1;
	struct ga_err e = {{0}};
	assert_int_equal(dlshim_load(&s, &e), -1);
	assert_non_null(strstr(e.msg, "the slot of sqrt"));
	assert_non_null(strstr(e.msg, LIBM));
	assert_null(t.cos);

	struct dlshim none = {.syms = math_syms, .nsyms = 2, .table = &t, .table_size = sizeof t};
	assert_int_equal(dlshim_load(&none, &e), -1);
	assert_string_equal(e.msg, "dlshim: no library name given");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_loads_libm_and_calls_through_the_table),
	        cmocka_unit_test(test_missing_symbol_names_library_and_symbol_and_sticks),
	        cmocka_unit_test(test_missing_library_names_it_and_the_hint),
	        cmocka_unit_test(test_falls_back_to_the_next_name),
	        cmocka_unit_test(test_every_name_missing_lists_them_all),
	        cmocka_unit_test(test_refuses_a_slot_outside_the_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
