/*
 * nativefix — the fixture of the native HTTP transport's tests: a loop, a
 * client, and one request run to its end.
 */
#ifndef GA_TESTS_UNIT_HTTP_NATIVEFIX_H
#define GA_TESTS_UNIT_HTTP_NATIVEFIX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/http/http.h"
#include "tests/unit/llm/testloop.h"

struct nres {
	bool done;
	enum http_error error;
	long status;
	char msg[GA_ERR_MSG_MAX];
	char body[8192];
	size_t body_len;
	char hdr[256]; /* the value of the header the test asked for */
	const char *want_hdr;
};

struct nfx {
	uv_loop_t loop;
	struct http_client *http;
};

static void nfx_on_done(void *ud, const struct http_response *r)
{
	struct nres *g = ud;
	g->done = true;
	g->error = r->error;
	g->status = r->status;
	snprintf(g->msg, sizeof g->msg, "%s", r->error_msg);
	g->body_len = r->body_len;
	snprintf(g->body, sizeof g->body, "%s", r->body);
	const char *v = g->want_hdr ? http_response_header(r, g->want_hdr) : NULL;
	snprintf(g->hdr, sizeof g->hdr, "%s", v ? v : "");
}

static inline struct nfx *nfx_new(void)
{
	struct nfx *fx = calloc(1, sizeof *fx);
	uv_loop_init(&fx->loop);
	struct ga_err e = {{0}};
	fx->http = http_client_new(&fx->loop, NULL, &e);
	if (!fx->http) {
		fprintf(stderr, "no HTTP client: %s\n", e.msg);
		abort();
	}
	return fx;
}

static inline void nfx_free(struct nfx *fx)
{
	http_client_close(fx->http);
	testloop_drain(&fx->loop);
	if (uv_loop_close(&fx->loop) != 0) {
		fprintf(stderr, "handles left open on the loop\n");
		abort();
	}
	free(fx);
}

/* Runs one request to its end; g holds the outcome. */
static inline void nfx_run(struct nfx *fx, const struct http_request *req, struct nres *g)
{
	struct ga_err e = {{0}};
	g->done = false;
	if (http_request(fx->http, req, nfx_on_done, g, &e) == 0) {
		fprintf(stderr, "request refused: %s\n", e.msg);
		abort();
	}
	if (testloop_run_until(&fx->loop, &g->done) != 0) {
		fprintf(stderr, "request to %s did not finish\n", req->url);
		abort();
	}
}

static inline void nfx_get(struct nfx *fx, const char *url, struct nres *g)
{
	struct http_request req = {.method = "GET", .url = url};
	nfx_run(fx, &req, g);
}

#endif
