/*
 * Server-to-client requests (sampling/createMessage, elicitation/create,
 * roots/list): the table of those awaiting the client's answer, keyed by
 * the id mcpd gave them. call.c sends each request on its call's stream
 * (call_request); the client's answer arrives as a separate POST and is
 * routed back here by its id. Each request's callback runs exactly once,
 * never inside outbound_new or outbound_end: with the client's result or
 * error, or with a local error on timeout or once its call has ended.
 *
 * The asking call is only a key here: outbound.c never calls into call.c
 * or session.c, so what they call does not call them back.
 */
#ifndef MCPD_OUTBOUND_H
#define MCPD_OUTBOUND_H

#include <cjson/cJSON.h>

struct call;

/* result or error is set; the JSON is valid only during the callback. */
typedef void (*outbound_cb)(const cJSON *, const cJSON *, void *);

enum outbound_route {
	OUTBOUND_ROUTED,
	OUTBOUND_FORWARDED,	/* left for another process (shared log) */
	OUTBOUND_UNKNOWN	/* no such id pending in this session */
};

const char		*outbound_new(const struct call *, const char *,
			     outbound_cb, void *);
enum outbound_route	 outbound_response(const char *, const cJSON *);
void			 outbound_end(const struct call *);
/* Shared logs: what other processes say of answers (session.c). */
void			 outbound_pushed(const char *, const char *, size_t,
			     const char *, size_t);
void			 outbound_resync(const char *);

#endif
