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

struct call;
struct session;
struct stream;

typedef void (*call_sent_cb)(int, void *);
typedef void (*call_cancel_cb)(void *);
/* A client's answer: result or error (the other NULL). */
typedef void (*call_response_cb)(const cJSON *, const cJSON *, void *);

struct call	*call_start(struct session *, struct stream *, const cJSON *,
		     const cJSON *);
void		 call_set_tool(struct call *, const char *);
struct session	*call_session(const struct call *);
struct stream	*call_stream(const struct call *);
const cJSON	*call_id(const struct call *);
const cJSON	*call_progress_token(const struct call *);
int		 call_finished(const struct call *);

void		 call_set_cancel(struct call *, call_cancel_cb, void *);
void		 call_cancel(struct call *, const char *);
void		 call_interrupt(struct call *, const char *);

void		 call_send(struct call *, cJSON *, call_sent_cb, void *);
void		 call_send_standalone(struct call *, cJSON *, call_sent_cb,
		     void *);
void		 call_request(struct call *, const char *, cJSON *,
		     call_response_cb, void *);
int		 call_log_enabled(const struct call *, int);
int		 call_close_view(struct call *);
void		 call_respond(struct call *, cJSON *);
void		 call_respond_text(struct call *, const char *, int);
void		 call_respond_error(struct call *, int, const char *);
void		 call_respond_error_data(struct call *, int, const char *,
		     cJSON *);
void		 call_release(struct call *);

#endif
