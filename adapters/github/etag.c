/*
 * etag — see etag.h. A doubly linked list in recency order (head = most
 * recent) and a linear search: 256 entries, looked up once per GET, cost
 * less than the request they save.
 */
#include "adapters/github/etag.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct node {
	struct node *prev, *next;
	char *url, *tag, *body, *link;
	size_t body_len, bytes;
	uint64_t used; /* the cache's operation count at its last find or put */
};

struct gh_etags {
	struct node *head, *tail;
	size_t n, bytes;
	size_t max_entries, max_bytes, max_idle;
	uint64_t ops; /* finds and puts so far */
};

struct gh_etags *gh_etags_new(size_t entries, size_t max_bytes, size_t max_idle)
{
	struct gh_etags *c = xcalloc(1, sizeof *c);
	c->max_entries = entries ? entries : 1;
	c->max_bytes = max_bytes;
	c->max_idle = max_idle;
	return c;
}

static void unlink_node(struct gh_etags *c, struct node *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->tail = n->prev;
	n->prev = n->next = NULL;
}

static void push_front(struct gh_etags *c, struct node *n)
{
	n->prev = NULL;
	n->next = c->head;
	if (c->head)
		c->head->prev = n;
	else
		c->tail = n;
	c->head = n;
}

static void node_free(struct gh_etags *c, struct node *n)
{
	unlink_node(c, n);
	c->n--;
	c->bytes -= n->bytes;
	free(n->url);
	free(n->tag);
	free(n->body);
	free(n->link);
	free(n);
}

void gh_etags_free(struct gh_etags *c)
{
	if (!c)
		return;
	while (c->head)
		node_free(c, c->head);
	free(c);
}

/* One more operation; the entries idle for over max_idle operations go.
 * The list is in recency order, so they are at its tail. */
static void tick(struct gh_etags *c)
{
	c->ops++;
	while (c->max_idle && c->tail && c->ops - c->tail->used > c->max_idle)
		node_free(c, c->tail);
}

static struct node *find(struct gh_etags *c, const char *url)
{
	for (struct node *n = c->head; n; n = n->next)
		if (strcmp(n->url, url) == 0)
			return n;
	return NULL;
}

bool gh_etag_find(struct gh_etags *c, const char *url, struct gh_etag_entry *out)
{
	tick(c);
	struct node *n = find(c, url);
	if (!n)
		return false;
	n->used = c->ops;
	unlink_node(c, n);
	push_front(c, n);
	out->tag = n->tag;
	out->body = n->body;
	out->body_len = n->body_len;
	out->link = n->link;
	return true;
}

void gh_etag_drop(struct gh_etags *c, const char *url)
{
	struct node *n = find(c, url);
	if (n)
		node_free(c, n);
}

bool gh_etag_put(struct gh_etags *c, const char *url, const char *tag, const char *body,
                 size_t body_len, const char *link)
{
	tick(c);
	gh_etag_drop(c, url);
	size_t tl = tag ? strlen(tag) : 0;
	size_t bytes =
	        strlen(url) + tl + body_len + (link ? strlen(link) : 0) + sizeof(struct node);
	if (tl == 0 || tl > GH_ETAG_TAG_MAX || bytes > c->max_bytes / 4)
		return false;
	while (c->tail && (c->n >= c->max_entries || c->bytes + bytes > c->max_bytes))
		node_free(c, c->tail);
	struct node *n = xcalloc(1, sizeof *n);
	n->url = xstrdup(url);
	n->tag = xstrdup(tag);
	n->body = xmalloc(body_len + 1);
	if (body_len)
		memcpy(n->body, body, body_len);
	n->body[body_len] = '\0';
	n->body_len = body_len;
	n->link = link ? xstrdup(link) : NULL;
	n->bytes = bytes;
	n->used = c->ops;
	push_front(c, n);
	c->n++;
	c->bytes += bytes;
	return true;
}

size_t gh_etag_count(const struct gh_etags *c)
{
	return c->n;
}

size_t gh_etag_bytes(const struct gh_etags *c)
{
	return c->bytes;
}
