/*
 * The lease protocol. With a shared log (Redis), any process may show a
 * request stream, but only the one that runs the stream's calls writes
 * their responses. If that process dies (kill -9, a crash), nobody ever
 * would: the requests would hang. Notes of the session (small values with
 * a TTL, eventlog_note_set) say who is alive:
 *
 * 1. The owner. Once a request stream K is created and its calls started,
 *    the process running them writes "r:K", the JSON array of the request
 *    ids K owes a response to (kept as long as K may be resumed), with
 *    audit_log "u:K", what the audit lines of those calls need (audit.c),
 *    and takes the lease "l:K" for lease_ttl (lease_take). Every
 *    lease_renew_ms(), while it still has something to write to K, it
 *    renews the lease (lease_renew, from session_renew_leases). Once K
 *    ended, or when the process lets the session go, the lease simply
 *    runs out.
 *
 * 2. Everyone else. A process showing K that none of its own calls writes
 *    checks the lease every LEASE_CHECK_MS (stream_check_orphan, from
 *    view_check_orphans, calls lease_check). When "l:K" is gone and K is
 *    still open, its owner is dead: this process reads "r:K" (and "u:K")
 *    and K's head, and commits after the head a JSON-RPC error for each
 *    id owed, the last one final (lease_answer), or ends K if no id is on
 *    record; it writes the audit lines of the errors it committed. It
 *    waits while those entries would push what its client has not read
 *    out of retention.
 *    The appends are compare-and-append: two processes cannot both answer,
 *    and a late owner cannot write after the answers. A lease missing
 *    right after an outage of the log proves nothing (lease_lapse_counts):
 *    a Redis that stalls or restarts holds the owner's renewals back (the
 *    log waits it out, eventlog_outage_grace) while the lease runs out on
 *    its clock; so a lapse counts once this process's log has answered
 *    steadily for lease_ttl and a renewal, time enough for a live owner,
 *    whose renewals waited too, to renew.
 *
 * 3. The owner whose log failed. An append the log did not answer (down,
 *    or silent for its reply timeout) may or may not have landed; the
 *    stream is broken and its calls end. The owner still owes each id
 *    without a response an error saying so (lease_settle): it keeps the
 *    lease meanwhile, so no other process takes it for dead, and every
 *    LEASE_SETTLE_RETRY_MS reads K's head and answers after whatever the
 *    log holds, as in 2. A view that has waited LEASE_SETTLE_GRACE_MS
 *    ends once it has shown what was committed, so its client hears within
 *    a bound even if the log stays away: it resumes, is answered 503 while
 *    the log is down, then reads the error.
 *
 * The answers go after the head the log has. When that is below what
 * the owner had sent (a failover under commit primary lost the last
 * entries, found by a refused append, or by a settle's read), the first
 * error takes an id a lost entry had, which a client may hold: the owner
 * first writes "x:K", "HEAD SENT", and a resume of the ended stream with
 * a cursor in between is answered 410 "ahead" (lease_lost_get, view.c).
 * An orphan's answerer cannot know what the dead owner sent: its answers
 * carry no such note.
 *
 * With tracing on, the owner also writes "t:K", the traceparent of K's
 * call, for as long as "r:K" lives: a process that resumes K or answers
 * its calls (2, 3) traces them into the call's trace.
 *
 * This file is the log side of all three: the notes, the checks, the
 * answers, the retries. It names streams by session id and K and keeps no
 * pointer into sessions or streams; stream.c decides when to call it and
 * tells the stream's view what it learns.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "lease.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "trace.h"
#include "xmalloc.h"

#define LEASE_SETTLE_RETRY_MS	500
#define LEASE_SETTLE_GRACE_MS	3000
#define LEASE_SETTLE_CONFLICTS	16

/* "l:K" (the lease), "r:K" (the ids owed) or "t:K" (the call's trace). */
#define LEASE_NAME_LEN		40

static void
lease_name(char *name, const char *what, uint64_t k)
{
	snprintf(name, LEASE_NAME_LEN, "%s:%llu", what, (unsigned long long)k);
}

uint64_t
lease_ttl_ms(void)
{
	return ((uint64_t)server.conf->lease_ttl * 1000);
}

uint64_t
lease_renew_ms(void)
{
	uint64_t	ms = lease_ttl_ms() / 3;

	return (ms < 1000 ? ms : 1000);
}

int
lease_lapse_counts(void)
{
	return (eventlog_steady_ms(server.eventlog) >=
	    lease_ttl_ms() + lease_renew_ms());
}

/* ---------------------------------------------------------------------
 * 1. The owner's notes.
 */

struct lease_note {
	char		 sid[SESSION_ID_LEN + 1];
	uint64_t	 k;
	int		 quiet;		/* a settle's: the log is known down */
};

static void
lease_noted_cb(enum eventlog_status status, void *arg)
{
	struct lease_note	*n = arg;

	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED && !n->quiet)
		log_limited(LOG_LEVEL_WARN, "lease", "session=%s stream=%llu "
		    "lease not written: %s", n->sid, (unsigned long long)n->k,
		    eventlog_status_name(status));
	free(n);
}

static void
lease_note(const char *sid, uint64_t k, const char *what, const char *value,
    uint64_t ttl_ms, int quiet)
{
	struct lease_note	*n;
	char			 name[LEASE_NAME_LEN];

	n = xcalloc(1, sizeof *n);
	strlcpy(n->sid, sid, sizeof n->sid);
	n->k = k;
	n->quiet = quiet;
	lease_name(name, what, k);
	eventlog_note_set(server.eventlog, sid, name, value, strlen(value),
	    ttl_ms, lease_noted_cb, n);
}

/*
 * Stream K of session sid owes responses to ids and this process runs the
 * calls that write them: says so, for as long as K may be resumed, and
 * takes the lease.
 */
void
lease_take(const char *sid, uint64_t k, const cJSON *ids, const cJSON *audit)
{
	const struct conf	*conf = server.conf;
	uint64_t		 ttl;
	char			*text;

	if (!server.shared)
		return;
	ttl = (uint64_t)(conf->stream_ttl + conf->session_ttl) * 1000;
	text = cJSON_PrintUnformatted(ids);
	lease_note(sid, k, "r", text, ttl, 0);
	free(text);
	if (cJSON_GetArraySize(audit) > 0) {
		text = cJSON_PrintUnformatted(audit);
		lease_note(sid, k, "u", text, ttl, 0);
		free(text);
	}
	lease_renew(sid, k);
}

void
lease_renew(const char *sid, uint64_t k)
{
	if (server.shared)
		lease_note(sid, k, "l", "1", lease_ttl_ms(), 0);
}

void
lease_trace(const char *sid, uint64_t k, const struct trace_ctx *ctx)
{
	const struct conf	*conf = server.conf;
	char			 tp[TRACE_PARENT_LEN + 1];

	if (!server.shared)
		return;
	/* Not sampled, while some roots are: "-", so resumes are not either. */
	if (ctx->state == TRACE_CTX_DROPPED && trace_sampling())
		strlcpy(tp, "-", sizeof tp);
	else if (trace_format(ctx, tp) != 0)
		return;
	lease_note(sid, k, "t", tp,
	    (uint64_t)(conf->stream_ttl + conf->session_ttl) * 1000, 0);
}

struct lease_trace_read {
	lease_trace_cb	 cb;
	void		*arg;
};

static void
lease_trace_got_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct lease_trace_read	*r = arg;
	struct trace_ctx	 ctx;
	char			 tp[TRACE_PARENT_LEN + 1];

	if (status == EVENTLOG_OK && len == 1 && *value == '-') {
		memset(&ctx, 0, sizeof ctx);
		ctx.state = TRACE_CTX_DROPPED;
		r->cb(&ctx, r->arg);
		free(r);
		return;
	}
	if (status == EVENTLOG_OK && len == TRACE_PARENT_LEN) {
		memcpy(tp, value, len);
		tp[len] = '\0';
		if (trace_parse(tp, &ctx) == 0) {
			r->cb(&ctx, r->arg);
			free(r);
			return;
		}
	}
	r->cb(NULL, r->arg);
	free(r);
}

void
lease_trace_get(const char *sid, uint64_t k, lease_trace_cb cb, void *arg)
{
	struct lease_trace_read	*r;
	char			 name[LEASE_NAME_LEN];

	r = xmalloc(sizeof *r);
	r->cb = cb;
	r->arg = arg;
	lease_name(name, "t", k);
	eventlog_note_get(server.eventlog, sid, name, lease_trace_got_cb, r);
}

/* ---------------------------------------------------------------------
 * 2. Is the owner alive?
 */

struct lease_check {
	char			 sid[SESSION_ID_LEN + 1];
	uint64_t		 k;
	cJSON			*ids;
	cJSON			*audit;		/* "u:K", if any */
	lease_checked_cb	 cb;
	void			*arg;
};

static void
lease_check_done(struct lease_check *c, const struct eventlog_info *info)
{
	c->cb(c->sid, c->k, info != NULL ? c->ids : NULL,
	    info != NULL ? info->head : 0, c->audit, c->arg);
	cJSON_Delete(c->ids);
	cJSON_Delete(c->audit);
	free(c);
}

static void
lease_check_head_cb(enum eventlog_status status,
    const struct eventlog_entry *entries, size_t n,
    const struct eventlog_info *info, void *arg)
{
	struct lease_check	*c = arg;

	if (info != NULL && info->ended)
		info = NULL;		/* ended after all: nothing owed */
	lease_check_done(c, info);
}

/* Reading from entry 0 answers with the head, trimmed or not. */
static void
lease_check_head(struct lease_check *c)
{
	eventlog_read(server.eventlog, c->sid, c->k, 0, 0, lease_check_head_cb,
	    c);
}

static void
lease_check_audit_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct lease_check	*c = arg;

	if (status == EVENTLOG_OK)
		c->audit = cJSON_ParseWithLength(value, len);
	if (!cJSON_IsArray(c->audit)) {
		cJSON_Delete(c->audit);
		c->audit = NULL;
	}
	lease_check_head(c);
}

static void
lease_check_ids_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct lease_check	*c = arg;
	char			 name[LEASE_NAME_LEN];

	if (status == EVENTLOG_OK)
		c->ids = cJSON_ParseWithLength(value, len);
	if (!cJSON_IsArray(c->ids)) {
		cJSON_Delete(c->ids);
		c->ids = cJSON_CreateArray();
	}
	if (audit_enabled()) {
		lease_name(name, "u", c->k);
		eventlog_note_get(server.eventlog, c->sid, name,
		    lease_check_audit_cb, c);
		return;
	}
	lease_check_head(c);
}

static void
lease_check_lease_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct lease_check	*c = arg;
	char			 name[LEASE_NAME_LEN];

	if (status != EVENTLOG_NOT_FOUND || !lease_lapse_counts()) {
		lease_check_done(c, NULL);	/* alive, or cannot tell now */
		return;
	}
	lease_name(name, "r", c->k);
	eventlog_note_get(server.eventlog, c->sid, name, lease_check_ids_cb, c);
}

void
lease_check(const char *sid, uint64_t k, lease_checked_cb cb, void *arg)
{
	struct lease_check	*c;
	char			 name[LEASE_NAME_LEN];

	c = xcalloc(1, sizeof *c);
	strlcpy(c->sid, sid, sizeof c->sid);
	c->k = k;
	c->cb = cb;
	c->arg = arg;
	lease_name(name, "l", k);
	eventlog_note_get(server.eventlog, sid, name, lease_check_lease_cb, c);
}

/* ---------------------------------------------------------------------
 * The error answers, for 2 and 3.
 */

struct lease_answer {
	char			 sid[SESSION_ID_LEN + 1];
	uint64_t		 k;
	int			 left;		/* appends unanswered */
	enum eventlog_status	 status;	/* the first failure, or OK */
	struct eventlog_info	 last;		/* the last one committed */
	int			 committed;
	int			 quiet;		/* the caller logs failures */
	lease_answered_cb	 cb;
	void			*arg;
	/* Tracing: the answer is a span of the call's trace (t:K). */
	struct trace_span	*span;
	cJSON			*ids;
	uint64_t		 head;
	char			*message;
};

static void
lease_answer_appended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct lease_answer	*a = arg;

	if (status == EVENTLOG_OK && info != NULL) {
		if (!a->committed || info->head > a->last.head) {
			a->last = *info;
			a->last.data = NULL;
			a->last.len = 0;
		}
		a->committed = 1;
	} else if (status != EVENTLOG_OK && a->status == EVENTLOG_OK)
		a->status = status;
	if (--a->left > 0)
		return;
	if (a->status != EVENTLOG_OK && !a->quiet)
		log_limited(LOG_LEVEL_INFO, "error-answer", "session=%s "
		    "stream=%llu error answer not committed: %s", a->sid,
		    (unsigned long long)a->k, eventlog_status_name(a->status));
	if (a->status != EVENTLOG_OK)
		trace_error(a->span, eventlog_status_name(a->status), NULL);
	trace_end(a->span);
	a->cb(a->sid, a->k, a->status, a->committed ? &a->last : NULL, a->arg);
	free(a);
}

static void
lease_answer_ended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	lease_answer_appended_cb(status, info, arg);
}

static void
lease_answer_send(struct lease_answer *a, const cJSON *ids, uint64_t head,
    const char *message)
{
	const cJSON		*id;
	cJSON			*msg;
	char			*text;
	int			 i, count = cJSON_GetArraySize(ids);

	a->left = count > 0 ? count : 1;
	if (count == 0) {
		/* No ids on record: end the stream so views do not hang. */
		eventlog_stream_end(server.eventlog, a->sid, a->k,
		    lease_answer_ended_cb, a);
		return;
	}
	for (i = 0; i < count; i++) {
		id = cJSON_GetArrayItem(ids, i);
		msg = jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, message, NULL);
		text = cJSON_PrintUnformatted(msg);
		cJSON_Delete(msg);
		eventlog_append(server.eventlog, a->sid, a->k, ++head, text,
		    strlen(text), i == count - 1 ? EVENTLOG_FINAL : 0,
		    lease_answer_appended_cb, a);
		free(text);
	}
}

/* The call's trace context is read (NULL: none): the answer is a span of
 * it. */
static void
lease_answer_traced_cb(const struct trace_ctx *ctx, void *arg)
{
	struct lease_answer	*a = arg;

	if (ctx != NULL) {
		a->span = trace_start("lease answer", TRACE_INTERNAL, ctx,
		    NULL);
		trace_attr_str(a->span, "mcp.session.id", a->sid);
		trace_attr_int(a->span, "mcpd.stream.id", (int64_t)a->k);
		trace_attr_int(a->span, "mcpd.answer.ids",
		    cJSON_GetArraySize(a->ids));
		trace_error(a->span, "interrupted", a->message);
	}
	lease_answer_send(a, a->ids, a->head, a->message);
	cJSON_Delete(a->ids);
	a->ids = NULL;
	free(a->message);
	a->message = NULL;
}

static void
lease_answer_start(struct lease_answer *a)
{
	if (!trace_enabled || !server.shared) {
		lease_answer_traced_cb(NULL, a);
		return;
	}
	/* Answered elsewhere, still in the call's trace. */
	lease_trace_get(a->sid, a->k, lease_answer_traced_cb, a);
}

/*
 * The loss is recorded (or could not be: the answers go anyway, the
 * calls are owed them; the log that refused the note most likely
 * refuses them too).
 */
static void
lease_answer_marked_cb(enum eventlog_status status, void *arg)
{
	struct lease_answer	*a = arg;

	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "lease", "session=%s stream=%llu "
		    "loss not recorded: %s", a->sid, (unsigned long long)a->k,
		    eventlog_status_name(status));
	lease_answer_start(a);
}

static void
lease_answer_quiet(const char *sid, uint64_t k, const cJSON *ids,
    uint64_t head, uint64_t issued, const char *message, int quiet,
    lease_answered_cb cb, void *arg)
{
	const struct conf	*conf = server.conf;
	struct lease_answer	*a;
	char			 name[LEASE_NAME_LEN], value[48];

	a = xcalloc(1, sizeof *a);
	strlcpy(a->sid, sid, sizeof a->sid);
	a->k = k;
	a->status = EVENTLOG_OK;
	a->quiet = quiet;
	a->cb = cb;
	a->arg = arg;
	a->ids = cJSON_Duplicate(ids, 1);
	a->head = head;
	a->message = xstrdup(message);
	if (!server.shared || issued <= head) {
		lease_answer_start(a);
		return;
	}
	/*
	 * Entries head + 1 to issued were committed, and may have reached
	 * clients, before the log lost them; the errors take the first of
	 * those ids again. Recorded first, for as long as K may be resumed,
	 * so that no resume ever sees the errors without it.
	 */
	log_limited(LOG_LEVEL_ERROR, "lost", "session=%s stream=%llu: the "
	    "event log lost entries %llu to %llu of it; cursors there are "
	    "answered 410 ahead", sid, (unsigned long long)k,
	    (unsigned long long)(head + 1), (unsigned long long)issued);
	lease_name(name, "x", k);
	snprintf(value, sizeof value, "%llu %llu", (unsigned long long)head,
	    (unsigned long long)issued);
	eventlog_note_set(server.eventlog, sid, name, value, strlen(value),
	    (uint64_t)(conf->stream_ttl + conf->session_ttl) * 1000,
	    lease_answer_marked_cb, a);
}

void
lease_answer(const char *sid, uint64_t k, const cJSON *ids, uint64_t head,
    uint64_t issued, const char *message, lease_answered_cb cb, void *arg)
{
	lease_answer_quiet(sid, k, ids, head, issued, message, 0, cb, arg);
}

struct lease_lost_read {
	lease_lost_cb	 cb;
	void		*arg;
};

static void
lease_lost_got_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct lease_lost_read	*r = arg;
	unsigned long long	 head, issued;
	char			 text[48];
	int			 found = 0;

	if (status == EVENTLOG_OK && len > 0 && len < sizeof text) {
		memcpy(text, value, len);
		text[len] = '\0';
		found = sscanf(text, "%llu %llu", &head, &issued) == 2 &&
		    head < issued;
	}
	if (found)
		r->cb(1, (uint64_t)head, (uint64_t)issued, r->arg);
	else
		r->cb(0, 0, 0, r->arg);
	free(r);
}

void
lease_lost_get(const char *sid, uint64_t k, lease_lost_cb cb, void *arg)
{
	struct lease_lost_read	*r;
	char			 name[LEASE_NAME_LEN];

	r = xmalloc(sizeof *r);
	r->cb = cb;
	r->arg = arg;
	lease_name(name, "x", k);
	eventlog_note_get(server.eventlog, sid, name, lease_lost_got_cb, r);
}

/* ---------------------------------------------------------------------
 * 3. Settling what this process owes after its log failed.
 */

struct lease_settle {
	char				 sid[SESSION_ID_LEN + 1];
	uint64_t			 k;
	uint64_t			 head;		/* committed here */
	uint64_t			 issued;	/* sent to the log */
	cJSON				*ids;
	uint64_t			 since_ms;
	int				 busy;		/* a try in flight */
	int				 cancelled;	/* session gone */
	int				 conflicts;
	int				 waited;	/* view told to end */
	struct event			*retry_ev;
	lease_settle_cb			 cb;
	void				*arg;
	TAILQ_ENTRY(lease_settle)	 entry;
};
static TAILQ_HEAD(, lease_settle) lease_settles =
    TAILQ_HEAD_INITIALIZER(lease_settles);

static void	lease_settle_try(struct lease_settle *);

static void
lease_settle_free(struct lease_settle *st)
{
	if (!st->cancelled)
		TAILQ_REMOVE(&lease_settles, st, entry);
	event_free(st->retry_ev);
	cJSON_Delete(st->ids);
	free(st);
}

static void
lease_settle_tell(struct lease_settle *st, enum lease_event ev,
    enum eventlog_status status, uint64_t head)
{
	st->cb(st->sid, st->k, ev, status, head, st->arg);
}

static void
lease_settle_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	lease_settle_try(arg);
}

/* Not yet: try again later; a view that waited long enough ends now. */
static void
lease_settle_later(struct lease_settle *st)
{
	struct timeval	 tv = { 0, LEASE_SETTLE_RETRY_MS * 1000 };

	if (!st->waited &&
	    clock_now_ms() - st->since_ms >= LEASE_SETTLE_GRACE_MS) {
		st->waited = 1;
		lease_settle_tell(st, LEASE_WAITED, EVENTLOG_UNAVAILABLE,
		    st->head);
	}
	evtimer_add(st->retry_ev, &tv);
}

static void
lease_settle_answered_cb(const char *sid, uint64_t k,
    enum eventlog_status status, const struct eventlog_info *info, void *arg)
{
	struct lease_settle	*st = arg;

	st->busy = 0;
	if (st->cancelled) {
		lease_settle_free(st);
		return;
	}
	if (info != NULL)
		lease_settle_tell(st, LEASE_COMMITTED, EVENTLOG_OK, info->head);
	switch (status) {
	case EVENTLOG_OK:
		log_limited(LOG_LEVEL_INFO, "settle", "session=%s stream=%llu: "
		    "%d request(s) answered with an error %llu ms after the "
		    "event log failed them", st->sid, (unsigned long long)st->k,
		    cJSON_GetArraySize(st->ids),
		    (unsigned long long)(clock_now_ms() - st->since_ms));
		break;
	case EVENTLOG_UNAVAILABLE:
		lease_settle_later(st);
		return;
	case EVENTLOG_CONFLICT:
		/* The head moved (our failed append landed late): again. */
		if (++st->conflicts < LEASE_SETTLE_CONFLICTS) {
			lease_settle_try(st);
			return;
		}
		/* FALLTHROUGH */
	default:
		log_limited(LOG_LEVEL_WARN, "settle", "session=%s stream=%llu: "
		    "error answer not committed: %s", st->sid,
		    (unsigned long long)st->k, eventlog_status_name(status));
		break;
	}
	lease_settle_free(st);
}

static void
lease_settle_head_cb(enum eventlog_status status,
    const struct eventlog_entry *entries, size_t n,
    const struct eventlog_info *info, void *arg)
{
	struct lease_settle	*st = arg;

	st->busy = 0;
	if (st->cancelled) {
		lease_settle_free(st);
		return;
	}
	if (info == NULL && status == EVENTLOG_UNAVAILABLE) {
		lease_settle_later(st);
		return;
	}
	if (info == NULL || info->ended) {
		/*
		 * Gone (the view's resume hears 410 or 404), or ended after
		 * all: the view shows what there is.
		 */
		if (info != NULL)
			lease_settle_tell(st, LEASE_COMMITTED, status,
			    info->head);
		else if (!st->waited) {
			st->waited = 1;
			lease_settle_tell(st, LEASE_GONE, status, st->head);
		}
		lease_settle_free(st);
		return;
	}
	st->busy = 1;
	lease_answer_quiet(st->sid, st->k, st->ids, info->head, st->issued,
	    "The call was interrupted: the event log was unavailable", 1,
	    lease_settle_answered_cb, st);
}

static void
lease_settle_try(struct lease_settle *st)
{
	st->busy = 1;
	/* The stream is this process's: nobody answers it as orphaned. */
	if (server.shared)
		lease_note(st->sid, st->k, "l", "1", lease_ttl_ms(),
		    1);
	eventlog_read(server.eventlog, st->sid, st->k, 0, 0,
	    lease_settle_head_cb, st);
}

/*
 * Starts settling stream K (callers make sure ids owes at least one and
 * K is not settling already): the first try goes now.
 */
void
lease_settle(const char *sid, uint64_t k, uint64_t head, uint64_t issued,
    const cJSON *ids, lease_settle_cb cb, void *arg)
{
	struct lease_settle	*st;

	st = xcalloc(1, sizeof *st);
	strlcpy(st->sid, sid, sizeof st->sid);
	st->k = k;
	st->head = head;
	st->issued = issued;
	st->ids = cJSON_Duplicate(ids, 1);
	st->since_ms = clock_now_ms();
	st->retry_ev = evtimer_new(server.base, lease_settle_retry_cb, st);
	st->cb = cb;
	st->arg = arg;
	TAILQ_INSERT_TAIL(&lease_settles, st, entry);
	lease_settle_try(st);
}

int
lease_settling(const char *sid, uint64_t k)
{
	struct lease_settle	*st;

	TAILQ_FOREACH(st, &lease_settles, entry) {
		if (st->k == k && strcmp(st->sid, sid) == 0)
			return (1);
	}
	return (0);
}

/*
 * The session goes: nothing is owed any more (or, released here, another
 * process owes it once the lease has run out). A try in flight frees its
 * settle when it is answered.
 */
void
lease_forget(const char *sid)
{
	struct lease_settle	*st, *st1;

	TAILQ_FOREACH_SAFE(st, &lease_settles, entry, st1) {
		if (strcmp(st->sid, sid) != 0)
			continue;
		TAILQ_REMOVE(&lease_settles, st, entry);
		st->cancelled = 1;
		if (!st->busy)
			lease_settle_free(st);
	}
}
