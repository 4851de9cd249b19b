/*
 * The event log: one asynchronous API, two backends (memory, redis).
 *
 * Every call takes (cb, arg) and runs cb exactly once, never before the call
 * returns, with a status; the caller keeps arg alive until then. Data handed
 * to a callback is valid only during the callback.
 *
 * A stream is an append-only sequence of entries numbered 0, 1, 2... with no
 * holes; entry 0 is the priming entry written when the stream is created.
 * Appends are compare-and-append: the caller names the sequence number it
 * expects to write, and the log refuses anything else.
 */
#ifndef MCPD_EVENTLOG_H
#define MCPD_EVENTLOG_H

#include <stddef.h>
#include <stdint.h>

#include "eventlog_status.h"

struct conf;
struct event_base;
struct eventlog;


#define EVENTLOG_FINAL	0x1	/* append: the stream's last entry */

struct eventlog_entry {
	uint64_t	 seq;
	const char	*data;
	size_t		 len;
};

/* What the log knows of a stream when it answers a read or an append. */
struct eventlog_info {
	uint64_t	 oldest;	/* oldest retained entry */
	uint64_t	 head;		/* last committed entry */
	int		 ended;		/* no entry will follow head */
	const char	*data;		/* a committed append: its entry */
	size_t		 len;
};

typedef void (*eventlog_done_cb)(enum eventlog_status, void *);
typedef void (*eventlog_append_cb)(enum eventlog_status,
		    const struct eventlog_info *, void *);
typedef void (*eventlog_read_cb)(enum eventlog_status,
		    const struct eventlog_entry *, size_t,
		    const struct eventlog_info *, void *);
typedef void (*eventlog_load_cb)(enum eventlog_status, const char *, size_t,
		    void *);
/*
 * A watch callback: (sid, k, seq, arg). k > 0: entry seq of stream k was
 * committed (by this instance or another one). k == 0: the watch became live
 * or was re-established after a lost connection; commits may have been
 * missed, so re-read what you follow.
 */
typedef void (*eventlog_watch_cb)(const char *, uint64_t, uint64_t, void *);
/*
 * A message callback: (sid, msg, len, arg), for a message published on the
 * session by any process sharing the log, this one included
 * (eventlog_publish), or by the log itself: EVENTLOG_MESSAGE_DELETED once
 * the session is deleted. Messages are not kept: one sent while a watch was
 * not live is lost (its k == 0 call follows), so what matters is also left
 * where it can be read again.
 */
typedef void (*eventlog_message_cb)(const char *, const char *, size_t,
		    void *);
/* A task record: (status, its revision, the record, its length, arg). */
typedef void (*eventlog_task_cb)(enum eventlog_status, uint64_t,
		    const char *, size_t, void *);

/*
 * Limits (limit.c) in a shared log: a token bucket with its daily quota
 * (eventlog_take), and slots of calls running at once (eventlog_slot).
 */
struct eventlog_take {
	const char	*key;		/* the bucket's name (its own slot) */
	uint64_t	 rate;		/* tokens a period; 0: no bucket */
	uint64_t	 period_ms;
	uint64_t	 burst;		/* the bucket's size */
	uint64_t	 quota;		/* a day; 0: none */
	uint64_t	 want;		/* tokens asked for */
	uint64_t	 min;		/* fewer than this are none */
	uint64_t	 back;		/* taken before, unused: given back */
	uint64_t	 back_day;	/* the day they were taken on */
};
struct eventlog_taken {
	uint64_t	 granted;	/* 0, or min to want */
	uint64_t	 wait_ms;	/* none granted: until min are due */
	uint64_t	 day;		/* the log's day, since the epoch, UTC */
	int		 quota;		/* none granted: the quota's doing */
};
typedef void (*eventlog_take_cb)(enum eventlog_status,
		    const struct eventlog_taken *, void *);
enum eventlog_slot_op {
	EVENTLOG_SLOT_TAKE,	/* one member, if fewer than max are there */
	EVENTLOG_SLOT_RENEW,	/* the members live ttl_ms from now */
	EVENTLOG_SLOT_FREE
};
/* A slot op's answer: whether the member was taken (TAKE), else 1. */
typedef void (*eventlog_slot_cb)(enum eventlog_status, int, void *);

/* The keyring (eventlog_keyring): its keys are NUL-terminated strings. */
struct eventlog_keyring {
	uint64_t	 generation;	/* 1, then one more each rotation */
	const char	*previous;	/* "" until the first rotation */
	const char	*current;
	const char	*next;
};
typedef void (*eventlog_keyring_cb)(enum eventlog_status,
		    const struct eventlog_keyring *, void *);
/* The longest key the keyring keeps. */
#define EVENTLOG_KEY_MAX	256

/* The log's own message; callers' messages never start with '!'. */
#define EVENTLOG_MESSAGE_DELETED	"!deleted"
/* The longest message eventlog_publish takes. */
#define EVENTLOG_MESSAGE_MAX		16384

/* One server of a log of several (Redis Cluster's nodes). */
struct eventlog_node {
	const char	*server;	/* host:port */
	const char	*role;		/* as it says ("master"), or NULL */
	int		 slots;		/* slots the map gives it */
	const char	*state;		/* "ready", "connecting", "closed" */
	const char	*why;		/* not ready: why, else NULL */
};

/*
 * Where the log is and how it is doing (eventlog_describe), for /healthz
 * and /metrics; the strings, and nodes, live until the log's next
 * operation.
 */
struct eventlog_where {
	const char	*address;	/* the eventlog URL, password as *** */
	const char	*server;	/* host:port or socket it is on, or NULL */
	const char	*role;		/* that server's role ("master"), or NULL */
	int		 tls;		/* over TLS */
	int		 tls_verify;	/* the server's certificate checked */
	const char	*tls_version;	/* once connected, else NULL */
	const char	*tls_cipher;
	uint64_t	 failovers;	/* changes of primary seen */
	uint64_t	 connects;	/* command connections set up */
	const char	*why;		/* not available: why, else NULL */
	const struct eventlog_node *nodes;	/* a cluster's, or NULL */
	size_t		 nnodes;
};

/* A backend: one vtable, filled by eventlog_memory.c or eventlog_redis.c. */
struct eventlog_ops {
	const char *name;
	void	(*free)(void *);
	void	(*session_store)(void *, const char *, const char *, size_t,
		    eventlog_done_cb, void *);
	void	(*session_update)(void *, const char *, const char *, size_t,
		    eventlog_done_cb, void *);
	void	(*session_load)(void *, const char *, eventlog_load_cb, void *);
	void	(*session_delete)(void *, const char *, eventlog_done_cb,
		    void *);
	void	(*stream_create)(void *, const char *, uint64_t,
		    eventlog_append_cb, void *);
	void	(*append)(void *, const char *, uint64_t, uint64_t,
		    const char *, size_t, int, eventlog_append_cb, void *);
	void	(*stream_end)(void *, const char *, uint64_t,
		    eventlog_append_cb, void *);
	void	(*read)(void *, const char *, uint64_t, uint64_t, size_t,
		    eventlog_read_cb, void *);
	/* Optional (NULL: commits are only made by this process). */
	void	(*watch)(void *, const char *, eventlog_watch_cb,
		    eventlog_message_cb, void *);
	void	(*unwatch)(void *, const char *, eventlog_watch_cb,
		    eventlog_message_cb, void *);
	void	(*publish)(void *, const char *, const char *, size_t,
		    eventlog_done_cb, void *);
	/* Optional, shared logs only: small session-scoped values with TTL. */
	void	(*note_set)(void *, const char *, const char *, const char *,
		    size_t, uint64_t, eventlog_done_cb, void *);
	void	(*note_get)(void *, const char *, const char *,
		    eventlog_load_cb, void *);
	/* Task records (task.c). */
	void	(*task_put)(void *, const char *, uint64_t, const char *,
		    size_t, uint64_t, int, eventlog_done_cb, void *);
	void	(*task_get)(void *, const char *, eventlog_task_cb, void *);
	void	(*keyring)(void *, uint64_t, const char *, const char *,
		    eventlog_keyring_cb, void *);
	/* Optional, shared logs only: limits (limit.c). */
	void	(*take)(void *, const struct eventlog_take *,
		    eventlog_take_cb, void *);
	void	(*slot)(void *, enum eventlog_slot_op, const char *, uint64_t,
		    uint64_t, const char *const *, size_t, eventlog_slot_cb,
		    void *);
	/* Optional (NULL: always): whether operations may succeed now. */
	int	(*available)(void *);
	/* Optional (NULL: always available, nothing to tell). */
	void	(*on_available)(void *, void (*)(void *), void *);
	/* Optional (NULL: never in an outage): see eventlog_steady_ms. */
	uint64_t (*steady)(void *);
	/* Optional: see eventlog_describe and eventlog_reconfigure. */
	void	(*describe)(void *, struct eventlog_where *);
	int	(*reconfigure)(void *, const struct conf *, char **);
};

struct eventlog	*eventlog_create(struct event_base *, const struct conf *,
		     char **);
void		 eventlog_free(struct eventlog *);
uint64_t	 eventlog_new_stream_id(void);

void	eventlog_session_store(struct eventlog *, const char *, const char *,
	    size_t, eventlog_done_cb, void *);
/*
 * Replaces the meta of a session the log has, as a store does; NOT_FOUND
 * (and nothing written) once the log has lost it: a holder re-storing a
 * session it keeps in memory never brings back one the log forgot.
 */
void	eventlog_session_update(struct eventlog *, const char *, const char *,
	    size_t, eventlog_done_cb, void *);
void	eventlog_session_load(struct eventlog *, const char *,
	    eventlog_load_cb, void *);
void	eventlog_session_delete(struct eventlog *, const char *,
	    eventlog_done_cb, void *);

/*
 * Creates stream K of a session and commits its priming entry 0. K is never
 * 0 (eventlog_new_stream_id() does not draw it; creating it is CONFLICT).
 */
void	eventlog_stream_create(struct eventlog *, const char *, uint64_t,
	    eventlog_append_cb, void *);
/* Commits entry `seq` of stream K; refused unless the head is seq - 1. */
void	eventlog_append(struct eventlog *, const char *, uint64_t, uint64_t,
	    const char *, size_t, int, eventlog_append_cb, void *);
/* Ends a stream without a final entry (a cancelled call); TTL starts. */
void	eventlog_stream_end(struct eventlog *, const char *, uint64_t,
	    eventlog_append_cb, void *);
/*
 * Reads up to max entries of stream K starting at entry `from`. EVENTLOG_OK
 * with zero entries means nothing after from - 1 yet. TRIMMED when entry
 * `from` is no longer retained, AHEAD when from - 1 is beyond the head.
 */
void	eventlog_read(struct eventlog *, const char *, uint64_t, uint64_t,
	    size_t, eventlog_read_cb, void *);

/*
 * Live following across instances: cb runs (never inside this call) for
 * every commit to any stream of the session, and mcb (if not NULL) for
 * every message published on it, until the matching unwatch. Watches are
 * counted: each watch needs one unwatch with the same sid, cb, mcb and
 * arg. Backends without cross-process commits (memory) do nothing, as
 * their in-process commits are already seen by the session layer.
 */
int	eventlog_shared(const struct eventlog *);
/*
 * Whether the backend can take operations now (redis: its command
 * connection is up and set up), for /readyz and /healthz; and its name.
 */
int		 eventlog_available(const struct eventlog *);
const char	*eventlog_name(const struct eventlog *);
/* Where the log is, how it is doing, and why it is not available. */
void		 eventlog_describe(const struct eventlog *,
		     struct eventlog_where *);
/*
 * A reload: takes up what a running log can (redis: the credentials and
 * the TLS files, for connections made from now on; a connection refused
 * for its credentials is tried again at once). -1 with *cause, and
 * nothing changed, when the new settings cannot be used.
 */
int		 eventlog_reconfigure(struct eventlog *, const struct conf *,
		     char **);
/*
 * cb(arg) runs each time the log becomes able to take operations after it
 * could not (redis: its command connection set up), never inside this
 * call; a NULL cb stops it. One at a time: statekey.c reads the keyring then.
 */
void		 eventlog_on_available(struct eventlog *, void (*)(void *),
		     void *);
/*
 * How long (ms) the log has answered since it last came back from an
 * outage it noticed (redis: a stall of its reply timeout or a lost
 * connection, waited out or not; not its first connection); 0 while it is
 * in one or has never answered; UINT64_MAX for a log that has none
 * (memory). A lease found missing means its owner is gone only once this
 * is longer than the lease: an outage holds renewals back too.
 */
uint64_t	 eventlog_steady_ms(const struct eventlog *);
void	eventlog_watch(struct eventlog *, const char *, eventlog_watch_cb,
	    eventlog_message_cb, void *);
void	eventlog_unwatch(struct eventlog *, const char *, eventlog_watch_cb,
	    eventlog_message_cb, void *);
/*
 * Sends a message (at most EVENTLOG_MESSAGE_MAX bytes, not starting with
 * '!') to every process watching the session, this one included; cb runs
 * once it is sent (OK, whether or not anybody listened). Messages to the
 * session follow every operation asked for before, in order: a note set
 * before a message is there for whoever reads it on receipt. Where no
 * other process shares the log (memory) nobody hears it, and cb says OK.
 */
void	eventlog_publish(struct eventlog *, const char *, const char *,
	    size_t, eventlog_done_cb, void *);

/*
 * Notes: small values of a session, named, each with its own lifetime in
 * milliseconds (shared logs only). Leases of running calls are notes, so
 * another process can tell a call whose process died from a slow one.
 */
void	eventlog_note_set(struct eventlog *, const char *, const char *,
	    const char *, size_t, uint64_t, eventlog_done_cb, void *);
void	eventlog_note_get(struct eventlog *, const char *, const char *,
	    eventlog_load_cb, void *);

/*
 * Task records: one value per task id (its own namespace, apart from
 * sessions), each with a revision number and a lifetime. A put of
 * revision rev is compare-and-set: rev 1 creates the record (CONFLICT if
 * one is there; FULL if the log holds as many as it may, max_tasks, in
 * memory), any later rev replaces revision rev - 1 (CONFLICT if another
 * revision is there, NOT_FOUND if the record is gone). The record then
 * lives ttl_ms from this put. final says the record is done with (its
 * task finished): a log that counts records (memory) may forget it
 * before its lifetime ends, the longest final first, to make room for a
 * new one; a record not final is never forgotten early. A get answers
 * the revision and the record, or NOT_FOUND once it is gone (never
 * written, its lifetime ended, or forgotten).
 */
void	eventlog_task_put(struct eventlog *, const char *, uint64_t,
	    const char *, size_t, uint64_t, int, eventlog_done_cb, void *);
void	eventlog_task_get(struct eventlog *, const char *, eventlog_task_cb,
	    void *);

/*
 * The keyring: three keys every process sharing the log agrees on (seal.c
 * signs what clients bring back with them). The first call creates it:
 * generation 1, current fresh1, next fresh2, no previous. A call once
 * the period_ms of the call that last changed it has passed rotates it:
 * previous takes current, current takes next, next becomes fresh1, and
 * the generation grows by one. Any other call answers it as it is (the
 * log's clock times the period, not the callers'). So every key is
 * known (as next) for a whole period before it becomes current, and still
 * known (as previous) for a period after. Keys are strings of 1 to
 * EVENTLOG_KEY_MAX bytes without NUL; cb's ring is valid during cb only.
 * The ring has no lifetime: it lasts as long as the log's data.
 */
void	eventlog_keyring(struct eventlog *, uint64_t, const char *,
	    const char *, eventlog_keyring_cb, void *);

/*
 * Limits, in a shared log only (limit.c keeps its own buckets
 * otherwise). A take refills bucket key at rate tokens a period_ms (from
 * the log's clock, so the instances' clocks do not matter), up to burst,
 * adds back what back gives (never past burst; to the quota only if
 * back_day is today), and grants as many tokens as it holds, want at
 * most, and no more than the quota leaves today: none if that is fewer
 * than min, with the time until min would be due (the next UTC midnight
 * when the quota refused). Tokens leave the bucket when granted.
 *
 * Slots bound what runs at once: a TAKE adds member (unless max members
 * or more are alive), a RENEW makes members live ttl_ms from now (adding
 * back one that lapsed), a FREE removes them; members not renewed lapse
 * after ttl_ms, so those of a process that died are freed by time.
 */
void	eventlog_take(struct eventlog *, const struct eventlog_take *,
	    eventlog_take_cb, void *);
void	eventlog_slot(struct eventlog *, enum eventlog_slot_op, const char *,
	    uint64_t, uint64_t, const char *const *, size_t, eventlog_slot_cb,
	    void *);

/* Backend constructors. */
void	*eventlog_memory_create(struct event_base *, const struct conf *,
	    const struct eventlog_ops **, char **);
void	*eventlog_redis_create(struct event_base *, const struct conf *,
	    const struct eventlog_ops **, char **);
void	*eventlog_redis_cluster_create(struct event_base *,
	    const struct conf *, const struct eventlog_ops **, char **);

#endif
