/*
 * hash — see hash.h. Thin wrappers over libcrypto's SHA-256 and the
 * kernel's random number generator.
 *
 * Footprint: the first EVP_* or RAND_* call in OpenSSL 3 initialises the
 * provider machinery and loads openssl.cnf, which costs about 2.2 MB of
 * resident memory for the life of the process — half of the daemon's whole
 * idle budget (bench/footprint.sh). The SHA256_Init family computes the same
 * digest with libcrypto's own assembly without that machinery, and
 * getrandom(2) is the same kernel CSPRNG that RAND_bytes seeds from.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "common/hash.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

void sha256_raw(const void *data, size_t len, unsigned char out[32])
{
	SHA256_CTX ctx;
	if (!SHA256_Init(&ctx) || !SHA256_Update(&ctx, data, len) || !SHA256_Final(out, &ctx)) {
		fprintf(stderr, "fatal: SHA-256 failed in libcrypto\n");
		abort();
	}
}

void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[32];
	sha256_raw(data, len, raw);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[SHA256_HEX_LEN] = '\0';
}

void random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;
	/* getrandom may return short reads for large requests or be
	 * interrupted; loop until the buffer is full. */
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "fatal: getrandom failed: no system randomness\n");
			abort();
		}
		p += n;
		len -= (size_t)n;
	}
}

uint64_t random_below(uint64_t bound)
{
	if (bound == 0)
		return 0;
	/* Rejection sampling: values in the incomplete last block of size
	 * (2^64 mod bound) would bias the result towards small numbers. */
	uint64_t limit = UINT64_MAX - (UINT64_MAX % bound + 1) % bound;
	for (;;) {
		uint64_t v;
		random_bytes(&v, sizeof(v));
		if (v <= limit)
			return v % bound;
	}
}

void uuid_v4(char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	random_bytes(b, sizeof(b));
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	size_t o = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o] = '\0';
}
