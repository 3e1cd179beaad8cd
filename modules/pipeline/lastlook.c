/*
 * lastlook — the echo checks once more at the last moment before a send
 * (pipeline_late_echo). See pipeline.h.
 */
/* validator_text.h first: its phrase table has an ECHO entry, which
 * <termios.h> (through uv.h) defines as a macro. */
#include "modules/validator/validator_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/pipeline/pipeline.h"
#include "modules/validator/echo.h"

/* The fresh message whose text the window's entry wt is (the window keeps
 * a text cut at ECHO_TEXT_MAX_BYTES: compared on wt's length). */
static const struct pipeline_fresh *fresh_of(const char *wt, const struct pipeline_fresh *fresh,
                                             size_t nfresh)
{
	size_t n = wt ? strlen(wt) : 0;
	for (size_t i = nfresh; n && i-- > 0;)
		if (fresh[i].text && strncmp(fresh[i].text, wt, n) == 0)
			return &fresh[i];
	return NULL;
}

bool pipeline_late_echo(const char *candidate, size_t n_commitments, const struct echo_window *now,
                        const struct echo_result *before, const struct pipeline_fresh *fresh,
                        size_t nfresh, struct decision *why)
{
	if (!candidate || !now || n_commitments > 0 || nfresh == 0)
		return false;
	size_t nlen;
	char *norm = validator_text_normalize(candidate, strlen(candidate), &nlen);
	struct echo_params def = echo_params_default();
	struct echo_result r;
	echo_window_evaluate(now, norm, nlen, &def, &r);
	free(norm);
	bool band = r.judge_band && !(before && before->judge_band);
	if (!r.echo && !band)
		return false;
	const char *texts[ECHO_PAIRWISE_MAX];
	size_t nt = echo_window_recent_texts(now, texts, ECHO_PAIRWISE_MAX);
	const char *wt = r.matched >= 0 && (size_t)r.matched < nt ? texts[r.matched] : NULL;
	const struct pipeline_fresh *f = fresh_of(wt, fresh, nfresh);
	const struct pipeline_fresh *last = &fresh[nfresh - 1];
	char how[160];
	if (r.echo)
		snprintf(how, sizeof how, "%s, pair %.2f, novelty %.2f", r.strategy_text, r.pair,
		         r.novelty);
	else
		snprintf(how, sizeof how,
		         "borderline band (pair %.2f, novelty %.2f), no time left for the judge",
		         r.pair, r.novelty);
	if (f)
		decision_set(why, VERDICT_DROP, "echo_late",
		             "echo of %s's \"%.100s\", which arrived during the send delay: %s",
		             f->author ? f->author : "a peer", f->text, how);
	else
		decision_set(why, VERDICT_DROP, "echo_late",
		             "echo of \"%.80s\" since %s's \"%.80s\" arrived during the send "
		             "delay: %s",
		             wt ? wt : "the window", last->author ? last->author : "a peer",
		             last->text ? last->text : "", how);
	return true;
}
