/* fuzz_dashboard: the dashboard's parsers of outside input — the Host
 * header check, the address, static file names, the token compare. The
 * first byte picks the parser; the rest is the input. Each must return
 * without reading outside its input, and the answers must agree with the
 * rules: a name the static check accepts has no '/', '\\' or leading '.';
 * an address that parses has a port in range; a token equals itself and
 * not a one-byte change of itself. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modules/dashboard/dashboard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		(void)dashboard_host_is_loopback(s);
		break;
	case 1: {
		struct dashboard_addr a;
		struct ga_err err = {{0}};
		if (dashboard_parse_addr(s, &a, &err) == 0 && (a.port < 0 || a.port > 65535))
			abort();
		break;
	}
	case 2:
		if (dashboard_static_name_ok(s) &&
		    (strchr(s, '/') || strchr(s, '\\') || s[0] == '.'))
			abort();
		break;
	default: {
		size_t n = strlen(s);
		if (!dashboard_token_equal(s, s))
			abort();
		if (n) {
			char *t = strdup(s);
			t[n / 2] ^= 1;
			if (dashboard_token_equal(t, s))
				abort();
			free(t);
		}
		break;
	}
	}
	free(s);
	return 0;
}
