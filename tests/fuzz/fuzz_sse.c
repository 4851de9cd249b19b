/*
 * SSE framing (src/http/sse.c). The input gives the fields the daemon can pass
 * (an id made of a cursor, an event name of the ones it uses, retry: ms)
 * and any data bytes. The frame is read back by a small parser written to
 * the WHATWG event-stream rules (lines end in CRLF, LF or CR; one space
 * after the colon is dropped; data lines join with LF). Oracles:
 * - the output is exactly one event, ended by its blank line;
 * - its data is the input data with each CRLF or lone CR read as LF (the
 *   line breaks SSE cannot tell apart);
 * - every line is a data, id, event or retry field, and id, event and
 *   retry appear once each and only when the framer was given them, with
 *   the values given: no data byte can start a field or end the event.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cursor.h"
#include "fuzz.h"
#include "sse.h"

/* Event names the daemon frames (index 0: none). */
static const char *sse_names[] = {
	NULL, "message", "backpressure-disconnect", NULL
};

#define HEADER_LEN	21	/* flags, K, N, retry */

struct parsed {
	int	 events;	/* blank lines seen */
	int	 after_end;	/* bytes after the event's blank line */
	char	*data;
	size_t	 datalen;
	int	 ndata;
	char	*id;
	int	 nid;
	char	*event;
	int	 nevent;
	long	 retry;
	int	 nretry;
	char	*bad_line;	/* a field the framer never writes */
};

static uint64_t
read_u64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < 8; i++)
		v = (v << 8) | p[i];
	return (v);
}

static void
field(struct parsed *ev, const char *line, size_t len)
{
	const char	*colon = memchr(line, ':', len);
	const char	*value;
	size_t		 namelen, vlen, i;

	namelen = colon != NULL ? (size_t)(colon - line) : len;
	value = colon != NULL ? colon + 1 : line + len;
	vlen = (size_t)(line + len - value);
	if (vlen > 0 && value[0] == ' ') {
		value++;
		vlen--;
	}
	if (namelen == 4 && memcmp(line, "data", 4) == 0) {
		ev->data = realloc(ev->data, ev->datalen + vlen + 1);
		memcpy(ev->data + ev->datalen, value, vlen);
		ev->datalen += vlen;
		ev->data[ev->datalen++] = '\n';
		ev->ndata++;
	} else if (namelen == 2 && memcmp(line, "id", 2) == 0) {
		free(ev->id);
		ev->id = strndup(value, vlen);
		ev->nid++;
	} else if (namelen == 5 && memcmp(line, "event", 5) == 0) {
		free(ev->event);
		ev->event = strndup(value, vlen);
		ev->nevent++;
	} else if (namelen == 5 && memcmp(line, "retry", 5) == 0) {
		ev->retry = 0;
		for (i = 0; i < vlen; i++) {
			if (value[i] < '0' || value[i] > '9' ||
			    ev->retry > 1000000000000L) {
				ev->retry = -2;
				break;
			}
			ev->retry = ev->retry * 10 + (value[i] - '0');
		}
		ev->nretry++;
	} else if (ev->bad_line == NULL)
		ev->bad_line = strndup(line, len);
}

static void
parse(struct parsed *ev, const char *s, size_t len)
{
	size_t	start = 0, i = 0;

	while (i < len) {
		if (ev->events > 0) {
			ev->after_end = 1;
			return;
		}
		if (s[i] != '\r' && s[i] != '\n') {
			i++;
			continue;
		}
		if (i == start)
			ev->events++;
		else
			field(ev, s + start, i - start);
		if (s[i] == '\r' && i + 1 < len && s[i + 1] == '\n')
			i++;
		start = ++i;
	}
	if (start != len)
		ev->after_end = 1;	/* an unfinished line */
}

/* The data as a reader sees it: CRLF and lone CR become LF. */
static char *
normalise(const char *data, size_t len, size_t *outlen)
{
	char	*out = malloc(len + 1);
	size_t	 i, n = 0;

	for (i = 0; i < len; i++) {
		if (data[i] == '\r') {
			out[n++] = '\n';
			if (i + 1 < len && data[i + 1] == '\n')
				i++;
		} else
			out[n++] = data[i];
	}
	*outlen = n;
	return (out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
	uint8_t		 head[HEADER_LEN];
	struct evbuffer	*out;
	struct parsed	 ev;
	const char	*data, *event;
	char		 id[CURSOR_BUFSIZE], *text, *want;
	size_t		 len, datalen, wantlen;
	long		 retry;

	memset(head, 0, sizeof head);
	memcpy(head, input, size < HEADER_LEN ? size : HEADER_LEN);
	data = (const char *)input + (size < HEADER_LEN ? size : HEADER_LEN);
	datalen = size < HEADER_LEN ? 0 : size - HEADER_LEN;

	if (head[0] & 1)
		cursor_format(id, sizeof id, read_u64(head + 1),
		    read_u64(head + 9));
	event = sse_names[(head[0] >> 1) & 3];
	retry = -1;
	if (head[0] & 8)
		retry = (long)(((uint32_t)head[17] << 24 | head[18] << 16 |
		    head[19] << 8 | head[20]) & 0x7fffffff);

	out = evbuffer_new();
	sse_event(out, (head[0] & 1) ? id : NULL, event, data, datalen, retry);
	len = evbuffer_get_length(out);
	text = (char *)evbuffer_pullup(out, -1);

	memset(&ev, 0, sizeof ev);
	parse(&ev, text, len);
	if (ev.events != 1 || ev.after_end || ev.bad_line != NULL) {
		fuzz_print_bytes("data", data, datalen);
		fuzz_print_bytes("frame", text, len);
	}
	FUZZ_CHECK(ev.events == 1 && !ev.after_end,
	    "the frame is not exactly one event (%d blank lines%s)",
	    ev.events, ev.after_end ? ", bytes after the end" : "");
	FUZZ_CHECK(ev.bad_line == NULL, "a line the framer did not mean: %s",
	    ev.bad_line);

	FUZZ_CHECK(ev.ndata >= 1, "no data field");
	ev.datalen--;	/* the reader drops the last LF */
	want = normalise(data, datalen, &wantlen);
	if (ev.datalen != wantlen || memcmp(ev.data, want, wantlen) != 0) {
		fuzz_print_bytes("data", data, datalen);
		fuzz_print_bytes("read back", ev.data, ev.datalen);
	}
	FUZZ_CHECK(ev.datalen == wantlen && memcmp(ev.data, want, wantlen) == 0,
	    "the data does not read back");

	if (head[0] & 1)
		FUZZ_CHECK(ev.nid == 1 && strcmp(ev.id, id) == 0,
		    "id: %d fields, want \"%s\"", ev.nid, id);
	else
		FUZZ_CHECK(ev.nid == 0, "an id field without an id");
	if (event != NULL)
		FUZZ_CHECK(ev.nevent == 1 && strcmp(ev.event, event) == 0,
		    "event: %d fields, want \"%s\"", ev.nevent, event);
	else
		FUZZ_CHECK(ev.nevent == 0, "an event field without a name");
	if (retry >= 0)
		FUZZ_CHECK(ev.nretry == 1 && ev.retry == retry,
		    "retry: %d fields, read %ld, want %ld", ev.nretry,
		    ev.retry, retry);
	else
		FUZZ_CHECK(ev.nretry == 0, "a retry field without retry");

	free(want);
	free(ev.data);
	free(ev.id);
	free(ev.event);
	evbuffer_free(out);
	return (0);
}
