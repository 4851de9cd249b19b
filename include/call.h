/*
 * A running request: the producer side of a request stream, and the API
 * providers use to send progress, log messages and the final response.
 * A call ends exactly once: by its response, or by cancellation (the
 * client's notifications/cancelled, DELETE, session expiry, shutdown), in
 * which case no response is sent and the provider's cancel hook runs.
 *
 * The callback rule (docs/architecture.md): a callback given to call_send,
 * call_send_standalone or call_request runs exactly once, on a later loop
 * turn, never inside the call that took it nor inside call_respond,
 * call_cancel or call_release. The cancel hook (call_set_cancel) runs at
 * most once, on a later turn than the cancellation, and not at all once
 * the provider has called call_release.
 */
#ifndef MCPD_CALL_H
#define MCPD_CALL_H

#include <cjson/cJSON.h>

struct audit_rec;
struct auth_principal;
struct call;
struct limit_ticket;
struct session;
struct stream;
struct trace_span;

typedef void (*call_sent_cb)(int, void *);
typedef void (*call_cancel_cb)(void *);
/* A client's answer: result or error (the other NULL). */
typedef void (*call_response_cb)(const cJSON *, const cJSON *, void *);

enum call_ask {
	CALL_ASK_ANSWERED,	/* *answer: the client's result */
	CALL_ASK_PENDING,	/* for an input_required result */
	CALL_ASK_REFUSED	/* the sink has ended the call */
};

/* Where a stateless request's call sends (stateless.c). */
struct call_sink {
	/* A message before the response (taken); cb(ok) on a later turn. */
	void		(*send)(void *, cJSON *, call_sent_cb, void *);
	/* The response (taken); NULL: the call ended without one. */
	void		(*respond)(void *, cJSON *);
	/*
	 * A question for the client (params taken), by MRTR; one needing a
	 * capability the client did not declare is refused before (call.c).
	 */
	enum call_ask	(*ask)(void *, struct call *, const char *,
			    const char *, cJSON *, const cJSON **);
	/* Optional: the call is freed (a task's sink outlives its call). */
	void		(*gone)(void *);
};

struct call	*call_start_sink(const struct call_sink *, void *,
		     const cJSON *, const cJSON *, int, const cJSON *, int);
const char	*call_owner(const struct call *);
/*
 * Who the call runs for (auth.c): its session's principal, or the one a
 * stateless request or a task set (a reference is taken). NULL without
 * authorization.
 */
void		 call_set_principal(struct call *, struct auth_principal *);
struct auth_principal *call_principal(const struct call *);
/*
 * The endpoint path the call came to (its session's, or the one a
 * stateless request or a task set, copied): whose catalog it sees. NULL:
 * none (every item is served).
 */
void		 call_set_endpoint(struct call *, const char *);
const char	*call_endpoint(const struct call *);
void		 call_set_owner(struct call *, const char *);
int		 call_answer(struct call *, const char *, const cJSON *);
const char	*call_version(const struct call *);
int		 call_stateless(const struct call *);
int		 call_client_capable(const struct call *, const char *);
int		 call_resumed(const struct call *);
void		 call_request_keyed(struct call *, const char *,
		     const char *, cJSON *, call_response_cb, void *);
struct call	*call_start(struct session *, struct stream *, const cJSON *,
		     const cJSON *);
void		 call_set_tool(struct call *, const char *);
/* What ends with the call: its audit record, its limits' slots. */
void		 call_set_audit(struct call *, struct audit_rec *);
void		 call_set_ticket(struct call *, struct limit_ticket *);
cJSON		*call_audit_context(const struct call *);
void		 call_limited(struct call *, const char *);
/* The span of the call's message (taken; ended with the call). */
void		 call_set_trace(struct call *, struct trace_span *);
struct trace_span *call_trace(const struct call *);
struct session	*call_session(const struct call *);
struct stream	*call_stream(const struct call *);
const cJSON	*call_id(const struct call *);
const cJSON	*call_progress_token(const struct call *);
int		 call_finished(const struct call *);

void		 call_set_cancel(struct call *, call_cancel_cb, void *);
void		 call_cancel(struct call *, const char *);
void		 call_interrupt(struct call *, const char *);
void		 call_abandon(struct call *, const char *);

void		 call_send(struct call *, cJSON *, call_sent_cb, void *);
/* cb(ok, arg) on a later turn (NULL cb: nothing): a sink's "sent". */
void		 call_sent_later(call_sent_cb, void *, int);
void		 call_send_standalone(struct call *, cJSON *, call_sent_cb,
		     void *);
void		 call_request(struct call *, const char *, cJSON *,
		     call_response_cb, void *);
int		 call_log_enabled(const struct call *, int);
int		 call_close_view(struct call *);
void		 call_respond(struct call *, cJSON *);
void		 call_respond_text(struct call *, const char *, int);
void		 call_respond_error(struct call *, int, const char *);
void		 call_respond_missing_capability(struct call *, const char *,
		     const char *);
void		 call_respond_error_data(struct call *, int, const char *,
		     cJSON *);
void		 call_release(struct call *);

#endif
