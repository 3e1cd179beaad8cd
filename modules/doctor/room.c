/* doctor room — the room the daemon would join, asked once (room.h). */
#include "modules/doctor/room.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "adapters/space/discover.h"
#include "common/json.h"

struct found {
	char url[SPC_URL_MAX];
	enum spc_disc_source src;
	bool done;
};

static void on_found(void *ud, const char *url, enum spc_disc_source src)
{
	struct found *f = ud;
	snprintf(f->url, sizeof f->url, "%s", url);
	f->src = src;
	f->done = true;
}

/* "ws://host:port/…" → host, port ("[v6]" without brackets). -1 when not a
 * ws:// or wss:// URL with a host. */
static int split_url(const char *url, char *host, size_t hcap, char *port, size_t pcap)
{
	const char *p = strncmp(url, "ws://", 5) == 0    ? url + 5
	                : strncmp(url, "wss://", 6) == 0 ? url + 6
	                                                 : NULL;
	if (!p || !*p)
		return -1;
	const char *end = p + strcspn(p, "/?#");
	const char *colon = NULL;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (!close)
			return -1;
		snprintf(host, hcap, "%.*s", (int)(close - p - 1), p + 1);
		colon = close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		snprintf(host, hcap, "%.*s", (int)((colon ? colon : end) - p), p);
	}
	snprintf(port, pcap, "%.*s", colon ? (int)(end - colon - 1) : 2, colon ? colon + 1 : "80");
	return host[0] ? 0 : -1;
}

/* One GET /healthz; 0 with the body in out, or -1 with out saying why. */
static int healthz(const char *host, const char *port, int timeout_ms, char *out, size_t cap)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0) {
		snprintf(out, cap, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS)) {
		snprintf(out, cap, "cannot connect to %s:%s: %s", host, port, strerror(errno));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	struct pollfd pfd = {.fd = fd, .events = POLLOUT};
	int soerr = 0;
	socklen_t sl = sizeof soerr;
	if (poll(&pfd, 1, timeout_ms) != 1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
		snprintf(out, cap, "cannot connect to %s:%s: %s", host, port,
		         soerr ? strerror(soerr) : "no answer");
		close(fd);
		return -1;
	}
	char req[512];
	int n = snprintf(req, sizeof req,
	                 "GET /healthz HTTP/1.0\r\nHost: %s:%s\r\nConnection: close\r\n\r\n", host,
	                 port);
	if (n < 0 || (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
		snprintf(out, cap, "cannot ask %s:%s", host, port);
		close(fd);
		return -1;
	}
	char buf[4096];
	size_t len = 0;
	pfd.events = POLLIN;
	while (len < sizeof buf - 1 && poll(&pfd, 1, timeout_ms) == 1) {
		ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	const char *body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.", 7) != 0 || strncmp(buf + 8, " 200", 4) != 0 || !body) {
		snprintf(out, cap, "%s:%s answered, but not as a room: %.60s", host, port,
		         len ? buf : "(nothing)");
		return -1;
	}
	snprintf(out, cap, "%s", body + 4);
	return 0;
}

int doctor_room_probe(const struct ga_config *cfg, int timeout_ms, char *buf, size_t cap)
{
	struct spc_tunables t;
	spc_tunables_default(&t);
	spc_tunables_from_config(&t, &cfg->space);
	if ((int64_t)t.mdns_timeout_ms > timeout_ms)
		t.mdns_timeout_ms = (uint64_t)timeout_ms;
	uv_loop_t loop;
	if (uv_loop_init(&loop) != 0) {
		snprintf(buf, cap, "cannot create an event loop");
		return 0;
	}
	struct found f = {0};
	struct spc_disc *d = spc_disc_start(&loop, cfg->space_url, &t, on_found, &f);
	while (d && !f.done && uv_run(&loop, UV_RUN_ONCE))
		;
	spc_disc_cancel(d);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	const char *via = f.src == SPC_DISC_SPACE_URL ? "SPACE_URL"
	                  : f.src == SPC_DISC_MDNS    ? "found by mDNS"
	                                              : "no SPACE_URL, no room found by mDNS: the "
	                                                "default";
	char host[256], port[16], answer[1024];
	if (!f.done || split_url(f.url, host, sizeof host, port, sizeof port) != 0) {
		snprintf(buf, cap, "no room URL (%s): set SPACE_URL=ws://HOST:PORT",
		         f.done ? f.url : "discovery gave none");
		return 0;
	}
	if (healthz(host, port, timeout_ms, answer, sizeof answer) != 0) {
		snprintf(buf, cap, "%s (%s): %s — is agent-space running there? (SPACE_URL)", f.url,
		         via, answer);
		return 0;
	}
	cJSON *j = cJSON_Parse(answer);
	const char *name = j ? json_string_or(j, "name", NULL) : NULL;
	snprintf(buf, cap, "%s (%s): the room%s%s%s answers", f.url, via, name ? " '" : "",
	         name ? name : "", name ? "'" : "");
	cJSON_Delete(j);
	return 1;
}
