/*
 * soul — SOUL.md check and pin. See soul.h.
 */
#include "modules/identity/soul.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "common/hash.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"

const char *soul_status_name(enum soul_status s)
{
	switch (s) {
	case SOUL_OK:
		return "ok";
	case SOUL_PINNED:
		return "pinned";
	case SOUL_MISSING:
		return "missing";
	case SOUL_EMPTY:
		return "empty";
	case SOUL_INVALID:
		return "invalid";
	case SOUL_CHANGED:
		return "changed";
	case SOUL_DENIED:
		return "denied";
	}
	return "unknown";
}

void soul_free(struct soul *s)
{
	if (!s)
		return;
	free(s->text);
	memset(s, 0, sizeof *s);
}

/* The pin is identity, not cache: an upgrade must never silently drop it, or
 * a changed SOUL.md would be accepted as "first start". */
static int keep_pin(void *ud, cJSON *data, const char *from_version)
{
	(void)from_version;
	(void)ud;
	return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(data, "sha256")) ? 0 : -1;
}

/* What a first SOUL.md is and where it goes (no pin yet: nothing to
 * restore). */
#define SOUL_WRITE_HINT                                                                            \
	"It is the agent's core identity: who it is, what it cares about and how it "              \
	"speaks, in a few sentences of plain text, in SOUL.md in the agent home (the "             \
	"shipped SOUL.md is an example). It is pinned at the first start and may not "             \
	"change afterwards without `general-agent soul --accept`."

static int blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return 0;
	return 1;
}

static int pin(const struct state_store *st, const struct soul *s, int64_t now_ms,
               struct soul_check *res)
{
	cJSON *d = cJSON_CreateObject();
	char iso[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(d, "sha256", s->sha256);
	cJSON_AddStringToObject(d, "pinnedAt", time_format_iso(now_ms, iso));
	cJSON_AddNumberToObject(d, "bytes", (double)s->len);
	struct ga_err err = {{0}};
	int rc = state_save(st, SOUL_STATE_NAME, d, now_ms, &err);
	cJSON_Delete(d);
	if (rc != 0) {
		snprintf(res->message, sizeof res->message,
		         "could not pin SOUL.md: %s. Check that the memory directory is writable.",
		         err.msg);
		return -1;
	}
	snprintf(res->pinned_sha256, sizeof res->pinned_sha256, "%s", s->sha256);
	snprintf(res->pinned_at, sizeof res->pinned_at, "%s", iso);
	return 0;
}

int soul_check(const char *path, const struct state_store *st, int64_t now_ms,
               enum soul_check_mode mode, struct soul *out, struct soul_check *res)
{
	memset(res, 0, sizeof *res);
	struct soul s = {0};

	struct state_load_info info = {.status = STATE_MISSING};
	if (!st && mode != SOUL_CHECK_READONLY) {
		res->status = SOUL_INVALID;
		snprintf(res->message, sizeof res->message,
		         "no memory directory to keep the SOUL pin in");
		return -1;
	}
	cJSON *pinned = st ? state_load(st, SOUL_STATE_NAME, keep_pin, NULL, &info) : NULL;
	if (info.status == STATE_CORRUPT)
		log_kv(LOG_LEVEL_WARN, "identity",
		       "the SOUL pin was corrupt and has been moved aside; SOUL.md will be pinned "
		       "again",
		       "detail", info.detail);
	if (info.status == STATE_UNREADABLE) {
		res->status = state_errno_denied(info.sys_errno) ? SOUL_DENIED : SOUL_INVALID;
		snprintf(res->message, sizeof res->message,
		         "the SOUL pin cannot be read: %s. Without it the agent cannot tell "
		         "whether SOUL.md changed, so it will not start; nothing was moved or "
		         "pinned again. %s",
		         info.detail,
		         res->status == SOUL_DENIED
		                 ? "Give the user the agent runs as read and write access to the "
		                   "memory directory and everything in it."
		                 : "Check the disk and the memory directory.");
		return -1;
	}
	const char *psha = json_string_or(pinned, "sha256", NULL);
	if (psha)
		snprintf(res->pinned_sha256, sizeof res->pinned_sha256, "%s", psha);
	snprintf(res->pinned_at, sizeof res->pinned_at, "%s",
	         json_string_or(pinned, "pinnedAt", ""));
	cJSON_Delete(pinned);

	struct ga_err err = {{0}};
	errno = 0;
	s.text = fsx_read_file(path, SOUL_MAX_BYTES, &s.len, &err);
	if (!s.text) {
		if (errno == ENOENT) {
			res->status = SOUL_MISSING;
			if (res->pinned_sha256[0])
				snprintf(res->message, sizeof res->message,
				         "SOUL.md is missing at %s, but a SOUL was pinned on %s "
				         "(sha256 %.12s…). The agent will not run without its core "
				         "identity: restore SOUL.md, or write a new one and run "
				         "`general-agent soul --accept`.",
				         path, res->pinned_at, res->pinned_sha256);
			else
				snprintf(res->message, sizeof res->message,
				         "SOUL.md not found at %s: write your agent's "
				         "SOUL.md. " SOUL_WRITE_HINT,
				         path);
		} else {
			res->status = state_errno_denied(errno) ? SOUL_DENIED : SOUL_INVALID;
			snprintf(res->message, sizeof res->message, "SOUL.md cannot be read: %s%s",
			         err.msg,
			         res->status == SOUL_DENIED
			                 ? ". Give the user the agent runs as read access to it."
			                 : "");
		}
		return -1;
	}
	if (blank(s.text, s.len)) {
		res->status = SOUL_EMPTY;
		if (res->pinned_sha256[0])
			snprintf(res->message, sizeof res->message,
			         "SOUL.md at %s is empty, but a SOUL was pinned on %s (sha256 "
			         "%.12s…). The agent will not run without its core identity: "
			         "restore it, or write a new one and run `general-agent soul "
			         "--accept`.",
			         path, res->pinned_at[0] ? res->pinned_at : "an earlier start",
			         res->pinned_sha256);
		else
			snprintf(res->message, sizeof res->message,
			         "SOUL.md at %s is empty: write your agent's "
			         "SOUL.md. " SOUL_WRITE_HINT,
			         path);
		soul_free(&s);
		return -1;
	}
	if (!utf8_valid(s.text, s.len) || memchr(s.text, '\0', s.len)) {
		res->status = SOUL_INVALID;
		snprintf(res->message, sizeof res->message,
		         "SOUL.md at %s is not valid UTF-8 text; fix the file (an editor saving "
		         "in another encoding, or a binary file copied over it?).",
		         path);
		soul_free(&s);
		return -1;
	}
	sha256_hex(s.text, s.len, s.sha256);

	if (mode == SOUL_CHECK_READONLY && !res->pinned_sha256[0]) {
		res->status = SOUL_OK;
	} else if (!res->pinned_sha256[0] || mode == SOUL_CHECK_ACCEPT) {
		int was_pinned = res->pinned_sha256[0] != '\0';
		if (pin(st, &s, now_ms, res) != 0) {
			res->status = SOUL_INVALID;
			soul_free(&s);
			return -1;
		}
		res->status = SOUL_PINNED;
		log_kv(LOG_LEVEL_INFO, "identity",
		       was_pinned ? "SOUL.md re-pinned by the owner" : "SOUL.md pinned", "sha256",
		       s.sha256);
	} else if (strcmp(res->pinned_sha256, s.sha256) != 0) {
		res->status = SOUL_CHANGED;
		snprintf(res->message, sizeof res->message,
		         "SOUL.md has changed since it was pinned on %s (pinned sha256 %.12s…, "
		         "now %.12s…). SOUL.md is the agent's immutable core, so the agent will "
		         "not start. If the change is yours and intended, run `general-agent soul "
		         "--accept` to pin the new SOUL; otherwise restore the original file.",
		         res->pinned_at[0] ? res->pinned_at : "an earlier start",
		         res->pinned_sha256, s.sha256);
		soul_free(&s);
		return -1;
	} else {
		res->status = SOUL_OK;
	}
	if (out)
		*out = s;
	else
		soul_free(&s);
	return 0;
}

char *soul_essence(const char *text, int n, char *buf, size_t cap)
{
	size_t o = 0;
	int sentences = 0;
	int at_line_start = 1, in_heading = 0, pending_space = 0;
	if (cap == 0)
		return buf;
	for (const char *p = text; *p && sentences < n; p++) {
		char c = *p;
		if (at_line_start && c == '#')
			in_heading = 1;
		if (c == '\n') {
			at_line_start = 1;
			in_heading = 0;
			pending_space = o > 0;
			continue;
		}
		at_line_start = 0;
		if (in_heading)
			continue;
		if (c == ' ' || c == '\t' || c == '\r') {
			pending_space = o > 0;
			continue;
		}
		if (pending_space) {
			if (o + 1 >= cap)
				break;
			buf[o++] = ' ';
			pending_space = 0;
		}
		/* Copy whole UTF-8 sequences so a cut never splits one. */
		size_t seq = 1;
		unsigned char uc = (unsigned char)c;
		if (uc >= 0xF0)
			seq = 4;
		else if (uc >= 0xE0)
			seq = 3;
		else if (uc >= 0xC0)
			seq = 2;
		if (o + seq >= cap || strnlen(p, seq) < seq)
			break;
		memcpy(buf + o, p, seq);
		o += seq;
		p += seq - 1;
		if ((c == '.' || c == '!' || c == '?') &&
		    (p[1] == '\0' || p[1] == ' ' || p[1] == '\n' || p[1] == '\r' || p[1] == '\t'))
			sentences++;
	}
	buf[o] = '\0';
	return buf;
}
