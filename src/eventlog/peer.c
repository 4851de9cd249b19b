/*
 * Messages between processes sharing an event log: their text (peer.h).
 * They come from other processes, so they are parsed like input: anything
 * not understood is PEER_UNKNOWN, and the receiver ignores it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "eventlog.h"
#include "peer.h"
#include "xmalloc.h"

/* Parses a decimal number ending at a space or at end; -1 if none. */
static int
peer_number(const char **p, const char *end, uint64_t *v)
{
	const char	*q = memchr(*p, ' ', (size_t)(end - *p));

	if (q == NULL)
		q = end;
	if (cursor_parse_seq(*p, (size_t)(q - *p), v) != 0)
		return (-1);
	*p = q < end ? q + 1 : end;
	return (0);
}

void
peer_parse(const char *msg, size_t len, struct peer_message *m)
{
	const char	*end = msg + len, *p, *q;

	memset(m, 0, sizeof *m);
	m->kind = PEER_UNKNOWN;
	if (len == strlen(EVENTLOG_MESSAGE_DELETED) &&
	    memcmp(msg, EVENTLOG_MESSAGE_DELETED, len) == 0) {
		m->kind = PEER_DELETED;
		return;
	}
	if (len == strlen(PEER_GONE_MESSAGE) &&
	    memcmp(msg, PEER_GONE_MESSAGE, len) == 0) {
		m->kind = PEER_GONE;
		return;
	}
	if (len < 3 || msg[1] != ' ')
		return;
	p = msg + 2;
	switch (msg[0]) {
	case 'd':
		if (peer_number(&p, end, &m->k) != 0 || m->k == 0 ||
		    peer_number(&p, end, &m->seq) != 0 || p != end)
			return;
		m->kind = PEER_DELIVERED;
		break;
	case 'a':
		if ((q = memchr(p, ' ', (size_t)(end - p))) == NULL)
			q = end;
		if (q == p || (size_t)(q - p) > PEER_ID_MAX)
			return;
		m->id = p;
		m->idlen = (size_t)(q - p);
		if (q < end && q + 1 < end) {
			m->json = q + 1;
			m->len = (size_t)(end - (q + 1));
		}
		m->kind = PEER_ANSWER;
		break;
	}
}

size_t
peer_format_delivered(char *buf, size_t size, uint64_t k, uint64_t seq)
{
	int	n;

	n = snprintf(buf, size, "d %llu %llu", (unsigned long long)k,
	    (unsigned long long)seq);
	return (n > 0 && (size_t)n < size ? (size_t)n : 0);
}

char *
peer_format_answer(const char *id, const char *json, size_t jsonlen,
    size_t *len)
{
	size_t	 idlen = strlen(id), n;
	char	*s;

	n = 2 + idlen;
	if (json != NULL && n + 1 + jsonlen <= EVENTLOG_MESSAGE_MAX)
		n += 1 + jsonlen;
	else
		json = NULL;
	s = xmalloc(n + 1);
	memcpy(s, "a ", 2);
	memcpy(s + 2, id, idlen);
	if (json != NULL) {
		s[2 + idlen] = ' ';
		memcpy(s + 3 + idlen, json, jsonlen);
	}
	s[n] = '\0';
	*len = n;
	return (s);
}
