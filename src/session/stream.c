/*
 * Logical streams. Sequence numbers are assigned here, in append order, and
 * each append names the number it expects to write, so the log can refuse
 * anything that would leave a hole or re-issue an id. Only after the log
 * says "committed" is the entry handed to the stream's watcher, through
 * the hooks it registered (a view writes it if it owes exactly that entry,
 * else pulls from the log). Nothing here calls view code by name.
 *
 * Backpressure is decided here, once for every producer: under the block
 * policy an append goes to the log only while the entries sent and not yet
 * delivered are fewer than stream_window; the others wait in the stream's
 * queue, in append order, until a view's client catches up. Whatever a
 * producer pipelines and however many producers share the stream, the log
 * never holds more undelivered entries than the window. Delivered means
 * received, not written (docs/protocol.md, Backpressure): a view reports an entry
 * once its client named it in Last-Event-ID or its connection's peer
 * acknowledged every byte of it (view.c), and a cut loses only what an
 * intermediary acknowledged and did not forward. For that the window is at
 * most half of stream_maxlen (conf.c): retention keeps the window and as
 * much again in flight, so a cut never trims what its client did not get.
 * A producer also hears "committed" only while the window has room, so one
 * that waits for its callbacks pauses instead of filling the queue.
 *
 * Lifetime: the owner holds a reference until it closes (or discards, or
 * releases) the stream, and so does every append and end that is queued,
 * in the log's hands, or committed with its producer not told yet. The
 * last reference frees the stream on a later loop turn, so whatever runs
 * a callback that closes the stream still finds it there afterwards.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "call.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "progress.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "trace.h"
#include "xmalloc.h"

struct stream_op {
	struct stream		*stream;
	uint64_t		 seq;
	int			 flags;		/* EVENTLOG_FINAL */
	stream_commit_cb	 cb;
	void			*arg;
	char			*data;	/* queued; shared standalone: a retry */
	size_t			 len;
	int			 retries;
	uint64_t		 sent_us;	/* handed to the log */
	cJSON			*response_id;	/* a response: its request */
	TAILQ_ENTRY(stream_op)	 entry;
};
TAILQ_HEAD(stream_ops, stream_op);

struct stream {
	struct session		*session;
	uint64_t		 k;
	enum stream_kind	 kind;
	uint64_t		 next_seq;	/* next N to assign */
	uint64_t		 head;		/* last committed N */
	int			 ended;		/* nothing more will be appended */
	int			 finished;	/* the log is told it ends */
	int			 end_queued;	/* the end waits for the queue */
	int			 broken;	/* an append failed */
	int			 closed;	/* the owner let go */
	int			 listed;	/* in the session's list */
	unsigned int		 refs;		/* the owner's, and each op's */
	struct stream_watcher	*watcher;	/* linked on first use */
	int			 owed;		/* responses still to come */
	int			 creating;	/* the create is not answered */
	stream_created_fn	 created_cb;	/* once: the create answered */
	void			*created_arg;
	int64_t			 close_view;	/* polling asked while creating */
	cJSON			*ids;		/* request ids owed a response */
	int			 blocks;	/* policy block: wait for room */
	uint64_t		 window;
	uint64_t		 delivered;	/* last entry a client received */
	/*
	 * Appends not sent to the log yet, in order: waiting for room (block
	 * policy), or behind a resync. Several processes append to a
	 * session's standalone stream: an append that met another process's
	 * entry goes back to the queue (ahead of later ones), the stream
	 * waits until every append in flight has answered, then numbering
	 * goes on after the head the log reported.
	 */
	struct stream_ops	 queue;
	unsigned int		 queued;
	struct stream_ops	 paused;	/* committed, not yet told */
	struct stream_op	*requeued;	/* last put back by a resync */
	int			 resync;
	unsigned int		 appending;	/* appends in flight */
	uint64_t		 log_head;	/* highest head the log reported */
	/*
	 * Tracing: the context of the stream's first call, and the span of
	 * the commits in flight together (stream_trace_batch).
	 */
	struct trace_ctx	 trace;
	struct trace_span	*batch;
	uint64_t		 batch_events;
};

/*
 * A watcher of stream K of a session: registered by what shows the stream
 * (view.c), listed in the session (session_attach), and linked to K's
 * stream object here when there is one.
 */
struct stream_watcher {
	struct session			*session;
	uint64_t			 k;
	int				 sole;
	const struct stream_hooks	*hooks;
	void				*arg;
	struct stream			*stream;
};

static void	stream_pump(struct stream *);
static void	stream_release_paused(struct stream *);
static int	stream_kind_blocks(enum stream_kind);
static void	stream_lost(struct session *, uint64_t, int64_t, int);
static void	stream_settle(struct stream *);
static void	stream_answered_cb(const char *, uint64_t,
		    enum eventlog_status, const struct eventlog_info *, void *);

static void
stream_free_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream	*st = arg;

	if (st->watcher != NULL)
		st->watcher->stream = NULL;
	trace_end(st->batch);
	session_unref(st->session);
	cJSON_Delete(st->ids);
	free(st);
	metrics.streams--;
}

/* The context the stream's commits are traced under (its first call's). */
void
stream_trace(struct stream *st, const struct trace_ctx *ctx)
{
	if (st->trace.state != TRACE_CTX_NONE || ctx == NULL ||
	    ctx->state == TRACE_CTX_NONE)
		return;
	st->trace = *ctx;
	/* At ratio 0 a resume decides "not sampled" by itself. */
	if (st->kind == STREAM_REQUEST && (ctx->state == TRACE_CTX_IDS ||
	    trace_sampling()))
		session_trace_keep(st->session, st->k, ctx);
}

const struct trace_ctx *
stream_trace_ctx(const struct stream *st)
{
	return (&st->trace);
}

/*
 * One span per batch of commits, not per event: from an append sent to
 * the log while none was in flight to the answer that leaves none in
 * flight, with the number of events committed meanwhile (a producer that
 * keeps its window full is one batch until it pauses or ends).
 */
static void
stream_trace_batch(struct stream *st)
{
	if (st->batch != NULL || st->trace.state == TRACE_CTX_NONE ||
	    !trace_enabled)
		return;
	st->batch = trace_start("eventlog commit", TRACE_INTERNAL, &st->trace,
	    NULL);
	st->batch_events = 0;
	if (trace_recording(st->batch)) {
		trace_attr_str(st->batch, "mcp.session.id",
		    session_id(st->session));
		trace_attr_int(st->batch, "mcpd.stream.id", (int64_t)st->k);
		trace_attr_str(st->batch, "mcpd.eventlog.backend",
		    eventlog_name(server.eventlog));
	}
}

static void
stream_trace_batch_end(struct stream *st)
{
	if (st->batch == NULL || st->appending > 0)
		return;
	trace_attr_int(st->batch, "mcpd.eventlog.events",
	    (int64_t)st->batch_events);
	trace_end(st->batch);
	st->batch = NULL;
}

static void
stream_ref(struct stream *st)
{
	if (st->refs == 0)
		fatalx("session=%s stream=%llu: a reference to a stream being "
		    "freed", session_id(st->session), (unsigned long long)st->k);
	st->refs++;
}

static void
stream_unref(struct stream *st)
{
	if (st->refs == 0)
		fatalx("session=%s stream=%llu: stream references below zero",
		    session_id(st->session), (unsigned long long)st->k);
	if (--st->refs > 0)
		return;
	event_base_once(server.base, -1, EV_TIMEOUT, stream_free_cb, st,
	    NULL);
}

/*
 * The stream's watcher. One that started watching while this object was
 * out of the session's list (closed, its last appends in flight) is linked
 * here, at the first commit it must hear of.
 */
static struct stream_watcher *
stream_watcher(struct stream *st)
{
	struct stream_watcher	*w;

	if (st->watcher == NULL &&
	    (w = session_attached(st->session, st->k)) != NULL) {
		w->stream = st;
		st->watcher = w;
	}
	return (st->watcher);
}

/* Entries up to seq may be in the log: the watcher reads them. */
static void
stream_tell_wakeup(struct stream *st, uint64_t seq)
{
	struct stream_watcher	*w;

	if ((w = stream_watcher(st)) != NULL)
		w->hooks->wakeup(w->arg, seq);
}

/* This process committed e: the watcher may write it as it is. */
static void
stream_tell_committed(struct stream *st, const struct eventlog_entry *e,
    int ended)
{
	struct stream_watcher	*w;

	if ((w = stream_watcher(st)) != NULL)
		w->hooks->committed(w->arg, e, ended);
}

static void
stream_op_free(struct stream_op *op)
{
	cJSON_Delete(op->response_id);
	free(op->data);
	free(op);
}

static unsigned int	stream_drop_queue(struct stream *);

/*
 * The log answered the create. Producers did not wait for it: what they
 * appended meanwhile went to the log behind the create (with the redis
 * log, in the same script call) and is committed only if the create is.
 * A create that failed fails those appends, and ends the calls that
 * started on the stream, as a lost stream does; the creator hears it
 * last, with nothing left running.
 */
static void
stream_created_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct stream		*st = arg;
	stream_created_fn	 cb = st->created_cb;

	st->creating = 0;
	if (status != EVENTLOG_OK) {
		st->broken = 1;
		stream_drop_queue(st);
		if (status != EVENTLOG_CANCELLED) {
			log_limited(LOG_LEVEL_ERROR, "stream-create",
			    "session=%s stream=%llu create failed: %s",
			    session_id(st->session), (unsigned long long)st->k,
			    eventlog_status_name(status));
			stream_lost(st->session, st->k, -1, 0);
		}
	} else
		stream_tell_wakeup(st, 0);
	/* Views cb opens start after entry 0: no need to wake them. */
	if (cb != NULL) {
		st->created_cb = NULL;
		cb(st, status == EVENTLOG_OK, st->created_arg);
	}
	stream_unref(st);
}

static void
stream_init_policy(struct stream *st)
{
	st->window = (uint64_t)server.conf->stream_window;
	st->blocks = stream_kind_blocks(st->kind);
	TAILQ_INIT(&st->queue);
	TAILQ_INIT(&st->paused);
}

static struct stream *
stream_new(struct session *s, enum stream_kind kind, uint64_t k,
    stream_created_fn cb, void *arg)
{
	struct stream	*st;

	st = xcalloc(1, sizeof *st);
	metrics.streams++;
	st->session = s;
	st->kind = kind;
	st->k = k;
	st->next_seq = 1;
	st->refs = 1;		/* the owner's */
	st->close_view = -1;
	stream_init_policy(st);
	session_ref(s);
	session_stream_add(s, st);
	st->listed = 1;
	stream_ref(st);		/* the create's */
	st->creating = 1;
	st->created_cb = cb;
	st->created_arg = arg;
	eventlog_stream_create(server.eventlog, session_id(s), st->k,
	    stream_created_cb, st);
	log_debug("session=%s stream=%llu opened (%s)", session_id(s),
	    (unsigned long long)st->k,
	    kind == STREAM_STANDALONE ? "standalone" : "request");
	return (st);
}

/*
 * Opens a new stream and creates it in the log; cb (if any) runs once,
 * never before this returns, when the log has answered: ok 1 once entry
 * 0 is committed, 0 if the create failed. The stream takes appends at
 * once: they go to the log behind the create and commit only with it.
 */
struct stream *
stream_open(struct session *s, enum stream_kind kind, stream_created_fn cb,
    void *arg)
{
	return (stream_new(s, kind, eventlog_new_stream_id(), cb, arg));
}

/* Opens a stream whose number K the caller drew (and may have stored). */
struct stream *
stream_open_as(struct session *s, enum stream_kind kind, uint64_t k)
{
	return (stream_new(s, kind, k, NULL, NULL));
}

/*
 * Re-creates the in-process side of a stream the log already has (a
 * session loaded from a shared log): numbering goes on after `head`.
 */
struct stream *
stream_restore(struct session *s, enum stream_kind kind, uint64_t k,
    uint64_t head)
{
	struct stream	*st;

	st = xcalloc(1, sizeof *st);
	metrics.streams++;
	st->session = s;
	st->kind = kind;
	st->k = k;
	st->head = head;
	st->delivered = head;
	st->next_seq = head + 1;
	st->refs = 1;		/* the owner's */
	stream_init_policy(st);
	session_ref(s);
	session_stream_add(s, st);
	st->listed = 1;
	return (st);
}

uint64_t
stream_id(const struct stream *st)
{
	return (st->k);
}

uint64_t
stream_head(const struct stream *st)
{
	return (st->head);
}

enum stream_kind
stream_kind(const struct stream *st)
{
	return (st->kind);
}

int
stream_ended(const struct stream *st)
{
	return (st->ended);
}

/* ---------------------------------------------------------------------
 * The queue and the window.
 */

/* Entries sent to the log that no view's client received yet. */
static uint64_t
stream_backlog(const struct stream *st)
{
	uint64_t	sent = st->next_seq - 1;

	/* A view may show entries other processes wrote past our count. */
	return (sent > st->delivered ? sent - st->delivered : 0);
}

static int
stream_has_room(const struct stream *st)
{
	return (!st->blocks || stream_backlog(st) < st->window);
}

/*
 * Whether a producer may hear that its entry was committed: the entries
 * committed and not delivered are fewer than the window.
 */
static int
stream_may_tell(const struct stream *st)
{
	return (!st->blocks || st->head <= st->delivered ||
	    st->head - st->delivered < st->window);
}

/* Only a shared standalone stream retries an append: it keeps the data. */
static int
stream_keeps_data(const struct stream *st)
{
	return (st->kind == STREAM_STANDALONE && server.shared);
}

static void	stream_appended_cb(enum eventlog_status,
		    const struct eventlog_info *, void *);

/*
 * Sends op to the log as the next entry; data is op's or the caller's. The
 * op holds its stream reference from when it was accepted.
 */
static void
stream_submit(struct stream *st, struct stream_op *op, const char *data,
    size_t len)
{
	op->seq = st->next_seq++;
	if (op->flags & EVENTLOG_FINAL)
		st->finished = 1;
	stream_trace_batch(st);
	st->appending++;
	op->sent_us = clock_now_us();
	eventlog_append(server.eventlog, session_id(st->session), st->k,
	    op->seq, data, len, op->flags, stream_appended_cb, op);
	if (!stream_keeps_data(st)) {
		free(op->data);
		op->data = NULL;
	} else if (op->data == NULL)
		op->data = xmemdup(data, len);
}

static void
stream_ended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct stream	*st = arg;

	if (status == EVENTLOG_OK)
		stream_tell_wakeup(st, st->head);
	stream_unref(st);
}

static void
stream_submit_end(struct stream *st)
{
	st->finished = 1;
	stream_ref(st);
	eventlog_stream_end(server.eventlog, session_id(st->session), st->k,
	    stream_ended_cb, st);
}

static void
stream_enqueue(struct stream *st, struct stream_op *op)
{
	TAILQ_INSERT_TAIL(&st->queue, op, entry);
	st->queued++;
}

static void
stream_unqueue(struct stream *st, struct stream_op *op)
{
	TAILQ_REMOVE(&st->queue, op, entry);
	if (st->requeued == op)
		st->requeued = NULL;
	st->queued--;
}

static void
stream_refused_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_op	*op = arg;

	op->cb(0, op->arg);
	stream_op_free(op);
}

/*
 * Refuses op: its commit callback runs (ok 0) on a later loop turn, so a
 * producer never re-enters itself.
 */
static void
stream_refuse(struct stream_op *op)
{
	free(op->data);
	op->data = NULL;
	if (op->cb != NULL)
		event_base_once(server.base, -1, EV_TIMEOUT,
		    stream_refused_cb, op, NULL);
	else
		stream_op_free(op);
}

/*
 * Refuses everything queued; returns how many there were. Their references
 * go: nothing may take one after this unless the owner still holds its.
 */
static unsigned int
stream_drop_queue(struct stream *st)
{
	struct stream_op	*op;
	unsigned int		 n = 0;

	while ((op = TAILQ_FIRST(&st->queue)) != NULL) {
		stream_unqueue(st, op);
		stream_refuse(op);
		stream_unref(st);
		n++;
	}
	st->end_queued = 0;
	return (n);
}

/* A closed stream leaves the session's list once nothing waits in it. */
static void
stream_unlist(struct stream *st)
{
	if (!st->listed || !st->closed || !TAILQ_EMPTY(&st->queue) ||
	    st->end_queued)
		return;
	st->listed = 0;
	session_stream_remove(st->session, st);
}

/*
 * Sends what the queue holds, in order, while the window has room; then an
 * end that waited for it. After a resync, only once every append in
 * flight has answered, numbering on from the head the log reported.
 */
static void
stream_pump(struct stream *st)
{
	struct stream_op	*op;

	if (st->broken) {
		stream_unlist(st);
		return;
	}
	if (st->resync) {
		if (st->appending > 0)
			return;
		st->resync = 0;
		st->requeued = NULL;
		st->head = st->log_head;
		st->next_seq = st->log_head + 1;
	}
	while ((op = TAILQ_FIRST(&st->queue)) != NULL) {
		if (!stream_has_room(st))
			return;
		stream_unqueue(st, op);
		stream_submit(st, op, op->data, op->len);
	}
	if (st->end_queued) {
		st->end_queued = 0;
		stream_submit_end(st);
	}
	stream_unlist(st);
}

/*
 * Appends one message. Under the block policy it waits in the stream until
 * the window has room; the commit callback runs once it is committed (or
 * refused), always on a later loop turn.
 */
static void
stream_append_op(struct stream *st, const char *data, size_t len, int final,
    stream_commit_cb cb, void *arg, const cJSON *response_id)
{
	struct stream_op	*op;

	op = xcalloc(1, sizeof *op);
	op->stream = st;
	op->cb = cb;
	op->arg = arg;
	if (response_id != NULL)
		op->response_id = cJSON_Duplicate(response_id, 1);
	op->len = len;
	op->flags = final ? EVENTLOG_FINAL : 0;
	if (st->ended || st->broken || st->closed) {
		stream_refuse(op);
		return;
	}
	if (final)
		st->ended = 1;
	stream_ref(st);		/* until it is answered and told */
	if (TAILQ_EMPTY(&st->queue) && !st->resync && stream_has_room(st)) {
		stream_submit(st, op, data, len);
		return;
	}
	op->data = xmemdup(data, len);
	if (!st->resync && !stream_has_room(st)) {
		if (TAILQ_EMPTY(&st->queue))
			log_debug("session=%s stream=%llu producers paused at "
			    "%llu (delivered %llu)", session_id(st->session),
			    (unsigned long long)st->k,
			    (unsigned long long)(st->next_seq - 1),
			    (unsigned long long)st->delivered);
		metrics.producers_paused++;
	}
	stream_enqueue(st, op);
}

void
stream_append(struct stream *st, const char *data, size_t len, int final,
    stream_commit_cb cb, void *arg)
{
	stream_append_op(st, data, len, final, cb, arg, NULL);
}

/*
 * Appends the response to request id: once it is committed the stream no
 * longer owes id one, so a failure later answers only the ids still owed
 * (a batch's answered call is not answered twice).
 */
void
stream_append_response(struct stream *st, const char *data, size_t len,
    int final, const cJSON *id, stream_commit_cb cb, void *arg)
{
	stream_append_op(st, data, len, final, cb, arg, id);
}

static void
stream_unpaused_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_op	*op = arg;
	struct stream		*st = op->stream;

	op->cb(1, op->arg);
	stream_op_free(op);
	stream_unref(st);
}

/*
 * Hands paused producers their commit callbacks, in order, while the window
 * has room; they may go on. A stream let go of hands them all back on a
 * later loop turn: letting go happens inside a call's own teardown, and a
 * producer that finishes from its callback must not free that call under
 * it.
 */
static void
stream_release_paused(struct stream *st)
{
	struct stream_op	*op;

	while ((op = TAILQ_FIRST(&st->paused)) != NULL) {
		if (!st->closed && !st->broken && !stream_may_tell(st))
			return;
		TAILQ_REMOVE(&st->paused, op, entry);
		if (st->closed || st->broken) {
			/* its reference stays until the callback ran */
			event_base_once(server.base, -1, EV_TIMEOUT,
			    stream_unpaused_later_cb, op, NULL);
			continue;
		}
		op->cb(1, op->arg);
		stream_op_free(op);
		stream_unref(st);
	}
}

/*
 * A view's client received entries up to seq: paused producers hear back,
 * then what waits in the queue goes (behind what they append).
 * A producer may close the stream from its callback: it is freed on a
 * later turn at the earliest.
 */
void
stream_delivered(struct stream *st, uint64_t seq)
{
	if (seq <= st->delivered)
		return;
	st->delivered = seq;
	if (TAILQ_EMPTY(&st->paused) && TAILQ_EMPTY(&st->queue))
		return;
	stream_release_paused(st);
	stream_pump(st);
}

/* ---------------------------------------------------------------------
 * Commits and failures.
 */

#define STREAM_MAX_RETRIES	16

static int
stream_should_retry(struct stream *st, struct stream_op *op,
    enum eventlog_status status, const struct eventlog_info *info)
{
	return (status == EVENTLOG_CONFLICT && info != NULL &&
	    op->data != NULL && !st->closed && !st->broken && !info->ended &&
	    op->retries < STREAM_MAX_RETRIES);
}

/*
 * Another process's entry took op's place: op goes back to the queue,
 * behind the ops put back before it (they were sent, and answered, before
 * it) and ahead of everything that was never sent.
 */
static void
stream_requeue(struct stream *st, struct stream_op *op)
{
	op->retries++;
	if (st->requeued != NULL)
		TAILQ_INSERT_AFTER(&st->queue, st->requeued, op, entry);
	else
		TAILQ_INSERT_HEAD(&st->queue, op, entry);
	st->requeued = op;
	st->queued++;
	st->resync = 1;
}

/* A response to request id is committed: the stream no longer owes one. */
static void
stream_forget_id(struct stream *st, const cJSON *id)
{
	int	i, n = cJSON_GetArraySize(st->ids);

	for (i = 0; i < n; i++) {
		if (cJSON_Compare(cJSON_GetArrayItem(st->ids, i), id, 1)) {
			cJSON_DeleteItemFromArray(st->ids, i);
			return;
		}
	}
}

static const char *
stream_loss_text(enum eventlog_status status)
{
	switch (status) {
	case EVENTLOG_EXPIRED:
		return ("the event log no longer has this stream (its key "
		    "expired or was deleted)");
	case EVENTLOG_NOT_FOUND:
		return ("the event log no longer has this session (deleted "
		    "through another instance, or lost by the log)");
	case EVENTLOG_ENDED:
		return ("the event log has this stream ended by another "
		    "writer");
	case EVENTLOG_UNAVAILABLE:
		return ("the event log is unavailable (down, or silent for "
		    "its reply timeout)");
	default:
		return ("the event log refused an append");
	}
}

/*
 * An append failed and will not be retried: nothing more can be committed
 * on this stream. What was lost is logged, the calls writing it end, and
 * its view ends its response, so the client resumes and hears why (410 or
 * 404) instead of waiting on keep-alives. A stream whose log diverged from
 * what this process committed has each call answered with an error after
 * what the log has; the view shows it.
 */
static void
stream_fail(struct stream *st, uint64_t seq, enum eventlog_status status,
    const struct eventlog_info *info)
{
	unsigned int	lost;
	int		settle;

	lost = (unsigned int)(st->next_seq - seq) + st->queued;
	st->broken = 1;
	st->resync = 0;
	stream_drop_queue(st);
	stream_release_paused(st);
	if (status == EVENTLOG_CANCELLED || session_closed(st->session))
		return;		/* this process is ending it anyway */
	if (status == EVENTLOG_CONFLICT && info != NULL) {
		log_limited(LOG_LEVEL_ERROR, "append-conflict",
		    "session=%s stream=%llu resumability violation: "
		    "expected head %llu, log has %llu",
		    session_id(st->session), (unsigned long long)st->k,
		    (unsigned long long)(seq - 1),
		    (unsigned long long)info->head);
		/*
		 * The log lost or diverged from what this process committed:
		 * the calls end with an error after what the log has. Those
		 * ids were issued before (every append sent may have landed
		 * and been shown): lease_answer records so, and a client
		 * holding one of them is answered 410, not the error.
		 */
		if (!info->ended && cJSON_GetArraySize(st->ids) > 0 &&
		    st->kind == STREAM_REQUEST)
			lease_answer(session_id(st->session), st->k, st->ids,
			    info->head, st->next_seq - 1, "The event log lost "
			    "or diverged from this call's stream; the call "
			    "cannot continue", stream_answered_cb, NULL);
		/* What the log has instead is the view's to show. */
		stream_tell_wakeup(st, info->head);
		stream_lost(st->session, st->k, -1, 0);
		return;
	}
	/*
	 * Not answered: the append may or may not be in the log. The calls
	 * end, and are answered once the log is back, after what it holds
	 * (lease.c, settling); the view waits for that a while.
	 */
	settle = status == EVENTLOG_UNAVAILABLE &&
	    st->kind == STREAM_REQUEST && cJSON_GetArraySize(st->ids) > 0;
	log_limited(LOG_LEVEL_ERROR, "append-failed",
	    "session=%s stream=%llu: %s (%s): %u message(s) from "
	    "%llu-%llu on not committed (committed up to %llu-%llu); %s",
	    session_id(st->session), (unsigned long long)st->k,
	    stream_loss_text(status), eventlog_status_name(status), lost,
	    (unsigned long long)st->k, (unsigned long long)seq,
	    (unsigned long long)st->k, (unsigned long long)st->head,
	    settle ? "its calls end with an error once it answers" :
	    "ending its response and its calls");
	if (settle) {
		stream_settle(st);
		return;
	}
	stream_lost(st->session, st->k, (int64_t)st->head,
	    status == EVENTLOG_NOT_FOUND);
}

static void
stream_appended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct stream_op	*op = arg;
	struct stream		*st = op->stream;
	struct eventlog_entry	 entry;
	int			 ok = (status == EVENTLOG_OK), told = 1;

	metrics_append(clock_now_us() - op->sent_us, ok);
	st->appending--;
	if (info != NULL && info->head > st->log_head)
		st->log_head = info->head;
	if (!ok && stream_should_retry(st, op, status, info)) {
		stream_requeue(st, op);		/* with its reference */
		stream_pump(st);
		return;
	}
	if (ok) {
		st->head = op->seq;
		metrics.events_committed++;
		st->batch_events++;
		if (op->response_id != NULL)
			stream_forget_id(st, op->response_id);
		entry.seq = op->seq;
		entry.data = info != NULL ? info->data : NULL;
		entry.len = info != NULL ? info->len : 0;
		stream_tell_committed(st, &entry, info != NULL && info->ended);
	} else {
		trace_error(st->batch, eventlog_status_name(status), NULL);
		if (!st->broken)
			stream_fail(st, op->seq, status, info);
	}
	free(op->data);
	op->data = NULL;
	if (ok && op->cb != NULL && !st->closed && !st->broken &&
	    !stream_may_tell(st)) {
		metrics.producers_paused++;
		TAILQ_INSERT_TAIL(&st->paused, op, entry);	/* keeps its ref */
		told = 0;
	} else {
		if (op->cb != NULL)
			op->cb(ok, op->arg);
		stream_op_free(op);
	}
	stream_pump(st);
	stream_trace_batch_end(st);
	if (told)
		stream_unref(st);	/* the op's, once the pump is done */
}

/* ---------------------------------------------------------------------
 * Ending and letting go.
 */

/*
 * Ends the stream without a final entry (a cancelled call), after what is
 * queued. A broken stream is left as the log has it: a stream the log
 * lost cannot be ended, and one it could not reach is answered once the
 * log is back (stream_settle).
 */
void
stream_end(struct stream *st)
{
	if (st->ended)
		return;
	st->ended = 1;
	if (st->broken)
		return;
	if (!TAILQ_EMPTY(&st->queue) || st->resync) {
		st->end_queued = 1;
		return;
	}
	stream_submit_end(st);
}

/*
 * The owner lets go. An open stream is ended first so that views and
 * later resumes see it finish rather than hang. What is queued still goes
 * to the log as its client catches up: the stream stays in its session
 * (where views report what they delivered) until then.
 */
void
stream_close(struct stream *st)
{
	if (st->closed)
		return;
	stream_end(st);
	st->closed = 1;
	stream_release_paused(st);
	stream_unlist(st);
	stream_unref(st);		/* the owner's */
}

static void
stream_leave(struct stream *st)
{
	int	owned = !st->closed;

	st->closed = 1;
	stream_release_paused(st);
	if (st->listed) {
		st->listed = 0;
		session_stream_remove(st->session, st);
	}
	if (owned)
		stream_unref(st);	/* the owner's */
}

/*
 * The session ends (DELETE, expiry): what is queued is dropped, the stream
 * is ended and leaves the session now.
 */
void
stream_discard(struct stream *st)
{
	if (st->closed && !st->listed)
		return;
	st->ended = 1;
	if (!st->broken && !st->finished)
		stream_submit_end(st);	/* before the queue's refs go */
	stream_drop_queue(st);
	stream_leave(st);
}

/*
 * The most entries the log may hold past what the client received while
 * retention still keeps them all and a window in flight besides.
 */
static uint64_t
stream_lead(uint64_t window)
{
	uint64_t	maxlen = (uint64_t)server.conf->stream_maxlen;

	return (maxlen > window ? maxlen - window : 0);
}

/*
 * The process lets go of a stream that stays open in a shared log (its
 * session is released: shutdown, or idle here): another process carries
 * it on. What is queued (a call's interrupted response, say) goes to the
 * log past the window, as far as retention still keeps every entry its
 * client has not received and a window in flight; the rest is logged and
 * dropped, and whichever process shows the stream next answers its calls
 * once their lease lapses.
 */
void
stream_release(struct stream *st)
{
	struct stream_op	*op;
	uint64_t		 maxlen;
	unsigned int		 n;

	if (st->closed && !st->listed)
		return;
	maxlen = (uint64_t)server.conf->stream_maxlen;
	while (!st->broken && !st->resync &&
	    (op = TAILQ_FIRST(&st->queue)) != NULL &&
	    stream_backlog(st) < stream_lead(st->window)) {
		stream_unqueue(st, op);
		stream_submit(st, op, op->data, op->len);
	}
	if (st->end_queued && TAILQ_EMPTY(&st->queue) && !st->broken)
		stream_submit_end(st);
	st->end_queued = 0;
	if ((n = stream_drop_queue(st)) > 0)
		log_warn("session=%s stream=%llu: %u message(s) not committed "
		    "as the stream is released: its client has not received "
		    "enough of it for retention (stream_maxlen %llu) to keep "
		    "them", session_id(st->session), (unsigned long long)st->k,
		    n, (unsigned long long)maxlen);
	stream_leave(st);
}

/* ---------------------------------------------------------------------
 * Responses and ownership.
 */

void
stream_expect_response(struct stream *st, const cJSON *id)
{
	if (st->ids == NULL)
		st->ids = cJSON_CreateArray();
	cJSON_AddItemToArray(st->ids, cJSON_Duplicate(id, 1));
	st->owed++;
}

/* A request stream this process still has to write to. */
int
stream_is_request_open(const struct stream *st)
{
	return (st->kind == STREAM_REQUEST && !st->broken &&
	    (!st->ended || !TAILQ_EMPTY(&st->queue) || st->end_queued));
}

/*
 * With a shared log, records the ids this stream owes responses to and
 * takes its lease (lease.c, 1): if this process dies, whichever process
 * shows the stream next answers those ids with an error.
 */
void
stream_publish_owner(struct stream *st)
{
	const cJSON	*id;
	struct call	*c;
	cJSON		*audit = NULL, *ctx;

	if (st->ids == NULL)
		return;
	/* What another process needs for the audit lines, if this dies. */
	cJSON_ArrayForEach(id, st->ids) {
		if ((c = session_call_find(st->session, id)) == NULL ||
		    (ctx = call_audit_context(c)) == NULL)
			continue;
		if (audit == NULL)
			audit = cJSON_CreateArray();
		cJSON_AddItemToArray(audit, ctx);
	}
	lease_take(session_id(st->session), st->k, st->ids, audit);
	cJSON_Delete(audit);
	lease_trace(session_id(st->session), st->k, &st->trace);
}

/* Returns 1 when the response just accounted for was the last one owed. */
int
stream_response_done(struct stream *st)
{
	return (--st->owed == 0);
}

/* ---------------------------------------------------------------------
 * Watchers.
 */

/* Links w to K's stream object, if this process has one listed. */
static void
stream_watcher_link(struct stream_watcher *w)
{
	struct stream	*st;

	if (w->stream != NULL ||
	    (st = session_stream(w->session, w->k)) == NULL)
		return;
	w->stream = st;
	st->watcher = w;
}

/*
 * Watches stream K of s with hooks (arg is theirs). The watcher before,
 * if any, is aborted: its connection is most likely half-open, the client
 * having resumed on another one.
 */
struct stream_watcher *
stream_watch(struct session *s, uint64_t k, int sole,
    const struct stream_hooks *hooks, void *arg)
{
	struct stream_watcher	*w, *old;

	if ((old = session_attached(s, k)) != NULL) {
		old->hooks->abort(old->arg, "taken over");
		if (session_attached(s, k) == old)
			fatalx("session=%s stream=%llu: an aborted watcher "
			    "still watches", session_id(s),
			    (unsigned long long)k);
	}
	w = xcalloc(1, sizeof *w);
	w->session = s;
	w->k = k;
	w->sole = sole;
	w->hooks = hooks;
	w->arg = arg;
	session_attach(s, k, w);
	stream_watcher_link(w);
	return (w);
}

void
stream_unwatch(struct stream_watcher *w)
{
	session_detach(w->session, w);
	if (w->stream != NULL)
		w->stream->watcher = NULL;
	free(w);
}

/*
 * The watcher's client received entries up to seq. When another process
 * writes the stream (a request stream without an object here; every
 * process may write the standalone one) and waits for its client under
 * block, it is told: delivered means the same to it as here.
 */
void
stream_watcher_delivered(struct stream_watcher *w, uint64_t seq)
{
	stream_watcher_link(w);
	if (w->stream != NULL)
		stream_delivered(w->stream, seq);
	if (server.shared && (w->stream == NULL ||
	    w->stream->kind == STREAM_STANDALONE) &&
	    stream_policy_blocks(w->session, w->k))
		progress_tell(session_id(w->session), w->k, seq);
}

/*
 * The shared log published a commit of entry seq (by any process, this one
 * included). A sole watcher hears of its stream's commits from the stream.
 */
void
stream_watcher_published(struct stream_watcher *w, uint64_t seq)
{
	if (!w->sole)
		w->hooks->wakeup(w->arg, seq);
}

/* The shared log's watch was (re-)established: commits may be missed. */
void
stream_watcher_missed(struct stream_watcher *w)
{
	w->hooks->wakeup(w->arg, 0);
}

/* Whether the watcher shows a request stream this process writes. */
int
stream_watcher_local(const struct stream_watcher *w)
{
	return (w->stream != NULL && w->stream->kind == STREAM_REQUEST);
}

/* The session closes. */
void
stream_watcher_close(struct stream_watcher *w, const char *reason)
{
	w->hooks->close(w->arg, reason);
}

/* Polling: the stream's watcher ends once it has shown entry upto. */
int
stream_close_after(struct stream *st, uint64_t upto)
{
	struct stream_watcher	*w;

	if (st->creating) {
		/*
		 * The calls start before the create is answered, and the
		 * view only then: the view its creator opens is told
		 * (stream_view_close_after).
		 */
		if (st->close_view < 0 || upto < (uint64_t)st->close_view)
			st->close_view = (int64_t)upto;
		return (0);
	}
	if ((w = stream_watcher(st)) == NULL)
		return (-1);
	return (w->hooks->close_after(w->arg, upto));
}

/* What polling asked of the view before it opened: an entry, or -1. */
int64_t
stream_view_close_after(const struct stream *st)
{
	return (st->close_view);
}

static int
stream_kind_blocks(enum stream_kind kind)
{
	const struct conf	*conf = server.conf;

	return ((kind == STREAM_REQUEST ? conf->backpressure_request :
	    conf->backpressure_standalone) == CONF_BACKPRESSURE_BLOCK);
}

/* Whether stream K of s is under the block policy (else close); K may be
 * gone. */
int
stream_policy_blocks(struct session *s, uint64_t k)
{
	struct stream	*st = session_standalone(s);

	return (stream_kind_blocks(st != NULL && st->k == k ?
	    STREAM_STANDALONE : STREAM_REQUEST));
}

/* ---------------------------------------------------------------------
 * Delivery progress from views of other processes (progress.h).
 */

/* A view elsewhere reported its client received entries up to seq of
 * stream K. */
void
stream_progress(struct session *s, uint64_t k, uint64_t seq)
{
	struct stream	*st;

	if ((st = session_stream(s, k)) != NULL)
		stream_delivered(st, seq);
}

static void
stream_progress_read_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	struct session	*s;

	if (seq > 0 && (s = session_find(sid)) != NULL)
		stream_progress(s, k, seq);
}

/* Whether producers of st wait for a client to receive more. */
static int
stream_waits(const struct stream *st)
{
	return (st->blocks && !st->broken &&
	    (!TAILQ_EMPTY(&st->paused) || !TAILQ_EMPTY(&st->queue)));
}

/*
 * Messages may have been missed (missed: the session's watch was
 * re-established), or the stream's producers have waited a cron period
 * with no view here: the note says how far views elsewhere got.
 */
void
stream_progress_check(struct stream *st, int missed)
{
	if (!server.shared || !stream_waits(st) ||
	    (!missed && st->watcher != NULL))
		return;
	progress_read(session_id(st->session), st->k, stream_progress_read_cb,
	    NULL);
}

/* ---------------------------------------------------------------------
 * What the lease code learns, told to stream K's watcher. Lease callbacks
 * name the session by id: one closed meanwhile is not in the table.
 */

static void
stream_wake(struct session *s, uint64_t k, uint64_t seq)
{
	struct stream_watcher	*w;

	if ((w = session_attached(s, k)) != NULL)
		w->hooks->wakeup(w->arg, seq);
}

/*
 * Nothing more will be committed on stream K: its watcher ends once it has
 * shown entry `upto` (-1: it follows what the log has, which ends the
 * stream itself), and the session ends the calls writing it.
 */
static void
stream_lost(struct session *s, uint64_t k, int64_t upto, int no_session)
{
	struct stream_watcher	*w;

	if (upto >= 0 && (w = session_attached(s, k)) != NULL)
		w->hooks->lost(w->arg, (uint64_t)upto);
	session_stream_lost(s, k, no_session);
}

/* Error answers committed on stream K: its watcher reads them. */
static void
stream_answered_cb(const char *sid, uint64_t k, enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct session	*s;

	if (info != NULL && (s = session_find(sid)) != NULL)
		stream_wake(s, k, info->head);
}

static void
stream_settle_cb(const char *sid, uint64_t k, enum lease_event ev,
    enum eventlog_status status, uint64_t head, void *arg)
{
	struct session		*s;
	struct stream_watcher	*w;

	if ((s = session_find(sid)) == NULL)
		return;
	switch (ev) {
	case LEASE_WAITED:
		if ((w = session_attached(s, k)) == NULL)
			break;
		log_limited(LOG_LEVEL_INFO, "settle", "session=%s stream=%llu: "
		    "the event log is still unavailable; its response ends "
		    "after %llu", sid, (unsigned long long)k,
		    (unsigned long long)head);
		w->hooks->lost(w->arg, head);
		break;
	case LEASE_COMMITTED:
		stream_wake(s, k, head);
		break;
	case LEASE_GONE:
		stream_lost(s, k, (int64_t)head, status == EVENTLOG_NOT_FOUND);
		break;
	}
}

/*
 * An append was not answered (lease.c, 3): the calls end now, and the ids
 * still owed (at least one) get their errors once the log answers.
 */
static void
stream_settle(struct stream *st)
{
	const char	*sid = session_id(st->session);

	if (lease_settling(sid, st->k))
		return;
	lease_settle(sid, st->k, st->head, st->next_seq - 1, st->ids,
	    stream_settle_cb, NULL);
	/* Whether it lost the stream or stalls is known once it answers. */
	session_cancel_calls(st->session, st->k, "the event log lost its "
	    "stream or did not answer; the error response follows once it "
	    "answers");
}

/*
 * Whether count more entries after head leave every entry the watcher's
 * client has not received in retention, with a window in flight besides.
 * They wait (for its client to read) while they would not; more than that
 * wait until it has received everything.
 */
static int
stream_orphan_fits(struct stream_watcher *w, uint64_t head, uint64_t count)
{
	uint64_t	 received;

	if (w == NULL)
		return (0);
	if ((received = w->hooks->received(w->arg)) >= head)
		return (1);
	return (head - received + count <=
	    stream_lead((uint64_t)server.conf->stream_window));
}

/* An orphan's answers: what the audit lines of its calls need. */
struct stream_orphan {
	cJSON		*ids;
	cJSON		*audit;
	uint64_t	 head;		/* before the answers */
};

#define STREAM_ORPHAN_MESSAGE \
	"The call was interrupted: the server running it stopped"

/* The context the dead owner left for request id, or NULL. */
static const cJSON *
stream_orphan_context(const cJSON *audit, const cJSON *id)
{
	const cJSON	*ctx;

	cJSON_ArrayForEach(ctx, audit) {
		if (cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ctx,
		    "request_id"), id, 1))
			return (ctx);
	}
	return (NULL);
}

/*
 * The errors are committed (some, or none: another process answered
 * first): the view reads them, and the calls answered here get their
 * audit lines, the first head - o->head of the ids, in order.
 */
static void
stream_orphan_answered_cb(const char *sid, uint64_t k,
    enum eventlog_status status, const struct eventlog_info *info, void *arg)
{
	struct stream_orphan	*o = arg;
	const cJSON		*id;
	uint64_t		 n = 0;

	stream_answered_cb(sid, k, status, info, NULL);
	if (info != NULL && info->head > o->head)
		n = info->head - o->head;
	cJSON_ArrayForEach(id, o->ids) {
		if (n == 0)
			break;
		n--;
		audit_orphan(stream_orphan_context(o->audit, id), sid, id,
		    STREAM_ORPHAN_MESSAGE);
	}
	cJSON_Delete(o->ids);
	cJSON_Delete(o->audit);
	free(o);
}

static void
stream_orphan_checked_cb(const char *sid, uint64_t k, const cJSON *ids,
    uint64_t head, const cJSON *audit, void *arg)
{
	struct session		*s;
	struct stream_orphan	*o;
	int			 count;

	if (ids == NULL || (s = session_find(sid)) == NULL)
		return;
	count = cJSON_GetArraySize(ids);
	if (!stream_orphan_fits(session_attached(s, k), head, (uint64_t)count))
		return;		/* the view's next check tries again */
	log_limited(LOG_LEVEL_ERROR, "orphan", "session=%s stream=%llu: the "
	    "process running its call(s) is gone (lease expired at head %llu); "
	    "answering %d request(s) with an error", sid, (unsigned long long)k,
	    (unsigned long long)head, count);
	o = xcalloc(1, sizeof *o);
	o->ids = cJSON_Duplicate(ids, 1);
	o->audit = audit != NULL ? cJSON_Duplicate(audit, 1) : NULL;
	o->head = head;
	/* What the dead owner had issued past head is not known here. */
	lease_answer(sid, k, ids, head, head, STREAM_ORPHAN_MESSAGE,
	    stream_orphan_answered_cb, o);
}

/*
 * A view shows open stream K (lease.c, 2): unless one of this process's
 * calls writes it, is its owner alive?
 */
void
stream_check_orphan(struct session *s, uint64_t k)
{
	/* The standalone stream is listed here too: no owner to lose. */
	if (!server.shared || session_stream(s, k) != NULL ||
	    lease_settling(session_id(s), k))
		return;
	lease_check(session_id(s), k, stream_orphan_checked_cb, NULL);
}
