/*
 * eager_model — the deliberately bad model of bench/loop-sim and the fleet
 * test (tests/integration/fleet): an
 * OpenAI-compatible chat-completions endpoint (on tests/fakes/httpfake,
 * 127.0.0.1, ephemeral port) that answers every agent of the room with the
 * worst habits a room has to survive. tests/fakes/llm answers from a fixed
 * script; this one must read the conversation it is shown and answer it,
 * so it is its own endpoint.
 *
 * One endpoint serves every agent: agent i uses the base URL
 * eager_model_base_url(m, i) ("http://127.0.0.1:N/a<i>/v1"), so each agent
 * has its own persona and call counter.
 *
 * What it answers:
 *   the decision call (the `space_decision` tool offered)
 *             always shouldSpeak:true. It reads "Recent conversation" from
 *             the prompt (the engine's "name: text" lines), takes the last
 *             line not written by this agent, and answers it in one of
 *             EAGER_STYLES ways, rotating per agent and call: a synonym
 *             paraphrase, an echo opener ("Great point, Ben —" + the
 *             words), a verbatim restatement, a promise backed by a
 *             create_issue commitment ("I'll open an issue …"), the same
 *             commitment without any promise phrase ("on it: filing …"),
 *             a promise with no commitment, and a clause-reordered
 *             restatement. Every message addresses another agent by name
 *             (the author of the line it answers, or another agent when
 *             the host wrote it). Commitments name the host's latest
 *             request, so two of them for one request are duplicates.
 *             When the host's line asks after the work ("did you open
 *             the issue? where is the link?") and the prompt carries
 *             what the request's work became ("Your work for it:", else
 *             "Done for it by others:", with a link), it answers with
 *             that link, as a model given a real prompt would;
 *   the owner retry (§11.2, `HOST REQUEST: "…"`, the tool forced)
 *             "Creating that now." with a create_issue for the request;
 *   Layer 2   (no tools, `Message: "…"`): ACTION_REQUEST when the text
 *             asks for something to be made, DISCUSSION otherwise;
 *   the echo judge (§10.6, `Candidate: "…"`): YES — every answer of this
 *             model restates the line it answers, so that is the truth;
 *   extraction (§8.4, `Reply 1: "…"`): a create_issue for the host line of
 *             the context whenever the reply sounds like a promise;
 *   the forced issue body (§11.3): a short markdown body;
 *   anything else: a short plain answer ("OK.").
 * GET …/models lists one model.
 *
 * Counters (calls per agent, decision calls, and the time of the latest
 * request, for quiescence) are kept under a lock; read them from any
 * thread. Bounds: at most EAGER_AGENTS_MAX agents; a prompt is read up to
 * httpfake's body limit; an answer holds at most EAGER_TEXT_MAX bytes of
 * quoted conversation.
 *
 * Ownership: eager_model_new / eager_model_free; strings returned are owned
 * by the model.
 */
#ifndef GA_TESTS_FAKES_EAGER_EAGER_MODEL_H
#define GA_TESTS_FAKES_EAGER_EAGER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define EAGER_AGENTS_MAX 16
#define EAGER_NAME_MAX   32
#define EAGER_TEXT_MAX   600
#define EAGER_STYLES     7
#define EAGER_STYLE_LINK 100 /* the follow-up answered with the work's link */
#define EAGER_REPO       "acme/widgets"
#define EAGER_SAID_MAX   2048 /* messages remembered for eager_model_committed */

struct eager_model;

/* names: the agents of the room, in order; n ≤ EAGER_AGENTS_MAX. seed
 * shifts every agent's style rotation. NULL with err on failure. */
struct eager_model *eager_model_new(const char *const *names, size_t n, unsigned seed, char *err,
                                    size_t errlen);
void eager_model_free(struct eager_model *m);

/* "http://127.0.0.1:N/a<i>/v1" for agent i (owned by the model). */
const char *eager_model_base_url(const struct eager_model *m, size_t i);

/* Wall-clock ms of the latest request from any agent (0: none yet). */
int64_t eager_model_last_call_ms(struct eager_model *m);
/* Whether the model's answer with these exact words (a prefix of text:
 * the room may carry a courtesy notice after them) carried a commitment:
 * 1 yes, 0 no, -1 not one of the last EAGER_SAID_MAX answers. */
int eager_model_committed(struct eager_model *m, const char *text);

/* Requests so far: all of them, and the decision calls among them. */
void eager_model_counts(struct eager_model *m, uint64_t *calls, uint64_t *decisions);

/* A fresh agent home (tests/support/proc.h home_new) whose room pacing is
 * the shortest the runtime configuration allows (memory/space-config.json):
 * the benches measure what the room does, not the waiting. Caller removes
 * it (home_remove). NULL with err when the memory directory cannot be
 * made. */
char *eager_model_home(char *err, size_t errlen);

/* The agents' room timing for the benches: quick reconnects and typing
 * pauses (adapters/space/tunables.h). Entries of an environment list. */
#define EAGER_AGENT_TIMING_ENV                                                                     \
	"GA_SPACE_BACKOFF_MS=300,600,1200", "GA_SPACE_TYPING_BASE_MS=200",                         \
	        "GA_SPACE_TYPING_PER_CHAR_MS=2", "GA_SPACE_TYPING_MAX_MS=800"

#endif
