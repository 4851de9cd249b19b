/*
 * The messages mcpd processes sharing an event log send each other on a
 * session (eventlog_publish), and the log's own: their text, formatted and
 * parsed here, and nothing else (no I/O, no state). Who sends them and who
 * acts on them is said where that happens (progress.c, outbound.c,
 * session.c).
 *
 *   "d K N"	a view here wrote entry N of stream K to its client: the
 *		process writing K (under the block policy) may go on.
 *   "a ID JSON" the client's answer to server-to-client request ID, posted
 *		here; "a ID" alone when it is too big to travel: read the
 *		note "a:ID".
 *   "g"	the log said it has no such session (its meta is gone: a
 *		FLUSHALL, a Redis restarted empty): ask it too, and if it
 *		says so again, drop the session.
 *   "!deleted"	the session was deleted (EVENTLOG_MESSAGE_DELETED).
 */
#ifndef MCPD_PEER_H
#define MCPD_PEER_H

#include <stddef.h>
#include <stdint.h>

enum peer_kind {
	PEER_DELIVERED,
	PEER_ANSWER,
	PEER_DELETED,
	PEER_GONE,
	PEER_UNKNOWN		/* a newer process's, or garbage: ignored */
};

struct peer_message {
	enum peer_kind	 kind;
	uint64_t	 k;		/* delivered */
	uint64_t	 seq;
	const char	*id;		/* answer: points into the message */
	size_t		 idlen;
	const char	*json;		/* answer: NULL when left in the note */
	size_t		 len;
};

/* "g": the session is gone from the log, says the process sending it. */
#define PEER_GONE_MESSAGE	"g"

/* The longest request id an answer message carries. */
#define PEER_ID_MAX	64

void	 peer_parse(const char *, size_t, struct peer_message *);
/* "d K N" into buf (PEER_DELIVERED_BUFSIZE bytes); returns its length. */
#define PEER_DELIVERED_BUFSIZE	48
size_t	 peer_format_delivered(char *, size_t, uint64_t, uint64_t);
/*
 * "a ID JSON", or "a ID" when JSON would make the message longer than
 * EVENTLOG_MESSAGE_MAX (or json is NULL); allocated, length in *len.
 */
char	*peer_format_answer(const char *, const char *, size_t, size_t *);

#endif
