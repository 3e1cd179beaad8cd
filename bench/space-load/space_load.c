/*
 * space-load — load generator for an agent-space server (any ws:// URL).
 *
 * Joins N members, has each chat at the allowed rate (default one chat per
 * 3 s per member, with a random phase so the load is smooth), and reports:
 *   - accepted chats/s and deliveries/s over the load window,
 *   - delivery latency p50/p99/max, from the sender's send to the receipt at
 *     every member (sender and receivers share this process's monotonic
 *     clock, so no clock sync is needed),
 *   - lost deliveries (an accepted chat must reach every member once),
 *   - the server's RSS (VmRSS, VmHWM from /proc/PID/status) when --server-pid
 *     is given: idle before connecting, after the joins, peak while loaded,
 *   - bytes received while joining (the presence/history traffic of a join
 *     storm).
 *
 * The generator shares the machine with the server and must itself receive
 * every delivery (333,000 messages/s at N = 1000), so it is a minimal
 * RFC 6455 client on epoll, not a WebSocket library: one read per readable
 * socket into a shared buffer, frames walked in place, a chat recognised by
 * its prefix and its marker found with memmem, and every long message
 * (presence, history) skipped by its length without being copied or parsed.
 * Its frames are masked like any client's.
 *
 * Chat content carries "L|<sender>|<seq>|<send µs>|" so a receipt is matched
 * without a JSON parse; the server's key order is fixed ({"type":"...).
 *
 * A member sends its next chat no earlier than the interval after its
 * previous chat was *echoed* (i.e. accepted by the server), which keeps a
 * jittery network from turning on-rate chats into rate-limited ones.
 *
 * The last line of output is machine readable (RESULT key=value ...), for
 * run.sh. Exit status: 0 when the run completed (whatever the figures),
 * 1 when it could not (connect/join failure), 64 on usage errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define DEFAULT_MEMBERS         200
#define DEFAULT_DURATION_S      30
#define DEFAULT_INTERVAL_MS     3000.0 /* the server's chat rate limit */
#define DEFAULT_CONTENT_BYTES   100
#define MAX_CONCURRENT_CONNECTS 64
#define JOIN_PHASE_TIMEOUT_S    300
#define DRAIN_TIMEOUT_S         10
/* After the joins, the load starts once no member has received anything
 * for this long (--settle-ms): the join storm has drained, including the
 * last presence snapshot, which the server may hold back for up to
 * SPACE_PRESENCE_MAX_DELAY_MS (5 s by default) after the last join. The
 * bytes received until then are the join's. */
#define DEFAULT_SETTLE_MS   6000
#define SETTLE_TIMEOUT_S    300
#define INFLIGHT_TIMEOUT_US (15 * 1000000LL)
#define TICK_US             100000
#define CONNECT_TICK_US     5000
/* Messages up to this payload size are looked at whole (chats, errors);
 * longer ones only by their first CLASSIFY_BYTES, then skipped. */
#define KEEP_BYTES     4096
#define CLASSIFY_BYTES 40
#define HOLD_BYTES     (KEEP_BYTES + 14)
#define READ_BYTES     (256 * 1024)
/* Latency histogram: 10 µs buckets up to 100 ms, then 1 ms up to 60 s. */
#define FINE_US         10
#define FINE_LIMIT_US   100000
#define COARSE_US       1000
#define COARSE_LIMIT_US 60000000
#define NFINE           (FINE_LIMIT_US / FINE_US)
#define NCOARSE         ((COARSE_LIMIT_US - FINE_LIMIT_US) / COARSE_US)

enum phase { PH_CONNECT, PH_SETTLE, PH_LOAD, PH_DRAIN, PH_DONE };
enum mstate { M_IDLE, M_CONNECTING, M_HANDSHAKE, M_OPEN, M_CLOSED, M_FAILED };

struct member {
	int idx, fd;
	enum mstate st;
	bool joined;
	/* Bytes of an unfinished frame (or of the handshake response). */
	uint8_t hold[HOLD_BYTES];
	size_t hold_len;
	uint64_t skip; /* payload bytes of a long message still to skip */
	/* Unsent output (only when the socket buffer was full). */
	char *out;
	size_t out_len;
	/* Chat bookkeeping (this member as sender). */
	uint32_t seq;     /* chats sent */
	int64_t inflight; /* seq awaiting echo/error, -1 when none */
	int64_t inflight_at;
	int64_t next_ok_us; /* earliest time for the next send */
	int64_t due_us;     /* when the chat timer fires; 0 when not scheduled */
	size_t heap_pos;    /* position in the timer heap + 1; 0 when absent */
	uint32_t *recv;     /* per seq: receipts seen at all members */
	uint8_t *rejected;  /* per seq: 1 when the server rate-limited it */
	size_t cap;
};

static struct {
	const char *url;
	char host[300], path[512];
	int port;
	int n;
	double duration_s;
	double interval_ms;
	int content_bytes;
	int server_pid;
	int settle_ms;
	bool verbose;
} opt;

static struct sockaddr_storage addr;
static socklen_t addr_len;
static int ep;
static struct member *members;
static struct member **heap; /* chat timers, earliest first */
static size_t heap_n;
static enum phase phase = PH_CONNECT;
static int n_started, n_connecting, n_joined, n_failed, n_closed_early;
static int64_t t_begin, t_joined, t_settled, t_load_start, t_load_end, t_drain_start;
static int64_t last_rx_us, next_tick_us;
static uint64_t deliveries, deliveries_in_window, accepted, rejected_n, sent_n, other_errors;
static uint64_t rx_bytes_join; /* bytes read before the load started */
static uint64_t hist_fine[NFINE], hist_coarse[NCOARSE], hist_over, hist_count;
static int64_t lat_max_us;
static long rss_idle_kb = -1, rss_joined_kb = -1, rss_peak_kb = -1, hwm_end_kb = -1;
static volatile sig_atomic_t interrupted;
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint8_t *rbuf;
static char *pad;

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint32_t rand32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void hist_add(int64_t us)
{
	if (us < 0)
		us = 0;
	if (us > lat_max_us)
		lat_max_us = us;
	hist_count++;
	if (us < FINE_LIMIT_US)
		hist_fine[us / FINE_US]++;
	else if (us < COARSE_LIMIT_US)
		hist_coarse[(us - FINE_LIMIT_US) / COARSE_US]++;
	else
		hist_over++;
}

/* The latency (µs, bucket upper bound) below which fraction q of samples lie. */
static double hist_quantile(double q)
{
	if (!hist_count)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)hist_count), acc = 0;
	for (int i = 0; i < NFINE; i++) {
		acc += hist_fine[i];
		if (acc >= want)
			return (double)(i + 1) * FINE_US;
	}
	for (int i = 0; i < NCOARSE; i++) {
		acc += hist_coarse[i];
		if (acc >= want)
			return FINE_LIMIT_US + (double)(i + 1) * COARSE_US;
	}
	return (double)lat_max_us;
}

static void member_grow(struct member *m, uint32_t seq)
{
	if (seq < m->cap)
		return;
	size_t ncap = m->cap ? m->cap * 2 : 64;
	while (ncap <= seq)
		ncap *= 2;
	m->recv = realloc(m->recv, ncap * sizeof *m->recv);
	m->rejected = realloc(m->rejected, ncap);
	if (!m->recv || !m->rejected) {
		fprintf(stderr, "space-load: out of memory\n");
		exit(1);
	}
	memset(m->recv + m->cap, 0, (ncap - m->cap) * sizeof *m->recv);
	memset(m->rejected + m->cap, 0, ncap - m->cap);
	m->cap = ncap;
}

/* --- chat timers: a binary heap on due_us ---------------------------------- */

static void heap_swap(size_t a, size_t b)
{
	struct member *t = heap[a];
	heap[a] = heap[b];
	heap[b] = t;
	heap[a]->heap_pos = a + 1;
	heap[b]->heap_pos = b + 1;
}

static void heap_up(size_t i)
{
	while (i && heap[(i - 1) / 2]->due_us > heap[i]->due_us) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < heap_n && heap[l]->due_us < heap[m]->due_us)
			m = l;
		if (r < heap_n && heap[r]->due_us < heap[m]->due_us)
			m = r;
		if (m == i)
			return;
		heap_swap(i, m);
		i = m;
	}
}

static void heap_remove(struct member *m)
{
	if (!m->heap_pos)
		return;
	size_t i = m->heap_pos - 1;
	m->heap_pos = 0;
	heap_n--;
	if (i == heap_n)
		return;
	heap[i] = heap[heap_n];
	heap[i]->heap_pos = i + 1;
	heap_up(i);
	heap_down(i);
}

/* Schedules this member's next chat at max(next_ok, now). */
static void schedule_chat(struct member *m)
{
	heap_remove(m);
	int64_t t = now_us();
	m->due_us = m->next_ok_us > t ? m->next_ok_us : t;
	heap[heap_n] = m;
	m->heap_pos = ++heap_n;
	heap_up(heap_n - 1);
}

/* --- output --------------------------------------------------------------------- */

/* Ends a member's connection; one that never joined counts as failed, one
 * that did as closed by the server. */
static void member_close(struct member *m, enum mstate st)
{
	bool active = m->st == M_CONNECTING || m->st == M_HANDSHAKE || m->st == M_OPEN;
	if (m->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, m->fd, NULL);
		close(m->fd);
		m->fd = -1;
	}
	if (active && !m->joined) {
		n_connecting--;
		n_failed++;
	} else if (active && phase != PH_DONE) {
		n_closed_early++;
		fprintf(stderr, "space-load: member %d: connection closed by the server\n", m->idx);
	}
	heap_remove(m);
	free(m->out);
	m->out = NULL;
	m->out_len = 0;
	m->st = st;
}

static void send_bytes(struct member *m, const void *data, size_t len)
{
	if (m->fd < 0)
		return;
	if (!m->out_len) {
		ssize_t w = write(m->fd, data, len);
		if (w == (ssize_t)len)
			return;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			member_close(m, M_CLOSED);
			return;
		}
		if (w < 0)
			w = 0;
		data = (const char *)data + w;
		len -= (size_t)w;
	}
	m->out = realloc(m->out, m->out_len + len);
	memcpy(m->out + m->out_len, data, len);
	m->out_len += len;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = m};
	epoll_ctl(ep, EPOLL_CTL_MOD, m->fd, &ev);
}

/* Sends one masked frame (clients must mask, RFC 6455 §5.3). */
static void send_frame(struct member *m, unsigned opcode, const char *payload, size_t len)
{
	uint8_t buf[14 + 1024];
	if (len > 1024)
		return;
	size_t n = 0;
	buf[n++] = (uint8_t)(0x80 | opcode);
	if (len < 126) {
		buf[n++] = (uint8_t)(0x80 | len);
	} else {
		buf[n++] = 0x80 | 126;
		buf[n++] = (uint8_t)(len >> 8);
		buf[n++] = (uint8_t)len;
	}
	uint32_t key = rand32();
	uint8_t *mask = buf + n;
	memcpy(mask, &key, 4);
	n += 4;
	for (size_t i = 0; i < len; i++)
		buf[n + i] = (uint8_t)payload[i] ^ mask[i & 3];
	send_bytes(m, buf, n + len);
}

static void send_join(struct member *m)
{
	char buf[256];
	int n = snprintf(buf, sizeof buf,
	                 "{\"type\":\"join\",\"name\":\"load-%04d\",\"id\":\"load-%04d-%d\","
	                 "\"version\":\"space-load\",\"capabilities\":[\"social\"]}",
	                 m->idx, m->idx, (int)getpid());
	send_frame(m, 0x1, buf, (size_t)n);
}

static void send_chat(struct member *m)
{
	char buf[1024];
	uint32_t seq = m->seq++;
	member_grow(m, seq);
	int64_t t = now_us();
	int n = snprintf(buf, sizeof buf,
	                 "{\"type\":\"chat\",\"content\":\"L|%d|%" PRIu32 "|%lld|%s\"}", m->idx,
	                 seq, (long long)t, pad);
	m->inflight = seq;
	m->inflight_at = t;
	m->next_ok_us = t + (int64_t)(opt.interval_ms * 1000.0);
	sent_n++;
	send_frame(m, 0x1, buf, (size_t)n);
}

/* --- input ---------------------------------------------------------------------- */

/* Parses an unsigned decimal; returns the end or NULL. */
static const char *parse_num(const char *p, const char *end, int64_t *out)
{
	int64_t v = 0;
	const char *s = p;
	while (p < end && *p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	if (p == s || p >= end || *p != '|')
		return NULL;
	*out = v;
	return p + 1;
}

static void on_chat(struct member *rcv, const char *msg, size_t len, int64_t t)
{
	static const char marker[] = "\"content\":\"L|";
	const char *p = memmem(msg, len, marker, sizeof marker - 1);
	if (!p)
		return; /* someone else's chat (host, another client) */
	const char *end = msg + len;
	int64_t sender, seq, sent_us;
	p += sizeof marker - 1;
	if (!(p = parse_num(p, end, &sender)) || !(p = parse_num(p, end, &seq)) ||
	    !parse_num(p, end, &sent_us) || sender >= opt.n)
		return;
	struct member *s = &members[sender];
	if ((uint64_t)seq >= s->cap)
		return;
	s->recv[seq]++;
	deliveries++;
	if (phase == PH_LOAD)
		deliveries_in_window++;
	hist_add(t - sent_us);
	if (s == rcv && s->inflight == seq) {
		/* Our own echo: the server accepted the chat. */
		accepted++;
		s->inflight = -1;
		int64_t earliest = t + (int64_t)(opt.interval_ms * 1000.0) + 1000;
		if (s->next_ok_us < earliest)
			s->next_ok_us = earliest;
		if (phase == PH_LOAD)
			schedule_chat(s);
	}
}

/* A text message, whole (len == full) or only its first bytes. */
static void on_message(struct member *m, const char *msg, size_t len, int64_t t)
{
	if (len >= 14 && memcmp(msg, "{\"type\":\"chat\"", 14) == 0) {
		on_chat(m, msg, len, t);
	} else if (len >= 26 && memcmp(msg, "{\"type\":\"history_response\"", 26) == 0) {
		if (!m->joined) {
			m->joined = true;
			n_joined++;
			n_connecting--;
		}
	} else if (len >= 15 && memcmp(msg, "{\"type\":\"error\"", 15) == 0) {
		if (memmem(msg, len, "Rate limited", 12) && m->inflight >= 0) {
			m->rejected[m->inflight] = 1;
			rejected_n++;
			m->inflight = -1;
			m->next_ok_us = t + (int64_t)(opt.interval_ms * 1000.0) + 1000;
			if (phase == PH_LOAD)
				schedule_chat(m);
		} else {
			other_errors++;
			if (opt.verbose)
				fprintf(stderr, "member %d: %.*s\n", m->idx, (int)len, msg);
		}
	}
}

/* Bytes needed before the frame starting at p (have bytes there) can be
 * acted on: its header, then all of a short payload or the first
 * CLASSIFY_BYTES of a long one. */
static size_t frame_need(const uint8_t *p, size_t have, size_t *hdr, uint64_t *plen)
{
	if (have < 2)
		return 2;
	unsigned l7 = p[1] & 0x7F;
	size_t h = 2 + (l7 == 126 ? 2 : l7 == 127 ? 8 : 0);
	if (have < h)
		return h;
	uint64_t len = l7;
	if (l7 == 126)
		len = (uint64_t)p[2] << 8 | p[3];
	else if (l7 == 127)
		for (int i = 0; i < 8; i++)
			len = (i ? len << 8 : 0) | p[2 + i];
	*hdr = h;
	*plen = len;
	return h + (len <= KEEP_BYTES ? (size_t)len : CLASSIFY_BYTES);
}

/* Acts on one frame whose first `avail` payload bytes are at pl. */
static void on_frame(struct member *m, unsigned opcode, const uint8_t *pl, size_t avail,
                     uint64_t plen, int64_t t)
{
	switch (opcode) {
	case 0x1:
		on_message(m, (const char *)pl, avail, t);
		break;
	case 0x9:
		send_frame(m, 0xA, (const char *)pl, avail); /* pong */
		break;
	case 0x8:
		member_close(m, M_CLOSED);
		break;
	default:
		break;
	}
}

/* Walks the frames in buf[0..len), holding an unfinished one in m->hold. */
static void ws_input(struct member *m, const uint8_t *buf, size_t len, int64_t t)
{
	while (len && m->st == M_OPEN) {
		if (m->skip) {
			size_t n = m->skip < len ? (size_t)m->skip : len;
			m->skip -= n;
			buf += n;
			len -= n;
			continue;
		}
		const uint8_t *f = buf;
		size_t have = len, hdr = 0;
		uint64_t plen = 0;
		if (m->hold_len) {
			/* Complete the held frame up to what it needs. */
			for (;;) {
				size_t need = frame_need(m->hold, m->hold_len, &hdr, &plen);
				if (m->hold_len >= need)
					break;
				size_t n = need - m->hold_len;
				if (n > len)
					n = len;
				memcpy(m->hold + m->hold_len, buf, n);
				m->hold_len += n;
				buf += n;
				len -= n;
				if (!len &&
				    m->hold_len < frame_need(m->hold, m->hold_len, &hdr, &plen))
					return;
			}
			f = m->hold;
			have = m->hold_len;
		}
		size_t need = frame_need(f, have, &hdr, &plen);
		if (have < need) {
			memcpy(m->hold, f, have); /* f == buf here */
			m->hold_len = have;
			return;
		}
		size_t avail = have - hdr;
		if ((uint64_t)avail > plen)
			avail = (size_t)plen;
		on_frame(m, f[0] & 0x0F, f + hdr, avail, plen, t);
		if (f == m->hold) {
			m->hold_len = 0;
		} else {
			buf += hdr + avail;
			len -= hdr + avail;
		}
		m->skip = plen - avail;
	}
}

static void handshake_input(struct member *m, const uint8_t *buf, size_t len, int64_t t)
{
	size_t n = len;
	if (n > sizeof m->hold - m->hold_len)
		n = sizeof m->hold - m->hold_len;
	memcpy(m->hold + m->hold_len, buf, n);
	m->hold_len += n;
	uint8_t *end = memmem(m->hold, m->hold_len, "\r\n\r\n", 4);
	if (!end) {
		if (m->hold_len == sizeof m->hold) {
			fprintf(stderr, "space-load: member %d: oversized handshake response\n",
			        m->idx);
			member_close(m, M_FAILED);
		}
		return;
	}
	if (m->hold_len < 12 || memcmp(m->hold, "HTTP/1.1 101", 12) != 0) {
		const uint8_t *eol = memchr(m->hold, '\r', m->hold_len);
		fprintf(stderr, "space-load: member %d: upgrade refused: %.*s\n", m->idx,
		        (int)(eol - m->hold), (const char *)m->hold);
		member_close(m, M_FAILED);
		return;
	}
	size_t head = (size_t)(end + 4 - m->hold);
	size_t rest = m->hold_len - head;
	uint8_t tail[HOLD_BYTES];
	memcpy(tail, m->hold + head, rest);
	m->hold_len = 0;
	m->st = M_OPEN;
	send_join(m);
	ws_input(m, tail, rest, t);
	if (n < len)
		ws_input(m, buf + n, len - n, t);
}

static void on_readable(struct member *m)
{
	ssize_t r = read(m->fd, rbuf, READ_BYTES);
	if (r <= 0) {
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		member_close(m, m->joined ? M_CLOSED : M_FAILED);
		return;
	}
	int64_t t = now_us();
	last_rx_us = t;
	if (phase < PH_LOAD)
		rx_bytes_join += (uint64_t)r;
	if (m->st == M_HANDSHAKE)
		handshake_input(m, rbuf, (size_t)r, t);
	else
		ws_input(m, rbuf, (size_t)r, t);
}

static void on_writable(struct member *m)
{
	if (m->st == M_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof err;
		getsockopt(m->fd, SOL_SOCKET, SO_ERROR, &err, &el);
		if (err) {
			fprintf(stderr, "space-load: member %d: connect: %s\n", m->idx,
			        strerror(err));
			member_close(m, M_FAILED);
			return;
		}
		m->st = M_HANDSHAKE;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = m};
		epoll_ctl(ep, EPOLL_CTL_MOD, m->fd, &ev);
		char req[1024];
		/* The key is not checked by this client; any valid one will do. */
		int n = snprintf(
		        req, sizeof req,
		        "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
		        "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		        "Sec-WebSocket-Version: 13\r\n\r\n",
		        opt.path, opt.host, opt.port);
		send_bytes(m, req, (size_t)n);
		return;
	}
	if (!m->out_len)
		return;
	ssize_t w = write(m->fd, m->out, m->out_len);
	if (w < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			member_close(m, M_CLOSED);
		return;
	}
	memmove(m->out, m->out + w, m->out_len - (size_t)w);
	m->out_len -= (size_t)w;
	if (!m->out_len) {
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = m};
		epoll_ctl(ep, EPOLL_CTL_MOD, m->fd, &ev);
	}
}

static void start_connect(struct member *m)
{
	n_started++;
	n_connecting++;
	m->st = M_CONNECTING;
	m->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->fd < 0) {
		fprintf(stderr, "space-load: socket: %s (ulimit -n?)\n", strerror(errno));
		member_close(m, M_FAILED);
		return;
	}
	int one = 1;
	setsockopt(m->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(m->fd, (struct sockaddr *)&addr, addr_len) < 0 && errno != EINPROGRESS) {
		fprintf(stderr, "space-load: member %d: connect: %s\n", m->idx, strerror(errno));
		member_close(m, M_FAILED);
		return;
	}
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = m};
	epoll_ctl(ep, EPOLL_CTL_ADD, m->fd, &ev);
}

/* --- phases --------------------------------------------------------------------- */

static void start_load(void)
{
	phase = PH_LOAD;
	t_load_start = now_us();
	int64_t interval_us = (int64_t)(opt.interval_ms * 1000.0);
	for (int i = 0; i < opt.n; i++) {
		struct member *m = &members[i];
		if (!m->joined || m->st != M_OPEN)
			continue;
		/* Random phase in [0, interval) so the chats are spread evenly. */
		m->next_ok_us = t_load_start +
		                (int64_t)((double)rand32() / 4294967296.0 * (double)interval_us);
		schedule_chat(m);
	}
}

static uint64_t expected_deliveries(uint64_t *lost, uint64_t *dups, uint64_t *unconfirmed)
{
	uint64_t exp = 0;
	*lost = *dups = *unconfirmed = 0;
	uint32_t nmem = (uint32_t)n_joined;
	for (int i = 0; i < opt.n; i++) {
		struct member *m = &members[i];
		for (uint32_t q = 0; q < m->seq; q++) {
			if (m->rejected[q])
				continue;
			if (m->recv[q] == 0)
				(*unconfirmed)++;
			exp += nmem;
			if (m->recv[q] < nmem)
				*lost += nmem - m->recv[q];
			else if (m->recv[q] > nmem)
				*dups += m->recv[q] - nmem;
		}
	}
	return exp;
}

static void tick(int64_t t)
{
	long rss = tu_proc_status_kb(opt.server_pid, "VmRSS");
	if (rss > rss_peak_kb)
		rss_peak_kb = rss;
	switch (phase) {
	case PH_CONNECT:
		while (n_started < opt.n && n_connecting < MAX_CONCURRENT_CONNECTS)
			start_connect(&members[n_started]);
		if (n_joined + n_failed >= opt.n && n_connecting <= 0) {
			t_joined = t;
			rss_joined_kb = tu_proc_status_kb(opt.server_pid, "VmRSS");
			fprintf(stderr, "space-load: %d/%d joined in %.2f s (%d failed)\n",
			        n_joined, opt.n, (double)(t_joined - t_begin) / 1e6, n_failed);
			phase = n_joined ? PH_SETTLE : PH_DONE;
		} else if (t - t_begin > JOIN_PHASE_TIMEOUT_S * 1000000LL) {
			fprintf(stderr, "space-load: join phase timed out (%d/%d joined)\n",
			        n_joined, opt.n);
			phase = PH_DONE;
		}
		break;
	case PH_SETTLE:
		if (t - last_rx_us >= (int64_t)opt.settle_ms * 1000 ||
		    t - t_joined > SETTLE_TIMEOUT_S * 1000000LL) {
			t_settled = t;
			fprintf(stderr,
			        "space-load: quiet %.2f s after the last join; starting the load\n",
			        (double)(t_settled - t_joined) / 1e6);
			start_load();
		}
		break;
	case PH_LOAD:
		/* A chat that was neither echoed nor rejected for long: give up on
		 * it (it counts as lost) so the member keeps chatting. */
		for (int i = 0; i < opt.n; i++) {
			struct member *m = &members[i];
			if (m->inflight >= 0 && t - m->inflight_at > INFLIGHT_TIMEOUT_US) {
				m->inflight = -1;
				schedule_chat(m);
			}
		}
		if (t - t_load_start >= (int64_t)(opt.duration_s * 1e6)) {
			t_load_end = t;
			t_drain_start = t;
			phase = PH_DRAIN;
		}
		break;
	case PH_DRAIN: {
		uint64_t lost, dups, unc;
		expected_deliveries(&lost, &dups, &unc);
		if (lost == 0 || t - t_drain_start > DRAIN_TIMEOUT_S * 1000000LL)
			phase = PH_DONE;
		break;
	}
	case PH_DONE:
		break;
	}
	if (interrupted && phase != PH_DONE) {
		if (phase == PH_LOAD) {
			t_load_end = t;
			t_drain_start = t;
			phase = PH_DRAIN;
		} else if (phase == PH_CONNECT || phase == PH_SETTLE) {
			phase = PH_DONE;
		}
		interrupted = 0;
	}
	next_tick_us = t + (phase == PH_CONNECT ? CONNECT_TICK_US : TICK_US);
}

/* Sends every chat that is due. */
static void fire_chats(int64_t t)
{
	while (heap_n && heap[0]->due_us <= t) {
		struct member *m = heap[0];
		heap_remove(m);
		if (phase == PH_LOAD && m->joined && m->st == M_OPEN && m->inflight < 0)
			send_chat(m);
	}
}

static void run(void)
{
	struct epoll_event evs[256];
	t_begin = now_us();
	next_tick_us = t_begin;
	while (phase != PH_DONE) {
		int64_t t = now_us();
		if (t >= next_tick_us)
			tick(t);
		if (phase == PH_DONE)
			break;
		fire_chats(t);
		int64_t wake = next_tick_us;
		if (heap_n && heap[0]->due_us < wake)
			wake = heap[0]->due_us;
		int64_t wait_us = wake - now_us();
		int timeout = wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000);
		int n = epoll_wait(ep, evs, (int)(sizeof evs / sizeof evs[0]), timeout);
		for (int i = 0; i < n; i++) {
			struct member *m = evs[i].data.ptr;
			if (m->fd < 0)
				continue;
			if (evs[i].events & (EPOLLOUT | EPOLLERR))
				on_writable(m);
			if (m->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				on_readable(m);
		}
	}
}

static void on_signal(int sig)
{
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: space-load --url ws://HOST:PORT[/PATH] [options]\n"
	        "  -u, --url URL          agent-space WebSocket URL (required)\n"
	        "  -n, --members N        members to join (default %d)\n"
	        "  -d, --duration S       seconds of load after everyone joined (default %d)\n"
	        "  -r, --rate R           chats per second per member (default %.4f, the server's\n"
	        "                         limit of one chat per %.0f ms)\n"
	        "  -s, --size BYTES       chat content size (default %d)\n"
	        "  -p, --server-pid PID   report that process's RSS (VmRSS/VmHWM)\n"
	        "  -q, --settle-ms MS     after the joins, start the load once nothing\n"
	        "                         arrived for MS (default %d)\n"
	        "  -v, --verbose          print unexpected server errors\n"
	        "  -h, --help\n"
	        "The last output line is RESULT key=value ... for scripts.\n",
	        DEFAULT_MEMBERS, DEFAULT_DURATION_S, 1000.0 / DEFAULT_INTERVAL_MS,
	        DEFAULT_INTERVAL_MS, DEFAULT_CONTENT_BYTES, DEFAULT_SETTLE_MS);
}

/* ws://host[:port][/path] */
static int parse_url(const char *url)
{
	if (strncmp(url, "ws://", 5) != 0)
		return -1;
	const char *h = url + 5, *slash = strchr(h, '/');
	size_t hl = slash ? (size_t)(slash - h) : strlen(h);
	char hostport[300];
	if (!hl || hl >= sizeof hostport)
		return -1;
	memcpy(hostport, h, hl);
	hostport[hl] = '\0';
	opt.port = 80;
	char *colon = strrchr(hostport, ':');
	if (colon && !strchr(colon, ']')) {
		*colon = '\0';
		opt.port = atoi(colon + 1);
		if (opt.port <= 0 || opt.port > 65535)
			return -1;
	}
	char *host = hostport;
	if (*host == '[') {
		host++;
		char *e = strchr(host, ']');
		if (e)
			*e = '\0';
	}
	snprintf(opt.host, sizeof opt.host, "%s", host);
	snprintf(opt.path, sizeof opt.path, "%s", slash ? slash : "/");
	char ps[8];
	snprintf(ps, sizeof ps, "%d", opt.port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	if (getaddrinfo(opt.host, ps, &hints, &ai) != 0)
		return -1;
	memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
	addr_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int main(int argc, char **argv)
{
	opt.n = DEFAULT_MEMBERS;
	opt.duration_s = DEFAULT_DURATION_S;
	opt.settle_ms = DEFAULT_SETTLE_MS;
	opt.interval_ms = DEFAULT_INTERVAL_MS;
	opt.content_bytes = DEFAULT_CONTENT_BYTES;
	static const struct option longopts[] = {
	        {"url", required_argument, NULL, 'u'},
	        {"members", required_argument, NULL, 'n'},
	        {"duration", required_argument, NULL, 'd'},
	        {"rate", required_argument, NULL, 'r'},
	        {"size", required_argument, NULL, 's'},
	        {"server-pid", required_argument, NULL, 'p'},
	        {"settle-ms", required_argument, NULL, 'q'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "u:n:d:r:s:p:q:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			opt.url = optarg;
			break;
		case 'n':
			opt.n = atoi(optarg);
			break;
		case 'd':
			opt.duration_s = atof(optarg);
			break;
		case 'r': {
			double r = atof(optarg);
			if (r <= 0) {
				fprintf(stderr, "space-load: --rate must be positive\n");
				return 64;
			}
			opt.interval_ms = 1000.0 / r;
			break;
		}
		case 's':
			opt.content_bytes = atoi(optarg);
			break;
		case 'p':
			opt.server_pid = atoi(optarg);
			break;
		case 'q':
			opt.settle_ms = atoi(optarg);
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 64;
		}
	}
	if (!opt.url || opt.n <= 0 || opt.duration_s <= 0 || opt.content_bytes < 0 ||
	    opt.settle_ms < 0 || opt.content_bytes > 512) {
		usage(stderr);
		return 64;
	}
	if (parse_url(opt.url) < 0) {
		fprintf(stderr, "space-load: cannot use URL '%s' (want ws://host:port/path)\n",
		        opt.url);
		return 64;
	}
	pad = malloc((size_t)opt.content_bytes + 1);
	memset(pad, 'x', (size_t)opt.content_bytes);
	pad[opt.content_bytes] = '\0';
	members = calloc((size_t)opt.n, sizeof *members);
	heap = calloc((size_t)opt.n, sizeof *heap);
	rbuf = malloc(READ_BYTES);
	if (!members || !heap || !rbuf || !pad) {
		fprintf(stderr, "space-load: out of memory\n");
		return 1;
	}
	for (int i = 0; i < opt.n; i++) {
		members[i].idx = i;
		members[i].fd = -1;
		members[i].inflight = -1;
	}
	rng ^= (uint64_t)getpid() * 0x100000001B3ull ^ (uint64_t)now_us();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("space-load: epoll_create1");
		return 1;
	}

	rss_idle_kb = tu_proc_status_kb(opt.server_pid, "VmRSS");
	rss_peak_kb = rss_idle_kb;
	run();

	hwm_end_kb = tu_proc_status_kb(opt.server_pid, "VmHWM");
	uint64_t lost, dups, unconfirmed;
	uint64_t expected = expected_deliveries(&lost, &dups, &unconfirmed);
	double win = t_load_end > t_load_start ? (double)(t_load_end - t_load_start) / 1e6 : 0;
	double chats_s = win > 0 ? (double)accepted / win : 0;
	double deliv_s = win > 0 ? (double)deliveries_in_window / win : 0;
	double p50 = hist_quantile(0.50) / 1000.0, p99 = hist_quantile(0.99) / 1000.0;
	double maxl = (double)lat_max_us / 1000.0;
	double join_mb = (double)rx_bytes_join / 1e6;

	printf("space-load: %s, %d members (%d joined, %d failed, %d closed by server)\n", opt.url,
	       opt.n, n_joined, n_failed, n_closed_early);
	printf("  join phase          %.2f s, then %.2f s until the room was quiet; %.1f MB "
	       "received meanwhile\n",
	       t_joined ? (double)(t_joined - t_begin) / 1e6 : 0,
	       t_settled ? (double)(t_settled - t_joined) / 1e6 : 0, join_mb);
	printf("  load window         %.2f s, one chat per %.0f ms per member\n", win,
	       opt.interval_ms);
	printf("  chats sent          %" PRIu64 " (accepted %" PRIu64 ", rate-limited %" PRIu64
	       ", unconfirmed %" PRIu64 ")\n",
	       sent_n, accepted, rejected_n, unconfirmed);
	printf("  accepted chats/s    %.1f\n", chats_s);
	printf("  deliveries/s        %.0f\n", deliv_s);
	printf("  deliveries          %" PRIu64 " of %" PRIu64 " expected, lost %" PRIu64
	       ", duplicated %" PRIu64 "\n",
	       deliveries, expected, lost, dups);
	printf("  latency ms          p50 %.2f  p99 %.2f  max %.2f  (%" PRIu64 " samples)\n", p50,
	       p99, maxl, hist_count);
	if (opt.server_pid > 0)
		printf("  server RSS KiB      idle %ld  joined %ld  peak %ld  VmHWM %ld\n",
		       rss_idle_kb, rss_joined_kb, rss_peak_kb, hwm_end_kb);
	if (other_errors)
		printf("  other server errors %" PRIu64 "\n", other_errors);
	printf("RESULT members=%d joined=%d failed=%d closed=%d join_s=%.2f settle_s=%.2f "
	       "window_s=%.2f "
	       "sent=%" PRIu64 " accepted=%" PRIu64 " rate_limited=%" PRIu64 " chats_per_s=%.1f "
	       "deliveries_per_s=%.0f deliveries=%" PRIu64 " expected=%" PRIu64 " lost=%" PRIu64
	       " dups=%" PRIu64 " p50_ms=%.2f p99_ms=%.2f max_ms=%.2f rss_idle_kb=%ld "
	       "rss_joined_kb=%ld rss_peak_kb=%ld hwm_kb=%ld join_rx_mb=%.1f\n",
	       opt.n, n_joined, n_failed, n_closed_early,
	       t_joined ? (double)(t_joined - t_begin) / 1e6 : 0,
	       t_settled ? (double)(t_settled - t_joined) / 1e6 : 0, win, sent_n, accepted,
	       rejected_n, chats_s, deliv_s, deliveries, expected, lost, dups, p50, p99, maxl,
	       rss_idle_kb, rss_joined_kb, rss_peak_kb, hwm_end_kb, join_mb);
	fflush(stdout);

	for (int i = 0; i < opt.n; i++) {
		if (members[i].fd >= 0)
			close(members[i].fd);
		free(members[i].recv);
		free(members[i].rejected);
		free(members[i].out);
	}
	close(ep);
	free(members);
	free(heap);
	free(rbuf);
	free(pad);
	return n_joined == opt.n ? 0 : 1;
}
