/*
 * The OTLP/HTTP exporter (otlp.h). Spans arrive encoded (trace.c) and
 * are copied into the tail batch; batches wait in order, and the head
 * one is sent, one request at a time, as
 *
 *	{"resourceSpans":[{"resource":{"attributes":[RESOURCE]},
 *	  "scopeSpans":[{"scope":{"name":..,"version":..},
 *	  "spans":[SPAN,SPAN,...]}]}]}
 *
 * (opentelemetry-proto, "OTLP/HTTP": POST to /v1/traces, Content-Type
 * application/json). A batch in flight takes no more spans: what it
 * holds is what was sent. Nothing here waits: a span past the queue's
 * bound is dropped and counted, and every end of a request (answer,
 * failure, timeout) comes back through http_client's done callback on a
 * loop turn of its own.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <cjson/cJSON.h>

#include "http_client.h"
#include "log.h"
#include "otlp.h"
#include "xmalloc.h"

/* What is read of a receiver's answer. */
#define OTLP_RESPONSE_MAX	(64 * 1024)
/* A new batch's first allocation. */
#define OTLP_BATCH_RESERVE	(64 * 1024)

struct otlp_batch {
	char			*buf;		/* SPAN,SPAN,... */
	size_t			 len;
	size_t			 size;
	size_t			 nspans;
	int			 attempts;
	TAILQ_ENTRY(otlp_batch)	 entry;
};
TAILQ_HEAD(otlp_batches, otlp_batch);

static struct {
	struct event_base	*base;
	int			 on;
	char			*url;
	struct http_client_header *hdrs;	/* name and value, owned */
	size_t			 nhdrs;
	char			*head;		/* up to the spans */
	size_t			 queue_max;
	size_t			 batch_max;
	int			 interval_ms;
	int			 timeout_ms;

	struct otlp_batches	 batches;	/* the first in flight */
	struct otlp_batch	*sending;	/* in flight, or NULL */
	struct http_client	*hc;
	struct event		*timer;		/* interval, back-off */
	int			 backing_off;
	int			 flushing;
	struct otlp_stats	 stats;
} otlp = { .batches = TAILQ_HEAD_INITIALIZER(otlp.batches) };

static const char otlp_tail[] = "]}]}]}";

static void	otlp_schedule(void);
static void	otlp_timer_cb(evutil_socket_t, short, void *);

static void
otlp_batch_free(struct otlp_batch *b)
{
	free(b->buf);
	free(b);
}

/* b leaves the queue (sent, or dropped: counted by the caller). */
static void
otlp_batch_remove(struct otlp_batch *b)
{
	TAILQ_REMOVE(&otlp.batches, b, entry);
	otlp.stats.queued -= b->nspans;
	otlp.stats.queued_bytes -= b->len;
	otlp_batch_free(b);
}

static void
otlp_drop_all(void)
{
	struct otlp_batch	*b, *b1;

	TAILQ_FOREACH_SAFE(b, &otlp.batches, entry, b1) {
		if (b == otlp.sending)
			continue;	/* its request's end frees it */
		otlp.stats.dropped_failed += b->nspans;
		otlp_batch_remove(b);
	}
}

static void
otlp_cat(char **head, const char *text)
{
	char	*next;

	xasprintf(&next, "%s%s", *head, text);
	free(*head);
	*head = next;
}

/* s as a JSON string, for the head (configuration time only). */
static void
otlp_cat_string(char **head, const char *s)
{
	cJSON	*str = cJSON_CreateString(s);
	char	*text = cJSON_PrintUnformatted(str);

	otlp_cat(head, text);
	free(text);
	cJSON_Delete(str);
}

static char *
otlp_make_head(const struct otlp_settings *set)
{
	char		*head, *key;
	const char	*eq;
	size_t		 i, n = 0;

	head = xstrdup("{\"resourceSpans\":[{\"resource\":{\"attributes\":[");
	for (i = 0; i < set->nresource; i++) {
		if ((eq = strchr(set->resource[i], '=')) == NULL)
			continue;
		key = xstrndup(set->resource[i],
		    (size_t)(eq - set->resource[i]));
		otlp_cat(&head, n++ > 0 ? ",{\"key\":" : "{\"key\":");
		otlp_cat_string(&head, key);
		otlp_cat(&head, ",\"value\":{\"stringValue\":");
		otlp_cat_string(&head, eq + 1);
		otlp_cat(&head, "}}");
		free(key);
	}
	otlp_cat(&head, "]},\"scopeSpans\":[{\"scope\":{\"name\":");
	otlp_cat_string(&head, set->scope_name);
	otlp_cat(&head, ",\"version\":");
	otlp_cat_string(&head, set->scope_version);
	otlp_cat(&head, "},\"spans\":[");
	return (head);
}

static void
otlp_free_settings(void)
{
	size_t	i;

	for (i = 0; i < otlp.nhdrs; i++) {
		free((char *)otlp.hdrs[i].name);
		/* Header values may be credentials. */
		explicit_bzero((char *)otlp.hdrs[i].value,
		    strlen(otlp.hdrs[i].value));
		free((char *)otlp.hdrs[i].value);
	}
	free(otlp.hdrs);
	otlp.hdrs = NULL;
	otlp.nhdrs = 0;
	free(otlp.url);
	otlp.url = NULL;
	free(otlp.head);
	otlp.head = NULL;
}

void
otlp_configure(struct event_base *base, const struct otlp_settings *set)
{
	const char	*colon;
	size_t		 i;

	otlp.base = base;
	if (otlp.timer == NULL)
		otlp.timer = evtimer_new(base, otlp_timer_cb, NULL);
	otlp_free_settings();
	if (set == NULL) {
		otlp.on = 0;
		otlp_drop_all();
		return;
	}
	otlp.on = 1;
	otlp.url = xstrdup(set->url);
	otlp.hdrs = xcalloc(set->nheaders + 1, sizeof *otlp.hdrs);
	for (i = 0; i < set->nheaders; i++) {
		if ((colon = strchr(set->headers[i], ':')) == NULL)
			continue;
		otlp.hdrs[otlp.nhdrs].name = xstrndup(set->headers[i],
		    (size_t)(colon - set->headers[i]));
		for (colon++; *colon == ' '; colon++)
			;
		otlp.hdrs[otlp.nhdrs++].value = xstrdup(colon);
	}
	otlp.head = otlp_make_head(set);
	otlp.queue_max = set->queue_max;
	otlp.batch_max = set->batch_max;
	otlp.interval_ms = set->interval_ms;
	otlp.timeout_ms = set->timeout_ms;
}

int
otlp_push(const char *span, size_t len)
{
	struct otlp_batch	*b;
	size_t			 reserve;

	if (!otlp.on)
		return (-1);
	if (otlp.stats.queued >= otlp.queue_max) {
		otlp.stats.dropped_full++;
		return (-1);
	}
	b = TAILQ_LAST(&otlp.batches, otlp_batches);
	if (b == NULL || b == otlp.sending || b->nspans >= otlp.batch_max) {
		b = xcalloc(1, sizeof *b);
		TAILQ_INSERT_TAIL(&otlp.batches, b, entry);
	}
	if (b->len + len + 1 > b->size) {
		/*
		 * Batches fill fast under load: few reallocations. The first
		 * holds batch_max spans of 1 KiB at most, so a queue of
		 * one-span batches (batch_max 1) reserves little.
		 */
		reserve = otlp.batch_max * 1024 < OTLP_BATCH_RESERVE ?
		    otlp.batch_max * 1024 : OTLP_BATCH_RESERVE;
		b->size = b->size * 2 > b->len + len + 1 ? b->size * 2 :
		    b->len + len + reserve;
		b->buf = xrealloc(b->buf, b->size);
	}
	if (b->nspans > 0) {
		b->buf[b->len++] = ',';
		otlp.stats.queued_bytes++;
	}
	memcpy(b->buf + b->len, span, len);
	b->len += len;
	b->nspans++;
	otlp.stats.queued++;
	otlp.stats.queued_bytes += len;
	otlp_schedule();
	return (0);
}

static void
otlp_arm(int ms, int backoff)
{
	struct timeval	tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	otlp.backing_off = backoff;
	evtimer_add(otlp.timer, &tv);
}

/* How long before attempt n + 1 of a batch: Retry-After, or doubling. */
static int
otlp_backoff_ms(struct http_client *hc, int attempts)
{
	const char	*after;
	long		 secs, ms = OTLP_BACKOFF_MIN_MS;
	char		*end;
	int		 i;

	after = http_client_status(hc) != 0 ?
	    http_client_header(hc, "Retry-After") : NULL;
	if (after != NULL && (secs = strtol(after, &end, 10)) >= 0 &&
	    *end == '\0' && end != after)
		ms = secs * 1000;
	else {
		for (i = 1; i < attempts && ms < OTLP_BACKOFF_MAX_MS; i++)
			ms *= 2;
	}
	if (ms > OTLP_BACKOFF_MAX_MS)
		ms = OTLP_BACKOFF_MAX_MS;
	return ((int)ms);
}

/* A 2xx answer: a partial success says how many spans it refused. */
static void
otlp_accepted(struct http_client *hc, struct otlp_batch *b)
{
	const cJSON	*partial, *n;
	cJSON		*answer;
	const char	*body;
	size_t		 len;
	uint64_t	 rejected = 0;

	body = http_client_body(hc, &len);
	if (len > 0 && (answer = cJSON_ParseWithLength(body, len)) != NULL) {
		partial = cJSON_GetObjectItemCaseSensitive(answer,
		    "partialSuccess");
		n = cJSON_GetObjectItemCaseSensitive(partial, "rejectedSpans");
		if (cJSON_IsString(n))
			rejected = strtoull(n->valuestring, NULL, 10);
		else if (cJSON_IsNumber(n) && n->valuedouble > 0)
			rejected = (uint64_t)n->valuedouble;
		cJSON_Delete(answer);
	}
	if (rejected > b->nspans)
		rejected = b->nspans;
	if (rejected > 0)
		log_limited(LOG_LEVEL_WARN, "otlp", "otlp: %s took %zu "
		    "spans and refused %llu (partial success)", otlp.url,
		    b->nspans - (size_t)rejected,
		    (unsigned long long)rejected);
	otlp.stats.rejected += rejected;
	otlp.stats.exported += b->nspans - rejected;
	otlp.stats.requests_ok++;
}

static int
otlp_retryable(int status)
{
	return (status == 0 || status == 429 || status == 502 ||
	    status == 503 || status == 504);
}

static void
otlp_done_cb(struct http_client *hc, void *arg)
{
	struct otlp_batch	*b = otlp.sending;
	int			 status = http_client_status(hc);
	char			 why[160];

	otlp.hc = NULL;
	otlp.sending = NULL;
	if (!otlp.on) {
		/* Stopped meanwhile: the batch goes. */
		otlp.stats.dropped_failed += b->nspans;
		otlp_batch_remove(b);
		return;
	}
	if (status >= 200 && status < 300) {
		otlp_accepted(hc, b);
		otlp_batch_remove(b);
		otlp_schedule();
		return;
	}
	otlp.stats.requests_failed++;
	b->attempts++;
	if (status != 0)
		snprintf(why, sizeof why, "status %d", status);
	else
		snprintf(why, sizeof why, "%s", http_client_error(hc));
	if (otlp_retryable(status) && b->attempts < OTLP_ATTEMPTS &&
	    !otlp.flushing) {
		log_limited(LOG_LEVEL_WARN, "otlp", "otlp: %s: %s (attempt %d "
		    "of %d); sending again later", otlp.url, why, b->attempts,
		    OTLP_ATTEMPTS);
		otlp_arm(otlp_backoff_ms(hc, b->attempts), 1);
		return;
	}
	log_limited(LOG_LEVEL_WARN, "otlp", "otlp: %s: %s (attempt %d): %zu "
	    "spans dropped", otlp.url, why, b->attempts, b->nspans);
	otlp.stats.dropped_failed += b->nspans;
	otlp_batch_remove(b);
	otlp_schedule();
}

/* The head batch goes now. */
static void
otlp_send(void)
{
	struct otlp_batch		*b = TAILQ_FIRST(&otlp.batches);
	struct http_client_request	 r;
	struct http_client_header	*h;
	size_t				 headlen, n;
	char				*body, *cause = NULL;

	if (b == NULL || otlp.hc != NULL)
		return;
	headlen = strlen(otlp.head);
	n = headlen + b->len + sizeof otlp_tail;
	body = xmalloc(n);
	memcpy(body, otlp.head, headlen);
	memcpy(body + headlen, b->buf, b->len);
	memcpy(body + headlen + b->len, otlp_tail, sizeof otlp_tail);

	h = xcalloc(otlp.nhdrs + 1, sizeof *h);
	h[0].name = "Content-Type";
	h[0].value = "application/json";
	memcpy(h + 1, otlp.hdrs, otlp.nhdrs * sizeof *h);
	memset(&r, 0, sizeof r);
	r.method = "POST";
	r.url = otlp.url;
	r.headers = h;
	r.nheaders = otlp.nhdrs + 1;
	r.body = body;
	r.bodylen = n - 1;
	r.max_body = OTLP_RESPONSE_MAX;
	r.timeout_ms = otlp.timeout_ms;
	r.done = otlp_done_cb;
	otlp.sending = b;
	otlp.hc = http_client_start(&r, &cause);
	free(h);
	free(body);
	if (otlp.hc == NULL) {
		otlp.sending = NULL;
		log_limited(LOG_LEVEL_WARN, "otlp", "otlp: %s: %zu spans "
		    "dropped", cause, b->nspans);
		free(cause);
		otlp.stats.requests_failed++;
		otlp.stats.dropped_failed += b->nspans;
		otlp_batch_remove(b);
		otlp_schedule();
	}
}

static void
otlp_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	otlp.backing_off = 0;
	otlp_send();
}

/*
 * What comes next: nothing while a request is in flight or a back-off
 * runs; the head batch now when it is full (or more wait behind it, or
 * shutdown flushes); else once the interval has passed.
 */
static void
otlp_schedule(void)
{
	struct otlp_batch	*b = TAILQ_FIRST(&otlp.batches);

	if (b == NULL || otlp.hc != NULL || otlp.backing_off)
		return;
	if (b->nspans >= otlp.batch_max || TAILQ_NEXT(b, entry) != NULL ||
	    otlp.flushing) {
		evtimer_del(otlp.timer);
		otlp_send();
		return;
	}
	if (!evtimer_pending(otlp.timer, NULL))
		otlp_arm(otlp.interval_ms, 0);
}

void
otlp_flush(void)
{
	if (!otlp.on)
		return;
	otlp.flushing = 1;
	otlp.backing_off = 0;
	if (otlp.timer != NULL)
		evtimer_del(otlp.timer);
	otlp_schedule();
}

int
otlp_busy(void)
{
	return (otlp.hc != NULL || !TAILQ_EMPTY(&otlp.batches));
}

void
otlp_get_stats(struct otlp_stats *st)
{
	*st = otlp.stats;
}

/*
 * The end: what is queued is dropped (counted); a request in flight is
 * cancelled, and its batch freed by its done callback, which
 * http_client_shutdown runs.
 */
void
otlp_shutdown(void)
{
	otlp.on = 0;
	otlp_drop_all();
	if (otlp.hc != NULL)
		http_client_cancel(otlp.hc);
	if (otlp.timer != NULL) {
		event_free(otlp.timer);
		otlp.timer = NULL;
	}
	otlp_free_settings();
}
