/*
 * Sessions: the durable object a client talks to. The in-process part holds
 * what cannot be stored (running calls, attached views); the event log holds
 * the rest. A closed session is out of the table at once and freed when the
 * last reference (stream, view, call, pending log op) is gone.
 */
#ifndef MCPD_SESSION_H
#define MCPD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "eventlog.h"

struct auth_principal;
struct call;
struct conf;
struct event_base;
struct session;
struct stream;
struct stream_watcher;
struct trace_ctx;

/* 128 random bits as 32 hex digits. */
#define SESSION_ID_LEN	32

void		 session_init(void);
void		 session_shutdown(void);
void		 session_cron(void);
void		 session_renew_leases(void);
size_t		 session_running_calls(void);
void		 session_interrupt_calls(const char *);

typedef void (*session_stored_fn)(struct session *, int, void *);
/* version, initialize's params, who, the endpoint's path (NULL: default). */
struct session	*session_create(const char *, const cJSON *,
		     struct auth_principal *, const char *, session_stored_fn,
		     void *);
struct session	*session_find(const char *);
typedef void (*session_load_cb)(struct session *, int, void *);
void		 session_load(const char *, session_load_cb, void *);
void		 session_refresh(struct session *, session_load_cb, void *);
size_t		 session_allocated(void);
void		 session_close(struct session *, const char *);
void		 session_ref(struct session *);
void		 session_unref(struct session *);
void		 session_touch(struct session *);
int		 session_closed(const struct session *);
size_t		 session_count(void);

const char	*session_id(const struct session *);
const char	*session_version(const struct session *);
int		 session_log_level(const struct session *);
void		 session_set_log_level(struct session *, int);
struct stream	*session_standalone(struct session *);
/*
 * Who the session belongs to (NULL without auth): stored with its meta,
 * compared by transport.c on every request naming it. The principal of
 * the request being served replaces it (same who, its scopes), so calls
 * started now see that request's scopes.
 */
struct auth_principal *session_principal(const struct session *);
void		 session_set_principal(struct session *,
		     struct auth_principal *);
/*
 * The endpoint path the session was created on (stored with its meta): it
 * is served there only (transport.c answers 404 elsewhere), and sees that
 * endpoint's catalog.
 */
const char	*session_endpoint(const struct session *);

/*
 * Watched streams: at most one watcher per stream K. Only stream.c
 * attaches and detaches (stream_watch, stream_unwatch).
 */
void		 session_attach(struct session *, uint64_t,
		     struct stream_watcher *);
void		 session_detach(struct session *, struct stream_watcher *);
struct stream_watcher *session_attached(struct session *, uint64_t);

/* Streams and calls register here so closing a session reaches them. */
void		 session_stream_add(struct session *, struct stream *);
void		 session_stream_remove(struct session *, struct stream *);
size_t		 session_stream_count(const struct session *);
struct stream	*session_stream(struct session *, uint64_t);
/* Tracing: the context of stream K's call (stream.c keeps it here). */
void		 session_trace_keep(struct session *, uint64_t,
		     const struct trace_ctx *);
const struct trace_ctx *session_trace_find(struct session *, uint64_t);
void		 session_stream_lost(struct session *, uint64_t, int);
void		 session_cancel_calls(struct session *, uint64_t,
		     const char *);
void		 session_call_add(struct session *, struct call *);
void		 session_call_remove(struct session *, struct call *);
struct call	*session_call_find(struct session *, const cJSON *);

/* resources/subscribe: at most SESSION_MAX_SUBSCRIPTIONS URIs each. */
#define SESSION_MAX_SUBSCRIPTIONS	256
int		 session_subscribe(struct session *, const char *);
void		 session_unsubscribe(struct session *, const char *);
void		 session_notify(struct session *, const char *, size_t);
/* The client's answer: result or error (the other NULL). */
typedef void (*session_answer_cb)(const cJSON *, const cJSON *, void *);
void		 session_request(struct session *, const char *, cJSON *,
		     session_answer_cb, void *);

#endif
