/*
 * The embedded event log: bounded rings in process memory, for a single
 * instance. Everything is lost on restart, and that is the documented price.
 *
 * Every operation is queued and carried out on the next loop turn, in order,
 * so callers meet the same asynchrony (and the same re-entrancy rules) as with
 * the Redis backend. Retention is what the conf says: stream_maxlen entries
 * per stream, stream_ttl seconds after a stream ends. An expired stream
 * leaves a tombstone so a late cursor is answered "expired", not "unknown".
 * Task records live in a tree of their own, at most max_tasks of them,
 * each until its lifetime ends; when a new one finds no room, the record
 * finished (put final) longest ago is forgotten for it, never one whose
 * task still runs. The keyring is one record of the process.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "xmalloc.h"

/* Tombstones kept per session; the oldest is forgotten past this. */
#define MEM_TOMBSTONES	1024
/*
 * Ops carried out per loop turn, at most. Ops queued by callbacks during a
 * turn wait for the next one, and turns are separated by a poll of the
 * sockets: a producer that chains append after append must not run ahead
 * of every connection's writes (it would outrun retention with nobody
 * having had a chance to read).
 */
#define MEM_OPS_PER_TURN	4096

struct mem_entry {
	uint64_t	 seq;
	char		*data;
	size_t		 len;
};

struct mem_stream {
	uint64_t		 k;
	struct mem_entry	*ring;
	size_t			 cap;	/* allocated slots, <= maxlen */
	size_t			 first;	/* ring index of the oldest entry */
	size_t			 count;
	uint64_t		 head;
	int			 ended;
	uint64_t		 expires_ms;	/* 0 while the stream is open */
	RB_ENTRY(mem_stream)	 entry;
	TAILQ_ENTRY(mem_stream)	 ended_entry;	/* on its session's ended */
};
RB_HEAD(mem_streams, mem_stream);

struct mem_session {
	char			*sid;
	char			*meta;
	size_t			 metalen;
	struct mem_streams	 streams;
	size_t			 nstreams;
	/*
	 * Its ended streams in the order they ended, so also in the order
	 * they expire (one stream_ttl for all): the oldest is the first,
	 * found without walking every stream.
	 */
	TAILQ_HEAD(, mem_stream) ended;
	uint64_t		*tombstones;	/* up to MEM_TOMBSTONES */
	size_t			 ntombstones;	/* total ever written */
	RB_ENTRY(mem_session)	 entry;
};
RB_HEAD(mem_sessions, mem_session);

struct mem_task {
	char			*tid;
	uint64_t		 rev;
	char			*data;
	size_t			 len;
	uint64_t		 expires_ms;
	int			 final;		/* on mem.finished */
	RB_ENTRY(mem_task)	 entry;
	TAILQ_ENTRY(mem_task)	 done;
};
RB_HEAD(mem_tasks, mem_task);
TAILQ_HEAD(mem_finished, mem_task);

enum mem_op_type {
	MEM_SESSION_STORE,
	MEM_SESSION_LOAD,
	MEM_SESSION_DELETE,
	MEM_STREAM_CREATE,
	MEM_APPEND,
	MEM_STREAM_END,
	MEM_READ,
	MEM_PUBLISH,		/* nobody else to tell: answered OK */
	MEM_TASK_PUT,
	MEM_TASK_GET,
	MEM_KEYRING
};

/* A session store's flag: only if the session is there (session_update). */
#define MEM_STORE_UPDATE	0x100

struct mem_op {
	enum mem_op_type	 type;
	char			*sid;		/* in the same allocation */
	uint64_t		 k;
	uint64_t		 seq;	/* append: expected; read: from */
	size_t			 max;
	char			*data;
	size_t			 len;
	int			 flags;
	int			 orphaned;	/* its stream's create failed */
	enum eventlog_status	 fail;		/* orphaned: the answer */
	union {
		eventlog_done_cb	done;
		eventlog_append_cb	append;
		eventlog_read_cb	read;
		eventlog_load_cb	load;
		eventlog_task_cb	task;
		eventlog_keyring_cb	keyring;
	} cb;
	void			*arg;
	TAILQ_ENTRY(mem_op)	 entry;
	char			 sidbuf[];
};
TAILQ_HEAD(mem_ops, mem_op);

struct mem {
	struct event_base	*base;
	size_t			 maxlen;
	size_t			 max_streams;	/* per session, open or ended */
	uint64_t		 ttl_ms;
	struct mem_sessions	 sessions;
	struct mem_tasks	 tasks;
	struct mem_finished	 finished;	/* final records, oldest first */
	size_t			 ntasks;
	size_t			 max_tasks;
	struct mem_ops		 ops;
	struct mem_ops		 running;	/* taken from ops this turn */
	struct {
		uint64_t	 generation;	/* 0: none yet */
		char		*keys[3];	/* previous, current, next */
		uint64_t	 due_ms;	/* its next rotation */
	} ring;
	struct event		*run_ev;
	struct event		*cron_ev;
};

static void	mem_schedule(struct mem *);

static int
mem_stream_cmp(struct mem_stream *a, struct mem_stream *b)
{
	return (a->k < b->k ? -1 : a->k > b->k);
}
RB_GENERATE_STATIC(mem_streams, mem_stream, entry, mem_stream_cmp);

static int
mem_task_cmp(struct mem_task *a, struct mem_task *b)
{
	return (strcmp(a->tid, b->tid));
}
RB_GENERATE_STATIC(mem_tasks, mem_task, entry, mem_task_cmp);

static int
mem_session_cmp(struct mem_session *a, struct mem_session *b)
{
	return (strcmp(a->sid, b->sid));
}
RB_GENERATE_STATIC(mem_sessions, mem_session, entry, mem_session_cmp);

static struct mem_session *
mem_session_find(struct mem *m, const char *sid)
{
	struct mem_session	find;

	find.sid = (char *)sid;
	return (RB_FIND(mem_sessions, &m->sessions, &find));
}

static struct mem_stream *
mem_stream_find(struct mem_session *ms, uint64_t k)
{
	struct mem_stream	find;

	find.k = k;
	return (RB_FIND(mem_streams, &ms->streams, &find));
}

static int
mem_tombstone_find(struct mem_session *ms, uint64_t k)
{
	size_t	i, n;

	n = ms->ntombstones < MEM_TOMBSTONES ? ms->ntombstones :
	    MEM_TOMBSTONES;
	for (i = 0; i < n; i++) {
		if (ms->tombstones[i] == k)
			return (1);
	}
	return (0);
}

static void
mem_stream_free(struct mem_stream *st)
{
	size_t	i;

	for (i = 0; i < st->count; i++)
		free(st->ring[(st->first + i) % st->cap].data);
	free(st->ring);
	free(st);
}

static void
mem_stream_expire(struct mem_session *ms, struct mem_stream *st)
{
	RB_REMOVE(mem_streams, &ms->streams, st);
	if (st->ended)
		TAILQ_REMOVE(&ms->ended, st, ended_entry);
	ms->nstreams--;
	/* Grown as needed: most sessions never expire a stream. */
	if (ms->ntombstones < MEM_TOMBSTONES)
		ms->tombstones = xrealloc(ms->tombstones,
		    (ms->ntombstones + 1) * sizeof *ms->tombstones);
	ms->tombstones[ms->ntombstones % MEM_TOMBSTONES] = st->k;
	ms->ntombstones++;
	mem_stream_free(st);
}

static void
mem_session_free(struct mem *m, struct mem_session *ms)
{
	struct mem_stream	*st, *st1;

	RB_REMOVE(mem_sessions, &m->sessions, ms);
	RB_FOREACH_SAFE(st, mem_streams, &ms->streams, st1) {
		RB_REMOVE(mem_streams, &ms->streams, st);
		mem_stream_free(st);
	}
	free(ms->tombstones);
	free(ms->meta);
	free(ms->sid);
	free(ms);
}

static void
mem_info(const struct mem_stream *st, struct eventlog_info *info)
{
	info->head = st->head;
	info->oldest = st->count > 0 ? st->ring[st->first].seq : st->head + 1;
	info->ended = st->ended;
	info->data = NULL;
	info->len = 0;
}

/*
 * Appends one entry, trimming the oldest when the stream is at maxlen. The
 * stream takes ownership of data (NUL-terminated, len bytes before it).
 */
static void
mem_stream_push(struct mem *m, struct mem_stream *st, uint64_t seq,
    char *data, size_t len)
{
	struct mem_entry	*e;
	struct mem_entry	*ring;
	size_t			 i, cap;

	if (st->count == m->maxlen) {
		free(st->ring[st->first].data);
		st->first = (st->first + 1) % st->cap;
		st->count--;
	} else if (st->count == st->cap) {
		cap = st->cap == 0 ? 8 : st->cap * 2;
		if (cap > m->maxlen)
			cap = m->maxlen;
		ring = xcalloc(cap, sizeof *ring);
		for (i = 0; i < st->count; i++)
			ring[i] = st->ring[(st->first + i) % st->cap];
		free(st->ring);
		st->ring = ring;
		st->cap = cap;
		st->first = 0;
	}
	e = &st->ring[(st->first + st->count) % st->cap];
	e->seq = seq;
	e->len = len;
	e->data = data;
	st->count++;
	st->head = seq;
}

static void
mem_stream_finish(struct mem *m, struct mem_session *ms,
    struct mem_stream *st)
{
	st->ended = 1;
	st->expires_ms = clock_now_ms() + m->ttl_ms;
	TAILQ_INSERT_TAIL(&ms->ended, st, ended_entry);
}

/* Looks up the stream an op names; answers NOT_FOUND or EXPIRED if gone. */
static enum eventlog_status
mem_lookup(struct mem *m, struct mem_op *op, struct mem_session **msp,
    struct mem_stream **stp)
{
	struct mem_session	*ms;

	if ((ms = mem_session_find(m, op->sid)) == NULL)
		return (EVENTLOG_NOT_FOUND);
	*msp = ms;
	if ((*stp = mem_stream_find(ms, op->k)) != NULL)
		return (EVENTLOG_OK);
	if (mem_tombstone_find(ms, op->k))
		return (EVENTLOG_EXPIRED);
	return (EVENTLOG_NOT_FOUND);
}

static void
mem_do_session_store(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;

	if ((ms = mem_session_find(m, op->sid)) == NULL &&
	    (op->flags & MEM_STORE_UPDATE)) {
		op->cb.done(EVENTLOG_NOT_FOUND, op->arg);
		return;
	}
	if (ms == NULL) {
		ms = xcalloc(1, sizeof *ms);
		ms->sid = xstrdup(op->sid);
		RB_INIT(&ms->streams);
		TAILQ_INIT(&ms->ended);
		RB_INSERT(mem_sessions, &m->sessions, ms);
	}
	free(ms->meta);
	ms->meta = op->data;
	ms->metalen = op->len;
	op->data = NULL;
	op->cb.done(EVENTLOG_OK, op->arg);
}

static void
mem_do_session_load(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;

	if ((ms = mem_session_find(m, op->sid)) == NULL)
		op->cb.load(EVENTLOG_NOT_FOUND, NULL, 0, op->arg);
	else
		op->cb.load(EVENTLOG_OK, ms->meta, ms->metalen, op->arg);
}

static void
mem_do_session_delete(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;

	if ((ms = mem_session_find(m, op->sid)) == NULL) {
		op->cb.done(EVENTLOG_NOT_FOUND, op->arg);
		return;
	}
	mem_session_free(m, ms);
	op->cb.done(EVENTLOG_OK, op->arg);
}

/*
 * A session at its stream budget lets its oldest finished stream expire
 * early: memory per session stays bounded, and a late resume of that
 * stream is still answered "expired", never silently.
 */
static void
mem_make_room(struct mem_session *ms)
{
	struct mem_stream	*oldest = TAILQ_FIRST(&ms->ended);

	if (oldest == NULL)
		return;
	log_limited(LOG_LEVEL_INFO, "max-streams", "session=%s stream=%llu "
	    "expired early: session_max_streams reached", ms->sid,
	    (unsigned long long)oldest->k);
	mem_stream_expire(ms, oldest);
}

/*
 * Fails the appends and the end of stream K asked for after its create,
 * which failed: they were queued without waiting for its answer, and must
 * not land in a stream K that is not the one they were meant for (a K
 * taken already). Those still queued are exactly them: the create's
 * caller hears of the failure now, and stops appending.
 */
static void
mem_create_failed(struct mem *m, struct mem_op *create,
    enum eventlog_status status)
{
	struct mem_ops	*lists[] = { &m->running, &m->ops };
	struct mem_op	*op;
	size_t		 i;

	for (i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		TAILQ_FOREACH(op, lists[i], entry) {
			if ((op->type == MEM_APPEND ||
			    op->type == MEM_STREAM_END) &&
			    op->k == create->k &&
			    strcmp(op->sid, create->sid) == 0) {
				op->orphaned = 1;
				op->fail = status;
			}
		}
	}
	create->cb.append(status, NULL, create->arg);
}

static void
mem_do_stream_create(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;
	struct mem_stream	*st;
	struct eventlog_info	 info;

	/* Stream 0 is never drawn: refused, as the redis log must. */
	if (op->k == 0) {
		mem_create_failed(m, op, EVENTLOG_CONFLICT);
		return;
	}
	if ((ms = mem_session_find(m, op->sid)) == NULL) {
		mem_create_failed(m, op, EVENTLOG_NOT_FOUND);
		return;
	}
	if (mem_stream_find(ms, op->k) != NULL ||
	    mem_tombstone_find(ms, op->k)) {
		mem_create_failed(m, op, EVENTLOG_CONFLICT);
		return;
	}
	if (ms->nstreams >= m->max_streams)
		mem_make_room(ms);
	st = xcalloc(1, sizeof *st);
	st->k = op->k;
	RB_INSERT(mem_streams, &ms->streams, st);
	ms->nstreams++;
	mem_stream_push(m, st, 0, xstrdup(""), 0);
	mem_info(st, &info);
	op->cb.append(EVENTLOG_OK, &info, op->arg);
}

static void
mem_do_append(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;
	struct mem_stream	*st = NULL;
	struct eventlog_info	 info;
	enum eventlog_status	 status;

	if ((status = mem_lookup(m, op, &ms, &st)) != EVENTLOG_OK) {
		op->cb.append(status, NULL, op->arg);
		return;
	}
	mem_info(st, &info);
	if (st->ended) {
		op->cb.append(EVENTLOG_ENDED, &info, op->arg);
		return;
	}
	if (op->seq != st->head + 1) {
		op->cb.append(EVENTLOG_CONFLICT, &info, op->arg);
		return;
	}
	mem_stream_push(m, st, op->seq, op->data, op->len);
	if (op->flags & EVENTLOG_FINAL)
		mem_stream_finish(m, ms, st);
	mem_info(st, &info);
	info.data = op->data;	/* now the stream's: head is retained */
	info.len = op->len;
	op->data = NULL;
	op->cb.append(EVENTLOG_OK, &info, op->arg);
}

static void
mem_do_stream_end(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;
	struct mem_stream	*st = NULL;
	struct eventlog_info	 info;
	enum eventlog_status	 status;

	if ((status = mem_lookup(m, op, &ms, &st)) != EVENTLOG_OK) {
		op->cb.append(status, NULL, op->arg);
		return;
	}
	if (!st->ended)
		mem_stream_finish(m, ms, st);
	mem_info(st, &info);
	op->cb.append(EVENTLOG_OK, &info, op->arg);
}

static void
mem_do_read(struct mem *m, struct mem_op *op)
{
	struct mem_session	*ms;
	struct mem_stream	*st = NULL;
	struct mem_entry	*e;
	struct eventlog_entry	*out;
	struct eventlog_info	 info;
	enum eventlog_status	 status;
	size_t			 i, n, skip;

	if ((status = mem_lookup(m, op, &ms, &st)) != EVENTLOG_OK) {
		op->cb.read(status, NULL, 0, NULL, op->arg);
		return;
	}
	mem_info(st, &info);
	if (op->seq > st->head + 1) {
		op->cb.read(EVENTLOG_AHEAD, NULL, 0, &info, op->arg);
		return;
	}
	if (op->seq < info.oldest) {
		op->cb.read(EVENTLOG_TRIMMED, NULL, 0, &info, op->arg);
		return;
	}
	skip = (size_t)(op->seq - info.oldest);
	n = st->count - skip;
	if (n > op->max)
		n = op->max;
	out = n > 0 ? xcalloc(n, sizeof *out) : NULL;
	for (i = 0; i < n; i++) {
		e = &st->ring[(st->first + skip + i) % st->cap];
		out[i].seq = e->seq;
		out[i].data = e->data;
		out[i].len = e->len;
	}
	op->cb.read(EVENTLOG_OK, out, n, &info, op->arg);
	free(out);
}

static void
mem_task_free(struct mem *m, struct mem_task *t)
{
	RB_REMOVE(mem_tasks, &m->tasks, t);
	if (t->final)
		TAILQ_REMOVE(&m->finished, t, done);
	m->ntasks--;
	free(t->tid);
	free(t->data);
	free(t);
}

/* The record of a task, unless its lifetime has ended (then dropped). */
static struct mem_task *
mem_task_find(struct mem *m, const char *tid)
{
	struct mem_task	find, *t;

	find.tid = (char *)tid;
	if ((t = RB_FIND(mem_tasks, &m->tasks, &find)) == NULL)
		return (NULL);
	if (t->expires_ms <= clock_now_ms()) {
		mem_task_free(m, t);
		return (NULL);
	}
	return (t);
}

static void
mem_task_expire(struct mem *m)
{
	struct mem_task	*t, *t1;
	uint64_t	 now = clock_now_ms();

	RB_FOREACH_SAFE(t, mem_tasks, &m->tasks, t1) {
		if (t->expires_ms <= now)
			mem_task_free(m, t);
	}
}

static void
mem_do_task_put(struct mem *m, struct mem_op *op)
{
	struct mem_task	*t = mem_task_find(m, op->sid);

	if (op->seq == 1 && t != NULL) {
		op->cb.done(EVENTLOG_CONFLICT, op->arg);
		return;
	}
	if (op->seq > 1 && t == NULL) {
		op->cb.done(EVENTLOG_NOT_FOUND, op->arg);
		return;
	}
	if (op->seq > 1 && t->rev != op->seq - 1) {
		op->cb.done(EVENTLOG_CONFLICT, op->arg);
		return;
	}
	if (t == NULL) {
		if (m->ntasks >= m->max_tasks)
			mem_task_expire(m);
		if (m->ntasks >= m->max_tasks &&
		    !TAILQ_EMPTY(&m->finished)) {
			log_limited(LOG_LEVEL_INFO, "task-evicted", "eventlog="
			    "memory: a finished task's record forgotten before "
			    "its task_ttl to make room (max_tasks %zu)",
			    m->max_tasks);
			mem_task_free(m, TAILQ_FIRST(&m->finished));
		}
		if (m->ntasks >= m->max_tasks) {
			op->cb.done(EVENTLOG_FULL, op->arg);
			return;
		}
		t = xcalloc(1, sizeof *t);
		t->tid = xstrdup(op->sid);
		RB_INSERT(mem_tasks, &m->tasks, t);
		m->ntasks++;
	}
	free(t->data);
	t->data = op->data;
	t->len = op->len;
	op->data = NULL;
	t->rev = op->seq;
	t->expires_ms = clock_now_ms() + op->max;
	if (op->flags && !t->final) {
		t->final = 1;
		TAILQ_INSERT_TAIL(&m->finished, t, done);
	}
	op->cb.done(EVENTLOG_OK, op->arg);
}

static void
mem_do_task_get(struct mem *m, struct mem_op *op)
{
	struct mem_task	*t = mem_task_find(m, op->sid);

	if (t == NULL)
		op->cb.task(EVENTLOG_NOT_FOUND, 0, NULL, 0, op->arg);
	else
		op->cb.task(EVENTLOG_OK, t->rev, t->data, t->len, op->arg);
}

/* op->data is FRESH1 NUL FRESH2, op->max the period (eventlog_keyring). */
static void
mem_do_keyring(struct mem *m, struct mem_op *op)
{
	struct eventlog_keyring	 ring;
	const char		*fresh2 = op->data + strlen(op->data) + 1;
	uint64_t		 now = clock_now_ms();

	if (m->ring.generation == 0) {
		m->ring.keys[0] = xstrdup("");
		m->ring.keys[1] = xstrdup(op->data);
		m->ring.keys[2] = xstrdup(fresh2);
		m->ring.generation = 1;
		m->ring.due_ms = now + op->max;
	} else if (now >= m->ring.due_ms) {
		free(m->ring.keys[0]);
		m->ring.keys[0] = m->ring.keys[1];
		m->ring.keys[1] = m->ring.keys[2];
		m->ring.keys[2] = xstrdup(op->data);
		m->ring.generation++;
		m->ring.due_ms = now + op->max;
	}
	ring.generation = m->ring.generation;
	ring.previous = m->ring.keys[0];
	ring.current = m->ring.keys[1];
	ring.next = m->ring.keys[2];
	op->cb.keyring(EVENTLOG_OK, &ring, op->arg);
}

static void
mem_op_free(struct mem_op *op)
{
	free(op->data);
	free(op);
}

static void
mem_op_execute(struct mem *m, struct mem_op *op)
{
	if (op->orphaned) {
		op->cb.append(op->fail, NULL, op->arg);
		return;
	}
	switch (op->type) {
	case MEM_SESSION_STORE:
		mem_do_session_store(m, op);
		break;
	case MEM_SESSION_LOAD:
		mem_do_session_load(m, op);
		break;
	case MEM_SESSION_DELETE:
		mem_do_session_delete(m, op);
		break;
	case MEM_STREAM_CREATE:
		mem_do_stream_create(m, op);
		break;
	case MEM_APPEND:
		mem_do_append(m, op);
		break;
	case MEM_STREAM_END:
		mem_do_stream_end(m, op);
		break;
	case MEM_READ:
		mem_do_read(m, op);
		break;
	case MEM_PUBLISH:
		op->cb.done(EVENTLOG_OK, op->arg);
		break;
	case MEM_TASK_PUT:
		mem_do_task_put(m, op);
		break;
	case MEM_TASK_GET:
		mem_do_task_get(m, op);
		break;
	case MEM_KEYRING:
		mem_do_keyring(m, op);
		break;
	}
}

/* Answers an op that will never run because the log is going away. */
static void
mem_op_cancel(struct mem_op *op)
{
	switch (op->type) {
	case MEM_SESSION_STORE:
	case MEM_SESSION_DELETE:
	case MEM_PUBLISH:
	case MEM_TASK_PUT:
		op->cb.done(EVENTLOG_CANCELLED, op->arg);
		break;
	case MEM_TASK_GET:
		op->cb.task(EVENTLOG_CANCELLED, 0, NULL, 0, op->arg);
		break;
	case MEM_KEYRING:
		op->cb.keyring(EVENTLOG_CANCELLED, NULL, op->arg);
		break;
	case MEM_SESSION_LOAD:
		op->cb.load(EVENTLOG_CANCELLED, NULL, 0, op->arg);
		break;
	case MEM_STREAM_CREATE:
	case MEM_APPEND:
	case MEM_STREAM_END:
		op->cb.append(EVENTLOG_CANCELLED, NULL, op->arg);
		break;
	case MEM_READ:
		op->cb.read(EVENTLOG_CANCELLED, NULL, 0, NULL, op->arg);
		break;
	}
}

/*
 * Runs queued ops in order, at most MEM_OPS_PER_TURN, so a chain of
 * callbacks cannot starve the loop; what is left waits for the next turn.
 */
static void
mem_run_cb(evutil_socket_t fd, short events, void *arg)
{
	struct mem	*m = arg;
	struct mem_ops	*batch = &m->running;
	struct mem_op	*op;
	int		 n = 0;

	TAILQ_CONCAT(batch, &m->ops, entry);
	while ((op = TAILQ_FIRST(batch)) != NULL) {
		if (n++ == MEM_OPS_PER_TURN) {
			/* The rest goes first next turn, in order. */
			TAILQ_CONCAT(batch, &m->ops, entry);
			TAILQ_CONCAT(&m->ops, batch, entry);
			break;
		}
		TAILQ_REMOVE(batch, op, entry);
		mem_op_execute(m, op);
		mem_op_free(op);
	}
	mem_schedule(m);
}

static void
mem_cron_cb(evutil_socket_t fd, short events, void *arg)
{
	struct mem		*m = arg;
	struct mem_session	*ms;
	struct mem_stream	*st;
	uint64_t		 now = clock_now_ms();

	RB_FOREACH(ms, mem_sessions, &m->sessions) {
		while ((st = TAILQ_FIRST(&ms->ended)) != NULL &&
		    st->expires_ms <= now)
			mem_stream_expire(ms, st);
	}
	mem_task_expire(m);
}

/*
 * A zero timeout rather than event_active: timers fire after the loop has
 * polled the sockets, so every turn of ops lets connections write.
 */
static void
mem_schedule(struct mem *m)
{
	struct timeval	now = { 0, 0 };

	if (!TAILQ_EMPTY(&m->ops) && !evtimer_pending(m->run_ev, NULL))
		evtimer_add(m->run_ev, &now);
}

static struct mem_op *
mem_op_new(struct mem *m, enum mem_op_type type, const char *sid,
    uint64_t k)
{
	struct mem_op	*op;
	size_t		 len = strlen(sid);

	/* One allocation an op: an append is one per event. */
	op = xcalloc(1, sizeof *op + len + 1);
	op->type = type;
	op->sid = op->sidbuf;
	memcpy(op->sid, sid, len + 1);
	op->k = k;
	TAILQ_INSERT_TAIL(&m->ops, op, entry);
	mem_schedule(m);
	return (op);
}

static void
mem_op_set_data(struct mem_op *op, const char *data, size_t len)
{
	op->data = xmemdup(data, len);
	op->len = len;
}

static void
mem_session_store(void *p, const char *sid, const char *meta, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_SESSION_STORE, sid, 0);

	mem_op_set_data(op, meta, len);
	op->cb.done = cb;
	op->arg = arg;
}

static void
mem_session_update(void *p, const char *sid, const char *meta, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_SESSION_STORE, sid, 0);

	mem_op_set_data(op, meta, len);
	op->flags = MEM_STORE_UPDATE;
	op->cb.done = cb;
	op->arg = arg;
}

static void
mem_session_load(void *p, const char *sid, eventlog_load_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_SESSION_LOAD, sid, 0);

	op->cb.load = cb;
	op->arg = arg;
}

static void
mem_session_delete(void *p, const char *sid, eventlog_done_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_SESSION_DELETE, sid, 0);

	op->cb.done = cb;
	op->arg = arg;
}

static void
mem_stream_create(void *p, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_STREAM_CREATE, sid, k);

	op->cb.append = cb;
	op->arg = arg;
}

static void
mem_append(void *p, const char *sid, uint64_t k, uint64_t seq,
    const char *data, size_t len, int flags, eventlog_append_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_APPEND, sid, k);

	op->seq = seq;
	op->flags = flags;
	mem_op_set_data(op, data, len);
	op->cb.append = cb;
	op->arg = arg;
}

static void
mem_stream_end(void *p, const char *sid, uint64_t k, eventlog_append_cb cb,
    void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_STREAM_END, sid, k);

	op->cb.append = cb;
	op->arg = arg;
}

static void
mem_read(void *p, const char *sid, uint64_t k, uint64_t from, size_t max,
    eventlog_read_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_READ, sid, k);

	op->seq = from;
	op->max = max;
	op->cb.read = cb;
	op->arg = arg;
}

/* One process: the session layer already knows what it would say. */
static void
mem_publish(void *p, const char *sid, const char *msg, size_t len,
    eventlog_done_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_PUBLISH, sid, 0);

	op->cb.done = cb;
	op->arg = arg;
}

static void
mem_task_put(void *p, const char *tid, uint64_t rev, const char *rec,
    size_t len, uint64_t ttl_ms, int final, eventlog_done_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_TASK_PUT, tid, 0);

	op->seq = rev;
	op->max = ttl_ms;
	op->flags = final;
	mem_op_set_data(op, rec, len);
	op->cb.done = cb;
	op->arg = arg;
}

static void
mem_task_get(void *p, const char *tid, eventlog_task_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_TASK_GET, tid, 0);

	op->cb.task = cb;
	op->arg = arg;
}

static void
mem_keyring(void *p, uint64_t period_ms, const char *fresh1,
    const char *fresh2, eventlog_keyring_cb cb, void *arg)
{
	struct mem_op	*op = mem_op_new(p, MEM_KEYRING, "", 0);
	size_t		 l1 = strlen(fresh1) + 1, l2 = strlen(fresh2) + 1;

	op->len = l1 + l2;
	op->data = xmalloc(op->len);
	memcpy(op->data, fresh1, l1);
	memcpy(op->data + l1, fresh2, l2);
	op->max = period_ms;
	op->cb.keyring = cb;
	op->arg = arg;
}

static void
mem_free(void *p)
{
	struct mem		*m = p;
	struct mem_op		*op;
	struct mem_session	*ms, *ms1;
	struct mem_task		*t, *t1;
	int			 i;

	/* In order; what the callbacks queue meanwhile goes last. */
	for (;;) {
		TAILQ_CONCAT(&m->running, &m->ops, entry);
		if ((op = TAILQ_FIRST(&m->running)) == NULL)
			break;
		TAILQ_REMOVE(&m->running, op, entry);
		mem_op_cancel(op);
		mem_op_free(op);
	}
	RB_FOREACH_SAFE(ms, mem_sessions, &m->sessions, ms1)
		mem_session_free(m, ms);
	RB_FOREACH_SAFE(t, mem_tasks, &m->tasks, t1)
		mem_task_free(m, t);
	for (i = 0; i < 3; i++)
		free(m->ring.keys[i]);
	event_free(m->run_ev);
	event_free(m->cron_ev);
	free(m);
}

static const struct eventlog_ops mem_ops = {
	.name = "memory",
	.free = mem_free,
	.session_store = mem_session_store,
	.session_update = mem_session_update,
	.session_load = mem_session_load,
	.session_delete = mem_session_delete,
	.stream_create = mem_stream_create,
	.append = mem_append,
	.stream_end = mem_stream_end,
	.read = mem_read,
	.publish = mem_publish,
	.task_put = mem_task_put,
	.task_get = mem_task_get,
	.keyring = mem_keyring,
};

void *
eventlog_memory_create(struct event_base *base, const struct conf *conf,
    const struct eventlog_ops **ops, char **cause)
{
	struct mem	*m;
	struct timeval	 tv = { 1, 0 };

	m = xcalloc(1, sizeof *m);
	m->base = base;
	m->maxlen = (size_t)conf->stream_maxlen;
	m->max_streams = (size_t)conf->session_max_streams;
	m->ttl_ms = (uint64_t)conf->stream_ttl * 1000;
	m->max_tasks = (size_t)conf->max_tasks;
	RB_INIT(&m->sessions);
	RB_INIT(&m->tasks);
	TAILQ_INIT(&m->finished);
	TAILQ_INIT(&m->ops);
	TAILQ_INIT(&m->running);
	m->run_ev = evtimer_new(base, mem_run_cb, m);
	m->cron_ev = event_new(base, -1, EV_PERSIST, mem_cron_cb, m);
	event_add(m->cron_ev, &tv);
	*ops = &mem_ops;
	log_debug("eventlog: memory, stream_maxlen=%zu stream_ttl=%llus",
	    m->maxlen, (unsigned long long)conf->stream_ttl);
	return (m);
}
