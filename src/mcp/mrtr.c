/*
 * MRTR rounds (mrtr.h). A question of the call is answered from the
 * client's inputResponses (this round's or, in requestState, an earlier
 * one's), or else kept: at the end of the loop turn it was asked in, the
 * call answers with an input_required result holding this turn's
 * questions (asked together, they go out together) and a new
 * requestState. The key of a question is the provider's
 * (call_request_keyed) or call.c's, by the order of the call's questions:
 * a provider that runs the same way again asks the same questions in the
 * same order.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "jsonrpc.h"
#include "mrtr.h"
#include "seal.h"
#include "server.h"
#include "statekey.h"
#include "trace.h"
#include "xmalloc.h"

/*
 * No key may sign or open a requestState (statekey_ready): the event log's
 * keyring not read yet, or not for too long. Another instance may have
 * one: 503.
 */
#define MRTR_NO_STATE_KEY	"No requestState key from the event log; " \
				"retry later"

struct mrtr {
	char		*method;
	char		*name;		/* the tool, prompt or URI; "" */
	cJSON		*answers;	/* inputResponses so far */
	cJSON		*asked;		/* this round's questions */
	struct event	*asked_ev;	/* the end of the turn they came in */
	struct call	*call;		/* that asked them */
	int		 ended;
	struct trace_ctx origin;	/* requestState's trace context */
};

struct mrtr *
mrtr_new(const char *method, const char *name)
{
	struct mrtr	*m;

	m = xcalloc(1, sizeof *m);
	m->method = xstrdup(method);
	m->name = xstrdup(name != NULL ? name : "");
	return (m);
}

void
mrtr_free(struct mrtr *m)
{
	if (m == NULL)
		return;
	if (m->asked_ev != NULL)
		event_free(m->asked_ev);
	free(m->method);
	free(m->name);
	cJSON_Delete(m->answers);
	cJSON_Delete(m->asked);
	free(m);
}

void
mrtr_ended(struct mrtr *m)
{
	m->ended = 1;
	if (m->asked_ev != NULL)
		event_del(m->asked_ev);
}

/*
 * What a sealed requestState holds: the request it belongs to (method and
 * name), the answers the client gave in earlier rounds, and while tracing
 * the traceparent of the call that asked ("t"); seal.c stamps it with the
 * time, and refuses it once too old (SEAL_LIFETIME_MS). NULL when no key
 * may sign (statekey_ready).
 */
static char *
mrtr_seal(struct mrtr *m)
{
	cJSON	*state;
	char	*text, *sealed, tp[TRACE_PARENT_LEN + 1];

	if (!statekey_ready())
		return (NULL);
	state = cJSON_CreateObject();
	cJSON_AddStringToObject(state, "m", m->method);
	cJSON_AddStringToObject(state, "n", m->name);
	if (trace_traceparent(call_trace(m->call), tp) == 0)
		cJSON_AddStringToObject(state, "t", tp);
	cJSON_AddItemToObject(state, "a", m->answers != NULL ?
	    cJSON_Duplicate(m->answers, 1) : cJSON_CreateObject());
	text = cJSON_PrintUnformatted(state);
	cJSON_Delete(state);
	sealed = seal_sign(text);
	free(text);
	return (sealed);
}

/*
 * Opens a requestState: its earlier answers (taken by the caller), or
 * NULL and a static *cause if it is not ours, was changed, belongs to
 * another request or is too old (seal.c).
 */
static cJSON *
mrtr_open(struct mrtr *m, const char *sealed, const char **cause)
{
	cJSON		*state, *answers;
	const cJSON	*method, *name;
	char		*text;

	if ((text = seal_open(sealed, cause)) == NULL)
		return (NULL);
	state = cJSON_Parse(text);
	free(text);
	method = cJSON_GetObjectItemCaseSensitive(state, "m");
	name = cJSON_GetObjectItemCaseSensitive(state, "n");
	*cause = "requestState belongs to another request";
	if (!cJSON_IsString(method) || !cJSON_IsString(name) ||
	    strcmp(method->valuestring, m->method) != 0 ||
	    strcmp(name->valuestring, m->name) != 0) {
		cJSON_Delete(state);
		return (NULL);
	}
	if (trace_parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    state, "t")), &m->origin) != 0)
		memset(&m->origin, 0, sizeof m->origin);
	answers = cJSON_DetachItemFromObjectCaseSensitive(state, "a");
	cJSON_Delete(state);
	if (!cJSON_IsObject(answers)) {
		cJSON_Delete(answers);
		return (cJSON_CreateObject());
	}
	return (answers);
}

int
mrtr_rounds(struct mrtr *m, const cJSON *params, int *resumed, int *status,
    const char **cause)
{
	const cJSON	*state, *responses, *r;

	state = cJSON_GetObjectItemCaseSensitive(params, "requestState");
	responses = cJSON_GetObjectItemCaseSensitive(params, "inputResponses");
	*resumed = 0;
	*status = 400;
	if (state != NULL && !statekey_ready()) {
		*status = 503;
		*cause = MRTR_NO_STATE_KEY;
		return (-1);
	}
	if (state != NULL) {
		if (!cJSON_IsString(state)) {
			*cause = "requestState must be a string";
			return (-1);
		}
		if ((m->answers = mrtr_open(m, state->valuestring, cause)) ==
		    NULL)
			return (-1);
		*resumed = 1;
	}
	if (responses == NULL)
		return (0);
	if (!cJSON_IsObject(responses)) {
		*cause = "Invalid params: inputResponses must be an object";
		return (-1);
	}
	if (m->answers == NULL)
		m->answers = cJSON_CreateObject();
	/* An answer that is no result object is asked for again. */
	cJSON_ArrayForEach(r, responses) {
		if (!cJSON_IsObject(r))
			continue;
		cJSON_DeleteItemFromObjectCaseSensitive(m->answers, r->string);
		cJSON_AddItemToObject(m->answers, r->string,
		    cJSON_Duplicate(r, 1));
	}
	return (0);
}

const struct trace_ctx *
mrtr_origin(const struct mrtr *m)
{
	return (m->origin.state == TRACE_CTX_IDS ? &m->origin : NULL);
}

/* The end of the turn the call asked in: its input_required result. */
static void
mrtr_asked_cb(evutil_socket_t fd, short events, void *arg)
{
	struct mrtr	*m = arg;
	cJSON		*result;
	char		*state;

	if (m->ended || m->asked == NULL)
		return;
	if ((state = mrtr_seal(m)) == NULL) {
		/* m may be freed by the time this returns. */
		call_respond_error(m->call, JSONRPC_UNAVAILABLE,
		    MRTR_NO_STATE_KEY);
		return;
	}
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "resultType", "input_required");
	cJSON_AddItemToObject(result, "inputRequests", m->asked);
	m->asked = NULL;
	cJSON_AddStringToObject(result, "requestState", state);
	free(state);
	/* m may be freed by the time this returns. */
	call_respond(m->call, result);
}

/*
 * A question of call c (params taken). One the client declared no
 * capability for never gets here: call.c ends the call with -32021.
 */
enum call_ask
mrtr_ask(struct mrtr *m, struct call *c, const char *key, const char *method,
    cJSON *params, const cJSON **answer)
{
	const cJSON	*found;
	cJSON		*q;

	found = cJSON_GetObjectItemCaseSensitive(m->answers, key);
	if (cJSON_IsObject(found)) {
		cJSON_Delete(params);
		*answer = found;
		return (CALL_ASK_ANSWERED);
	}
	if (m->asked == NULL)
		m->asked = cJSON_CreateObject();
	q = cJSON_CreateObject();
	cJSON_AddStringToObject(q, "method", method);
	cJSON_AddItemToObject(q, "params", params != NULL ? params :
	    cJSON_CreateObject());
	cJSON_DeleteItemFromObjectCaseSensitive(m->asked, key);
	cJSON_AddItemToObject(m->asked, key, q);
	m->call = c;
	if (m->asked_ev == NULL)
		m->asked_ev = evtimer_new(server.base, mrtr_asked_cb, m);
	if (!evtimer_pending(m->asked_ev, NULL))
		event_active(m->asked_ev, EV_TIMEOUT, 0);
	return (CALL_ASK_PENDING);
}
