/*
 * space-load — load generator for an agent-space server (any ws:// URL).
 *
 * Joins N members over libwebsockets (one thread, lws's own poll loop), has
 * each chat at the allowed rate (default one chat per 3 s per member, with a
 * random phase so the load is smooth), and reports:
 *   - accepted chats/s and deliveries/s over the load window,
 *   - delivery latency p50/p99/max, from the sender's send to the receipt at
 *     every member (sender and receivers share this process's monotonic
 *     clock, so no clock sync is needed),
 *   - lost deliveries (an accepted chat must reach every member once),
 *   - the server's RSS (VmRSS, VmHWM from /proc/PID/status) when --server-pid
 *     is given: idle before connecting, after the joins, peak while loaded.
 *
 * Chat content carries "L|<sender>|<seq>|<send µs>|" so a receipt is matched
 * without a JSON parse; other server messages are skipped by their prefix
 * (the server's key order is fixed: {"type":"...).
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
#include <getopt.h>
#include <inttypes.h>
#include <libwebsockets.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#define DEFAULT_MEMBERS         200
#define DEFAULT_DURATION_S      30
#define DEFAULT_INTERVAL_MS     3000.0 /* the server's chat rate limit */
#define DEFAULT_CONTENT_BYTES   100
#define MAX_CONCURRENT_CONNECTS 64
#define JOIN_PHASE_TIMEOUT_S    300
#define DRAIN_TIMEOUT_S         10
/* After the joins, the load starts once no member has received anything
 * for this long (the join storm of presence broadcasts has drained). */
#define SETTLE_QUIET_US     1000000LL
#define SETTLE_TIMEOUT_S    300
#define INFLIGHT_TIMEOUT_US (15 * 1000000LL)
#define RX_KEEP_BYTES       4096 /* longest message we keep to parse (chats, errors) */
/* Latency histogram: 10 µs buckets up to 100 ms, then 1 ms up to 60 s. */
#define FINE_US         10
#define FINE_LIMIT_US   100000
#define COARSE_US       1000
#define COARSE_LIMIT_US 60000000
#define NFINE           (FINE_LIMIT_US / FINE_US)
#define NCOARSE         ((COARSE_LIMIT_US - FINE_LIMIT_US) / COARSE_US)

enum phase { PH_CONNECT, PH_SETTLE, PH_LOAD, PH_DRAIN, PH_DONE };

struct member {
	int idx;
	struct lws *wsi;
	bool connecting, connected, joined, failed, closed;
	bool want_join, chat_due;
	lws_sorted_usec_list_t sul;
	/* Chat bookkeeping (this member as sender). */
	uint32_t seq;     /* chats sent */
	int64_t inflight; /* seq awaiting echo/error, -1 when none */
	int64_t inflight_at;
	int64_t next_ok_us; /* earliest time for the next send */
	uint32_t *recv;     /* per seq: receipts seen at all members */
	uint8_t *rejected;  /* per seq: 1 when the server rate-limited it */
	size_t cap;
	/* Reassembly of the current inbound message (only kept when short). */
	char rx[RX_KEEP_BYTES + 1];
	size_t rx_len;
	bool rx_skip;
};

static struct {
	const char *url;
	char host[256], path[512];
	int port;
	int n;
	double duration_s;
	double interval_ms;
	int content_bytes;
	int server_pid;
	bool verbose;
	bool poll_loop; /* lws's own poll() loop instead of libuv (epoll) */
} opt;

static struct lws_context *ctx;
static struct member *members;
static enum phase phase = PH_CONNECT;
static int n_started, n_connecting, n_joined, n_failed, n_closed_early;
static int64_t t_begin, t_joined, t_settled, t_load_start, t_load_end, t_drain_start;
static int64_t last_rx_us;
static uint64_t deliveries, deliveries_in_window, accepted, rejected_n, sent_n, other_errors;
static uint64_t hist_fine[NFINE], hist_coarse[NCOARSE], hist_over, hist_count;
static int64_t lat_max_us;
static long rss_idle_kb = -1, rss_joined_kb = -1, rss_peak_kb = -1, hwm_end_kb = -1;
static lws_sorted_usec_list_t tick_sul;
static uv_loop_t uv_loop;
static volatile sig_atomic_t interrupted;

static char *pad;

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long read_status_kb(int pid, const char *key)
{
	if (pid <= 0)
		return -1;
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
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

static void chat_timer_cb(lws_sorted_usec_list_t *sul)
{
	struct member *m = lws_container_of(sul, struct member, sul);
	if (phase != PH_LOAD || !m->joined || m->closed)
		return;
	m->chat_due = true;
	lws_callback_on_writable(m->wsi);
}

/* Schedules this member's next chat at max(next_ok, now). */
static void schedule_chat(struct member *m)
{
	int64_t delay = m->next_ok_us - now_us();
	if (delay < 0)
		delay = 0;
	lws_sul_schedule(ctx, 0, &m->sul, chat_timer_cb, delay);
}

static int send_text(struct lws *wsi, const char *text, size_t len)
{
	unsigned char *buf = malloc(LWS_PRE + len);
	if (!buf)
		return -1;
	memcpy(buf + LWS_PRE, text, len);
	int n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT);
	free(buf);
	return n < (int)len ? -1 : 0;
}

static void on_chat(struct member *rcv, const char *msg, int64_t t)
{
	const char *p = strstr(msg, "\"content\":\"L|");
	if (!p)
		return; /* someone else's chat (host, another client) */
	int sender;
	uint32_t seq;
	long long sent_us;
	if (sscanf(p + 13, "%d|%" SCNu32 "|%lld|", &sender, &seq, &sent_us) != 3 || sender < 0 ||
	    sender >= opt.n)
		return;
	struct member *s = &members[sender];
	if (seq >= s->cap)
		return;
	s->recv[seq]++;
	deliveries++;
	if (phase == PH_LOAD)
		deliveries_in_window++;
	hist_add(t - sent_us);
	if (s == rcv && s->inflight == (int64_t)seq) {
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

static void on_message(struct member *m, const char *msg, size_t len)
{
	int64_t t = now_us();
	if (strncmp(msg, "{\"type\":\"chat\"", 14) == 0) {
		on_chat(m, msg, t);
	} else if (strncmp(msg, "{\"type\":\"history_response\"", 26) == 0) {
		if (!m->joined) {
			m->joined = true;
			m->connecting = false;
			n_joined++;
			n_connecting--;
		}
	} else if (strncmp(msg, "{\"type\":\"error\"", 15) == 0) {
		if (strstr(msg, "Rate limited") && m->inflight >= 0) {
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

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
	struct member *m = lws_get_opaque_user_data(wsi);
	switch (reason) {
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		if (!m)
			break;
		m->connected = true;
		m->want_join = true;
		lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE: {
		if (!m)
			break;
		char buf[1024];
		if (m->want_join) {
			m->want_join = false;
			int n = snprintf(
			        buf, sizeof buf,
			        "{\"type\":\"join\",\"name\":\"load-%04d\",\"id\":\"load-%04d-%d\","
			        "\"version\":\"space-load\",\"capabilities\":[\"social\"]}",
			        m->idx, m->idx, (int)getpid());
			if (send_text(wsi, buf, (size_t)n) < 0)
				return -1;
			if (m->chat_due)
				lws_callback_on_writable(wsi);
			break;
		}
		if (m->chat_due && phase == PH_LOAD && m->inflight < 0) {
			m->chat_due = false;
			uint32_t seq = m->seq++;
			member_grow(m, seq);
			int64_t t = now_us();
			int n = snprintf(buf, sizeof buf,
			                 "{\"type\":\"chat\",\"content\":\"L|%d|%" PRIu32
			                 "|%lld|%s\"}",
			                 m->idx, seq, (long long)t, pad);
			m->inflight = seq;
			m->inflight_at = t;
			m->next_ok_us = t + (int64_t)(opt.interval_ms * 1000.0);
			sent_n++;
			if (send_text(wsi, buf, (size_t)n) < 0)
				return -1;
		}
		break;
	}
	case LWS_CALLBACK_CLIENT_RECEIVE: {
		if (!m)
			break;
		last_rx_us = now_us();
		if (lws_is_first_fragment(wsi)) {
			m->rx_len = 0;
			m->rx_skip = false;
		}
		if (!m->rx_skip) {
			if (m->rx_len + len > RX_KEEP_BYTES) {
				/* Long: a presence or history; keep the prefix to classify. */
				size_t room = RX_KEEP_BYTES - m->rx_len;
				memcpy(m->rx + m->rx_len, in, room);
				m->rx_len += room;
				m->rx_skip = true;
			} else {
				memcpy(m->rx + m->rx_len, in, len);
				m->rx_len += len;
			}
		}
		if (lws_is_final_fragment(wsi) && !lws_remaining_packet_payload(wsi)) {
			m->rx[m->rx_len] = '\0';
			on_message(m, m->rx, m->rx_len);
			m->rx_len = 0;
			m->rx_skip = false;
		}
		break;
	}
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		if (!m)
			break;
		fprintf(stderr, "space-load: member %d: connection error: %s\n", m->idx,
		        in ? (const char *)in : "(unknown)");
		m->failed = true;
		m->wsi = NULL;
		if (m->connecting && !m->joined)
			n_connecting--;
		m->connecting = false;
		n_failed++;
		break;
	case LWS_CALLBACK_CLIENT_CLOSED:
		if (!m)
			break;
		m->closed = true;
		m->wsi = NULL;
		lws_sul_cancel(&m->sul);
		if (!m->joined && m->connecting)
			n_connecting--;
		if (phase != PH_DONE) {
			n_closed_early++;
			fprintf(stderr, "space-load: member %d: connection closed by the server\n",
			        m->idx);
		}
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
        {"space-load", callback, 0, 65536, 0, NULL, 0},
        {NULL, NULL, 0, 0, 0, NULL, 0},
};

static void start_connect(struct member *m)
{
	struct lws_client_connect_info ci;
	memset(&ci, 0, sizeof ci);
	ci.context = ctx;
	ci.address = opt.host;
	ci.port = opt.port;
	ci.path = opt.path;
	ci.host = opt.host;
	ci.origin = opt.host;
	ci.protocol = NULL; /* the real client offers no sub-protocol */
	ci.local_protocol_name = protocols[0].name;
	ci.ietf_version_or_minus_one = -1;
	ci.opaque_user_data = m;
	ci.pwsi = &m->wsi;
	m->connecting = true;
	n_connecting++;
	n_started++;
	if (!lws_client_connect_via_info(&ci) && !m->failed) {
		m->failed = true;
		m->connecting = false;
		n_connecting--;
		n_failed++;
	}
}

static void start_load(void)
{
	phase = PH_LOAD;
	t_load_start = now_us();
	int64_t interval_us = (int64_t)(opt.interval_ms * 1000.0);
	for (int i = 0; i < opt.n; i++) {
		struct member *m = &members[i];
		if (!m->joined || m->closed)
			continue;
		/* Random phase in [0, interval) so the chats are spread evenly. */
		m->next_ok_us =
		        t_load_start + (int64_t)((double)random() / RAND_MAX * (double)interval_us);
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

static void tick(lws_sorted_usec_list_t *sul)
{
	int64_t t = now_us();
	long rss = read_status_kb(opt.server_pid, "VmRSS");
	if (rss > rss_peak_kb)
		rss_peak_kb = rss;
	switch (phase) {
	case PH_CONNECT:
		while (n_started < opt.n && n_connecting < MAX_CONCURRENT_CONNECTS)
			start_connect(&members[n_started]);
		if (n_joined + n_failed >= opt.n && n_connecting == 0) {
			t_joined = t;
			rss_joined_kb = read_status_kb(opt.server_pid, "VmRSS");
			fprintf(stderr, "space-load: %d/%d joined in %.2f s (%d failed)\n",
			        n_joined, opt.n, (double)(t_joined - t_begin) / 1e6, n_failed);
			if (n_joined == 0) {
				phase = PH_DONE;
				break;
			}
			phase = PH_SETTLE;
		} else if (t - t_begin > JOIN_PHASE_TIMEOUT_S * 1000000LL) {
			fprintf(stderr, "space-load: join phase timed out (%d/%d joined)\n",
			        n_joined, opt.n);
			phase = PH_DONE;
		}
		break;
	case PH_SETTLE:
		if (t - last_rx_us >= SETTLE_QUIET_US ||
		    t - t_joined > SETTLE_TIMEOUT_S * 1000000LL) {
			t_settled = t;
			fprintf(stderr,
			        "space-load: quiet %.2f s after the last join; starting the load\n",
			        (double)(t_settled - t_joined) / 1e6);
			start_load();
		}
		break;
	case PH_LOAD: {
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
	}
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
	if (phase != PH_DONE)
		lws_sul_schedule(ctx, 0, &tick_sul, tick, phase == PH_CONNECT ? 5000 : 100000);
	else if (!opt.poll_loop)
		uv_stop(&uv_loop);
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
	        "  -v, --verbose          print unexpected server errors\n"
	        "      --poll             use lws's poll() loop instead of libuv (epoll)\n"
	        "  -h, --help\n"
	        "The last output line is RESULT key=value ... for scripts.\n",
	        DEFAULT_MEMBERS, DEFAULT_DURATION_S, 1000.0 / DEFAULT_INTERVAL_MS,
	        DEFAULT_INTERVAL_MS, DEFAULT_CONTENT_BYTES);
}

static int parse_url(const char *url)
{
	char tmp[1024];
	snprintf(tmp, sizeof tmp, "%s", url);
	const char *prot = NULL, *ads = NULL, *path = NULL;
	int port = 0;
	if (lws_parse_uri(tmp, &prot, &ads, &port, &path))
		return -1;
	if (strcmp(prot, "ws") != 0)
		return -1;
	snprintf(opt.host, sizeof opt.host, "%s", ads);
	snprintf(opt.path, sizeof opt.path, "/%s", path ? path : "");
	opt.port = port ? port : 80;
	return 0;
}

int main(int argc, char **argv)
{
	opt.n = DEFAULT_MEMBERS;
	opt.duration_s = DEFAULT_DURATION_S;
	opt.interval_ms = DEFAULT_INTERVAL_MS;
	opt.content_bytes = DEFAULT_CONTENT_BYTES;
	static const struct option longopts[] = {
	        {"url", required_argument, NULL, 'u'},
	        {"members", required_argument, NULL, 'n'},
	        {"duration", required_argument, NULL, 'd'},
	        {"rate", required_argument, NULL, 'r'},
	        {"size", required_argument, NULL, 's'},
	        {"server-pid", required_argument, NULL, 'p'},
	        {"verbose", no_argument, NULL, 'v'},
	        {"help", no_argument, NULL, 'h'},
	        {"poll", no_argument, NULL, 'P'},
	        {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "u:n:d:r:s:p:vh", longopts, NULL)) != -1) {
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
		case 'v':
			opt.verbose = true;
			break;
		case 'P':
			opt.poll_loop = true;
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
	    opt.content_bytes > 512) {
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
	for (int i = 0; i < opt.n; i++) {
		members[i].idx = i;
		members[i].inflight = -1;
	}
	srandom((unsigned)getpid());
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	rss_idle_kb = read_status_kb(opt.server_pid, "VmRSS");
	rss_peak_kb = rss_idle_kb;

	lws_set_log_level(LLL_ERR, NULL);
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.fd_limit_per_thread = (unsigned int)opt.n + 64;
	info.connect_timeout_secs = 30;
	info.timeout_secs = 60;
	/* With 1000 sockets, poll() rescans every fd per wakeup; libuv's epoll
	 * keeps the generator's own cost per delivery small. */
	void *foreign[1] = {&uv_loop};
	if (!opt.poll_loop) {
		uv_loop_init(&uv_loop);
		info.options |= LWS_SERVER_OPTION_LIBUV;
		info.foreign_loops = foreign;
	}
	ctx = lws_create_context(&info);
	if (!ctx) {
		fprintf(stderr, "space-load: lws_create_context failed (fd limit? ulimit -n)\n");
		return 1;
	}
	t_begin = now_us();
	lws_sul_schedule(ctx, 0, &tick_sul, tick, 1);
	if (opt.poll_loop) {
		while (phase != PH_DONE)
			if (lws_service(ctx, 0) < 0)
				break;
	} else {
		uv_run(&uv_loop, UV_RUN_DEFAULT);
	}

	hwm_end_kb = read_status_kb(opt.server_pid, "VmHWM");
	uint64_t lost, dups, unconfirmed;
	uint64_t expected = expected_deliveries(&lost, &dups, &unconfirmed);
	double win = t_load_end > t_load_start ? (double)(t_load_end - t_load_start) / 1e6 : 0;
	double chats_s = win > 0 ? (double)accepted / win : 0;
	double deliv_s = win > 0 ? (double)deliveries_in_window / win : 0;
	double p50 = hist_quantile(0.50) / 1000.0, p99 = hist_quantile(0.99) / 1000.0;
	double maxl = (double)lat_max_us / 1000.0;

	printf("space-load: %s, %d members (%d joined, %d failed, %d closed by server)\n", opt.url,
	       opt.n, n_joined, n_failed, n_closed_early);
	printf("  join phase          %.2f s, then %.2f s until the room was quiet\n",
	       t_joined ? (double)(t_joined - t_begin) / 1e6 : 0,
	       t_settled ? (double)(t_settled - t_joined) / 1e6 : 0);
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
	       "rss_joined_kb=%ld rss_peak_kb=%ld hwm_kb=%ld\n",
	       opt.n, n_joined, n_failed, n_closed_early,
	       t_joined ? (double)(t_joined - t_begin) / 1e6 : 0,
	       t_settled ? (double)(t_settled - t_joined) / 1e6 : 0, win, sent_n, accepted,
	       rejected_n, chats_s, deliv_s, deliveries, expected, lost, dups, p50, p99, maxl,
	       rss_idle_kb, rss_joined_kb, rss_peak_kb, hwm_end_kb);
	fflush(stdout);

	lws_context_destroy(ctx);
	if (!opt.poll_loop) {
		/* Let lws close its libuv handles, then the loop. */
		uv_run(&uv_loop, UV_RUN_DEFAULT);
		uv_loop_close(&uv_loop);
	}
	for (int i = 0; i < opt.n; i++) {
		free(members[i].recv);
		free(members[i].rejected);
	}
	free(members);
	free(pad);
	return n_joined == opt.n ? 0 : 1;
}
