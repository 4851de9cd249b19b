/*
 * Logical streams. Sequence numbers are assigned here, in append order, and
 * each append names the number it expects to write, so the log can refuse
 * anything that would leave a hole or re-issue an id. Only after the log
 * says "committed" is the entry handed to the stream's view (which writes
 * it if it owes exactly that entry, else pulls from the log).
 *
 * Backpressure is decided here, once for every producer: under the block
 * policy an append goes to the log only while the entries sent and not yet
 * written to a view are fewer than stream_window; the others wait in the
 * stream's queue, in append order, until a view catches up. Whatever a
 * producer pipelines and however many producers share the stream, the log
 * never holds more undelivered entries than the window, and the window is
 * at most stream_maxlen, so retention never trims what nobody received.
 * A producer also hears "committed" only while the window has room, so one
 * that waits for its callbacks pauses instead of filling the queue.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "metrics.h"
#include "server.h"
#include "session.h"
#include "stream.h"
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
	unsigned int		 pending;	/* ops queued or in flight */
	int			 owed;		/* responses still to come */
	int			 creating;	/* the create is not answered */
	stream_created_fn	 created_cb;	/* once: the create answered */
	void			*created_arg;
	int64_t			 close_view;	/* polling asked while creating */
	cJSON			*ids;		/* request ids owed a response */
	int			 blocks;	/* policy block: wait for room */
	uint64_t		 window;
	uint64_t		 delivered;	/* last entry written to a view */
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
};

static void	stream_pump(struct stream *);
static void	stream_release_paused(struct stream *);

static void
stream_maybe_free(struct stream *st)
{
	if (st->pending > 0 || !st->closed)
		return;
	session_unref(st->session);
	cJSON_Delete(st->ids);
	free(st);
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
	/* st->pending stays counted: what runs from here may close it. */
	if (status != EVENTLOG_OK) {
		st->broken = 1;
		stream_drop_queue(st);
		if (status != EVENTLOG_CANCELLED) {
			log_limited(LOG_LEVEL_ERROR, "stream-create",
			    "session=%s stream=%llu create failed: %s",
			    session_id(st->session), (unsigned long long)st->k,
			    eventlog_status_name(status));
			session_stream_lost(st->session, st->k, -1, 0);
		}
	} else
		session_committed(st->session, st->k, 0);
	/* Views cb opens start after entry 0: no need to wake them. */
	if (cb != NULL) {
		st->created_cb = NULL;
		cb(st, status == EVENTLOG_OK, st->created_arg);
	}
	st->pending--;
	stream_maybe_free(st);
}

static void
stream_init_policy(struct stream *st)
{
	const struct conf	*conf = server.conf;

	st->window = (uint64_t)conf->stream_window;
	st->blocks = (st->kind == STREAM_REQUEST ? conf->backpressure_request :
	    conf->backpressure_standalone) == CONF_BACKPRESSURE_BLOCK;
	TAILQ_INIT(&st->queue);
	TAILQ_INIT(&st->paused);
}

static struct stream *
stream_new(struct session *s, enum stream_kind kind, uint64_t k,
    stream_created_fn cb, void *arg)
{
	struct stream	*st;

	st = xcalloc(1, sizeof *st);
	st->session = s;
	st->kind = kind;
	st->k = k;
	st->next_seq = 1;
	st->close_view = -1;
	stream_init_policy(st);
	session_ref(s);
	session_stream_add(s, st);
	st->listed = 1;
	st->pending++;
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
	st->session = s;
	st->kind = kind;
	st->k = k;
	st->head = head;
	st->delivered = head;
	st->next_seq = head + 1;
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

/* Entries sent to the log that no view has written yet. */
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
 * committed and not written to a view are fewer than the window.
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

/* Sends op to the log as the next entry; data is op's or the caller's. */
static void
stream_submit(struct stream *st, struct stream_op *op, const char *data,
    size_t len)
{
	op->seq = st->next_seq++;
	if (op->flags & EVENTLOG_FINAL)
		st->finished = 1;
	st->pending++;
	st->appending++;
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

	st->pending--;
	if (status == EVENTLOG_OK)
		session_committed(st->session, st->k, st->head);
	stream_maybe_free(st);
}

static void
stream_submit_end(struct stream *st)
{
	st->finished = 1;
	st->pending++;
	eventlog_stream_end(server.eventlog, session_id(st->session), st->k,
	    stream_ended_cb, st);
}

static void
stream_enqueue(struct stream *st, struct stream_op *op)
{
	TAILQ_INSERT_TAIL(&st->queue, op, entry);
	st->queued++;
	st->pending++;
}

static void
stream_unqueue(struct stream *st, struct stream_op *op)
{
	TAILQ_REMOVE(&st->queue, op, entry);
	if (st->requeued == op)
		st->requeued = NULL;
	st->queued--;
	st->pending--;
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

/* Refuses everything queued; returns how many there were. */
static unsigned int
stream_drop_queue(struct stream *st)
{
	struct stream_op	*op;
	unsigned int		 n = 0;

	while ((op = TAILQ_FIRST(&st->queue)) != NULL) {
		stream_unqueue(st, op);
		stream_refuse(op);
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
    int final, const cJSON *id)
{
	stream_append_op(st, data, len, final, NULL, NULL, id);
}

static void
stream_unpaused_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_op	*op = arg;
	struct stream		*st = op->stream;

	op->cb(1, op->arg);
	stream_op_free(op);
	st->pending--;
	stream_maybe_free(st);
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
			/* pending stays counted until the callback ran */
			event_base_once(server.base, -1, EV_TIMEOUT,
			    stream_unpaused_later_cb, op, NULL);
			continue;
		}
		st->pending--;
		op->cb(1, op->arg);
		stream_op_free(op);
	}
}

/*
 * A view has written entries up to seq to its connection: paused producers
 * hear back, then what waits in the queue goes (behind what they append).
 */
void
stream_delivered(struct stream *st, uint64_t seq)
{
	if (seq <= st->delivered)
		return;
	st->delivered = seq;
	if (TAILQ_EMPTY(&st->paused) && TAILQ_EMPTY(&st->queue))
		return;
	st->pending++;		/* callbacks may close the stream */
	stream_release_paused(st);
	stream_pump(st);
	st->pending--;
	stream_maybe_free(st);
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
	st->pending++;
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
		 * the calls end with an error after what the log has, never
		 * with a re-issued id.
		 */
		if (!info->ended && cJSON_GetArraySize(st->ids) > 0 &&
		    st->kind == STREAM_REQUEST)
			session_answer_with_errors(st->session, st->k,
			    st->ids, info->head, "The event log lost or "
			    "diverged from this call's stream; the call "
			    "cannot continue", NULL, NULL);
		/* What the log has instead is the view's to show. */
		session_committed(st->session, st->k, info->head);
		session_stream_lost(st->session, st->k, -1, 0);
		return;
	}
	/*
	 * Not answered: the append may or may not be in the log. The
	 * session ends the calls and answers them once the log is back,
	 * after what it holds; the view waits for that a while.
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
		session_settle(st->session, st->k, st->head, st->ids);
		return;
	}
	session_stream_lost(st->session, st->k, (int64_t)st->head,
	    status == EVENTLOG_NOT_FOUND);
}

static void
stream_appended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct stream_op	*op = arg;
	struct stream		*st = op->stream;
	struct eventlog_entry	 entry;
	int			 ok = (status == EVENTLOG_OK);

	st->pending--;
	st->appending--;
	if (info != NULL && info->head > st->log_head)
		st->log_head = info->head;
	if (!ok && stream_should_retry(st, op, status, info)) {
		stream_requeue(st, op);
		stream_pump(st);
		return;
	}
	st->pending++;		/* what runs from here may close the stream */
	if (ok) {
		st->head = op->seq;
		metrics.events_committed++;
		if (op->response_id != NULL)
			stream_forget_id(st, op->response_id);
		entry.seq = op->seq;
		entry.data = info != NULL ? info->data : NULL;
		entry.len = info != NULL ? info->len : 0;
		session_committed_entry(st->session, st->k, &entry,
		    info != NULL && info->ended);
	} else if (!st->broken)
		stream_fail(st, op->seq, status, info);
	free(op->data);
	op->data = NULL;
	if (ok && op->cb != NULL && !st->closed && !st->broken &&
	    !stream_may_tell(st)) {
		metrics.producers_paused++;
		TAILQ_INSERT_TAIL(&st->paused, op, entry);
		st->pending++;
	} else {
		if (op->cb != NULL)
			op->cb(ok, op->arg);
		stream_op_free(op);
	}
	stream_pump(st);
	st->pending--;
	stream_maybe_free(st);
}

/* ---------------------------------------------------------------------
 * Ending and letting go.
 */

/*
 * Ends the stream without a final entry (a cancelled call), after what is
 * queued. A broken stream is left as the log has it: a stream the log
 * lost cannot be ended, and one it could not reach is answered by its
 * session once the log is back (session_settle).
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
	stream_maybe_free(st);
}

static void
stream_leave(struct stream *st)
{
	st->closed = 1;
	stream_release_paused(st);
	if (st->listed) {
		st->listed = 0;
		session_stream_remove(st->session, st);
	}
	stream_maybe_free(st);
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
	stream_drop_queue(st);
	st->ended = 1;
	if (!st->broken && !st->finished)
		stream_submit_end(st);
	stream_leave(st);
}

/*
 * The process lets go of a stream that stays open in a shared log (its
 * session is released: shutdown, or idle here): another process carries
 * it on. What is queued (a call's interrupted response, say) goes to the
 * log past the window, as far as retention still keeps every entry its
 * client has not received; the rest is logged and dropped, and whichever
 * process shows the stream next answers its calls once their lease lapses.
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
	    stream_backlog(st) < maxlen) {
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

static void
stream_noted_cb(enum eventlog_status status, void *arg)
{
	struct stream	*st = arg;

	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "lease", "session=%s stream=%llu "
		    "lease not written: %s", session_id(st->session),
		    (unsigned long long)st->k, eventlog_status_name(status));
	st->pending--;
	stream_maybe_free(st);
}

static void
stream_note(struct stream *st, const char *what, const char *value,
    uint64_t ttl_ms)
{
	char	name[40];

	snprintf(name, sizeof name, "%s:%llu", what, (unsigned long long)st->k);
	st->pending++;
	eventlog_note_set(server.eventlog, session_id(st->session), name,
	    value, strlen(value), ttl_ms, stream_noted_cb, st);
}

/*
 * Polling (call_close_view): the view ends once it has shown entry upto.
 * A stream whose create is not answered has no view yet; the view its
 * creator opens then takes the request (stream_view_close_after). Returns
 * -1 if no view shows the stream.
 */
int
stream_close_view(struct stream *st, uint64_t upto)
{
	if (!st->creating)
		return (session_view_close_after(st->session, st->k, upto));
	if (st->close_view < 0 || upto < (uint64_t)st->close_view)
		st->close_view = (int64_t)upto;
	return (0);
}

/* What polling asked of the view before it opened: an entry, or -1. */
int64_t
stream_view_close_after(const struct stream *st)
{
	return (st->close_view);
}

/* A request stream this process still has to write to. */
int
stream_is_request_open(const struct stream *st)
{
	return (st->kind == STREAM_REQUEST && !st->broken &&
	    (!st->ended || !TAILQ_EMPTY(&st->queue) || st->end_queued));
}

/*
 * With a shared log, records the ids this stream owes responses to ("r:K",
 * as long as the stream may be resumed) and takes its lease ("l:K"). If
 * this process dies, the lease runs out and whichever process shows the
 * stream next answers those ids with an error (session.c).
 */
void
stream_publish_owner(struct stream *st)
{
	const struct conf	*conf = server.conf;
	char			*ids;

	if (!server.shared || st->ids == NULL)
		return;
	ids = jsonrpc_print(st->ids);
	stream_note(st, "r", ids,
	    (uint64_t)(conf->stream_ttl + conf->session_ttl) * 1000);
	free(ids);
	stream_renew_lease(st);
}

void
stream_renew_lease(struct stream *st)
{
	if (server.shared && stream_is_request_open(st))
		stream_note(st, "l", "1", STREAM_LEASE_MS);
}

/* Returns 1 when the response just accounted for was the last one owed. */
int
stream_response_done(struct stream *st)
{
	return (--st->owed == 0);
}
