/*
 * log — structured logging.
 *
 * One line per event: ISO-8601 UTC timestamp, level, component tag, message,
 * then key=value fields. With LOG_FORMAT=json (or log_init(..., json=1)) each
 * line is instead one JSON object:
 *   {"ts":"2026-11-22T10:00:00.000Z","level":"info","component":"space",
 *    "msg":"member joined","name":"Ada"}
 *
 * Text format:
 *   2026-11-22T10:00:00.000Z INFO  space: member joined name=Ada id="a b"
 * (values containing spaces, quotes, '=' or control characters are quoted
 * and escaped).
 *
 * Typed values: field values are strings, except those made by LOG_INT()
 * and LOG_BOOL(), which JSON lines carry as a number and a boolean
 * ({"port":7777,"ok":true}); text lines show them bare (port=7777 ok=true).
 * They are strings that start with LOG_TYPED_MARK (a control byte no log
 * value starts with otherwise); a value that starts with the mark but is
 * not a JSON number or true/false is written as a string, escaped, so
 * nothing can inject JSON through it. A typed value holding a registered
 * secret is written as a string too (so "[redacted]" stays quoted).
 *
 * Secrets: log_add_secret() registers a value (a token, a password, an API
 * key). Every registered value (of 4 bytes or more) is replaced by "[redacted]"
 * wherever it appears in a finished line — message, field values, anything —
 * before the line is written. At most LOG_MAX_SECRETS values are kept;
 * log_remove_secret() forgets a rotated one.
 *
 * Lines are bounded at LOG_LINE_MAX bytes (longer ones are cut and end with
 * "…[truncated]"). Logging never allocates more than one line at a time and
 * never fails loudly. Single-threaded by design (one loop, one thread).
 */
#ifndef GA_COMMON_LOG_H
#define GA_COMMON_LOG_H

#include <stddef.h>
#include <stdio.h>

#include "common/err.h"

#define LOG_MAX_SECRETS 32
#define LOG_LINE_MAX    8192

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO = 1,
	LOG_LEVEL_WARN = 2,
	LOG_LEVEL_ERROR = 3,
	LOG_LEVEL_OFF = 4,
};

/* out NULL = stderr. json < 0 = read LOG_FORMAT from the environment
 * ("json" → JSON lines, anything else → text). May be called again. */
void log_init(enum log_level min, int json, FILE *out);
void log_set_level(enum log_level min);

/* The echo: lines at min and above are also written to out in a compact
 * text form (no time: "WARN  github: GitHub not usable error=..."), after
 * the same redaction. For the owner at a terminal while the log goes to a
 * file. out NULL: no echo. */
void log_set_echo(FILE *out, enum log_level min);

/* Lines go to the file at path (appended; created 0644 by the umask)
 * instead of the stream of log_init, bounded: a file already max_bytes
 * long is first rotated, and whenever writing makes it reach max_bytes it
 * becomes <path>.1 (one backup: the older .1 is dropped) and a new file is
 * started. max_bytes 0: no bound. 0, or -1 with err (nothing changed but
 * a file of ours opened before is closed). */
int log_to_file(const char *path, size_t max_bytes, struct ga_err *err);
/* Back to the stream of log_init; the file is closed. Idempotent. */
void log_close_file(void);
enum log_level log_get_level(void);
/* "debug" | "info" | "warn" | "error" | "off" (case-insensitive); -1 if unknown. */
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_name(enum log_level lvl);

void log_add_secret(const char *value);
/* Forgets a registered value (scrubbed); NULL and unknown values are
 * ignored. For a rotated credential (a refreshed session token), so the
 * table never fills with dead ones. */
void log_remove_secret(const char *value);
void log_clear_secrets(void);

/* A copy of s with every registered secret replaced by "[redacted]", for
 * text that goes to the terminal rather than through the log (an error a
 * provider echoed with the key in it). Caller frees; never NULL. */
char *log_redact(const char *s);

/* kv: NULL, or a NULL-terminated array of key, value, key, value, ...
 * A NULL value prints as null / (null). */
void log_write(enum log_level lvl, const char *component, const char *msg, const char *const *kv);

/* printf-formatted message, no fields. */
void log_writef(enum log_level lvl, const char *component, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Formats v into buf (at least 24 bytes) as plain decimal text. */
const char *log_itoa(char *buf, long long v);

#define LOG_TYPED_MARK "\x1e"
#define LOG_NUM_BUF    32
/* Formats v into buf (at least LOG_NUM_BUF bytes) as a typed number value
 * (LOG_TYPED_MARK then decimal) and returns buf; for LOG_INT(). */
const char *log_num(char *buf, long long v);

/* Field helpers:
 *   log_kv(LOG_LEVEL_INFO, "sched", "job skipped", "job", name,
 *          "skipped", LOG_INT(n), "late", LOG_BOOL(late));
 */
#define LOG_INT(v)  log_num((char[LOG_NUM_BUF]){0}, (long long)(v))
#define LOG_BOOL(b) ((b) ? LOG_TYPED_MARK "true" : LOG_TYPED_MARK "false")
#define log_kv(lvl, comp, msg, ...)                                                                \
	log_write((lvl), (comp), (msg), (const char *const[]){__VA_ARGS__, NULL, NULL})
#define log_debug(comp, ...) log_writef(LOG_LEVEL_DEBUG, (comp), __VA_ARGS__)
#define log_info(comp, ...)  log_writef(LOG_LEVEL_INFO, (comp), __VA_ARGS__)
#define log_warn(comp, ...)  log_writef(LOG_LEVEL_WARN, (comp), __VA_ARGS__)
#define log_error(comp, ...) log_writef(LOG_LEVEL_ERROR, (comp), __VA_ARGS__)

#endif
