/*
 * timeutil — wall and monotonic clocks, ISO-8601 timestamps.
 *
 * Policy code never calls these directly: time enters as a parameter
 * (int64_t now_ms) so tests can set the clock. Only edges (cmd/, adapters,
 * the loop) read the clock.
 */
#ifndef GA_COMMON_TIMEUTIL_H
#define GA_COMMON_TIMEUTIL_H

#include <stdint.h>

#define TIME_ISO_LEN 24 /* "2026-11-22T10:00:00.000Z" */

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t time_now_ms(void);
/* Milliseconds from an arbitrary origin (CLOCK_MONOTONIC). */
uint64_t time_mono_ms(void);

/* Formats epoch ms as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC), like JavaScript's
 * Date.prototype.toISOString for years 0000..9999. Returns out. */
char *time_format_iso(int64_t ms, char out[TIME_ISO_LEN + 1]);

/* Parses "YYYY-MM-DDTHH:MM:SS.mmmZ"; also accepts no fraction, 1..9 fraction
 * digits (truncated to ms), and "+HH:MM"/"-HH:MM" offsets. Fields are range
 * checked (month 1..12, day valid for the month, hour < 24, ...). Returns 0,
 * or -1 on anything else. */
int time_parse_iso(const char *s, int64_t *ms_out);

/* "YYYY-MM-DD" for the UTC day of ms. out must hold 11 bytes. */
char *time_format_date(int64_t ms, char out[11]);

#endif
