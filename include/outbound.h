/*
 * Server-to-client requests (sampling/createMessage, elicitation/create,
 * roots/list). A call sends the request on its own stream, committed like
 * every message; the client's answer arrives as a separate POST and is
 * routed back here by its id. Each request's callback runs exactly once:
 * with the client's result or error, or with a local error on timeout or
 * when the call ends first.
 */
#ifndef MCPD_OUTBOUND_H
#define MCPD_OUTBOUND_H

#include <cjson/cJSON.h>

struct call;
struct session;

/* result or error is set; the JSON is valid only during the callback. */
typedef void (*outbound_cb)(const cJSON *, const cJSON *, void *);

enum outbound_route {
	OUTBOUND_ROUTED,
	OUTBOUND_FORWARDED,	/* left for another process (shared log) */
	OUTBOUND_UNKNOWN	/* no such id pending in this session */
};

void			 outbound_send(struct call *, const char *, cJSON *,
			     outbound_cb, void *);
enum outbound_route	 outbound_response(struct session *, const cJSON *);
void			 outbound_call_ended(struct call *);

#endif
