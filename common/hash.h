/*
 * hash — SHA-256 (OpenSSL libcrypto) and cryptographic random bytes (kernel).
 */
#ifndef GA_COMMON_HASH_H
#define GA_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

/* out receives 64 lowercase hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN + 1]);
void sha256_raw(const void *data, size_t len, unsigned char out[32]);

/* Fills buf with cryptographically random bytes (getrandom(2), the kernel CSPRNG); aborts if the
 * system RNG is unavailable. */
void random_bytes(void *buf, size_t len);

/* Non-cryptographic uniform value in [0, bound) from random_bytes; bound 0 → 0. */
uint64_t random_below(uint64_t bound);

/* RFC 4122 version-4 UUID, lowercase, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx". */
void uuid_v4(char out[37]);

#endif
