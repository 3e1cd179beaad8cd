/* hash: SHA-256 known answers, UUID v4 format and uniqueness, random_below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the four headers above included first */
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

static void test_sha256_vectors(void **state)
{
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex("", 0, hex);
	assert_string_equal(hex,
	                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
	                    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex,
	                    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	unsigned char raw[32];
	sha256_raw("abc", 3, raw);
	assert_int_equal(raw[0], 0xba);
	assert_int_equal(raw[31], 0xad);
}

/* The million-'a' FIPS vector, and every length around the block and
 * padding boundaries (55/56/63/64/119/120 …) against OpenSSL. */
static void test_sha256_against_openssl(void **state)
{
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	char hex[SHA256_HEX_LEN + 1];
	sha256_hex(m, 1000000, hex);
	assert_string_equal(hex,
	                    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	unsigned char buf[700], ours[32], theirs[32];
	uint32_t x = 12345;
	for (size_t len = 0; len < sizeof buf; len++) {
		for (size_t i = 0; i < len; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (unsigned char)(x >> 16);
		}
		sha256_raw(buf, len, ours);
		SHA256(buf, len, theirs);
		if (memcmp(ours, theirs, 32) != 0)
			fail_msg("SHA-256 differs from OpenSSL at length %zu", len);
	}
	free(m);
}

static int cmp_uuid(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_uuid_v4(void **state)
{
	enum { N = 1000 };
	char(*ids)[37] = calloc(N, sizeof(*ids));
	for (int i = 0; i < N; i++) {
		char *u = ids[i];
		uuid_v4(u);
		assert_int_equal(strlen(u), 36);
		for (int k = 0; k < 36; k++) {
			if (k == 8 || k == 13 || k == 18 || k == 23) {
				assert_int_equal(u[k], '-');
				continue;
			}
			assert_non_null(strchr("0123456789abcdef", u[k]));
		}
		assert_int_equal(u[14], '4');           /* version */
		assert_non_null(strchr("89ab", u[19])); /* variant 10xx */
	}
	qsort(ids, N, sizeof(*ids), cmp_uuid);
	for (int i = 1; i < N; i++)
		assert_string_not_equal(ids[i - 1], ids[i]);
	free(ids);
}

static void test_random_below(void **state)
{
	assert_int_equal(random_below(0), 0);
	assert_int_equal(random_below(1), 0);
	int seen[7] = {0};
	for (int i = 0; i < 7000; i++) {
		uint64_t v = random_below(7);
		assert_true(v < 7);
		seen[v]++;
	}
	/* each bucket expects 1000; < 500 has probability far below 1e-40 */
	for (int i = 0; i < 7; i++)
		assert_true(seen[i] > 500);
	for (int i = 0; i < 1000; i++)
		assert_true(random_below(UINT64_MAX) < UINT64_MAX);
	uint64_t big = (UINT64_C(1) << 63) + 1; /* worst case for rejection */
	for (int i = 0; i < 100; i++)
		assert_true(random_below(big) < big);
}

static void test_random_bytes_fill(void **state)
{
	unsigned char a[64] = {0}, b[64] = {0};
	random_bytes(a, sizeof(a));
	random_bytes(b, sizeof(b));
	assert_memory_not_equal(a, b, sizeof(a));
	random_bytes(a, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sha256_vectors),
	        cmocka_unit_test(test_sha256_against_openssl),
	        cmocka_unit_test(test_uuid_v4),
	        cmocka_unit_test(test_random_below),
	        cmocka_unit_test(test_random_bytes_fill),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
