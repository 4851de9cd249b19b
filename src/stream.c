/*
 * Logical streams. Sequence numbers are assigned here, in append order, and
 * each append names the number it expects to write, so the log can refuse
 * anything that would leave a hole or re-issue an id. Only after the log
 * says "committed" is the entry handed to the stream's view (which writes
 * it if it owes exactly that entry, else pulls from the log).
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "metrics.h"
#include "session.h"
#include "stream.h"
#include "xmalloc.h"

struct stream_op {
	struct stream		*stream;
	uint64_t		 seq;
	stream_commit_cb	 cb;
	void			*arg;
	char			*data;	/* shared standalone: kept for a retry */
	size_t			 len;
	int			 retries;
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
	int			 broken;	/* an append failed */
	int			 closed;	/* the owner let go */
	unsigned int		 pending;	/* log ops in flight */
	int			 owed;		/* responses still to come */
	stream_created_fn	 created_cb;	/* once: entry 0 committed */
	cJSON			*ids;		/* request ids owed a response */
	void			*created_arg;
	int			 blocks;	/* policy block: pause producers */
	uint64_t		 window;
	uint64_t		 delivered;	/* last entry written to a view */
	struct stream_ops	 paused;	/* producers waiting for room */
	/*
	 * Several processes append to a session's standalone stream: an
	 * append that met another process's entry waits here until every
	 * append in flight has answered, then all go again after the head
	 * the log reported.
	 */
	struct stream_ops	 retry;
	unsigned int		 appending;	/* appends in flight */
	uint64_t		 log_head;	/* highest head the log reported */
};

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
stream_created_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct stream		*st = arg;
	stream_created_fn	 cb = st->created_cb;

	st->pending--;
	if (status != EVENTLOG_OK) {
		st->broken = 1;
		if (status != EVENTLOG_CANCELLED)
			log_error("session=%s stream=%llu create failed: %s",
			    session_id(st->session), (unsigned long long)st->k,
			    eventlog_status_name(status));
	} else
		session_committed(st->session, st->k, 0);
	/* Views cb opens start after entry 0: no need to wake them. */
	if (cb != NULL) {
		st->created_cb = NULL;
		st->pending++;		/* cb may close the stream */
		cb(st, status == EVENTLOG_OK, st->created_arg);
		st->pending--;
	}
	stream_maybe_free(st);
}

static void
stream_init_policy(struct stream *st)
{
	const struct conf	*conf = session_conf();

	st->window = (uint64_t)conf->stream_window;
	st->blocks = (st->kind == STREAM_REQUEST ? conf->backpressure_request :
	    conf->backpressure_standalone) == CONF_BACKPRESSURE_BLOCK;
	TAILQ_INIT(&st->paused);
	TAILQ_INIT(&st->retry);
}

struct stream *
stream_open(struct session *s, enum stream_kind kind)
{
	return (stream_open_as(s, kind, eventlog_new_stream_id()));
}

/* Opens a stream whose number K the caller drew (and may have stored). */
struct stream *
stream_open_as(struct session *s, enum stream_kind kind, uint64_t k)
{
	struct stream	*st;

	st = xcalloc(1, sizeof *st);
	st->session = s;
	st->kind = kind;
	st->k = k;
	st->next_seq = 1;
	stream_init_policy(st);
	session_ref(s);
	session_stream_add(s, st);
	st->pending++;
	eventlog_stream_create(session_eventlog(), session_id(s), st->k,
	    stream_created_cb, st);
	log_debug("session=%s stream=%llu opened (%s)", session_id(s),
	    (unsigned long long)st->k,
	    kind == STREAM_STANDALONE ? "standalone" : "request");
	return (st);
}

/* Runs cb once when the stream's creation is committed (or failed). */
void
stream_when_created(struct stream *st, stream_created_fn cb, void *arg)
{
	st->created_cb = cb;
	st->created_arg = arg;
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
	return (st);
}

/*
 * The owner lets go. An open stream is ended first so that views and
 * later resumes see it finish rather than hang.
 */
void
stream_close(struct stream *st)
{
	if (st->closed)
		return;
	stream_end(st);
	stream_release(st);
}

/*
 * The process lets go of a stream that stays open in a shared log (the
 * standalone stream at shutdown): another process carries it on.
 */
void
stream_release(struct stream *st)
{
	if (st->closed)
		return;
	st->closed = 1;
	session_stream_remove(st->session, st);
	stream_release_paused(st);
	stream_maybe_free(st);
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

#define STREAM_MAX_RETRIES	16

static void	stream_submit(struct stream *, struct stream_op *,
		    const char *, size_t, int);

/* Resubmits the appends that met another process's entries, in order. */
static void
stream_retry_flush(struct stream *st)
{
	struct stream_op	*op;

	if (st->appending > 0 || TAILQ_EMPTY(&st->retry))
		return;
	st->head = st->log_head;
	st->next_seq = st->log_head + 1;
	while ((op = TAILQ_FIRST(&st->retry)) != NULL) {
		TAILQ_REMOVE(&st->retry, op, entry);
		st->pending--;
		op->seq = st->next_seq++;
		op->retries++;
		stream_submit(st, op, op->data, op->len, 0);
	}
}

static int
stream_should_retry(struct stream *st, struct stream_op *op,
    enum eventlog_status status, const struct eventlog_info *info)
{
	return (status == EVENTLOG_CONFLICT && info != NULL &&
	    op->data != NULL && !st->closed && !info->ended &&
	    op->retries < STREAM_MAX_RETRIES);
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
		st->pending++;
		TAILQ_INSERT_TAIL(&st->retry, op, entry);
		stream_retry_flush(st);
		return;
	}
	if (ok) {
		st->head = op->seq;
		metrics.events_committed++;
		entry.seq = op->seq;
		entry.data = info != NULL ? info->data : NULL;
		entry.len = info != NULL ? info->len : 0;
		st->pending++;		/* the view may release producers */
		session_committed_entry(st->session, st->k, &entry,
		    info != NULL && info->ended);
		st->pending--;
	} else if (!st->broken) {
		st->broken = 1;
		if (status == EVENTLOG_CONFLICT && info != NULL) {
			log_error("session=%s stream=%llu resumability "
			    "violation: expected head %llu, log has %llu",
			    session_id(st->session), (unsigned long long)st->k,
			    (unsigned long long)(op->seq - 1),
			    (unsigned long long)info->head);
			/*
			 * The log lost or diverged from what this process
			 * committed: the calls end with an error after what
			 * the log has, never with a re-issued id.
			 */
			if (!info->ended && st->ids != NULL &&
			    st->kind == STREAM_REQUEST)
				session_answer_with_errors(st->session, st->k,
				    st->ids, info->head, "The event log lost or "
				    "diverged from this call's stream; the call "
				    "cannot continue");
			/* What the log has instead is the view's to show. */
			session_committed(st->session, st->k, info->head);
		}
		else if (status != EVENTLOG_CANCELLED &&
		    status != EVENTLOG_NOT_FOUND)
			log_error("session=%s stream=%llu append %llu failed: %s",
			    session_id(st->session), (unsigned long long)st->k,
			    (unsigned long long)op->seq,
			    eventlog_status_name(status));
	}
	free(op->data);
	op->data = NULL;
	/*
	 * Block policy: a producer whose stream has `window` entries nobody
	 * has received yet hears back only when a view catches up, so it
	 * stops producing and retention never trims undelivered entries.
	 */
	if (ok && op->cb != NULL && st->blocks && !st->closed &&
	    st->head - st->delivered >= st->window) {
		if (TAILQ_EMPTY(&st->paused))
			log_debug("session=%s stream=%llu producer paused at "
			    "%llu (delivered %llu)", session_id(st->session),
			    (unsigned long long)st->k,
			    (unsigned long long)st->head,
			    (unsigned long long)st->delivered);
		metrics.producers_paused++;
		st->pending++;
		TAILQ_INSERT_TAIL(&st->paused, op, entry);
		return;
	}
	if (op->cb != NULL)
		op->cb(ok, op->arg);
	free(op);
	stream_retry_flush(st);
	stream_maybe_free(st);
}

static void
stream_unpaused_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_op	*op = arg;
	struct stream		*st = op->stream;

	op->cb(1, op->arg);
	free(op);
	st->pending--;
	stream_maybe_free(st);
}

/*
 * Hands paused producers their commit callbacks; they may go on. When the
 * stream is being closed the callbacks run on a later loop turn: closing
 * happens inside a call's own teardown, and a producer that finishes from
 * its callback must not free that call under it.
 */
static void
stream_release_paused(struct stream *st)
{
	struct stream_op	*op;

	while ((op = TAILQ_FIRST(&st->paused)) != NULL) {
		if (!st->closed && st->head - st->delivered >= st->window)
			return;
		TAILQ_REMOVE(&st->paused, op, entry);
		if (st->closed) {
			/* pending stays counted until the callback ran */
			event_base_once(session_base(), -1, EV_TIMEOUT,
			    stream_unpaused_later_cb, op, NULL);
			continue;
		}
		st->pending--;
		op->cb(1, op->arg);
		free(op);
	}
}

/* A view has written entries up to seq to its connection. */
void
stream_delivered(struct stream *st, uint64_t seq)
{
	if (seq <= st->delivered)
		return;
	st->delivered = seq;
	if (!TAILQ_EMPTY(&st->paused)) {
		st->pending++;		/* callbacks may close the stream */
		stream_release_paused(st);
		st->pending--;
		stream_maybe_free(st);
	}
}

static void
stream_refused_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_op	*op = arg;

	op->cb(0, op->arg);
	free(op);
}

/*
 * Appends one message. The commit callback always runs on a later loop
 * turn, also when the stream refuses the append, so producers never
 * re-enter themselves.
 */
void
stream_append(struct stream *st, const char *data, size_t len, int final,
    stream_commit_cb cb, void *arg)
{
	struct stream_op	*op;

	op = xcalloc(1, sizeof *op);
	op->stream = st;
	op->cb = cb;
	op->arg = arg;
	if (st->ended || st->broken) {
		if (cb != NULL)
			event_base_once(session_base(), -1, EV_TIMEOUT,
			    stream_refused_cb, op, NULL);
		else
			free(op);
		return;
	}
	op->seq = st->next_seq++;
	if (final)
		st->ended = 1;
	if (st->kind == STREAM_STANDALONE && session_shared()) {
		op->data = xmalloc(len + 1);
		memcpy(op->data, data, len);
		op->data[len] = '\0';
		op->len = len;
	}
	if (!TAILQ_EMPTY(&st->retry)) {
		/* Behind the retries, in order. */
		st->pending++;
		TAILQ_INSERT_TAIL(&st->retry, op, entry);
		return;
	}
	stream_submit(st, op, data, len, final ? EVENTLOG_FINAL : 0);
}

static void
stream_submit(struct stream *st, struct stream_op *op, const char *data,
    size_t len, int flags)
{
	st->pending++;
	st->appending++;
	eventlog_append(session_eventlog(), session_id(st->session), st->k,
	    op->seq, data, len, flags, stream_appended_cb, op);
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

void
stream_end(struct stream *st)
{
	if (st->ended)
		return;
	st->ended = 1;
	st->pending++;
	eventlog_stream_end(session_eventlog(), session_id(st->session), st->k,
	    stream_ended_cb, st);
}

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
		log_warn("session=%s stream=%llu lease not written: %s",
		    session_id(st->session), (unsigned long long)st->k,
		    eventlog_status_name(status));
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
	eventlog_note_set(session_eventlog(), session_id(st->session), name,
	    value, strlen(value), ttl_ms, stream_noted_cb, st);
}

/*
 * Block policy: whether one more append keeps the undelivered backlog,
 * counting appends not yet committed, under stream_window. Producers that
 * pipeline ask before each send; the held commit callback alone would let
 * a pipeline overshoot the window (and retention trim undelivered entries).
 */
int
stream_has_room(const struct stream *st)
{
	if (!st->blocks)
		return (1);
	return ((st->next_seq - 1) - st->delivered < st->window);
}

int
stream_is_request_open(const struct stream *st)
{
	return (st->kind == STREAM_REQUEST && !st->ended && !st->closed);
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
	const struct conf	*conf = session_conf();
	char			*ids;

	if (!session_shared() || st->ids == NULL)
		return;
	ids = cJSON_PrintUnformatted(st->ids);
	stream_note(st, "r", ids,
	    (uint64_t)(conf->stream_ttl + conf->session_ttl) * 1000);
	free(ids);
	stream_renew_lease(st);
}

void
stream_renew_lease(struct stream *st)
{
	if (session_shared() && stream_is_request_open(st))
		stream_note(st, "l", "1", STREAM_LEASE_MS);
}

/* Returns 1 when the response just accounted for was the last one owed. */
int
stream_response_done(struct stream *st)
{
	return (--st->owed == 0);
}
