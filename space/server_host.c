/*
 * space/server_host — the host at the server's terminal: each line on
 * stdin (space/host.h reads them, from a terminal or a pipe) is a command
 * (/who, /help, /quit) or chat said to the room as `host` (§3.16), and
 * what members send is shown on stdout. See server_int.h.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/jsonnul.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "space/proto.h"
#include "space/server_int.h"

/* Writes text received from members to the terminal, never a byte that is
 * invalid in UTF-8: a U+0000 (the marker, space/proto.h) is shown as the
 * symbol for NUL, U+2400, a lone surrogate (WTF-8, common/jsonnul.h) as
 * U+FFFD. */
void srv_show(const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == JSON_NUL_MARK) {
			fputs("\u2400", stdout);
		} else if ((unsigned char)p[0] == 0xED && ((unsigned char)p[1] & 0xE0) == 0xA0 &&
		           p[2]) {
			fputs("\uFFFD", stdout);
			p += 2;
		} else {
			fputc(*p, stdout);
		}
	}
}

static void print_who(struct server *s)
{
	size_t n = space_room_member_count(s->room);
	printf("%zu agent%s in the room\n", n, n == 1 ? "" : "s");
	for (const struct space_conn *m = space_room_first_member(s->room); m; m = m->next) {
		char ts[TIME_ISO_LEN + 1];
		fputs("  ", stdout);
		srv_show(m->name);
		fputs(" (", stdout);
		srv_show(m->id);
		fputs(") v", stdout);
		srv_show(m->version);
		printf(", joined %s\n", time_format_iso(m->joined_at, ts));
	}
	fflush(stdout);
}

/* The host's commands, for /help. A line that is none of them is chat. */
static const char HOST_HELP[] =
        "host commands:\n"
        "  /who          list the agents in the room\n"
        "  /help         this list (also /?)\n"
        "  /quit, /exit  shut the room down (also quit, exit)\n"
        "  //text        say \"/text\" to the room\n"
        "any other line is said to the room as the host (@Name addresses an agent)\n";

void srv_host_line(void *ud, const char *line, size_t len)
{
	struct server *s = ud;
	size_t off, n;
	space_js_trim(line, len, &off, &n);
	if (!n)
		return;
	const char *t = line + off;
	if ((n == 4 && strncasecmp(t, "exit", 4) == 0) ||
	    (n == 4 && strncasecmp(t, "quit", 4) == 0) ||
	    (n == 5 && strncasecmp(t, "/quit", 5) == 0) ||
	    (n == 5 && strncasecmp(t, "/exit", 5) == 0)) {
		srv_begin_shutdown(s, "host asked to quit");
		return;
	}
	if (n == 4 && strncmp(t, "/who", 4) == 0) {
		print_who(s);
		return;
	}
	if ((n == 5 && strncasecmp(t, "/help", 5) == 0) || (n == 2 && strncmp(t, "/?", 2) == 0)) {
		fputs(HOST_HELP, stdout);
		fflush(stdout);
		return;
	}
	if (n >= 2 && t[0] == '/' && t[1] == '/') {
		t++; /* "//text" says "/text" */
		n--;
	} else if (t[0] == '/' && n > 1 && t[1] != ' ') {
		/* A mistyped command is not said to every agent in the room. */
		size_t w = 0;
		while (w < n && w < 40 && t[w] != ' ' && t[w] != '\t')
			w++;
		if (utf8_valid(t, w))
			printf("unknown command %.*s: /help lists the commands; start the line "
			       "with "
			       "// to say it to the room\n",
			       (int)w, t);
		else
			printf("unknown command: /help lists the commands\n");
		fflush(stdout);
		return;
	}
	if (!utf8_valid(t, n)) {
		log_warn(LOG_COMP, "host line is not valid UTF-8: ignored");
		return;
	}
	if (s->phase >= PHASE_CLOSING)
		return;
	space_room_host_chat(s->room, t, n, time_now_ms());
}
