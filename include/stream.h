/*
 * Logical streams: an append-only sequence of messages with ids K-N. A
 * request stream carries the notifications and the response(s) of one POST;
 * the standalone stream carries what the server sends outside any request.
 * Producers append here; the stream assigns N, commits through the event log
 * and, once committed, hands the entry to the stream's watcher (its view)
 * through the hooks the watcher registered. Under the block policy appends
 * wait in the stream until its client has received enough.
 */
#ifndef MCPD_STREAM_H
#define MCPD_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct eventlog_entry;
struct session;
struct stream;
struct stream_watcher;
struct trace_ctx;

enum stream_kind {
	STREAM_REQUEST,
	STREAM_STANDALONE
};

/*
 * Runs once per append, on a later loop turn: ok 1 once committed, 0 if
 * not (the stream is broken or ended). Under the block policy that may be
 * long after the append: a producer that waits for its callbacks is paused.
 */
typedef void (*stream_commit_cb)(int, void *);

/* Runs once per stream_open, on a later loop turn: ok 1 once created. */
typedef void (*stream_created_fn)(struct stream *, int, void *);

struct stream	*stream_open(struct session *, enum stream_kind,
		     stream_created_fn, void *);
struct stream	*stream_open_as(struct session *, enum stream_kind, uint64_t);
struct stream	*stream_restore(struct session *, enum stream_kind, uint64_t,
		     uint64_t);
void		 stream_close(struct stream *);
void		 stream_trace(struct stream *, const struct trace_ctx *);
const struct trace_ctx *stream_trace_ctx(const struct stream *);
void		 stream_discard(struct stream *);
void		 stream_release(struct stream *);
uint64_t	 stream_id(const struct stream *);
uint64_t	 stream_head(const struct stream *);
enum stream_kind stream_kind(const struct stream *);
int		 stream_ended(const struct stream *);

void		 stream_append(struct stream *, const char *, size_t, int,
		     stream_commit_cb, void *);
void		 stream_append_response(struct stream *, const char *, size_t,
		     int, const cJSON *, stream_commit_cb, void *);
void		 stream_end(struct stream *);
void		 stream_delivered(struct stream *, uint64_t);
/* Shared logs: delivery progress from views of other processes. */
void		 stream_progress(struct session *, uint64_t, uint64_t);
void		 stream_progress_check(struct stream *, int);

/* Responses still owed on a request stream; the last one ends it. */
void		 stream_expect_response(struct stream *, const cJSON *);
int		 stream_response_done(struct stream *);

/* Shared logs: who runs this stream's calls, so a dead owner is noticed. */
void		 stream_publish_owner(struct stream *);
int		 stream_is_request_open(const struct stream *);
void		 stream_check_orphan(struct session *, uint64_t);

/*
 * Watchers. What shows a stream to a client (a view) watches it with these
 * hooks, and the stream calls them, never the view's code by name. At most
 * one watcher per stream of a session: watching takes over from the one
 * before (its abort hook runs). A watcher may watch a stream this process
 * has no stream object for (another process writes it, or it ended): it
 * then hears of commits from the shared log's watch (published, missed)
 * and from the lease code. Any hook may end the watcher (stream_unwatch):
 * nothing touches it after the hook returns.
 */
struct stream_hooks {
	/* This process committed entry e; ended: the stream's last one. */
	void		(*committed)(void *, const struct eventlog_entry *,
			    int);
	/* Entries up to seq may be in the log and unseen: read them. */
	void		(*wakeup)(void *, uint64_t);
	/* Nothing after entry head will be committed: end after it. */
	void		(*lost)(void *, uint64_t);
	/* The session closes: end the response. */
	void		(*close)(void *, const char *);
	/* Another watcher took over: cut the connection. */
	void		(*abort)(void *, const char *);
	/* Polling: end once entry n is shown; -1 if it cannot. */
	int		(*close_after)(void *, uint64_t);
	/* The last entry the client is known to have received. */
	uint64_t	(*received)(void *);
};

/* Sole: only this process writes the stream; the shared log's echo of
 * its own commits is not needed. */
struct stream_watcher *stream_watch(struct session *, uint64_t, int,
		     const struct stream_hooks *, void *);
void		 stream_unwatch(struct stream_watcher *);
void		 stream_watcher_delivered(struct stream_watcher *, uint64_t);
void		 stream_watcher_published(struct stream_watcher *, uint64_t);
void		 stream_watcher_missed(struct stream_watcher *);
void		 stream_watcher_close(struct stream_watcher *, const char *);
int		 stream_watcher_local(const struct stream_watcher *);
int		 stream_close_after(struct stream *, uint64_t);
int64_t		 stream_view_close_after(const struct stream *);
int		 stream_policy_blocks(struct session *, uint64_t);

#endif
