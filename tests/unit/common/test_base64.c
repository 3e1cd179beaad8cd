/* base64: RFC 4648 §10 vectors both ways, GitHub's 60-character lines,
 * every length round-trips, and the refusals (a bad character, misplaced
 * padding, a truncated group, stray bits) name what was wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/base64.h"

static void test_rfc4648_vectors(void **state)
{
	(void)state;
	const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (size_t i = 0; i < 7; i++) {
		char out[32];
		size_t n = base64_encode(plain[i], strlen(plain[i]), 0, out);
		assert_string_equal(out, coded[i]);
		assert_int_equal(n, strlen(coded[i]));
		assert_int_equal(base64_encoded_len(strlen(plain[i]), 0), n + 1);
		unsigned char back[32];
		struct ga_err err = {{0}};
		assert_int_equal(base64_decode(coded[i], strlen(coded[i]), back, &err),
		                 (long)strlen(plain[i]));
		assert_string_equal((char *)back, plain[i]);
	}
}

static void test_lines_and_round_trip(void **state)
{
	(void)state;
	unsigned char data[300];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof data; n++) {
		size_t cap = base64_encoded_len(n, 60);
		char *enc = malloc(cap);
		size_t len = base64_encode(data, n, 60, enc);
		assert_int_equal(len + 1, cap);
		/* every line 60 characters but the last, each ending in '\n' */
		for (const char *l = enc; *l; l = strchr(l, '\n') + 1) {
			size_t ll = strcspn(l, "\n");
			assert_true(ll <= 60);
			assert_int_equal(l[ll], '\n');
			if (l[ll + 1])
				assert_int_equal(ll, 60);
		}
		unsigned char *back = malloc(len / 4 * 3 + 3);
		struct ga_err err = {{0}};
		assert_int_equal(base64_decode(enc, len, back, &err), (long)n);
		assert_memory_equal(back, data, n);
		free(back);
		free(enc);
	}
	/* Unpadded input decodes too. */
	unsigned char out[8];
	struct ga_err err = {{0}};
	assert_int_equal(base64_decode("Zm8", 3, out, &err), 2);
	assert_memory_equal(out, "fo", 2);
}

static void test_refusals(void **state)
{
	(void)state;
	const char *bad[] = {"Zm9v!", "Z===", "Zm9vY", "Zg==Zg==", "Zh==", "Zm9=", "=Zm9"};
	const char *why[] = {"not a base64 character",
	                     "not padding",
	                     "middle of a group",
	                     "after the padding",
	                     "stray bits",
	                     "stray bits",
	                     "not padding"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		unsigned char out[16];
		struct ga_err err = {{0}};
		assert_int_equal(base64_decode(bad[i], strlen(bad[i]), out, &err), -1);
		if (!strstr(err.msg, why[i]))
			fail_msg("'%s': '%s' does not say '%s'", bad[i], err.msg, why[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rfc4648_vectors),
	        cmocka_unit_test(test_lines_and_round_trip),
	        cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
