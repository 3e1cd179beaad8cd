/*
 * timeutil — see timeutil.h.
 *
 * Calendar arithmetic uses Howard Hinnant's days-from-civil algorithm rather
 * than timegm()/gmtime_r() so results never depend on TZ, the C library's
 * range for time_t conversions, or locale.
 */
#include "common/timeutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range a
 * four-digit year can show. */
#define TIME_MIN_MS (-62167219200000LL)
#define TIME_MAX_MS (253402300799999LL)

#define MS_PER_DAY 86400000LL

int64_t time_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t time_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
	static const unsigned char dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Splits ms into UTC calendar fields; out-of-range values are clamped to
 * the four-digit-year range so the fixed-width output never overflows. */
static void split_ms(int64_t ms, int64_t *y, unsigned *mo, unsigned *d, unsigned *h, unsigned *mi,
                     unsigned *s, unsigned *milli)
{
	if (ms < TIME_MIN_MS)
		ms = TIME_MIN_MS;
	if (ms > TIME_MAX_MS)
		ms = TIME_MAX_MS;
	int64_t days = ms / MS_PER_DAY;
	int64_t rem = ms % MS_PER_DAY;
	if (rem < 0) {
		rem += MS_PER_DAY;
		days--;
	}
	civil_from_days(days, y, mo, d);
	*h = (unsigned)(rem / 3600000);
	*mi = (unsigned)(rem / 60000 % 60);
	*s = (unsigned)(rem / 1000 % 60);
	*milli = (unsigned)(rem % 1000);
}

/* Writes v as exactly width decimal digits (the lowest ones; split_ms
 * keeps every field within its width) and returns the end. Written by
 * hand, not snprintf, so the bound is plain to the compiler too. */
static char *put_digits(char *p, unsigned v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + width;
}

/* "YYYY-MM-DD" at p (10 bytes, no terminator); returns the end. */
static char *put_date(char *p, int64_t y, unsigned mo, unsigned d)
{
	p = put_digits(p, (unsigned)y, 4);
	*p++ = '-';
	p = put_digits(p, mo, 2);
	*p++ = '-';
	return put_digits(p, d, 2);
}

char *time_format_iso(int64_t ms, char out[TIME_ISO_LEN + 1])
{
	int64_t y;
	unsigned mo, d, h, mi, s, milli;
	split_ms(ms, &y, &mo, &d, &h, &mi, &s, &milli);
	char *p = put_date(out, y, mo, d);
	*p++ = 'T';
	p = put_digits(p, h, 2);
	*p++ = ':';
	p = put_digits(p, mi, 2);
	*p++ = ':';
	p = put_digits(p, s, 2);
	*p++ = '.';
	p = put_digits(p, milli, 3);
	*p++ = 'Z';
	*p = '\0';
	return out;
}

char *time_format_date(int64_t ms, char out[11])
{
	int64_t y;
	unsigned mo, d, h, mi, s, milli;
	split_ms(ms, &y, &mo, &d, &h, &mi, &s, &milli);
	*put_date(out, y, mo, d) = '\0';
	return out;
}

/* Reads exactly n decimal digits at *p; -1 if any is not a digit. */
static int digits(const char **p, int n, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (unsigned)(c - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

int time_parse_iso(const char *s, int64_t *ms_out)
{
	if (!s)
		return -1;
	const char *p = s;
	unsigned y, mo, d, h, mi, sec, milli = 0;
	if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) || expect(&p, '-') ||
	    digits(&p, 2, &d) || expect(&p, 'T') || digits(&p, 2, &h) || expect(&p, ':') ||
	    digits(&p, 2, &mi) || expect(&p, ':') || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		p++;
		int n = 0;
		while (p[n] >= '0' && p[n] <= '9')
			n++;
		if (n < 1 || n > 9)
			return -1;
		/* Keep the first three digits (milliseconds), truncating the rest
		 * as documented; pad short fractions (".5" = 500 ms). */
		for (int i = 0; i < 3; i++)
			milli = milli * 10 + (unsigned)(i < n ? p[i] - '0' : 0);
		p += n;
	}
	int64_t offset_min = 0;
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;
		p++;
		unsigned oh, om;
		if (digits(&p, 2, &oh) || expect(&p, ':') || digits(&p, 2, &om))
			return -1;
		if (oh > 23 || om > 59)
			return -1;
		offset_min = sign * (int64_t)(oh * 60 + om);
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
		return -1;
	int64_t days = days_from_civil(y, mo, d);
	int64_t ms = days * MS_PER_DAY + (int64_t)h * 3600000 + (int64_t)mi * 60000 +
	             (int64_t)sec * 1000 + milli;
	/* "10:00+02:00" is 08:00 UTC. */
	ms -= offset_min * 60000;
	if (ms_out)
		*ms_out = ms;
	return 0;
}
