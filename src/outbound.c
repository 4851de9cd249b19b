/*
 * Pending server-to-client requests, keyed by the id mcpd gave them. Ids
 * are random, so a response can only reach the request it names, and the
 * session is checked too: an answer posted on another session is unknown.
 */
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "call.h"
#include "conf.h"
#include "jsonrpc.h"
#include "log.h"
#include "outbound.h"
#include "random.h"
#include "session.h"
#include "xmalloc.h"

struct outbound {
	char			 id[24];
	struct call		*call;
	struct session		*session;
	outbound_cb		 cb;
	void			*arg;
	struct event		*deadline;
	RB_ENTRY(outbound)	 entry;
};
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
	o->cb(result, error, o->arg);
	free(o);
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

	log_warn("session=%s request %s: no answer from the client within "
	    "request_timeout", session_id(o->session), o->id);
	outbound_local_error(o, JSONRPC_SERVER_ERROR,
	    "The client did not answer the request in time");
}

void
outbound_send(struct call *c, const char *method, cJSON *params,
    outbound_cb cb, void *arg)
{
	struct outbound	*o;
	struct timeval	 tv = { session_conf()->request_timeout, 0 };
	cJSON		*msg;

	o = xcalloc(1, sizeof *o);
	memcpy(o->id, "mcpd-", 5);
	random_hex(o->id + 5, sizeof o->id - 5);
	o->call = c;
	o->session = call_session(c);
	o->cb = cb;
	o->arg = arg;
	o->deadline = evtimer_new(session_base(), outbound_deadline_cb, o);
	evtimer_add(o->deadline, &tv);
	RB_INSERT(outbound_tree, &outbound_pending, o);

	msg = jsonrpc_notification(method, params);
	cJSON_AddStringToObject(msg, "id", o->id);
	log_debug("session=%s request %s %s sent", session_id(o->session),
	    o->id, method);
	call_send(c, msg, NULL, NULL);
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
	    o->session != s)
		return (OUTBOUND_UNKNOWN);
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
