/*
 * A main() for libFuzzer targets when libFuzzer is not linked (gcc builds,
 * `make test`). Runs LLVMFuzzerTestOneInput over every file named on the
 * command line (directories are walked one level deep), then over a fixed
 * number of deterministic pseudo-random mutations of those inputs. It proves
 * each target builds and survives its seed corpus under ASan/UBSan; the real
 * coverage-guided search is `make fuzz`.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS_PER_INPUT 200
#define FUZZ_MAX_INPUT      (1u << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static int run_file(const char *path, size_t *count)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz: cannot open %s\n", path);
		return -1;
	}
	uint8_t *buf = malloc(FUZZ_MAX_INPUT + 64);
	if (!buf) {
		fclose(f);
		return -1;
	}
	size_t n = fread(buf, 1, FUZZ_MAX_INPUT, f);
	fclose(f);

	uint8_t *copy = malloc(n + 1);
	memcpy(copy, buf, n);
	LLVMFuzzerTestOneInput(copy, n);
	free(copy);
	(*count)++;

	for (int i = 0; i < MUTATIONS_PER_INPUT; i++) {
		size_t len = n;
		uint8_t *m = malloc(len + 64);
		memcpy(m, buf, len);
		int edits = 1 + (int)(rng() % 4);
		for (int e = 0; e < edits; e++) {
			switch (rng() % 4) {
			case 0: /* flip a byte */
				if (len)
					m[rng() % len] = (uint8_t)rng();
				break;
			case 1: /* truncate */
				if (len)
					len = rng() % len;
				break;
			case 2: /* insert a byte */
				if (len < n + 63) {
					size_t at = len ? rng() % len : 0;
					memmove(m + at + 1, m + at, len - at);
					m[at] = (uint8_t)rng();
					len++;
				}
				break;
			default: /* duplicate a byte */
				if (len && len < n + 63) {
					size_t at = rng() % len;
					memmove(m + at + 1, m + at, len - at);
					len++;
				}
				break;
			}
		}
		uint8_t *exact = malloc(len ? len : 1);
		memcpy(exact, m, len);
		free(m);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
		(*count)++;
	}
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	int failed = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "fuzz: no such corpus %s\n", argv[i]);
			failed = 1;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			failed |= run_file(argv[i], &count) != 0;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
			failed |= run_file(path, &count) != 0;
		}
		if (d)
			closedir(d);
	}
	printf("fuzz: %zu inputs ran without a crash\n", count);
	return failed || count == 0;
}
