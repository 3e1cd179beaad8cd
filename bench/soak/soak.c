/*
 * soak — does everything stay flat over time? Real binaries: one
 * `agent-space`, three `general-agent` processes configured with a model
 * (tests/fakes/eager, in this process), the GitHub fake
 * (ghfake-server) and the Bluesky fake (bskyfake-server); the host (this
 * program, on the room's stdin) speaks to them every --host-s seconds; 200
 * members (this program, plain WebSocket) churn: join, send an identity,
 * chat at the room's rate or slower, leave (a close frame or a dropped
 * connection), come back a few seconds later; a Bluesky fan mentions an
 * agent every minute. Two observers stay for the whole run.
 *
 * Every --sample-s seconds it reads VmRSS and the number of open file
 * descriptors of every process (the room, each agent, each fake) and
 * writes a line to --csv. At the end, per process, after the warm-up
 * (--warmup-s): the least-squares slope of RSS (kB per hour), the growth
 * (last sample minus the first after warm-up) and the fd growth; for the
 * room the fds beyond its connections (its open fds minus the members,
 * observers and agents connected at that moment), which must stay put
 * whatever the churn.
 *
 * Lost chats, counted exactly: the first observer's stream is the room's
 * broadcast order. A chat the room accepted (its sender got the echo) must
 * be in it; and a member that received two chats received every chat
 * broadcast between them, so each member session (join to leave) and the
 * second observer must hold a gapless run of that order. The gaps, and
 * accepted chats the first observer never saw, are the lost ones.
 *
 * Targets (exit 1 when one fails, 2 when the run could not be carried
 * out): 0 lost chats; for the room and each agent RSS growth after
 * warm-up at most --max-growth-kb or --max-growth-pct of its level then,
 * whichever is larger (--no-rss-check: not judged, for sanitizer builds
 * whose allocator quarantine grows by design; the fakes' RSS is reported,
 * not judged: they fill bounded request records); per process fd growth at most
 * SOAK_FD_SLACK; every process still running at the end, and each then
 * stops cleanly when asked (SIGTERM: exit status 0 — under the sanitizers
 * a leak or a late memory error found at exit fails the run too).
 *
 * Bounds: SOAK_MEMBERS_MAX members, SOAK_CHATS_MAX chats sent per run (the
 * run stops sending past it), SOAK_SAMPLES_MAX samples.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/fsx.h"
#include "common/timeutil.h"
#include "common/xalloc.h"
#include "proc.h"
#include "support_fake.h"
#include "support_room.h"
#include "tests/fakes/eager/eager_model.h"
#include "tests/integration/space/wsclient.h"
#include "testutil.h"

#define SOAK_MEMBERS_MAX 1000
#define SOAK_AGENTS      3
#define SOAK_CHATS_MAX   2000000
#define SOAK_SAMPLES_MAX 4096
#define SOAK_PROCS       (1 + SOAK_AGENTS + 2) /* room, agents, two fakes */
#define SOAK_FD_SLACK    8
#define SOAK_STARTUP_MS  60000
#define SOAK_DRAIN_MS    10000 /* after the last chat, before counting */
#define SOAK_CHAT_MIN_MS 20000 /* a member says something now and then */
#define SOAK_CHAT_MAX_MS 60000
#define SOAK_LIFE_MIN_MS 20000
#define SOAK_LIFE_MAX_MS 90000
#define SOAK_AWAY_MIN_MS 1000
#define SOAK_AWAY_MAX_MS 5000
#define SOAK_MENTION_MS  60000

static const char *const agent_names[SOAK_AGENTS] = {"Ada", "Ben", "Cleo"};
/* What the host says, in turn: before + an agent's name + after (no name
 * when named is false). */
static const struct {
	const char *before, *after;
	bool named;
} host_lines[] = {
        {"@", " what should the room look at next?", true},
        {"", ", how is the work going?", true},
        {"Could someone summarise where we are?", "", false},
        {"@", " please open an issue to add a dark mode toggle", true},
        {"Thanks everyone, carry on.", "", false},
        {"@", " any thoughts on the release notes?", true},
};

struct opts {
	double minutes;
	int members;
	int sample_s, warmup_s, host_s;
	long max_growth_kb;
	double max_growth_pct;
	bool rss_check;
	const char *csv;
	unsigned seed;
};

/* One session of a churning member: what it received, as chat keys. */
struct session {
	uint64_t *keys;
	size_t n, cap;
	int64_t closed_at; /* 0 while open */
};

struct member {
	int idx;
	struct ws_client *c;
	bool joined;
	uint32_t gen;
	int64_t leave_at, next_chat_at, back_at;
	int64_t inflight; /* seq awaiting its echo, -1 none */
	uint32_t seq;
	struct session *sess; /* the open session, NULL when away */
};

/* The first observer's order: index of chat (sender, seq). */
struct order {
	int32_t *idx; /* per sender: seq -> index + 1, 0 unknown */
	size_t cap;
};

struct sample {
	int64_t t_ms;
	long rss[SOAK_PROCS];
	long fds[SOAK_PROCS];
	long room_conns; /* connections the room had from this side at the time */
};

struct soak {
	struct opts o;
	char *dir;
	int port;
	struct support_room room;
	struct support_fake gh, bsky;
	struct proc agent[SOAK_AGENTS];
	char *home[SOAK_AGENTS];
	struct eager_model *model;
	struct member *m;
	struct ws_client *obs[2];
	struct session obs_b;
	struct order *order; /* per member */
	size_t norder;
	int32_t nordered; /* chats in the first observer's order */
	uint64_t *acc;    /* keys of the accepted chats */
	size_t nacc, capacc;
	struct session **closed; /* sessions to check at the end */
	size_t nclosed, capclosed;
	uint64_t sent, accepted, rate_limited, unconfirmed, agent_chats, host_said, mentions;
	uint64_t joins, leaves_close, leaves_drop, other_errors;
	int64_t longest_turn_ms; /* the soak's own loop: a stall here is not the room's */
	struct sample *samples;
	size_t nsamples;
	uint64_t rng;
	int64_t t0;
	FILE *csv;
};

static struct soak *g;

static void cleanup(struct soak *s);

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("soak: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (g)
		cleanup(g);
	exit(2);
}

static uint32_t rnd(struct soak *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (uint32_t)(s->rng >> 16);
}

static int64_t between(struct soak *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(s) % (uint32_t)(hi - lo + 1));
}

static void session_add(struct session *ss, uint64_t key)
{
	if (ss->n == ss->cap) {
		ss->cap = ss->cap ? ss->cap * 2 : 64;
		ss->keys = xreallocarray(ss->keys, ss->cap, sizeof *ss->keys);
	}
	ss->keys[ss->n++] = key;
}

static uint64_t chat_key(long sender, long seq)
{
	return (uint64_t)sender << 32 | (uint32_t)seq;
}

/* ---- processes --------------------------------------------------------------------------- */

static void start_fakes(struct soak *s)
{
	char err[1024];
	const char *gh[SOAK_AGENTS * 2 + 3];
	char toks[SOAK_AGENTS][64];
	size_t n = 0;
	for (int i = 0; i < SOAK_AGENTS; i++) {
		snprintf(toks[i], sizeof toks[i], "soak-token-%d:soak-%d", i, i);
		gh[n++] = "--token";
		gh[n++] = toks[i];
	}
	gh[n++] = "--repo";
	gh[n++] = EAGER_REPO;
	gh[n] = NULL;
	if (support_fake_start(&s->gh, "tests/fakes/github/ghfake-server", s->dir, gh, err,
	                       sizeof err) != 0)
		die("%s", err);
	const char *bsky[(SOAK_AGENTS + 1) * 2 + 1];
	char accs[SOAK_AGENTS + 1][64];
	n = 0;
	for (int i = 0; i <= SOAK_AGENTS; i++) {
		if (i < SOAK_AGENTS)
			snprintf(accs[i], sizeof accs[i], "soak%d.test:app-password-%d", i, i);
		else
			snprintf(accs[i], sizeof accs[i], "fan.test:fan-password");
		bsky[n++] = "--account";
		bsky[n++] = accs[i];
	}
	bsky[n] = NULL;
	if (support_fake_start(&s->bsky, "tests/fakes/bsky/bskyfake-server", s->dir, bsky, err,
	                       sizeof err) != 0)
		die("%s", err);
}

static void start_room(struct soak *s)
{
	char err[4096];
	const char *env[] = {"LOG_LEVEL=warn", NULL};
	if (support_room_start(&s->room, 0, env, false, err, sizeof err) != 0)
		die("%s", err);
	s->port = s->room.port;
}

static void start_agent(struct soak *s, int i)
{
	char err[256];
	s->home[i] = eager_model_home(err, sizeof err);
	if (!s->home[i])
		die("%s", err);
	char name[64], url[64], llm[160], ghu[64], ght[64], gha[96], bu[64], bp[64], bs[96];
	snprintf(name, sizeof name, "AGENT_NAME=%s", agent_names[i]);
	snprintf(url, sizeof url, "SPACE_URL=ws://127.0.0.1:%d", s->port);
	snprintf(llm, sizeof llm, "LLM_BASE_URL=%s", eager_model_base_url(s->model, (size_t)i));
	snprintf(ghu, sizeof ghu, "AGENT_GITHUB_USERNAME=soak-%d", i);
	snprintf(ght, sizeof ght, "AGENT_GITHUB_TOKEN=soak-token-%d", i);
	snprintf(gha, sizeof gha, "GITHUB_API_URL=%s", s->gh.url);
	snprintf(bu, sizeof bu, "AGENT_BLUESKY_USERNAME=soak%d.test", i);
	snprintf(bp, sizeof bp, "AGENT_BLUESKY_PASSWORD=app-password-%d", i);
	snprintf(bs, sizeof bs, "BLUESKY_SERVICE=%s", s->bsky.url);
	const char *env[] = {name, url, llm, "LLM_MODEL=eager-model",
	                     "LLM_API_KEY=soak-key-0123456789", ghu, ght, gha, bu, bp, bs,
	                     EAGER_AGENT_TIMING_ENV,
	                     /* The room is one conversation to the gate, and 200
	                      * members chatting fill its budget (20 events a
	                      * minute) many times over: the agents would stop
	                      * answering the host at all. The soak is about what
	                      * they hold over time, so the budget is widened to
	                      * what the room produces. */
	                     "GATE_MAX_EVENTS=128", "GATE_WINDOW_MS=10000", NULL};
	if (proc_start(&s->agent[i], s->home[i], (const char *const[]){NULL}, env) != 0)
		die("cannot start general-agent %s", agent_names[i]);
}

static void stop_proc(struct proc *p)
{
	if (!p->pid)
		return;
	proc_signal(p, SIGTERM);
	if (proc_wait(p, 10000) < 0)
		proc_signal(p, SIGKILL);
	proc_cleanup(p);
}

/* The last lines of a stopped process's output, for a stop that was not
 * clean (a sanitizer's report is there). */
static void print_tail(const char *what, char *text)
{
	if (!text)
		return;
	size_t n = strlen(text);
	const char *from = n > 4000 ? text + n - 4000 : text;
	fprintf(stderr, "soak: the end of %s's output:\n%s\n", what, from);
	free(text);
}

/* Asks every process to stop, the agents first (members of the room), then
 * the room, then the fakes, and keeps each exit status (0 for a clean stop,
 * 128+signal, -1 when it had to be killed or was not running). */
static void stop_all(struct soak *s, int status[SOAK_PROCS])
{
	for (int i = 0; i < SOAK_AGENTS; i++) {
		proc_signal(&s->agent[i], SIGTERM);
		status[1 + i] = proc_wait(&s->agent[i], 15000);
		if (status[1 + i] != 0)
			print_tail(agent_names[i], proc_stderr(&s->agent[i]));
	}
	status[0] = support_room_stop(&s->room, SIGTERM);
	if (status[0] != 0)
		print_tail("agent-space", support_room_log(&s->room));
	status[SOAK_AGENTS + 1] = support_fake_stop(&s->gh);
	status[SOAK_AGENTS + 2] = support_fake_stop(&s->bsky);
}

/* ---- the room's members ----------------------------------------------------------------- */

static struct ws_client *connect_join(struct soak *s, const char *name, const char *id)
{
	struct ws_client *c = ws_connect("127.0.0.1", s->port, 5000);
	if (!c)
		return NULL;
	char join[256];
	snprintf(join, sizeof join,
	         "{\"type\":\"join\",\"name\":\"%s\",\"id\":\"%s\",\"version\":\"soak\","
	         "\"capabilities\":[\"social\"]}",
	         name, id);
	if (ws_send_text(c, join) != 0) {
		ws_free(c);
		return NULL;
	}
	return c;
}

static void member_arrive(struct soak *s, struct member *m, int64_t now)
{
	char name[32], id[48];
	snprintf(name, sizeof name, "churn-%03d", m->idx);
	snprintf(id, sizeof id, "churn-%03d-%u", m->idx, ++m->gen);
	m->c = connect_join(s, name, id);
	if (!m->c) {
		m->back_at = now + 1000; /* the room refused or is busy: later */
		return;
	}
	m->joined = false;
	m->inflight = -1;
	m->sess = xcalloc(1, sizeof *m->sess);
	m->leave_at = now + between(s, SOAK_LIFE_MIN_MS, SOAK_LIFE_MAX_MS);
	m->next_chat_at = now + between(s, 500, SOAK_CHAT_MAX_MS);
	s->joins++;
}

static void closed_push(struct soak *s, struct session *ss)
{
	if (s->nclosed == s->capclosed) {
		s->capclosed = s->capclosed ? s->capclosed * 2 : 256;
		s->closed = xreallocarray(s->closed, s->capclosed, sizeof *s->closed);
	}
	s->closed[s->nclosed++] = ss;
}

static void member_leave(struct soak *s, struct member *m, int64_t now, bool lost_conn)
{
	if (!lost_conn && rnd(s) % 2 == 0) {
		ws_send_close(m->c, 1000, "soak leaves");
		s->leaves_close++;
	} else {
		s->leaves_drop++;
	}
	ws_free(m->c);
	m->c = NULL;
	if (m->inflight >= 0)
		s->unconfirmed++; /* only when the room dropped us: we never leave mid-chat */
	m->inflight = -1;
	m->sess->closed_at = now;
	closed_push(s, m->sess);
	m->sess = NULL;
	m->joined = false;
	m->back_at = now + between(s, SOAK_AWAY_MIN_MS, SOAK_AWAY_MAX_MS);
}

static void member_chat(struct soak *s, struct member *m, int64_t now)
{
	if (s->sent >= SOAK_CHATS_MAX)
		return;
	char msg[160];
	uint32_t seq = m->seq++;
	if (rnd(s) % 4 == 0)
		ws_send_text(m->c, "{\"type\":\"typing\"}");
	snprintf(msg, sizeof msg,
	         "{\"type\":\"chat\",\"content\":\"soak|%d|%u| churn chat number %u\"}", m->idx,
	         seq, seq);
	if (ws_send_text(m->c, msg) != 0)
		return;
	m->inflight = seq;
	s->sent++;
}

/* ---- messages ---------------------------------------------------------------------------- */

static void order_put(struct soak *s, long sender, long seq)
{
	if (sender < 0 || (size_t)sender >= s->norder || seq < 0)
		return;
	struct order *o = &s->order[sender];
	if ((size_t)seq >= o->cap) {
		size_t ncap = o->cap ? o->cap : 256;
		while (ncap <= (size_t)seq)
			ncap *= 2;
		o->idx = xreallocarray(o->idx, ncap, sizeof *o->idx);
		memset(o->idx + o->cap, 0, (ncap - o->cap) * sizeof *o->idx);
		o->cap = ncap;
	}
	if (!o->idx[seq])
		o->idx[seq] = ++s->nordered;
}

static long order_of(const struct soak *s, uint64_t key)
{
	long sender = (long)(key >> 32), seq = (long)(uint32_t)key;
	if ((size_t)sender >= s->norder || (size_t)seq >= s->order[sender].cap)
		return 0;
	return s->order[sender].idx[seq];
}

/* who: a member (>= 0), or -1 / -2 for the observers. */
static bool has_type(const char *data, const char *type)
{
	/* the room writes "type" first, always (space-protocol.md §2.3) */
	size_t n = strlen(type);
	return strncmp(data, "{\"type\":\"", 9) == 0 && strncmp(data + 9, type, n) == 0 &&
	       data[9 + n] == '"';
}

static void on_text(struct soak *s, int who, const char *data, int64_t now)
{
	struct member *mm = who >= 0 ? &s->m[who] : NULL;
	if (has_type(data, "history_response")) {
		if (mm && !mm->joined) {
			mm->joined = true;
			ws_send_text(mm->c,
			             "{\"type\":\"identity\",\"summary\":{\"voice\":\"plain\","
			             "\"coreValues\":[\"patience\"],\"recentWork\":\"churning\"}}");
		}
		return;
	}
	/* Only chats and errors are read; presence and the rest are skipped
	 * unparsed (200 members each get every snapshot). */
	if (!has_type(data, "chat") && !has_type(data, "error"))
		return;
	cJSON *v = cJSON_Parse(data);
	if (!v)
		return;
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(v, "type"));
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
	struct member *m = who >= 0 ? &s->m[who] : NULL;
	if (!type) {
		cJSON_Delete(v);
		return;
	}
	if (strcmp(type, "chat") == 0) {
		const char *content = cJSON_GetStringValue(cJSON_GetObjectItem(v, "content"));
		long sender = -1, seq = -1;
		if (content && sscanf(content, "soak|%ld|%ld|", &sender, &seq) == 2) {
			uint64_t key = chat_key(sender, seq);
			if (who == -1)
				order_put(s, sender, seq);
			else if (who == -2)
				session_add(&s->obs_b, key);
			else if (m->sess)
				session_add(m->sess, key);
			if (m && sender == m->idx && seq == m->inflight) {
				s->accepted++;
				if (s->nacc == s->capacc) {
					s->capacc = s->capacc ? s->capacc * 2 : 1024;
					s->acc = xreallocarray(s->acc, s->capacc, sizeof *s->acc);
				}
				s->acc[s->nacc++] = key;
				m->inflight = -1;
				m->next_chat_at =
				        now + between(s, SOAK_CHAT_MIN_MS, SOAK_CHAT_MAX_MS);
			}
		} else if (who == -1 && name) {
			for (int i = 0; i < SOAK_AGENTS; i++)
				if (strcmp(name, agent_names[i]) == 0)
					s->agent_chats++;
		}
	} else if (strcmp(type, "error") == 0 && m) {
		const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(v, "message"));
		if (msg && strstr(msg, "Rate limited") && m->inflight >= 0) {
			s->rate_limited++;
			m->inflight = -1;
			m->next_chat_at = now + SOAK_CHAT_MIN_MS;
		} else {
			s->other_errors++;
		}
	}
	cJSON_Delete(v);
}

/* Reads everything complete on c; false when the connection ended. */
static bool drain(struct soak *s, struct ws_client *c, int who, int64_t now)
{
	for (;;) {
		struct ws_msg msg;
		int r = ws_recv(c, &msg, 0);
		if (r == WS_RECV_MSG) {
			on_text(s, who, msg.data, now);
			free(msg.data);
		} else {
			return r == WS_RECV_TIMEOUT;
		}
	}
}

/* ---- sampling ---------------------------------------------------------------------------- */

static long open_fds(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	int n = tu_count_prefix(path, "");
	return n >= 2 ? n - 2 : -1; /* not "." and ".." */
}

static struct proc *proc_at(struct soak *s, int i)
{
	if (i == 0)
		return &s->room.proc;
	if (i <= SOAK_AGENTS)
		return &s->agent[i - 1];
	return i == SOAK_AGENTS + 1 ? &s->gh.proc : &s->bsky.proc;
}

static const char *proc_name(int i)
{
	static char buf[32];
	if (i == 0)
		return "agent-space";
	if (i <= SOAK_AGENTS) {
		snprintf(buf, sizeof buf, "agent %s", agent_names[i - 1]);
		return buf;
	}
	return i == SOAK_AGENTS + 1 ? "ghfake-server" : "bskyfake-server";
}

static void take_sample(struct soak *s, int64_t now)
{
	if (s->nsamples == SOAK_SAMPLES_MAX)
		return;
	struct sample *sm = &s->samples[s->nsamples++];
	sm->t_ms = now - s->t0;
	long conns = 2 + SOAK_AGENTS;
	for (int i = 0; i < s->o.members; i++)
		conns += s->m[i].c != NULL;
	sm->room_conns = conns;
	for (int i = 0; i < SOAK_PROCS; i++) {
		struct proc *p = proc_at(s, i);
		sm->rss[i] = tu_proc_status_kb(p->pid, "VmRSS");
		sm->fds[i] = open_fds(p->pid);
	}
	if (s->csv) {
		for (int i = 0; i < SOAK_PROCS; i++)
			fprintf(s->csv, "%.1f,%s,%ld,%ld,%ld\n", (double)sm->t_ms / 1000,
			        proc_name(i), sm->rss[i], sm->fds[i],
			        i == 0 ? sm->room_conns : -1L);
		fprintf(s->csv, "%.1f,soak,%ld,%ld,-1\n", (double)sm->t_ms / 1000,
		        tu_proc_status_kb(getpid(), "VmRSS"), open_fds(getpid()));
		fflush(s->csv);
	}
	fprintf(stderr, "soak: %5.0f s  room %ld kB %ld fds (%ld conns)  agents", sm->t_ms / 1000.0,
	        sm->rss[0], sm->fds[0], sm->room_conns);
	for (int i = 1; i <= SOAK_AGENTS; i++)
		fprintf(stderr, " %ld", sm->rss[i]);
	fprintf(stderr, " kB  sent %llu accepted %llu agent chats %llu\n",
	        (unsigned long long)s->sent, (unsigned long long)s->accepted,
	        (unsigned long long)s->agent_chats);
}

/* ---- the Bluesky fan -------------------------------------------------------------------- */

/* POST /_bskyfake/post: the fan mentions one agent (its notification). */
static void mention(struct soak *s, int agent)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->bsky.port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
		char body[200], req[512];
		int bl = snprintf(body, sizeof body,
		                  "{\"handle\":\"fan.test\",\"text\":\"@soak%d.test how are you "
		                  "today? (%llu)\"}",
		                  agent, (unsigned long long)s->mentions);
		int rl = snprintf(req, sizeof req,
		                  "POST /_bskyfake/post HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		                  "Content-Type: application/json\r\nContent-Length: %d\r\n"
		                  "Connection: close\r\n\r\n%s",
		                  bl, body);
		if (write(fd, req, (size_t)rl) == rl) {
			char buf[512];
			struct pollfd p = {fd, POLLIN, 0};
			if (poll(&p, 1, 2000) > 0 && read(fd, buf, sizeof buf) > 0)
				s->mentions++;
		}
	}
	close(fd);
}

/* ---- the run ----------------------------------------------------------------------------- */

static void run(struct soak *s)
{
	int64_t end = s->t0 + (int64_t)(s->o.minutes * 60000);
	int64_t next_sample = s->t0, next_host = s->t0 + 2000, next_mention = s->t0 + 10000;
	int host_i = 0;
	struct pollfd *pfd = xcalloc((size_t)s->o.members + 2, sizeof *pfd);
	int *who = xcalloc((size_t)s->o.members + 2, sizeof *who);
	bool sending = true;
	int64_t last_turn = time_now_ms();
	for (;;) {
		int64_t now = time_now_ms();
		if (now - last_turn > s->longest_turn_ms)
			s->longest_turn_ms = now - last_turn;
		last_turn = now;
		if (now >= end && sending) {
			sending = false; /* stop chatting; let what is in flight arrive */
			end = now + SOAK_DRAIN_MS;
		} else if (now >= end) {
			break;
		}
		if (now >= next_sample) {
			take_sample(s, now);
			next_sample += (int64_t)s->o.sample_s * 1000;
		}
		if (sending && now >= next_host) {
			char line[200];
			int h = host_i % (int)(sizeof host_lines / sizeof *host_lines);
			snprintf(line, sizeof line, "%s%s%s\n", host_lines[h].before,
			         host_lines[h].named ? agent_names[host_i % SOAK_AGENTS] : "",
			         host_lines[h].after);
			if (proc_write_stdin(&s->room.proc, line) != 0)
				die("the room stopped reading its stdin");
			s->host_said++;
			host_i++;
			next_host = now + (int64_t)s->o.host_s * 1000;
		}
		if (sending && now >= next_mention) {
			mention(s, (int)(s->mentions % SOAK_AGENTS));
			next_mention = now + SOAK_MENTION_MS;
		}
		for (int i = 0; i < s->o.members; i++) {
			struct member *m = &s->m[i];
			if (!m->c) {
				if (sending && now >= m->back_at)
					member_arrive(s, m, now);
				continue;
			}
			if (m->joined && m->inflight < 0 && now >= m->leave_at && sending)
				member_leave(s, m, now, false);
			else if (m->joined && m->inflight < 0 && sending && now >= m->next_chat_at)
				member_chat(s, m, now);
		}
		int n = 0;
		for (int k = 0; k < 2; k++) {
			pfd[n] = (struct pollfd){s->obs[k]->fd, POLLIN, 0};
			who[n++] = -1 - k;
		}
		for (int i = 0; i < s->o.members; i++)
			if (s->m[i].c) {
				pfd[n] = (struct pollfd){s->m[i].c->fd, POLLIN, 0};
				who[n++] = i;
			}
		if (poll(pfd, (nfds_t)n, 20) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		now = time_now_ms();
		for (int k = 0; k < n; k++) {
			if (!pfd[k].revents)
				continue;
			struct ws_client *c = who[k] < 0 ? s->obs[-1 - who[k]] : s->m[who[k]].c;
			if (drain(s, c, who[k], now))
				continue;
			if (who[k] < 0)
				die("observer %d lost the room", -who[k]);
			member_leave(s, &s->m[who[k]], now, true);
		}
	}
	take_sample(s, time_now_ms());
	/* A chat still waiting for its echo after the drain was lost (a member
	 * waits for its echo before it chats again or leaves). */
	for (int i = 0; i < s->o.members; i++)
		if (s->m[i].c && s->m[i].inflight >= 0)
			s->unconfirmed++;
	free(pfd);
	free(who);
}

/* ---- the verdict ------------------------------------------------------------------------- */

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* Gaps in a session's run of the broadcast order; unknown keys counted
 * apart (the first observer never saw them). */
static uint64_t session_gaps(const struct soak *s, const struct session *ss, uint64_t *unknown)
{
	if (!ss->n)
		return 0;
	long *ix = xcalloc(ss->n, sizeof *ix);
	size_t k = 0;
	for (size_t i = 0; i < ss->n; i++) {
		long o = order_of(s, ss->keys[i]);
		if (o)
			ix[k++] = o;
		else
			(*unknown)++;
	}
	uint64_t gaps = 0;
	if (k) {
		qsort(ix, k, sizeof *ix, cmp_long);
		gaps = (uint64_t)(ix[k - 1] - ix[0] + 1) - k;
	}
	free(ix);
	return gaps;
}

/* Accepted chats (echoed to their sender) missing from the first
 * observer's stream. */
static uint64_t accepted_unseen(const struct soak *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i < s->nacc; i++)
		n += order_of(s, s->acc[i]) == 0;
	return n;
}

struct trend {
	double slope_kb_h;
	long first, last, growth;
};

static struct trend trend_of(const struct soak *s, int p, bool fds, bool room_excess)
{
	struct trend t = {0};
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	int n = 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct sample *sm = &s->samples[i];
		if (sm->t_ms < (int64_t)s->o.warmup_s * 1000)
			continue;
		long y = fds ? sm->fds[p] : sm->rss[p];
		if (room_excess)
			y -= sm->room_conns;
		if (!n)
			t.first = y;
		t.last = y;
		double x = (double)sm->t_ms / 3600000.0;
		sx += x;
		sy += (double)y;
		sxx += x * x;
		sxy += x * (double)y;
		n++;
	}
	double den = n * sxx - sx * sx;
	t.slope_kb_h = n > 1 && den > 0 ? (n * sxy - sx * sy) / den : 0;
	t.growth = t.last - t.first;
	return t;
}

/* alive: each process was running when the run ended; status: its exit
 * when stopped then (stop_all). */
static bool report(struct soak *s, const bool alive[SOAK_PROCS], const int status[SOAK_PROCS])
{
	uint64_t gaps = 0, unknown = 0;
	for (size_t i = 0; i < s->nclosed; i++)
		gaps += session_gaps(s, s->closed[i], &unknown);
	for (int i = 0; i < s->o.members; i++)
		if (s->m[i].sess)
			gaps += session_gaps(s, s->m[i].sess, &unknown);
	uint64_t obs_gaps = session_gaps(s, &s->obs_b, &unknown);
	uint64_t unseen = accepted_unseen(s);
	uint64_t lost = gaps + obs_gaps + unseen + unknown + s->unconfirmed;
	double mins = (double)(s->samples[s->nsamples - 1].t_ms) / 60000.0;

	printf("soak: %.1f min, %d churning members, %d agents; warm-up %d s, a sample every %d "
	       "s\n",
	       mins, s->o.members, SOAK_AGENTS, s->o.warmup_s, s->o.sample_s);
	printf("  members       %llu joins, %llu leaves (%llu with a close frame, %llu dropped)\n",
	       (unsigned long long)s->joins, (unsigned long long)(s->leaves_close + s->leaves_drop),
	       (unsigned long long)s->leaves_close, (unsigned long long)s->leaves_drop);
	printf("  chats         %llu sent, %llu accepted, %llu rate-limited, %llu never echoed\n",
	       (unsigned long long)s->sent, (unsigned long long)s->accepted,
	       (unsigned long long)s->rate_limited, (unsigned long long)s->unconfirmed);
	printf("  sessions      %zu checked: %llu chats missing inside a session, %llu at the "
	       "second observer, %llu accepted but not relayed, %llu unknown\n",
	       s->nclosed, (unsigned long long)gaps, (unsigned long long)obs_gaps,
	       (unsigned long long)unseen, (unsigned long long)unknown);
	printf("  host          %llu lines said; the agents chatted %llu times; %llu Bluesky "
	       "mentions\n",
	       (unsigned long long)s->host_said, (unsigned long long)s->agent_chats,
	       (unsigned long long)s->mentions);
	printf("  other errors  %llu; the soak's longest loop turn %lld ms\n",
	       (unsigned long long)s->other_errors, (long long)s->longest_turn_ms);
	printf("  %-16s %9s %9s %9s %12s %8s %8s %5s\n", "process", "rss kB", "growth", "limit",
	       "slope kB/h", "fds", "fd growth", "exit");
	bool ok = lost == 0;
	for (int p = 0; p < SOAK_PROCS; p++) {
		struct trend r = trend_of(s, p, false, false);
		struct trend f = trend_of(s, p, true, p == 0);
		long limit = s->o.max_growth_kb;
		long pct = (long)((double)r.first * s->o.max_growth_pct / 100.0);
		if (pct > limit)
			limit = pct;
		/* The fakes keep their last HTTPFAKE_RECORD_MAX requests (and the
		 * Bluesky fake a ring of BSKYFAKE_LOG_MAX log lines) by design:
		 * they grow until those fill, ~3 MB after ~1,000 requests, which
		 * takes the Bluesky fake over an hour at this pace. Their RSS is
		 * reported, not judged; their descriptors are. */
		bool judged = s->o.rss_check && p <= SOAK_AGENTS;
		bool rss_ok = !judged || r.growth <= limit;
		bool fd_ok = f.growth <= SOAK_FD_SLACK;
		char lim[16] = "-";
		if (judged)
			snprintf(lim, sizeof lim, "%ld", limit);
		printf("  %-16s %9ld %+9ld %9s %+12.0f %8ld %+8ld %5d%s%s%s%s\n", proc_name(p),
		       r.last, r.growth, lim, r.slope_kb_h, f.last, f.growth, status[p],
		       rss_ok ? "" : "  RSS GREW", fd_ok ? "" : "  FDS GREW",
		       alive[p] ? "" : "  EXITED EARLY", status[p] == 0 ? "" : "  UNCLEAN STOP");
		ok = ok && rss_ok && fd_ok && alive[p] && status[p] == 0;
	}
	printf("TARGET 0 lost chats: %s (%llu)\n", lost == 0 ? "PASS" : "FAIL",
	       (unsigned long long)lost);
	/* A run where nothing happened proves nothing. */
	bool busy = s->accepted > 0 && s->nclosed > 0 && s->agent_chats > 0;
	printf("TARGET the room was busy (chats accepted, sessions ended, agents answered): %s\n",
	       busy ? "PASS" : "FAIL");
	ok = ok && busy;
	printf("RESULT: %s\n", ok ? "PASS" : "FAIL");
	return ok;
}

/* ---- setup and teardown ----------------------------------------------------------------- */

static void cleanup(struct soak *s)
{
	for (int i = 0; i < s->o.members && s->m; i++)
		ws_free(s->m[i].c);
	for (int k = 0; k < 2; k++)
		ws_free(s->obs[k]);
	for (int i = 0; i < SOAK_AGENTS; i++)
		stop_proc(&s->agent[i]);
	support_room_free(&s->room);
	support_fake_stop(&s->gh);
	support_fake_stop(&s->bsky);
	eager_model_free(s->model);
	s->model = NULL;
	if (s->csv)
		fclose(s->csv);
	s->csv = NULL;
	for (int i = 0; i < SOAK_AGENTS; i++)
		if (s->home[i] && !getenv("SOAK_KEEP")) {
			home_remove(s->home[i]);
			s->home[i] = NULL;
		}
	if (s->dir && !getenv("SOAK_KEEP")) {
		tu_rmrf(s->dir);
		free(s->dir);
		s->dir = NULL;
	}
}

static void on_signal(int sig)
{
	(void)sig;
	if (g)
		cleanup(g);
	_exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: soak [options]   (run with GA_BUILD_DIR and GA_SOURCE_DIR set)\n"
	        "  -m, --minutes M          length of the run (default 60)\n"
	        "  -n, --members N          churning members (default 200)\n"
	        "  -s, --sample-s S         seconds between samples (default 60)\n"
	        "  -w, --warmup-s S         seconds of warm-up not judged (default 600)\n"
	        "  -H, --host-s S           seconds between host lines (default 5)\n"
	        "  -g, --max-growth-kb K    RSS growth allowed after warm-up (default 1024)\n"
	        "  -p, --max-growth-pct P   or P %% of the level after warm-up (default 5)\n"
	        "      --no-rss-check       report RSS, do not judge it (sanitizer builds)\n"
	        "  -c, --csv FILE           every sample: seconds,process,rss_kb,fds,room_conns\n"
	        "      --seed N             churn randomness (default 1)\n");
}

int main(int argc, char **argv)
{
	static struct soak S;
	struct soak *s = &S;
	g = s;
	s->o = (struct opts){.minutes = 60,
	                     .members = 200,
	                     .sample_s = 60,
	                     .warmup_s = 600,
	                     .host_s = 5,
	                     .max_growth_kb = 1024,
	                     .max_growth_pct = 5,
	                     .rss_check = true,
	                     .seed = 1};
	static const struct option lo[] = {{"minutes", required_argument, NULL, 'm'},
	                                   {"members", required_argument, NULL, 'n'},
	                                   {"sample-s", required_argument, NULL, 's'},
	                                   {"warmup-s", required_argument, NULL, 'w'},
	                                   {"host-s", required_argument, NULL, 'H'},
	                                   {"max-growth-kb", required_argument, NULL, 'g'},
	                                   {"max-growth-pct", required_argument, NULL, 'p'},
	                                   {"no-rss-check", no_argument, NULL, 'R'},
	                                   {"csv", required_argument, NULL, 'c'},
	                                   {"seed", required_argument, NULL, 'S'},
	                                   {"help", no_argument, NULL, 'h'},
	                                   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "m:n:s:w:H:g:p:c:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'm':
			s->o.minutes = atof(optarg);
			break;
		case 'n':
			s->o.members = atoi(optarg);
			break;
		case 's':
			s->o.sample_s = atoi(optarg);
			break;
		case 'w':
			s->o.warmup_s = atoi(optarg);
			break;
		case 'H':
			s->o.host_s = atoi(optarg);
			break;
		case 'g':
			s->o.max_growth_kb = atol(optarg);
			break;
		case 'p':
			s->o.max_growth_pct = atof(optarg);
			break;
		case 'R':
			s->o.rss_check = false;
			break;
		case 'c':
			s->o.csv = optarg;
			break;
		case 'S':
			s->o.seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 64;
		}
	}
	if (s->o.minutes <= 0 || s->o.members < 1 || s->o.members > SOAK_MEMBERS_MAX ||
	    s->o.sample_s < 1 || s->o.warmup_s < 0 || s->o.host_s < 1 || optind != argc) {
		usage(stderr);
		return 64;
	}
	if (!getenv("GA_BUILD_DIR") || !getenv("GA_SOURCE_DIR")) {
		fputs("soak: set GA_BUILD_DIR (the build tree) and GA_SOURCE_DIR (the sources)\n",
		      stderr);
		return 64;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	s->rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)s->o.seed * 0x100000001B3ull);
	s->dir = tu_tempdir();
	if (s->o.csv && !(s->csv = fopen(s->o.csv, "w")))
		die("cannot write %s: %s", s->o.csv, strerror(errno));
	if (s->csv)
		fputs("seconds,process,rss_kb,fds,room_conns\n", s->csv);
	s->samples = xcalloc(SOAK_SAMPLES_MAX, sizeof *s->samples);
	s->m = xcalloc((size_t)s->o.members, sizeof *s->m);
	s->norder = (size_t)s->o.members;
	s->order = xcalloc(s->norder, sizeof *s->order);

	char err[256];
	s->model = eager_model_new(agent_names, SOAK_AGENTS, s->o.seed, err, sizeof err);
	if (!s->model)
		die("the model: %s", err);
	start_fakes(s);
	start_room(s);
	for (int k = 0; k < 2; k++) {
		char name[32], id[48];
		snprintf(name, sizeof name, "soak-observer-%c", 'a' + k);
		snprintf(id, sizeof id, "soak-observer-%c-%d", 'a' + k, (int)getpid());
		s->obs[k] = connect_join(s, name, id);
		if (!s->obs[k])
			die("observer %d cannot join the room", k + 1);
	}
	for (int i = 0; i < SOAK_AGENTS; i++)
		start_agent(s, i);
	for (int i = 0; i < SOAK_AGENTS; i++)
		if (!proc_wait_output(&s->agent[i], "joined the room", SOAK_STARTUP_MS))
			die("%s did not join the room (its home: %s)", agent_names[i], s->home[i]);
	for (int i = 0; i < s->o.members; i++) {
		s->m[i].idx = i;
		s->m[i].inflight = -1;
		s->m[i].back_at = time_now_ms() + (int64_t)between(s, 0, 5000);
	}
	s->t0 = time_now_ms();
	run(s);
	bool alive[SOAK_PROCS];
	int status[SOAK_PROCS];
	for (int p = 0; p < SOAK_PROCS; p++)
		alive[p] = proc_alive(proc_at(s, p));
	stop_all(s, status);
	bool ok = report(s, alive, status);
	cleanup(s);
	return ok ? 0 : 1;
}
