/*
 * participation_fuzz — the parsers of outside input in modules/participation:
 * the host classifier (a host's words), the decision's text fallback and
 * the extraction reply (a model's words), the extraction gate (our sent
 * words), a peer's identity summary and reflection in the prompt (a peer's
 * words), and a tick with the input as a host message. Checks the
 * invariants that must hold for any input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modules/participation/decision.h"
#include "modules/participation/participation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	struct part_intent_result r;
	part_intent_classify(s, size, &r);
	if (r.ambiguous && r.intent != PART_INTENT_DISCUSSION)
		abort();
	enum part_intent in;
	(void)part_intent_parse_reply(s, &in);

	struct part_decision d = {0};
	if (part_decision_from_text(s, size, false, &d, NULL) == 0) {
		if (!d.reason || d.commitments.n > CMT_MAX)
			abort();
	}
	part_decision_clear(&d);
	struct cmt_list c = {0};
	(void)cmt_extract_parse(s, size, size % 2 == 0, &c, NULL);
	for (size_t i = 0; i < c.n; i++)
		if (!c.item[i].title && !c.item[i].description && !c.item[i].content)
			abort();
	cmt_list_clear(&c);

	char why[160];
	(void)cmt_extract_wanted(s, size, why, sizeof why);
	if (!memchr(why, '\0', sizeof why))
		abort();
	struct part_peer_note peer = {.name = "b", .identity_json = s, .reflection = s};
	struct part_workspace_note ws = {.workspace = s, .reporter = s};
	char *ctx = part_peers_context("a", &peer, 1, &ws, 1);
	if (strlen(ctx) > PART_PEERS_CONTEXT_MAX_BYTES + 4 * PART_PEER_FIELD_MAX_BYTES + 512)
		abort();
	free(ctx);

	static const char *const caps[] = {"github"};
	const struct part_member m[2] = {{"a", caps, 1, true, false}, {"b", NULL, 0, false, false}};
	struct part_event ev[2] = {{.kind = PART_EV_CHAT, .author = "host", .text = s, .len = size},
	                           {.kind = PART_EV_CHAT, .author = "b", .text = s, .len = size}};
	struct part_state st;
	part_state_init(&st);
	struct part_tick_in tin = {.self = "a",
	                           .members = m,
	                           .nmembers = 2,
	                           .events = ev,
	                           .nevents = 2,
	                           .now_ms = 1000};
	struct part_tick_out out;
	part_tick(&st, &tin, &out);
	if (st.hist_n > PART_HISTORY_MAX || !out.verdict.rule)
		abort();
	char *p = part_points_made(&st);
	free(p);
	p = part_peer_commitments(&st);
	free(p);
	part_state_free(&st);
	free(s);
	return 0;
}
