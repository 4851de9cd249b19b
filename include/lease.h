/*
 * Leases: with a shared log, who runs a request stream's calls, and who
 * answers the requests they owe when that process or its log is gone.
 * The protocol is stated at the top of lease.c. Everything here names a
 * stream by its session id and K, and calls back with them: lease.c keeps
 * no pointer into sessions or streams, so it never outlives one.
 */
#ifndef MCPD_LEASE_H
#define MCPD_LEASE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "eventlog.h"

/*
 * How long a lease lives unless renewed (lease_ttl), how often its owner
 * renews it (a third of that, a second at most: two renewals may be lost
 * or late before the lease lapses), and how often a process showing a
 * stream written elsewhere checks its lease: a call whose process died is
 * found within lease_ttl + LEASE_CHECK_MS (plus a few round trips).
 */
#define LEASE_CHECK_MS	500
uint64_t lease_ttl_ms(void);
uint64_t lease_renew_ms(void);

/*
 * Whether a lease found missing now says that its owner is gone: the log
 * has answered steadily for a lease's lifetime and a renewal since its
 * last outage. An outage (Redis stalled or restarting, waited out by the
 * log) holds the owner's renewals back while the lease runs out on
 * Redis's clock; once Redis answers, a live owner renews within that time.
 */
int	 lease_lapse_counts(void);

/* The owner's side: the ids owed, and their calls' audit contexts. */
void	 lease_take(const char *, uint64_t, const cJSON *, const cJSON *);
void	 lease_renew(const char *, uint64_t);

/*
 * Tracing: the context of stream K's call (the call record "t:K", beside
 * the ids it owes), so that whoever resumes K or answers its calls
 * elsewhere traces into the same trace. lease_trace_get's cb runs once,
 * on a later loop turn, with the context or NULL (none, or the log could
 * not say).
 */
struct trace_ctx;
void	 lease_trace(const char *, uint64_t, const struct trace_ctx *);
typedef void (*lease_trace_cb)(const struct trace_ctx *, void *);
void	 lease_trace_get(const char *, uint64_t, lease_trace_cb, void *);

/*
 * Whether the owner of stream K is gone: cb runs once, on a later loop
 * turn, with the request ids K owes (maybe none) and K's head when the
 * lease lapsed while K is open; with ids NULL when the owner is alive, K
 * ended, or the log cannot tell now. With audit_log, the audit contexts
 * the owner left (an array, or NULL).
 */
typedef void (*lease_checked_cb)(const char *, uint64_t, const cJSON *,
		    uint64_t, const cJSON *, void *);
void	 lease_check(const char *, uint64_t, lease_checked_cb, void *);

/*
 * Ends stream K, whose head is `head`, with a JSON-RPC error for each of
 * the request ids, the last one final (or, with no ids, ends it bare).
 * `issued` is the highest entry of K the caller ever sent to the log:
 * above head, the log lost entries that clients may hold, and the errors
 * take their ids again (the only ids left: no holes), so it is recorded
 * first, in the note "x:K" (lease_lost_get), for resumes to tell a
 * client holding a lost entry from one behind the loss. cb runs once, on
 * a later loop turn: OK or the first failure, and the log's answer for
 * the last entry committed (NULL if none was).
 */
typedef void (*lease_answered_cb)(const char *, uint64_t,
		    enum eventlog_status, const struct eventlog_info *, void *);
void	 lease_answer(const char *, uint64_t, const cJSON *, uint64_t,
		    uint64_t, const char *, lease_answered_cb, void *);

/*
 * Whether stream K lost entries it had committed, and then had its
 * errors committed after what the log kept (lease_answer): cb runs once,
 * on a later loop turn, with found 1, the head the log kept and the
 * highest entry issued before the loss (a cursor K-N with head < N <=
 * issued names an entry the log lost); found 0 when none is recorded
 * (or the log cannot tell now). Shared logs only.
 */
typedef void (*lease_lost_cb)(int, uint64_t, uint64_t, void *);
void	 lease_lost_get(const char *, uint64_t, lease_lost_cb, void *);

/*
 * Settling: this process's append to stream K (committed up to `head`,
 * sent up to `issued`, as for lease_answer) was not answered. Until the
 * log answers again the lease is kept and the ids are answered after
 * whatever the log holds. cb runs on later loop turns, like a watch, for
 * each thing K's view must hear, and never after lease_forget for the
 * session.
 */
enum lease_event {
	LEASE_WAITED,		/* the view waited long enough: end at head */
	LEASE_COMMITTED,	/* entries up to head are in the log */
	LEASE_GONE		/* the log lost K (status says how): end */
};
typedef void (*lease_settle_cb)(const char *, uint64_t, enum lease_event,
		    enum eventlog_status, uint64_t, void *);
void	 lease_settle(const char *, uint64_t, uint64_t, uint64_t,
		    const cJSON *, lease_settle_cb, void *);
int	 lease_settling(const char *, uint64_t);
void	 lease_forget(const char *);

#endif
