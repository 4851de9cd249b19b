/*
 * The SSE parser of an upstream's HTTP responses (upstream_http.c), as
 * WHATWG says: lines, fields, a blank line ends an event. Bounded: a
 * line, or an event's data, longer than the bound fails the stream.
 */
#include <stdlib.h>
#include <string.h>

#include "upstream_sse.h"
#include "xmalloc.h"

struct upstream_sse {
	size_t		 max;
	char		*line;
	size_t		 linelen;
	size_t		 linesize;
	char		*data;
	size_t		 datalen;
	size_t		 datasize;
	int		 has_data;
	char		*id;		/* of this event */
	char		*last_id;	/* the last event's that had one */
	int		 cr;		/* the last byte was \r */
	upstream_sse_cb	*cb;
	void		*arg;
};

struct upstream_sse *
upstream_sse_new(size_t max, upstream_sse_cb *cb, void *arg)
{
	struct upstream_sse	*p;

	p = xcalloc(1, sizeof *p);
	p->max = max;
	p->cb = cb;
	p->arg = arg;
	return (p);
}

void
upstream_sse_free(struct upstream_sse *p)
{
	if (p == NULL)
		return;
	free(p->line);
	free(p->data);
	free(p->id);
	free(p->last_id);
	free(p);
}

const char *
upstream_sse_last_id(const struct upstream_sse *p)
{
	return (p->last_id);
}

static void
upstream_sse_append(char **buf, size_t *len, size_t *size, const char *s,
    size_t n)
{
	if (*len + n + 1 > *size) {
		*size = *size == 0 ? 256 : *size;
		while (*size < *len + n + 1)
			*size *= 2;
		*buf = xrealloc(*buf, *size);
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static int
upstream_sse_line(struct upstream_sse *p, const char *s, size_t n)
{
	const char	*colon, *value;
	size_t		 flen, vlen;

	if (n == 0) {
		/* The event is complete. */
		if (p->id != NULL) {
			free(p->last_id);
			p->last_id = p->id;
			p->id = NULL;
		}
		if (p->has_data && p->datalen > 0)
			p->cb(p->data, p->datalen, p->last_id, p->arg);
		p->datalen = 0;
		p->has_data = 0;
		return (0);
	}
	if (s[0] == ':')
		return (0);	/* a comment: keepalives */
	if ((colon = memchr(s, ':', n)) != NULL) {
		flen = colon - s;
		value = colon + 1;
		vlen = n - flen - 1;
		if (vlen > 0 && *value == ' ') {
			value++;
			vlen--;
		}
	} else {
		flen = n;
		value = "";
		vlen = 0;
	}
	if (flen == 4 && memcmp(s, "data", 4) == 0) {
		if (p->has_data)
			upstream_sse_append(&p->data, &p->datalen,
			    &p->datasize, "\n", 1);
		upstream_sse_append(&p->data, &p->datalen, &p->datasize,
		    value, vlen);
		p->has_data = 1;
		if (p->datalen > p->max)
			return (-1);
	} else if (flen == 2 && memcmp(s, "id", 2) == 0 &&
	    memchr(value, '\0', vlen) == NULL) {
		free(p->id);
		p->id = xstrndup(value, vlen);
	}
	return (0);		/* event:, retry: and others: not needed */
}

int
upstream_sse_feed(struct upstream_sse *p, const char *s, size_t n)
{
	size_t	i, start = 0;

	for (i = 0; i < n; i++) {
		if (s[i] != '\n' && s[i] != '\r') {
			p->cr = 0;
			continue;
		}
		if (s[i] == '\n' && p->cr && i == start && p->linelen == 0) {
			/* the \n of a \r\n */
			p->cr = 0;
			start = i + 1;
			continue;
		}
		upstream_sse_append(&p->line, &p->linelen, &p->linesize,
		    s + start, i - start);
		if (upstream_sse_line(p, p->line, p->linelen) != 0)
			return (-1);
		p->linelen = 0;
		p->cr = (s[i] == '\r');
		start = i + 1;
	}
	if (start < n) {
		if (p->linelen + (n - start) > p->max)
			return (-1);
		upstream_sse_append(&p->line, &p->linelen, &p->linesize,
		    s + start, n - start);
	}
	return (0);
}
