/*
 * Logical streams: an append-only sequence of messages with ids K-N. A
 * request stream carries the notifications and the response(s) of one POST;
 * the standalone stream carries what the server sends outside any request.
 * Producers append here; the stream assigns N, commits through the event log
 * and, once committed, hands the entry to the stream's view. Under the block
 * policy appends wait in the stream until its client has received enough.
 */
#ifndef MCPD_STREAM_H
#define MCPD_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct session;
struct stream;

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
void		 stream_discard(struct stream *);
void		 stream_release(struct stream *);
uint64_t	 stream_id(const struct stream *);
uint64_t	 stream_head(const struct stream *);
enum stream_kind stream_kind(const struct stream *);
int		 stream_ended(const struct stream *);

void		 stream_append(struct stream *, const char *, size_t, int,
		     stream_commit_cb, void *);
void		 stream_append_response(struct stream *, const char *, size_t,
		     int, const cJSON *);
void		 stream_end(struct stream *);
void		 stream_delivered(struct stream *, uint64_t);

/* Polling: the stream's view ends after entry N; view_close_after. */
int		 stream_close_view(struct stream *, uint64_t);
int64_t		 stream_view_close_after(const struct stream *);

/* Responses still owed on a request stream; the last one ends it. */
void		 stream_expect_response(struct stream *, const cJSON *);
int		 stream_response_done(struct stream *);

/* Shared logs: who runs this stream's calls, so a dead owner is noticed. */
#define STREAM_LEASE_MS		5000
void		 stream_publish_owner(struct stream *);
void		 stream_renew_lease(struct stream *);
int		 stream_is_request_open(const struct stream *);

#endif
