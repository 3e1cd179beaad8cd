/*
 * h1 — the HTTP/1.1 codec (see h1.h). The parser is a small state machine
 * over lines (status, headers, chunk sizes, trailers) and counted or
 * close-delimited body bytes; it never buffers more than one line.
 */
#include "adapters/http/h1.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* --- the request head ------------------------------------------------------------------- */

/* Does the header line "Name: value" carry that name? */
static bool header_is(const char *line, const char *name)
{
	size_t n = strlen(name);
	return strncasecmp(line, name, n) == 0 && (line[n] == ':' || line[n] == ';');
}

static bool caller_sets(const struct http_req *r, const char *name)
{
	for (size_t i = 0; i < r->n_headers; i++)
		if (header_is(r->headers[i], name))
			return true;
	return false;
}

/* One caller line, the way libcurl reads them: "Name:" with nothing after
 * the colon sends nothing, "Name;" sends the header with an empty value. */
static void put_caller_header(struct strbuf *out, const char *line)
{
	const char *colon = strchr(line, ':');
	const char *semi = strchr(line, ';');
	if (semi && (!colon || semi < colon) && semi[1] == '\0') {
		sb_printf(out, "%.*s:\r\n", (int)(semi - line), line);
		return;
	}
	if (!colon)
		return; /* not a header line */
	const char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!*v)
		return;
	sb_printf(out, "%s\r\n", line);
}

static bool method_has_body(const struct http_req *r)
{
	return r->body || strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0 ||
	       strcmp(r->method, "PATCH") == 0;
}

void h1_write_head(struct strbuf *out, const struct http_req *r, const char *target,
                   const char *host_port, const char *extra)
{
	sb_printf(out, "%s %s HTTP/1.1\r\n", r->method, target);
	if (!caller_sets(r, "Host"))
		sb_printf(out, "Host: %s\r\n", host_port);
	if (!caller_sets(r, "User-Agent"))
		sb_puts(out, "User-Agent: " HTTP_USER_AGENT "\r\n");
	if (!caller_sets(r, "Accept"))
		sb_puts(out, "Accept: */*\r\n");
	for (size_t i = 0; i < r->n_headers; i++)
		put_caller_header(out, r->headers[i]);
	if (extra)
		sb_puts(out, extra);
	if (method_has_body(r)) {
		if (!caller_sets(r, "Content-Type"))
			sb_puts(out, "Content-Type: application/x-www-form-urlencoded\r\n");
		sb_printf(out, "Content-Length: %zu\r\n", r->body_len);
	}
	sb_puts(out, "\r\n");
}

/* --- the response parser -------------------------------------------------------------------- */

void h1_init(struct h1_parser *p, struct http_req *r, bool no_body, bool is_connect)
{
	memset(p, 0, sizeof *p);
	p->r = r;
	p->no_body = no_body;
	p->is_connect = is_connect;
	p->state = H1_STATUS;
	sb_init(&p->line, H1_MAX_LINE_BYTES);
}

void h1_free(struct h1_parser *p)
{
	sb_free(&p->line);
}

__attribute__((format(printf, 2, 3))) static enum h1_result fail(struct h1_parser *p,
                                                                 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, sizeof p->err, fmt, ap);
	va_end(ap);
	return H1_ERROR;
}

static enum h1_result on_status(struct h1_parser *p, const char *s)
{
	int minor = 0, status = 0;
	char sp = 0;
	if (sscanf(s, "HTTP/1.%1d %3d%c", &minor, &status, &sp) < 2 || status < 100 ||
	    status > 999 || (sp && sp != ' ')) {
		return fail(p, "the answer is not an HTTP/1.x response (status line '%.60s')", s);
	}
	if (status == 101)
		return fail(p, "%s",
		            "the server switched protocols (101), which was not asked for");
	http_req_reset_headers(p->r);
	p->status = status;
	p->minor = minor;
	p->chunked = p->has_length = p->conn_close = p->keep_alive_10 = false;
	p->state = H1_HEADERS;
	return H1_MORE;
}

static bool has_token(const char *v, const char *token)
{
	size_t n = strlen(token);
	for (const char *s = v; *s;) {
		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		const char *e = s;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > s && (t[-1] == ' ' || t[-1] == '\t'))
			t--;
		if ((size_t)(t - s) == n && strncasecmp(s, token, n) == 0)
			return true;
		s = e;
	}
	return false;
}

/* Transfer-Encoding: the body is chunked only when chunked is the last
 * coding; any other coding leaves the close as the only delimiter. */
static void on_transfer_encoding(struct h1_parser *p, const char *v)
{
	const char *last = strrchr(v, ',');
	last = last ? last + 1 : v;
	while (*last == ' ' || *last == '\t')
		last++;
	p->chunked = strncasecmp(last, "chunked", 7) == 0;
	if (!p->chunked)
		p->conn_close = true;
}

static enum h1_result on_content_length(struct h1_parser *p, const char *v)
{
	uint64_t n = 0;
	const char *s = v;
	if (!isdigit((unsigned char)*s))
		return fail(p, "the response has an invalid Content-Length '%.40s'", v);
	for (; isdigit((unsigned char)*s); s++) {
		if (n > (UINT64_MAX - 9) / 10)
			return fail(p, "the response has an invalid Content-Length '%.40s'", v);
		n = n * 10 + (uint64_t)(*s - '0');
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s || (p->has_length && p->remaining != n))
		return fail(p, "the response has an invalid Content-Length '%.40s'", v);
	p->has_length = true;
	p->remaining = n;
	return H1_MORE;
}

static enum h1_result on_header_line(struct h1_parser *p, char *s, size_t len)
{
	if (*s == ' ' || *s == '\t')
		return H1_MORE; /* obsolete line folding: the continuation is dropped */
	char *colon = memchr(s, ':', len);
	if (!colon || colon == s)
		return fail(p, "the response has a malformed header line '%.60s'", s);
	size_t name_len = (size_t)(colon - s);
	char *v = colon + 1;
	char *end = s + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	if (name_len == 14 && strncasecmp(s, "Content-Length", 14) == 0 &&
	    on_content_length(p, v) != H1_MORE)
		return H1_ERROR;
	if (name_len == 17 && strncasecmp(s, "Transfer-Encoding", 17) == 0)
		on_transfer_encoding(p, v);
	if (name_len == 10 && strncasecmp(s, "Connection", 10) == 0) {
		if (has_token(v, "close"))
			p->conn_close = true;
		if (has_token(v, "keep-alive"))
			p->keep_alive_10 = true;
	}
	if (p->status >= 200)
		http_req_add_header(p->r, s, name_len, v, (size_t)(end - v));
	return H1_MORE;
}

/* The blank line after the headers: where does the body end? */
static enum h1_result on_head_end(struct h1_parser *p)
{
	if (p->status < 200) {
		p->state = H1_STATUS; /* an interim answer: the real one follows */
		return H1_MORE;
	}
	if (p->minor == 0 && !p->keep_alive_10)
		p->conn_close = true;
	if ((p->is_connect && p->status < 300) || p->no_body || p->status == 204 ||
	    p->status == 304) {
		p->state = H1_COMPLETE;
		return H1_DONE;
	}
	if (p->chunked) {
		p->has_length = false;
		p->state = H1_CHUNK_SIZE;
		return H1_MORE;
	}
	if (p->has_length) {
		if (p->remaining > p->r->max_body)
			return H1_TOO_LARGE;
		p->state = p->remaining ? H1_BODY_LENGTH : H1_COMPLETE;
		return p->remaining ? H1_MORE : H1_DONE;
	}
	p->conn_close = true;
	p->state = H1_BODY_CLOSE;
	return H1_MORE;
}

static enum h1_result on_chunk_size(struct h1_parser *p, const char *s)
{
	uint64_t n = 0;
	const char *c = s;
	for (; isxdigit((unsigned char)*c); c++) {
		if (n > (UINT64_MAX >> 4))
			return fail(p, "the response has an invalid chunk size '%.40s'", s);
		n = n * 16 + (uint64_t)(isdigit((unsigned char)*c)
		                                ? *c - '0'
		                                : (tolower((unsigned char)*c) - 'a' + 10));
	}
	if (c == s || (*c && *c != ';' && *c != ' ' && *c != '\t'))
		return fail(p, "the response has an invalid chunk size '%.40s'", s);
	if (n > p->r->max_body - p->r->resp_body.len)
		return H1_TOO_LARGE;
	p->remaining = n;
	p->state = n ? H1_CHUNK_DATA : H1_TRAILERS;
	return H1_MORE;
}

static enum h1_result on_line(struct h1_parser *p, char *s, size_t len)
{
	switch (p->state) {
	case H1_STATUS:
		return on_status(p, s);
	case H1_HEADERS:
		return len ? on_header_line(p, s, len) : on_head_end(p);
	case H1_CHUNK_SIZE:
		return on_chunk_size(p, s);
	case H1_CHUNK_END:
		if (len)
			return fail(p, "%s", "the response's chunked body is malformed");
		p->state = H1_CHUNK_SIZE;
		return H1_MORE;
	case H1_TRAILERS:
		if (len)
			return H1_MORE; /* trailers are not kept */
		p->state = H1_COMPLETE;
		return H1_DONE;
	default:
		return fail(p, "%s", "internal error: a line in the body");
	}
}

/* Collects bytes up to '\n'; returns 1 with the line complete, 0 when more
 * is needed, -1 when the line is too long. */
static int take_line(struct h1_parser *p, const char *data, size_t len, size_t *used)
{
	const char *nl = memchr(data, '\n', len);
	size_t n = nl ? (size_t)(nl - data) + 1 : len;
	p->head_bytes += n;
	if (sb_append(&p->line, data, n) != 0 ||
	    (p->state <= H1_HEADERS && p->head_bytes > H1_MAX_HEAD_BYTES))
		return -1;
	*used += n;
	return nl ? 1 : 0;
}

static enum h1_result feed_line(struct h1_parser *p, const char *data, size_t len, size_t *used)
{
	int got = take_line(p, data, len, used);
	if (got < 0)
		return fail(p,
		            "a line of the response is longer than %u bytes or its head longer "
		            "than %u",
		            H1_MAX_LINE_BYTES, H1_MAX_HEAD_BYTES);
	if (got == 0)
		return H1_MORE;
	size_t n = p->line.len;
	while (n && (p->line.buf[n - 1] == '\n' || p->line.buf[n - 1] == '\r'))
		n--;
	sb_truncate(&p->line, n);
	enum h1_result res = on_line(p, p->line.buf ? p->line.buf : (char *)"", n);
	sb_reset(&p->line);
	return res;
}

static enum h1_result feed_body(struct h1_parser *p, const char *data, size_t len, size_t *used)
{
	size_t n = len;
	if (p->state != H1_BODY_CLOSE && p->remaining < n)
		n = (size_t)p->remaining;
	struct http_req *r = p->r;
	if (n > r->max_body - r->resp_body.len || sb_append(&r->resp_body, data, n) != 0)
		return H1_TOO_LARGE;
	*used += n;
	if (p->state == H1_BODY_CLOSE)
		return H1_MORE;
	p->remaining -= n;
	if (p->remaining)
		return H1_MORE;
	if (p->state == H1_CHUNK_DATA) {
		p->state = H1_CHUNK_END;
		return H1_MORE;
	}
	p->state = H1_COMPLETE;
	return H1_DONE;
}

enum h1_result h1_feed(struct h1_parser *p, const char *data, size_t len, size_t *used)
{
	*used = 0;
	if (len)
		p->any_byte = true;
	while (*used < len) {
		const char *d = data + *used;
		size_t left = len - *used;
		enum h1_result res;
		if (p->state == H1_COMPLETE)
			return H1_DONE;
		if (p->state == H1_BODY_LENGTH || p->state == H1_CHUNK_DATA ||
		    p->state == H1_BODY_CLOSE)
			res = feed_body(p, d, left, used);
		else
			res = feed_line(p, d, left, used);
		if (res != H1_MORE)
			return res;
	}
	return p->state == H1_COMPLETE ? H1_DONE : H1_MORE;
}

enum h1_result h1_eof(struct h1_parser *p)
{
	if (p->state == H1_BODY_CLOSE) {
		p->state = H1_COMPLETE;
		return H1_DONE;
	}
	if (p->state == H1_COMPLETE)
		return H1_DONE;
	if (!p->any_byte)
		return fail(p, "%s", "the server closed the connection without answering");
	return fail(p, "%s", "the connection closed before the response was complete");
}

bool h1_reusable(const struct h1_parser *p)
{
	return p->state == H1_COMPLETE && !p->conn_close;
}

/* --- dates ------------------------------------------------------------------------------------ */

static int month_index(const char *m)
{
	static const char *const names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	for (int i = 0; i < 12; i++)
		if (strcasecmp(m, names[i]) == 0)
			return i;
	return -1;
}

time_t h1_parse_date(const char *value)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	char mon[4] = "";
	int d = 0, y = 0, h = 0, mi = 0, s = 0;
	if (sscanf(value, "%*3[A-Za-z], %2d %3s %4d %2d:%2d:%2d GMT", &d, mon, &y, &h, &mi, &s) ==
	    6) {
		/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
	} else if (sscanf(value, "%*[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d GMT", &d, mon, &y, &h, &mi,
	                  &s) == 6) {
		y += y < 70 ? 2000 : 1900; /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
	} else if (sscanf(value, "%*3[A-Za-z] %3s %2d %2d:%2d:%2d %4d", mon, &d, &h, &mi, &s, &y) !=
	           6) {
		return -1; /* asctime: Sun Nov  6 08:49:37 1994 */
	}
	int m = month_index(mon);
	if (m < 0 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1970)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = m;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	return timegm(&tm);
}
