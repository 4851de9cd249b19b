/*
 * The session table. Lookups are by the Mcp-Session-Id the client sends;
 * closing a session (DELETE, idle expiry, shutdown) takes it out of the
 * table at once, so every later request gets 404, and then tears down its
 * calls, views and streams. Memory is released when the last reference
 * goes, because log callbacks for it may still be on their way.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "call.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "random.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "view.h"
#include "xmalloc.h"

struct session_view {
	uint64_t	 k;
	struct view	*view;
};

/*
 * The log is shared, so the numbers of a stored meta are checked like
 * input; they are ids and times in ms, whole and below 2^53.
 */
#define SESSION_META_MAX	9007199254740992.0

TAILQ_HEAD(session_settles, session_settle);

struct session {
	char			 id[SESSION_ID_LEN + 1];
	char			*version;
	int			 log_level;
	int			 closed;
	unsigned int		 refs;
	uint64_t		 last_active_ms;
	uint64_t		 stored_ms;	/* last meta write */
	uint64_t		 standalone_k;
	struct stream		*standalone;
	int			 watching;	/* shared log: commits watched */
	session_stored_fn	 stored_cb;	/* once: the next store is done */
	void			*stored_arg;

	struct session_view	*views;
	size_t			 nviews;
	struct stream		**streams;
	size_t			 nstreams;
	struct call		**calls;
	size_t			 ncalls;
	char			**subscriptions;
	size_t			 nsubscriptions;
	struct session_settles	 settles;	/* calls the log failed */

	RB_ENTRY(session)	 entry;
};
RB_HEAD(session_tree, session);

static struct {
	struct session_tree	 tree;
	size_t			 count;		/* in the table */
	size_t			 allocated;	/* not yet freed */
} sessions;

static struct session	*session_new(const char *, const char *);
static void		 session_watch_cb(const char *, uint64_t, uint64_t,
			     void *);
static struct view	*session_view_find(struct session *, uint64_t);
static void		 session_settle_cancel(struct session *);
static int		 session_settling(struct session *, uint64_t);

static int
session_cmp(struct session *a, struct session *b)
{
	return (strcmp(a->id, b->id));
}
RB_GENERATE_STATIC(session_tree, session, entry, session_cmp);

void
session_init(void)
{
	RB_INIT(&sessions.tree);
}

static void
session_stored_cb(enum eventlog_status status, void *arg)
{
	struct session		*s = arg;
	session_stored_fn	 cb = s->stored_cb;

	if (status != EVENTLOG_OK && !s->closed) {
		log_limited(LOG_LEVEL_WARN, "session-store", "session=%s store "
		    "failed: %s", s->id, eventlog_status_name(status));
	}
	if (cb != NULL) {
		s->stored_cb = NULL;
		cb(s, status, s->stored_arg);
	}
	session_unref(s);
}

static void
session_store(struct session *s)
{
	cJSON	*meta = cJSON_CreateObject();
	char	*text;

	cJSON_AddStringToObject(meta, "version", s->version);
	cJSON_AddStringToObject(meta, "log_level",
	    mcp_log_level_name(s->log_level));
	cJSON_AddNumberToObject(meta, "standalone", (double)s->standalone_k);
	/* Wall clock: the next process to load it judges its idle time. */
	cJSON_AddNumberToObject(meta, "active", (double)(clock_wall_ms() -
	    (clock_now_ms() - s->last_active_ms)));
	text = cJSON_PrintUnformatted(meta);
	s->stored_ms = clock_now_ms();
	cJSON_Delete(meta);
	session_ref(s);
	eventlog_session_store(server.eventlog, s->id, text, strlen(text),
	    session_stored_cb, s);
	free(text);
}

/*
 * A new session, or NULL when the table is full. cb runs once, on a later
 * loop turn, when its meta is stored (or could not be): a session id is
 * handed to a client only once the log has it.
 */
struct session *
session_create(const char *version, const cJSON *params,
    session_stored_fn cb, void *arg)
{
	struct session	*s;

	if ((long long)sessions.count >= server.conf->max_sessions) {
		log_limited(LOG_LEVEL_WARN, "max-sessions", "session limit "
		    "reached (max_sessions %lld)", server.conf->max_sessions);
		return (NULL);
	}
	s = session_new(NULL, version);
	s->standalone_k = eventlog_new_stream_id();
	s->stored_cb = cb;
	s->stored_arg = arg;
	/* The meta names the standalone stream, so it is written first. */
	session_store(s);
	s->standalone = stream_open_as(s, STREAM_STANDALONE, s->standalone_k);
	log_limited(LOG_LEVEL_INFO, "session-created", "session=%s created "
	    "version=%s", s->id, version);
	return (s);
}

static void
session_watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	struct session	*s = arg;
	struct view	*v;
	size_t		 i;

	if (k != 0) {
		/* Our own commits come back here too: the view knows. */
		if ((v = session_view_find(s, k)) != NULL)
			view_committed_elsewhere(v, seq);
		return;
	}
	/* The watch was (re-)established: commits may have been missed. */
	for (i = 0; i < s->nviews; i++)
		view_wakeup(s->views[i].view, 0);
}

/* A session object in the table; id NULL draws a fresh one. */
static struct session *
session_new(const char *id, const char *version)
{
	struct session	*s;

	s = xcalloc(1, sizeof *s);
	if (id != NULL)
		strlcpy(s->id, id, sizeof s->id);
	else {
		do
			random_hex(s->id, sizeof s->id);
		while (RB_FIND(session_tree, &sessions.tree, s) != NULL);
	}
	s->version = xstrdup(version);
	TAILQ_INIT(&s->settles);
	s->log_level = 0;
	s->refs = 1;		/* the table's */
	s->last_active_ms = clock_now_ms();
	RB_INSERT(session_tree, &sessions.tree, s);
	sessions.count++;
	sessions.allocated++;
	if (server.shared) {
		s->watching = 1;
		eventlog_watch(server.eventlog, s->id, session_watch_cb, s);
	}
	return (s);
}

/*
 * Loading a session another process (or this one, before a restart)
 * created: its meta, then the head of its standalone stream.
 */
struct session_load {
	char			 id[SESSION_ID_LEN + 1];
	char			*version;
	int			 log_level;
	uint64_t		 standalone_k;
	session_load_cb		 cb;
	void			*arg;
};

static void
session_load_finish(struct session_load *l, struct session *s,
    enum eventlog_status status)
{
	l->cb(s, status, l->arg);
	free(l->version);
	free(l);
}

static void
session_loaded_head_cb(enum eventlog_status status,
    const struct eventlog_entry *entries, size_t n,
    const struct eventlog_info *info, void *arg)
{
	struct session_load	*l = arg;
	struct session		*s;

	if ((s = session_find(l->id)) != NULL) {
		/* Another request loaded it meanwhile. */
		session_load_finish(l, s, EVENTLOG_OK);
		return;
	}
	if (info == NULL) {
		if (status == EVENTLOG_OK)
			status = EVENTLOG_NOT_FOUND;
		session_load_finish(l, NULL, status);
		return;
	}
	if ((long long)sessions.count >= server.conf->max_sessions) {
		session_load_finish(l, NULL, EVENTLOG_UNAVAILABLE);
		return;
	}
	s = session_new(l->id, l->version);
	s->log_level = l->log_level;
	s->standalone_k = l->standalone_k;
	s->stored_ms = clock_now_ms();
	s->standalone = stream_restore(s, STREAM_STANDALONE, l->standalone_k,
	    info->head);
	log_limited(LOG_LEVEL_INFO, "session-loaded", "session=%s loaded from "
	    "the event log version=%s", s->id, s->version);
	session_load_finish(l, s, EVENTLOG_OK);
}

static void
session_expired_deleted_cb(enum eventlog_status status, void *arg)
{
}

static void
session_loaded_meta_cb(enum eventlog_status status, const char *meta,
    size_t len, void *arg)
{
	struct session_load	*l = arg;
	cJSON			*json;
	const cJSON		*version, *level, *k, *active;
	uint64_t		 active_ms, standalone_k;

	if (status != EVENTLOG_OK) {
		session_load_finish(l, NULL, status);
		return;
	}
	json = cJSON_ParseWithLength(meta, len);
	version = cJSON_GetObjectItemCaseSensitive(json, "version");
	level = cJSON_GetObjectItemCaseSensitive(json, "log_level");
	k = cJSON_GetObjectItemCaseSensitive(json, "standalone");
	active = cJSON_GetObjectItemCaseSensitive(json, "active");
	if (jsonrpc_whole_number(active, SESSION_META_MAX, &active_ms) == 0 && clock_wall_ms() >
	    active_ms + (uint64_t)server.conf->session_ttl * 1000) {
		/* Idle longer than session_ttl: it ended, even if the log's
		 * own expiry has not caught up yet. */
		log_limited(LOG_LEVEL_INFO, "session-expired", "session=%s "
		    "expired (idle for session_ttl)", l->id);
		cJSON_Delete(json);
		eventlog_session_delete(server.eventlog, l->id,
		    session_expired_deleted_cb, NULL);
		session_load_finish(l, NULL, EVENTLOG_NOT_FOUND);
		return;
	}
	if (!cJSON_IsString(version) ||
	    !mcp_version_supported(version->valuestring) ||
	    jsonrpc_whole_number(k, SESSION_META_MAX, &standalone_k) != 0 || standalone_k < 1) {
		log_limited(LOG_LEVEL_ERROR, "session-meta", "session=%s meta "
		    "in the event log is unreadable", l->id);
		cJSON_Delete(json);
		session_load_finish(l, NULL, EVENTLOG_NOT_FOUND);
		return;
	}
	l->version = xstrdup(version->valuestring);
	if (cJSON_IsString(level))
		l->log_level = mcp_log_level_parse(level->valuestring);
	if (l->log_level < 0)
		l->log_level = 0;
	l->standalone_k = standalone_k;
	cJSON_Delete(json);
	/* Reading from entry 0 answers with the head, trimmed or not. */
	eventlog_read(server.eventlog, l->id, l->standalone_k, 0, 0,
	    session_loaded_head_cb, l);
}

/*
 * Finds a session this process does not hold: only a shared log can have
 * one. cb runs once, never inside this call, with the session or NULL and
 * the log's status (NOT_FOUND: no such session; other: log trouble).
 */
void
session_load(const char *id, session_load_cb cb, void *arg)
{
	struct session_load	*l;

	l = xcalloc(1, sizeof *l);
	strlcpy(l->id, id, sizeof l->id);
	l->cb = cb;
	l->arg = arg;
	eventlog_session_load(server.eventlog, id, session_loaded_meta_cb, l);
}

/*
 * Re-reads what another process may have changed in the session's meta
 * (the log level, set by logging/setLevel wherever it landed), then runs
 * cb once with the log's status.
 */
struct session_refresh {
	struct session		*session;
	session_load_cb		 cb;
	void			*arg;
};

static void
session_refreshed_cb(enum eventlog_status status, const char *meta,
    size_t len, void *arg)
{
	struct session_refresh	*r = arg;
	cJSON			*json;
	const cJSON		*level;
	int			 n;

	if (status == EVENTLOG_NOT_FOUND && !r->session->closed) {
		/* Deleted through another process, or expired there. */
		session_close(r->session, "gone from the shared log");
	} else if (status == EVENTLOG_OK && !r->session->closed) {
		json = cJSON_ParseWithLength(meta, len);
		level = cJSON_GetObjectItemCaseSensitive(json, "log_level");
		if (cJSON_IsString(level) &&
		    (n = mcp_log_level_parse(level->valuestring)) >= 0)
			r->session->log_level = n;
		cJSON_Delete(json);
	}
	r->cb(r->session, status, r->arg);
	session_unref(r->session);
	free(r);
}

void
session_refresh(struct session *s, session_load_cb cb, void *arg)
{
	struct session_refresh	*r;

	r = xmalloc(sizeof *r);
	r->session = s;
	r->cb = cb;
	r->arg = arg;
	session_ref(s);
	eventlog_session_load(server.eventlog, s->id, session_refreshed_cb,
	    r);
}

struct session *
session_find(const char *id)
{
	struct session	find;

	if (strlen(id) != SESSION_ID_LEN)
		return (NULL);
	memcpy(find.id, id, sizeof find.id);
	return (RB_FIND(session_tree, &sessions.tree, &find));
}

void
session_touch(struct session *s)
{
	s->last_active_ms = clock_now_ms();
}

static void
session_deleted_cb(enum eventlog_status status, void *arg)
{
	struct session	*s = arg;

	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED &&
	    status != EVENTLOG_NOT_FOUND)
		log_limited(LOG_LEVEL_WARN, "session-delete", "session=%s "
		    "delete from log: %s", s->id, eventlog_status_name(status));
	session_unref(s);
}

/*
 * Takes a session out of this process. `end` also ends it for everyone
 * (DELETE, expiry): its calls are cancelled and the log forgets it. Else
 * (shutdown, a shared log's idle eviction) the log keeps it for the next
 * process, and calls still running get an error response: the client
 * hears that the call was interrupted instead of waiting forever.
 */
static void
session_teardown(struct session *s, const char *reason, int end)
{
	if (s->closed)
		return;
	s->closed = 1;
	RB_REMOVE(session_tree, &sessions.tree, s);
	sessions.count--;
	log_limited(LOG_LEVEL_INFO, "session-closed", "session=%s %s: %s",
	    s->id, end ? "closed" : "released", reason);
	if (s->watching) {
		s->watching = 0;
		eventlog_unwatch(server.eventlog, s->id, session_watch_cb, s);
	}

	while (s->ncalls > 0) {
		if (end)
			call_cancel(s->calls[s->ncalls - 1], reason);
		else
			call_interrupt(s->calls[s->ncalls - 1], reason);
	}
	session_settle_cancel(s);
	while (s->nviews > 0)
		view_close(s->views[s->nviews - 1].view, reason);
	while (s->nstreams > 0) {
		if (end)
			stream_discard(s->streams[s->nstreams - 1]);
		else
			stream_release(s->streams[s->nstreams - 1]);
	}
	s->standalone = NULL;

	if (!end) {
		session_unref(s);
		return;
	}
	session_ref(s);
	eventlog_session_delete(server.eventlog, s->id, session_deleted_cb,
	    s);
	session_unref(s);
}

void
session_close(struct session *s, const char *reason)
{
	session_teardown(s, reason, 1);
}

void
session_ref(struct session *s)
{
	s->refs++;
}

void
session_unref(struct session *s)
{
	if (--s->refs > 0)
		return;
	while (s->nsubscriptions > 0)
		free(s->subscriptions[--s->nsubscriptions]);
	free(s->subscriptions);
	free(s->views);
	free(s->streams);
	free(s->calls);
	free(s->version);
	free(s);
	sessions.allocated--;
}

/* Sessions not yet freed: shutdown waits for their log ops to finish. */
size_t
session_allocated(void)
{
	return (sessions.allocated);
}

int
session_closed(const struct session *s)
{
	return (s->closed);
}

size_t
session_count(void)
{
	return (sessions.count);
}

const char *
session_id(const struct session *s)
{
	return (s->id);
}

const char *
session_version(const struct session *s)
{
	return (s->version);
}

int
session_log_level(const struct session *s)
{
	return (s->log_level);
}

void
session_set_log_level(struct session *s, int level)
{
	s->log_level = level;
	session_store(s);
}

struct stream *
session_standalone(struct session *s)
{
	return (s->standalone);
}

/* The view showing stream K, if any (one at most). */
static struct view *
session_view_find(struct session *s, uint64_t k)
{
	size_t	i;

	for (i = 0; i < s->nviews; i++) {
		if (s->views[i].k == k)
			return (s->views[i].view);
	}
	return (NULL);
}

void
session_view_attach(struct session *s, uint64_t k, struct view *v)
{
	struct view	*old;

	/* The old connection is most likely half-open. */
	if ((old = session_view_find(s, k)) != NULL)
		view_abort(old, "taken over");
	s->views = xrealloc(s->views, (s->nviews + 1) * sizeof *s->views);
	s->views[s->nviews].k = k;
	s->views[s->nviews].view = v;
	s->nviews++;
}

void
session_view_detach(struct session *s, struct view *v)
{
	size_t	i;

	for (i = 0; i < s->nviews; i++) {
		if (s->views[i].view == v) {
			s->views[i] = s->views[--s->nviews];
			return;
		}
	}
}

/* Polling: stream K's view ends once it has shown entry upto; view.h. */
int
session_view_close_after(struct session *s, uint64_t k, uint64_t upto)
{
	struct view	*v;

	if ((v = session_view_find(s, k)) == NULL)
		return (-1);
	return (view_close_after(v, upto));
}

void
session_committed(struct session *s, uint64_t k, uint64_t seq)
{
	struct view	*v;

	if ((v = session_view_find(s, k)) != NULL)
		view_wakeup(v, seq);
}

/* This process committed the entry: its view may take it as it is. */
void
session_committed_entry(struct session *s, uint64_t k,
    const struct eventlog_entry *e, int ended)
{
	struct view	*v;

	if ((v = session_view_find(s, k)) != NULL)
		view_committed(v, e, ended);
}

static struct stream *
session_stream_find(struct session *s, uint64_t k)
{
	size_t	i;

	for (i = 0; i < s->nstreams; i++) {
		if (stream_id(s->streams[i]) == k)
			return (s->streams[i]);
	}
	return (NULL);
}

void
session_delivered(struct session *s, uint64_t k, uint64_t seq)
{
	struct stream	*st;

	if ((st = session_stream_find(s, k)) != NULL)
		stream_delivered(st, seq);
}

static void
session_lost_refreshed_cb(struct session *s, int status, void *arg)
{
}

/* The calls writing stream K end without a response of their own. */
static void
session_cancel_calls(struct session *s, uint64_t k, const char *reason)
{
	size_t	i;

	for (i = 0; i < s->ncalls; i++) {
		if (stream_id(call_stream(s->calls[i])) != k)
			continue;
		/* Cancelling takes the call out of the array. */
		call_cancel(s->calls[i], reason);
		i = (size_t)-1;
	}
}

/*
 * Nothing more will be committed on stream K (its log lost it, could not
 * be reached, or diverged): the calls writing it end, and its view ends
 * its response once it has shown entry `upto` (-1: the view follows what
 * the log has, which ends the stream itself). When the log said it has no
 * such session (no_session), it is asked again: if the session is gone,
 * it is closed here too, and the client's next request hears 404.
 */
void
session_stream_lost(struct session *s, uint64_t k, int64_t upto,
    int no_session)
{
	struct view	*v;

	if (upto >= 0 && (v = session_view_find(s, k)) != NULL)
		view_lost(v, (uint64_t)upto);
	session_cancel_calls(s, k, "the event log lost its stream");
	if (no_session && !s->closed)
		session_refresh(s, session_lost_refreshed_cb, NULL);
}

/* Whether stream K's policy is block (else close); K may be gone. */
int
session_stream_blocks(struct session *s, uint64_t k)
{
	const struct conf	*conf = server.conf;

	if (s->standalone != NULL && stream_id(s->standalone) == k)
		return (conf->backpressure_standalone ==
		    CONF_BACKPRESSURE_BLOCK);
	return (conf->backpressure_request == CONF_BACKPRESSURE_BLOCK);
}

void
session_stream_add(struct session *s, struct stream *st)
{
	s->streams = xrealloc(s->streams,
	    (s->nstreams + 1) * sizeof *s->streams);
	s->streams[s->nstreams++] = st;
}

void
session_stream_remove(struct session *s, struct stream *st)
{
	size_t	i;

	for (i = 0; i < s->nstreams; i++) {
		if (s->streams[i] == st) {
			s->streams[i] = s->streams[--s->nstreams];
			return;
		}
	}
}

size_t
session_stream_count(const struct session *s)
{
	return (s->nstreams);
}

void
session_call_add(struct session *s, struct call *c)
{
	s->calls = xrealloc(s->calls, (s->ncalls + 1) * sizeof *s->calls);
	s->calls[s->ncalls++] = c;
}

void
session_call_remove(struct session *s, struct call *c)
{
	size_t	i;

	for (i = 0; i < s->ncalls; i++) {
		if (s->calls[i] == c) {
			s->calls[i] = s->calls[--s->ncalls];
			return;
		}
	}
}

struct call *
session_call_find(struct session *s, const cJSON *id)
{
	size_t	i;

	for (i = 0; i < s->ncalls; i++) {
		if (cJSON_Compare(call_id(s->calls[i]), id, 1))
			return (s->calls[i]);
	}
	return (NULL);
}

static ssize_t
session_subscription_find(struct session *s, const char *uri)
{
	size_t	i;

	for (i = 0; i < s->nsubscriptions; i++) {
		if (strcmp(s->subscriptions[i], uri) == 0)
			return ((ssize_t)i);
	}
	return (-1);
}

int
session_subscribe(struct session *s, const char *uri)
{
	if (session_subscription_find(s, uri) >= 0)
		return (0);
	if (s->nsubscriptions == SESSION_MAX_SUBSCRIPTIONS)
		return (-1);
	s->subscriptions = xrealloc(s->subscriptions,
	    (s->nsubscriptions + 1) * sizeof *s->subscriptions);
	s->subscriptions[s->nsubscriptions++] = xstrdup(uri);
	return (0);
}

void
session_unsubscribe(struct session *s, const char *uri)
{
	ssize_t	i;

	if ((i = session_subscription_find(s, uri)) < 0)
		return;
	free(s->subscriptions[i]);
	s->subscriptions[i] = s->subscriptions[--s->nsubscriptions];
}

/* Tells every subscribed session, on its standalone stream. */
void
session_resource_updated(const char *uri)
{
	struct session	*s;
	cJSON		*params, *msg;
	char		*text;

	RB_FOREACH(s, session_tree, &sessions.tree) {
		if (s->standalone == NULL ||
		    session_subscription_find(s, uri) < 0)
			continue;
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "uri", uri);
		msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
		cJSON_AddStringToObject(msg, "method",
		    "notifications/resources/updated");
		cJSON_AddItemToObject(msg, "params", params);
		text = cJSON_PrintUnformatted(msg);
		cJSON_Delete(msg);
		stream_append(s->standalone, text, strlen(text), 0, NULL, NULL);
		free(text);
	}
}

/*
 * With a shared log the log's own TTL is the session's lifetime: a session
 * in use is re-stored often enough to stay alive, and an idle one is only
 * released here (another process may be serving it).
 */
static void
session_cron_shared(struct session *s, uint64_t now, uint64_t ttl)
{
	size_t	i;

	for (i = 0; i < s->nstreams; i++)
		stream_renew_lease(s->streams[i]);
	if (s->last_active_ms > s->stored_ms && now - s->stored_ms >= ttl / 4)
		session_store(s);
	else if (now - s->last_active_ms >= ttl && s->ncalls == 0)
		session_teardown(s, "idle here for session_ttl", 0);
}

/*
 * Orphaned calls. A request stream that is still open in a shared log but
 * whose lease ran out belongs to a process that died (kill -9, a crash):
 * nobody will ever write its response. The process that shows the stream
 * commits, for each request id the stream owed, a JSON-RPC error in its
 * place, with compare-and-append, so two processes cannot both do it and a
 * late owner cannot write after it.
 */
struct session_orphan {
	struct session	*session;
	uint64_t	 k;
	cJSON		*ids;
};

static void
session_orphan_done(struct session_orphan *o)
{
	session_unref(o->session);
	cJSON_Delete(o->ids);
	free(o);
}

/* The end of an orphaned stream that owed no response. */
static void
session_orphan_ended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct session_orphan	*o = arg;

	if (status == EVENTLOG_OK && !o->session->closed)
		session_committed(o->session, o->k, info->head);
	session_orphan_done(o);
}

/* Error responses on their way to the log, answered together. */
struct session_answer {
	struct session		*session;
	uint64_t		 k;
	int			 left;		/* appends unanswered */
	enum eventlog_status	 status;	/* the first failure, or OK */
	eventlog_done_cb	 cb;
	void			*arg;
};

static void
session_answer_appended_cb(enum eventlog_status status,
    const struct eventlog_info *info, void *arg)
{
	struct session_answer	*a = arg;

	if (status == EVENTLOG_OK) {
		if (!a->session->closed)
			session_committed(a->session, a->k, info->head);
	} else if (a->status == EVENTLOG_OK)
		a->status = status;
	if (--a->left > 0)
		return;
	if (a->cb != NULL)
		a->cb(a->status, a->arg);
	else if (a->status != EVENTLOG_OK)
		log_limited(LOG_LEVEL_INFO, "error-answer", "session=%s "
		    "stream=%llu error answer not committed: %s", a->session->id,
		    (unsigned long long)a->k, eventlog_status_name(a->status));
	session_unref(a->session);
	free(a);
}

/*
 * Ends stream K, whose log head is `head`, with a JSON-RPC error for each
 * request id it owed (callers make sure there is one), the last one final.
 * Compare-and-append: if anything else reached the log first, these
 * appends are refused, not misplaced. cb, if not NULL, hears once how it
 * went: OK, or the first failure.
 */
void
session_answer_with_errors(struct session *s, uint64_t k, const cJSON *ids,
    uint64_t head, const char *message, eventlog_done_cb cb, void *arg)
{
	struct session_answer	*a;
	const cJSON		*id;
	cJSON			*msg;
	char			*text;
	int			 i, count = cJSON_GetArraySize(ids);

	if (count == 0)
		return;
	a = xcalloc(1, sizeof *a);
	a->session = s;
	a->k = k;
	a->left = count;
	a->status = EVENTLOG_OK;
	a->cb = cb;
	a->arg = arg;
	session_ref(s);
	for (i = 0; i < count; i++) {
		id = cJSON_GetArrayItem(ids, i);
		msg = jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, message, NULL);
		text = cJSON_PrintUnformatted(msg);
		cJSON_Delete(msg);
		eventlog_append(server.eventlog, s->id, k, ++head, text,
		    strlen(text), i == count - 1 ? EVENTLOG_FINAL : 0,
		    session_answer_appended_cb, a);
		free(text);
	}
}

/*
 * Whether count more entries after head leave every entry the view of
 * stream K has not written yet in retention. They wait (for its client to
 * read) while they would not; more than retention holds at all wait until
 * it has read everything.
 */
static int
session_orphan_fits(struct session_orphan *o, uint64_t head, uint64_t count)
{
	uint64_t	 maxlen = (uint64_t)server.conf->stream_maxlen;
	uint64_t	 owed;
	struct view	*v;

	if ((v = session_view_find(o->session, o->k)) == NULL)
		return (0);
	if ((owed = view_owed(v)) > head)
		return (1);
	return (head + 1 - owed + count <= maxlen);
}

static void
session_orphan_head_cb(enum eventlog_status status,
    const struct eventlog_entry *entries, size_t n,
    const struct eventlog_info *info, void *arg)
{
	struct session_orphan	*o = arg;
	int			 count;

	if (info == NULL || info->ended) {
		session_orphan_done(o);
		return;
	}
	count = cJSON_GetArraySize(o->ids);
	if (!session_orphan_fits(o, info->head, (uint64_t)count)) {
		session_orphan_done(o);	/* the view's next check tries again */
		return;
	}
	log_limited(LOG_LEVEL_ERROR, "orphan", "session=%s stream=%llu: the "
	    "process running its call(s) is gone (lease expired at head %llu); "
	    "answering %d request(s) with an error", o->session->id,
	    (unsigned long long)o->k, (unsigned long long)info->head, count);
	if (count == 0) {
		/* No ids on record: end the stream so views do not hang. */
		eventlog_stream_end(server.eventlog, o->session->id, o->k,
		    session_orphan_ended_cb, o);
		return;
	}
	session_answer_with_errors(o->session, o->k, o->ids, info->head,
	    "The call was interrupted: the server running it stopped", NULL,
	    NULL);
	session_orphan_done(o);
}

static void
session_orphan_ids_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct session_orphan	*o = arg;

	if (status == EVENTLOG_OK)
		o->ids = cJSON_ParseWithLength(value, len);
	if (!cJSON_IsArray(o->ids)) {
		cJSON_Delete(o->ids);
		o->ids = cJSON_CreateArray();
	}
	eventlog_read(server.eventlog, o->session->id, o->k, 0, 0,
	    session_orphan_head_cb, o);
}

static void
session_orphan_lease_cb(enum eventlog_status status, const char *value,
    size_t len, void *arg)
{
	struct session_orphan	*o = arg;
	char			 name[40];

	if (status != EVENTLOG_NOT_FOUND || o->session->closed) {
		session_orphan_done(o);	/* alive, or cannot tell now */
		return;
	}
	snprintf(name, sizeof name, "r:%llu", (unsigned long long)o->k);
	eventlog_note_get(server.eventlog, o->session->id, name,
	    session_orphan_ids_cb, o);
}

/* A view shows open stream K that no call of this process writes. */
void
session_check_orphan(struct session *s, uint64_t k)
{
	struct session_orphan	*o;
	char			 name[40];

	if (!server.shared || session_stream_find(s, k) != NULL ||
	    k == s->standalone_k || session_settling(s, k))
		return;
	o = xcalloc(1, sizeof *o);
	o->session = s;
	o->k = k;
	session_ref(s);
	snprintf(name, sizeof name, "l:%llu", (unsigned long long)k);
	eventlog_note_get(server.eventlog, s->id, name,
	    session_orphan_lease_cb, o);
}

/*
 * Calls the event log failed. An append the log did not answer (Redis
 * down, or silent for its reply timeout) breaks the stream: the calls on
 * it end, and this process owes each request id still without a response
 * an error saying so. It commits those after whatever the log holds (the
 * failed append may have landed after all) as soon as the log answers
 * again, trying every SESSION_SETTLE_RETRY_MS, and keeps the stream's
 * lease meanwhile: the stream is this process's, not a dead one's, so no
 * process answers it as orphaned. A view showing the stream that has
 * waited SESSION_SETTLE_GRACE_MS ends once it has shown what was
 * committed, so its client hears within a bound even if the log stays
 * away: it resumes, is answered 503 while the log is down, then reads the
 * error.
 */
#define SESSION_SETTLE_RETRY_MS		500
#define SESSION_SETTLE_GRACE_MS		3000
#define SESSION_SETTLE_CONFLICTS	16

struct session_settle {
	struct session			*session;
	uint64_t			 k;
	uint64_t			 head;		/* committed here */
	cJSON				*ids;
	uint64_t			 since_ms;
	int				 busy;		/* a try in flight */
	int				 cancelled;	/* session gone */
	int				 conflicts;
	int				 view_ended;
	struct event			*retry_ev;
	TAILQ_ENTRY(session_settle)	 entry;
};

static void	session_settle_try(struct session_settle *);

static void
session_settle_free(struct session_settle *st)
{
	if (!st->cancelled)
		TAILQ_REMOVE(&st->session->settles, st, entry);
	event_free(st->retry_ev);
	cJSON_Delete(st->ids);
	session_unref(st->session);
	free(st);
}

/*
 * The session goes: nothing is owed any more (or, released here, another
 * process owes it once the lease has run out). A try in flight frees its
 * settle when it is answered.
 */
static void
session_settle_cancel(struct session *s)
{
	struct session_settle	*st;

	while ((st = TAILQ_FIRST(&s->settles)) != NULL) {
		TAILQ_REMOVE(&s->settles, st, entry);
		st->cancelled = 1;
		if (!st->busy)
			session_settle_free(st);
	}
}

static int
session_settling(struct session *s, uint64_t k)
{
	struct session_settle	*st;

	TAILQ_FOREACH(st, &s->settles, entry) {
		if (st->k == k)
			return (1);
	}
	return (0);
}

static void
session_settle_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	session_settle_try(arg);
}

/* Not yet: try again later; a view that waited long enough ends now. */
static void
session_settle_later(struct session_settle *st)
{
	struct timeval	 tv = { 0, SESSION_SETTLE_RETRY_MS * 1000 };
	struct view	*v;

	if (!st->view_ended &&
	    clock_now_ms() - st->since_ms >= SESSION_SETTLE_GRACE_MS) {
		st->view_ended = 1;
		if ((v = session_view_find(st->session, st->k)) != NULL) {
			log_limited(LOG_LEVEL_INFO, "settle", "session=%s "
			    "stream=%llu: the event log is still unavailable; "
			    "its response ends after %llu", st->session->id,
			    (unsigned long long)st->k,
			    (unsigned long long)st->head);
			view_lost(v, st->head);
		}
	}
	evtimer_add(st->retry_ev, &tv);
}

static void
session_settle_answered_cb(enum eventlog_status status, void *arg)
{
	struct session_settle	*st = arg;

	st->busy = 0;
	if (st->cancelled) {
		session_settle_free(st);
		return;
	}
	switch (status) {
	case EVENTLOG_OK:
		log_limited(LOG_LEVEL_INFO, "settle", "session=%s stream=%llu: "
		    "%d request(s) answered with an error %llu ms after the "
		    "event log failed them", st->session->id,
		    (unsigned long long)st->k, cJSON_GetArraySize(st->ids),
		    (unsigned long long)(clock_now_ms() - st->since_ms));
		break;
	case EVENTLOG_UNAVAILABLE:
		session_settle_later(st);
		return;
	case EVENTLOG_CONFLICT:
		/* The head moved (our failed append landed late): again. */
		if (++st->conflicts < SESSION_SETTLE_CONFLICTS) {
			session_settle_try(st);
			return;
		}
		/* FALLTHROUGH */
	default:
		log_limited(LOG_LEVEL_WARN, "settle", "session=%s stream=%llu: "
		    "error answer not committed: %s", st->session->id,
		    (unsigned long long)st->k, eventlog_status_name(status));
		break;
	}
	session_settle_free(st);
}

static void
session_settle_head_cb(enum eventlog_status status,
    const struct eventlog_entry *entries, size_t n,
    const struct eventlog_info *info, void *arg)
{
	struct session_settle	*st = arg;

	st->busy = 0;
	if (st->cancelled) {
		session_settle_free(st);
		return;
	}
	if (info == NULL && status == EVENTLOG_UNAVAILABLE) {
		session_settle_later(st);
		return;
	}
	if (info == NULL || info->ended) {
		/*
		 * Gone (the view's resume hears 410 or 404), or ended after
		 * all: the view shows what there is.
		 */
		if (info != NULL)
			session_committed(st->session, st->k, info->head);
		else if (!st->view_ended) {
			st->view_ended = 1;
			session_stream_lost(st->session, st->k,
			    (int64_t)st->head, status == EVENTLOG_NOT_FOUND);
		}
		session_settle_free(st);
		return;
	}
	st->busy = 1;
	session_answer_with_errors(st->session, st->k, st->ids, info->head,
	    "The call was interrupted: the event log was unavailable",
	    session_settle_answered_cb, st);
}

static void
session_settle_leased_cb(enum eventlog_status status, void *arg)
{
}

static void
session_settle_try(struct session_settle *st)
{
	char	name[40];

	st->busy = 1;
	if (server.shared) {
		snprintf(name, sizeof name, "l:%llu",
		    (unsigned long long)st->k);
		eventlog_note_set(server.eventlog, st->session->id, name,
		    "1", 1, STREAM_LEASE_MS, session_settle_leased_cb, NULL);
	}
	eventlog_read(server.eventlog, st->session->id, st->k, 0, 0,
	    session_settle_head_cb, st);
}

/*
 * An append to stream K, committed here up to `head`, was not answered
 * (EVENTLOG_UNAVAILABLE): its calls end now, and the request ids it owes
 * responses (at least one) get errors once the log answers.
 */
void
session_settle(struct session *s, uint64_t k, uint64_t head,
    const cJSON *ids)
{
	struct session_settle	*st;

	if (s->closed || cJSON_GetArraySize(ids) == 0 ||
	    session_settling(s, k))
		return;
	st = xcalloc(1, sizeof *st);
	st->session = s;
	st->k = k;
	st->head = head;
	st->ids = cJSON_Duplicate(ids, 1);
	st->since_ms = clock_now_ms();
	st->retry_ev = evtimer_new(server.base, session_settle_retry_cb, st);
	session_ref(s);
	TAILQ_INSERT_TAIL(&s->settles, st, entry);
	/* Whether it lost the stream or stalls is known once it answers. */
	session_cancel_calls(s, k, "the event log lost its stream or did not "
	    "answer; the error response follows once it answers");
	session_settle_try(st);
}

/*
 * Idle expiry. A session with an open view is in use even when the client
 * sends nothing. Running calls alone do not count: under the block policy
 * a call whose client never comes back waits forever, and this is what
 * ends it.
 */
void
session_cron(void)
{
	struct session	*s, *s1;
	uint64_t	 now = clock_now_ms();
	uint64_t	 ttl = (uint64_t)server.conf->session_ttl * 1000;

	RB_FOREACH_SAFE(s, session_tree, &sessions.tree, s1) {
		if (s->nviews > 0)
			s->last_active_ms = now;
		if (server.shared) {
			session_cron_shared(s, now, ttl);
			continue;
		}
		if (now - s->last_active_ms >= ttl)
			session_close(s, "idle for session_ttl");
	}
}

void
session_shutdown(void)
{
	struct session	*s, *s1;

	RB_FOREACH_SAFE(s, session_tree, &sessions.tree, s1)
		session_teardown(s, "shutdown", 0);
}
