/*
 * Pending server-to-client requests, keyed by the id mcpd gave them. Ids
 * are random, so a response can only reach the request it names, and the
 * session is checked too: an answer posted on another session is unknown.
 *
 * A request waits in the table (PENDING) until one of these, each a loop
 * callback, runs its callback: the client's answer (a POST, through
 * dispatch_response, or posted to another process sharing the log, which
 * sends it on: outbound_pushed), the deadline, or a read of the answer's
 * note in the shared log (a slow fallback, for a message missed). When its
 * call ends first, outbound_end takes it out of the table (ENDED: a late
 * answer is unknown) and makes its timer active, so the callback runs on a
 * later turn and never inside the call_respond or call_cancel that ended
 * the call.
 *
 * A request is freed by its last reference: the table's, dropped once the
 * callback has run, and one for each note read in flight.
 */
#include <sys/types.h>
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "outbound.h"
#include "peer.h"
#include "random.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

enum outbound_state {
	OUTBOUND_PENDING,	/* in the table, awaiting the client */
	OUTBOUND_ENDED,		/* its call ended: the callback is due */
	OUTBOUND_DONE		/* the callback ran */
};

struct outbound {
	char			 id[24];
	const struct call	*call;	/* who asked: only a key */
	char			 sid[SESSION_ID_LEN + 1];
	enum outbound_state	 state;
	outbound_cb		 cb;
	void			*arg;
	struct event		*timer;	/* the deadline; at once when ended */
	struct event		*poll;	/* shared log: answers elsewhere */
	u_int			 refs;	/* the table's, and note reads' */
	RB_ENTRY(outbound)	 entry;
};

/*
 * How often a shared log is asked for an answer posted elsewhere: only in
 * case its message was lost (the answer is pushed, outbound_pushed, and
 * read at once when the session's watch is re-established).
 */
#define OUTBOUND_POLL_MS	2000
RB_HEAD(outbound_tree, outbound);

static struct outbound_tree outbound_pending =
    RB_INITIALIZER(&outbound_pending);

static int
outbound_cmp(struct outbound *a, struct outbound *b)
{
	return (strcmp(a->id, b->id));
}
RB_GENERATE_STATIC(outbound_tree, outbound, entry, outbound_cmp);

static void
outbound_unref(struct outbound *o)
{
	if (o->refs == 0)
		fatalx("outbound %s: reference count below zero", o->id);
	if (--o->refs > 0)
		return;
	event_free(o->timer);
	free(o);
}

/* Out of the table: nothing more is accepted for the request. */
static void
outbound_unlist(struct outbound *o)
{
	RB_REMOVE(outbound_tree, &outbound_pending, o);
	evtimer_del(o->timer);
	if (o->poll != NULL) {
		event_free(o->poll);
		o->poll = NULL;
	}
}

/* Runs the request's callback, once, and drops the table's reference. */
static void
outbound_complete(struct outbound *o, const cJSON *result,
    const cJSON *error)
{
	if (o->state == OUTBOUND_PENDING)
		outbound_unlist(o);
	o->state = OUTBOUND_DONE;
	o->cb(result, error, o->arg);
	outbound_unref(o);
}

static void
outbound_local_error(struct outbound *o, int code, const char *message)
{
	cJSON	*error = cJSON_CreateObject();

	cJSON_AddNumberToObject(error, "code", code);
	cJSON_AddStringToObject(error, "message", message);
	outbound_complete(o, NULL, error);
	cJSON_Delete(error);
}

/* The deadline passed, or the call ended (outbound_end). */
static void
outbound_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct outbound	*o = arg;

	if (o->state == OUTBOUND_ENDED) {
		outbound_local_error(o, JSONRPC_SERVER_ERROR,
		    "The request's call has ended");
		return;
	}
	log_limited(LOG_LEVEL_WARN, "outbound-timeout", "session=%s request "
	    "%s: no answer from the client within request_timeout", o->sid,
	    o->id);
	outbound_local_error(o, JSONRPC_SERVER_ERROR,
	    "The client did not answer the request in time");
}

static void
outbound_poll_arm(struct outbound *o)
{
	struct timeval	tv = { OUTBOUND_POLL_MS / 1000,
			    (OUTBOUND_POLL_MS % 1000) * 1000 };

	evtimer_add(o->poll, &tv);
}

static void
outbound_polled_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct outbound	*o = arg;
	cJSON		*msg;

	if (o->state == OUTBOUND_PENDING && status != EVENTLOG_OK)
		outbound_poll_arm(o);
	else if (o->state == OUTBOUND_PENDING) {
		msg = cJSON_ParseWithLength(value, len);
		log_debug("session=%s request %s answered through another "
		    "process", o->sid, o->id);
		outbound_complete(o, cJSON_GetObjectItemCaseSensitive(msg,
		    "result"), cJSON_GetObjectItemCaseSensitive(msg, "error"));
		cJSON_Delete(msg);
	}
	outbound_unref(o);
}

/*
 * With a shared log the client's answer may reach another process behind
 * the load balancer; that process leaves it as a note of the session
 * ("a:ID"), and the asking process looks for it here.
 */
static void
outbound_poll_cb(evutil_socket_t fd, short events, void *arg)
{
	struct outbound	*o = arg;
	char		 name[40];

	snprintf(name, sizeof name, "a:%s", o->id);
	o->refs++;
	eventlog_note_get(server.eventlog, o->sid, name, outbound_polled_cb, o);
}

/*
 * A request of call c in session sid: returns the id the request must
 * carry (valid until its callback has run). cb runs exactly once, on a
 * later loop turn.
 */
const char *
outbound_new(const struct call *c, const char *sid, outbound_cb cb,
    void *arg)
{
	struct outbound	*o;
	struct timeval	 tv = { server.conf->request_timeout, 0 };

	o = xcalloc(1, sizeof *o);
	memcpy(o->id, "mcpd-", 5);
	random_hex(o->id + 5, sizeof o->id - 5);
	o->call = c;
	strlcpy(o->sid, sid, sizeof o->sid);
	o->state = OUTBOUND_PENDING;
	o->cb = cb;
	o->arg = arg;
	o->refs = 1;
	o->timer = evtimer_new(server.base, outbound_timer_cb, o);
	evtimer_add(o->timer, &tv);
	if (server.shared) {
		o->poll = evtimer_new(server.base, outbound_poll_cb, o);
		outbound_poll_arm(o);
	}
	RB_INSERT(outbound_tree, &outbound_pending, o);
	return (o->id);
}

static void
outbound_forwarded_cb(enum eventlog_status status, void *arg)
{
	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "outbound-forward", "a client's "
		    "answer could not be left for another process: %s",
		    eventlog_status_name(status));
}

/*
 * An answer to a request another process may have sent: left as a note
 * (for a process that misses the message), then sent to every process
 * holding the session, with the answer when it fits in a message.
 */
static void
outbound_forward(const char *sid, const char *id, const cJSON *msg)
{
	char	 name[40], *text, *push;
	size_t	 len, pushlen;

	snprintf(name, sizeof name, "a:%s", id);
	text = cJSON_PrintUnformatted(msg);
	len = strlen(text);
	eventlog_note_set(server.eventlog, sid, name, text, len,
	    (uint64_t)server.conf->request_timeout * 1000,
	    outbound_forwarded_cb, NULL);
	push = peer_format_answer(id, text, len, &pushlen);
	eventlog_publish(server.eventlog, sid, push, pushlen,
	    outbound_forwarded_cb, NULL);
	free(push);
	free(text);
}

static struct outbound *
outbound_find(const char *sid, const char *id, size_t idlen)
{
	struct outbound	 find, *o;

	if (idlen >= sizeof find.id)
		return (NULL);
	memcpy(find.id, id, idlen);
	find.id[idlen] = '\0';
	if ((o = RB_FIND(outbound_tree, &outbound_pending, &find)) == NULL ||
	    strcmp(o->sid, sid) != 0)
		return (NULL);
	return (o);
}

/* Reads the answer's note now rather than at the next poll. */
static void
outbound_poll_now(struct outbound *o)
{
	if (o->poll == NULL)
		return;
	evtimer_del(o->poll);
	outbound_poll_cb(-1, 0, o);
}

/*
 * Another process sharing the log was posted the answer to request id of
 * session sid (peer.h): json, or NULL when it was too big to travel (or
 * does not parse): then it is in the note.
 */
void
outbound_pushed(const char *sid, const char *id, size_t idlen,
    const char *json, size_t len)
{
	struct outbound	*o;
	cJSON		*msg = NULL;

	if ((o = outbound_find(sid, id, idlen)) == NULL)
		return;		/* not asked here, or answered already */
	if (json != NULL)
		msg = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(msg)) {
		cJSON_Delete(msg);
		outbound_poll_now(o);
		return;
	}
	log_debug("session=%s request %s answered through another process",
	    o->sid, o->id);
	outbound_complete(o, cJSON_GetObjectItemCaseSensitive(msg, "result"),
	    cJSON_GetObjectItemCaseSensitive(msg, "error"));
	cJSON_Delete(msg);
}

/* Session sid's watch was re-established: answers may have been missed. */
void
outbound_resync(const char *sid)
{
	struct outbound	*o, *o1;

	RB_FOREACH_SAFE(o, outbound_tree, &outbound_pending, o1) {
		if (strcmp(o->sid, sid) == 0)
			outbound_poll_now(o);
	}
}

/* A client's answer (msg) posted in session sid. */
enum outbound_route
outbound_response(const char *sid, const cJSON *msg)
{
	const cJSON	*id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	struct outbound	 find, *o;

	if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof find.id)
		return (OUTBOUND_UNKNOWN);
	strlcpy(find.id, id->valuestring, sizeof find.id);
	if ((o = RB_FIND(outbound_tree, &outbound_pending, &find)) == NULL ||
	    strcmp(o->sid, sid) != 0) {
		if (!server.shared || strncmp(find.id, "mcpd-", 5) != 0)
			return (OUTBOUND_UNKNOWN);
		outbound_forward(sid, find.id, msg);
		return (OUTBOUND_FORWARDED);
	}
	outbound_complete(o, cJSON_GetObjectItemCaseSensitive(msg, "result"),
	    cJSON_GetObjectItemCaseSensitive(msg, "error"));
	return (OUTBOUND_ROUTED);
}

/*
 * Call c ended (response, cancellation): its requests end with it, their
 * callbacks on a later turn, in the order the requests were ended.
 */
void
outbound_end(const struct call *c)
{
	struct outbound	*o, *o1;

	RB_FOREACH_SAFE(o, outbound_tree, &outbound_pending, o1) {
		if (o->call != c)
			continue;
		outbound_unlist(o);
		o->state = OUTBOUND_ENDED;
		event_active(o->timer, EV_TIMEOUT, 1);
	}
}
