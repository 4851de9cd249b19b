/*
 * SSE framing. A data payload may contain line breaks (CR, LF or CRLF);
 * each line becomes its own "data:" field so the client reassembles the
 * payload exactly. An empty payload is still one "data:" field, which is
 * how a priming event carries its id. Every frame mcpd writes on an SSE
 * response is made here.
 */
#include <string.h>

#include <event2/buffer.h>

#include "sse.h"

/* "name: value\n", without printf: every event has one or two. */
static void
sse_field(struct evbuffer *out, const char *name, size_t namelen,
    const char *value, size_t len)
{
	char	 small[128];

	if (namelen + len + 1 > sizeof small) {
		evbuffer_add(out, name, namelen);
		evbuffer_add(out, value, len);
		evbuffer_add(out, "\n", 1);
		return;
	}
	memcpy(small, name, namelen);
	memcpy(small + namelen, value, len);
	small[namelen + len] = '\n';
	evbuffer_add(out, small, namelen + len + 1);
}

static void
sse_retry_field(struct evbuffer *out, long retry_ms)
{
	char	 digits[24], *p = digits + sizeof digits;
	long	 v = retry_ms;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	sse_field(out, "retry: ", 7, p, (size_t)(digits + sizeof digits - p));
}

void
sse_event(struct evbuffer *out, const char *id, const char *event,
    const char *data, size_t len, long retry_ms)
{
	size_t	i, start;

	if (event != NULL)
		sse_field(out, "event: ", 7, event, strlen(event));
	if (id != NULL)
		sse_field(out, "id: ", 4, id, strlen(id));
	if (retry_ms >= 0)
		sse_retry_field(out, retry_ms);
	/* Most payloads (printed JSON) have no line break: one field. */
	if (len > 0 && memchr(data, '\n', len) == NULL &&
	    memchr(data, '\r', len) == NULL) {
		evbuffer_expand(out, len + 8);
		evbuffer_add(out, "data: ", 6);
		evbuffer_add(out, data, len);
		evbuffer_add(out, "\n\n", 2);
		return;
	}
	start = 0;
	for (i = 0; i <= len; i++) {
		if (i < len && data[i] != '\r' && data[i] != '\n')
			continue;
		evbuffer_add(out, "data: ", i > start ? 6 : 5);
		evbuffer_add(out, data + start, i - start);
		evbuffer_add(out, "\n", 1);
		if (i < len && data[i] == '\r' && i + 1 < len &&
		    data[i + 1] == '\n')
			i++;
		start = i + 1;
	}
	evbuffer_add(out, "\n", 1);
}

void
sse_comment(struct evbuffer *out, const char *text)
{
	evbuffer_add_printf(out, ": %s\n\n", text);
}

void
sse_retry(struct evbuffer *out, long retry_ms)
{
	sse_retry_field(out, retry_ms);
	evbuffer_add(out, "\n", 1);
}

/*
 * The event that ends a connection cut for falling behind
 * (docs/protocol.md, Backpressure). No id: it must not move the client's
 * cursor. Its data names the last id queued on the connection and why,
 * and retry: comes after the data. The id is a cursor and the reason a
 * keyword, so neither needs JSON escaping.
 */
void
sse_backpressure_disconnect(struct evbuffer *out, const char *last_id,
    const char *reason, long retry_ms)
{
	evbuffer_add_printf(out, "event: backpressure-disconnect\n"
	    "data: {\"last_event_id\":\"%s\",\"reason\":\"%s\"}\n"
	    "retry: %ld\n\n", last_id, reason, retry_ms);
}
