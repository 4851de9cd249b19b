/*
 * Pending server-to-client requests, keyed by the id mcpd gave them. Ids
 * are random, so a response can only reach the request it names, and the
 * session is checked too: an answer posted on another session is unknown.
 */
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "call.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "outbound.h"
#include "random.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

struct outbound {
	char			 id[24];
	struct call		*call;
	struct session		*session;
	outbound_cb		 cb;
	void			*arg;
	struct event		*deadline;
	struct event		*poll;		/* shared log: answers elsewhere */
	int			 polling;	/* a note read is in flight */
	int			 done;
	RB_ENTRY(outbound)	 entry;
};

/* How often a shared log is asked for an answer posted elsewhere. */
#define OUTBOUND_POLL_MS	100
RB_HEAD(outbound_tree, outbound);

static struct outbound_tree outbound_pending =
    RB_INITIALIZER(&outbound_pending);

static int
outbound_cmp(struct outbound *a, struct outbound *b)
{
	return (strcmp(a->id, b->id));
}
RB_GENERATE_STATIC(outbound_tree, outbound, entry, outbound_cmp);

/* Takes the request out of the table and runs its callback once. */
static void
outbound_complete(struct outbound *o, const cJSON *result,
    const cJSON *error)
{
	RB_REMOVE(outbound_tree, &outbound_pending, o);
	event_free(o->deadline);
	if (o->poll != NULL)
		event_free(o->poll);
	o->done = 1;
	o->cb(result, error, o->arg);
	if (!o->polling)
		free(o);
}

static void
outbound_poll_arm(struct outbound *o)
{
	struct timeval	tv = { 0, OUTBOUND_POLL_MS * 1000 };

	evtimer_add(o->poll, &tv);
}

static void
outbound_polled_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct outbound	*o = arg;
	cJSON		*msg;

	o->polling = 0;
	if (o->done) {
		free(o);
		return;
	}
	if (status != EVENTLOG_OK) {
		outbound_poll_arm(o);
		return;
	}
	msg = cJSON_ParseWithLength(value, len);
	log_debug("session=%s request %s answered through another process",
	    session_id(o->session), o->id);
	outbound_complete(o, cJSON_GetObjectItemCaseSensitive(msg, "result"),
	    cJSON_GetObjectItemCaseSensitive(msg, "error"));
	cJSON_Delete(msg);
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
	o->polling = 1;
	eventlog_note_get(server.eventlog, session_id(o->session), name,
	    outbound_polled_cb, o);
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

static void
outbound_deadline_cb(evutil_socket_t fd, short events, void *arg)
{
	struct outbound	*o = arg;

	log_limited(LOG_LEVEL_WARN, "outbound-timeout", "session=%s request "
	    "%s: no answer from the client within request_timeout",
	    session_id(o->session), o->id);
	outbound_local_error(o, JSONRPC_SERVER_ERROR,
	    "The client did not answer the request in time");
}

void
outbound_send(struct call *c, const char *method, cJSON *params,
    outbound_cb cb, void *arg)
{
	struct outbound	*o;
	struct timeval	 tv = { server.conf->request_timeout, 0 };
	cJSON		*msg;

	o = xcalloc(1, sizeof *o);
	memcpy(o->id, "mcpd-", 5);
	random_hex(o->id + 5, sizeof o->id - 5);
	o->call = c;
	o->session = call_session(c);
	o->cb = cb;
	o->arg = arg;
	o->deadline = evtimer_new(server.base, outbound_deadline_cb, o);
	evtimer_add(o->deadline, &tv);
	if (server.shared) {
		o->poll = evtimer_new(server.base, outbound_poll_cb, o);
		outbound_poll_arm(o);
	}
	RB_INSERT(outbound_tree, &outbound_pending, o);

	msg = jsonrpc_notification(method, params);
	cJSON_AddStringToObject(msg, "id", o->id);
	log_debug("session=%s request %s %s sent", session_id(o->session),
	    o->id, method);
	call_send(c, msg, NULL, NULL);
}

static void
outbound_forwarded_cb(enum eventlog_status status, void *arg)
{
	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "outbound-forward", "a client's "
		    "answer could not be left for another process: %s",
		    eventlog_status_name(status));
}

/* An answer to a request another process may have sent: leave it there. */
static void
outbound_forward(struct session *s, const char *id, const cJSON *msg)
{
	char	 name[40], *text;

	snprintf(name, sizeof name, "a:%s", id);
	text = cJSON_PrintUnformatted(msg);
	eventlog_note_set(server.eventlog, session_id(s), name, text,
	    strlen(text), (uint64_t)server.conf->request_timeout * 1000,
	    outbound_forwarded_cb, NULL);
	free(text);
}

enum outbound_route
outbound_response(struct session *s, const cJSON *msg)
{
	const cJSON	*id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	struct outbound	 find, *o;

	if (!cJSON_IsString(id) || strlen(id->valuestring) >= sizeof find.id)
		return (OUTBOUND_UNKNOWN);
	strlcpy(find.id, id->valuestring, sizeof find.id);
	if ((o = RB_FIND(outbound_tree, &outbound_pending, &find)) == NULL ||
	    o->session != s) {
		if (!server.shared || strncmp(find.id, "mcpd-", 5) != 0)
			return (OUTBOUND_UNKNOWN);
		outbound_forward(s, find.id, msg);
		return (OUTBOUND_FORWARDED);
	}
	outbound_complete(o, cJSON_GetObjectItemCaseSensitive(msg, "result"),
	    cJSON_GetObjectItemCaseSensitive(msg, "error"));
	return (OUTBOUND_ROUTED);
}

/* The call ended (response, cancellation): its requests end with it. */
void
outbound_call_ended(struct call *c)
{
	struct outbound	*o, *o1;

	RB_FOREACH_SAFE(o, outbound_tree, &outbound_pending, o1) {
		if (o->call == c)
			outbound_local_error(o, JSONRPC_SERVER_ERROR,
			    "The request's call has ended");
	}
}
