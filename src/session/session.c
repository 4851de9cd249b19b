/*
 * The session table. Lookups are by the Mcp-Session-Id the client sends;
 * closing a session (DELETE, idle expiry, shutdown) takes it out of the
 * table at once, so every later request gets 404, and then tears down its
 * calls, views and streams. Memory is released when the last reference
 * goes, because log callbacks for it may still be on their way.
 *
 * The session knows its streams and calls, and which streams are watched
 * (a light record per K: views may show streams this process has no
 * stream object for). It calls no view code: commits go from the stream
 * to its watcher's hooks (stream.h).
 *
 * With a shared log the session watches its commits and the messages
 * other processes send on it (peer.h), and hands each to whom it
 * concerns: delivery progress to the stream, an answer to outbound.c, a
 * deletion to its own teardown.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "announce.h"
#include "auth.h"
#include "call.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "lease.h"
#include "log.h"
#include "mcp.h"
#include "outbound.h"
#include "peer.h"
#include "provider.h"
#include "random.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "trace.h"
#include "xmalloc.h"

/* Stream K is watched (stream_watch), by at most one watcher. */
struct session_attachment {
	uint64_t		 k;
	struct stream_watcher	*watcher;
};

/*
 * The log is shared, so the numbers of a stored meta are checked like
 * input; they are ids and times in ms, whole and below 2^53.
 */
#define SESSION_META_MAX	9007199254740992.0

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
	struct auth_principal	*principal;	/* NULL: no auth */
	char			*endpoint;	/* the path that created it */
	int			 watching;	/* shared log: commits watched */
	int			 stale;		/* a re-read is owed (log down) */
	int			 rereading;	/* its meta is being read */
	session_stored_fn	 stored_cb;	/* once: the next store is done */
	void			*stored_arg;

	struct session_attachment *attached;
	size_t			 nattached;
	struct stream		**streams;
	size_t			 nstreams;
	struct call		**calls;
	size_t			 ncalls;
	char			**subscriptions;
	size_t			 nsubscriptions;
	struct session_trace	*traces;	/* SESSION_TRACES, a ring */
	size_t			 ntraces;	/* kept in all */

	RB_ENTRY(session)	 entry;
};

/*
 * While tracing, the trace context of the calls of the session's last
 * SESSION_TRACES request streams, so a resume of one whose stream object
 * is gone here (ended) still traces into its call's trace; with a shared
 * log the call record (x:t:K) says it for older ones and other
 * instances.
 */
#define SESSION_TRACES	16
struct session_trace {
	uint64_t		 k;
	struct trace_ctx	 ctx;
};
RB_HEAD(session_tree, session);

static struct {
	struct session_tree	 tree;
	size_t			 count;		/* in the table */
	size_t			 allocated;	/* not yet freed */
} sessions;

/* How a session leaves this process (session_teardown). */
enum session_end {
	SESSION_RELEASE,	/* the log keeps it for another process */
	SESSION_END,		/* ended for everyone: the log forgets it */
	SESSION_GONE		/* the log already forgot it */
};

static struct session	*session_new(const char *, const char *);
static void		 session_watch_cb(const char *, uint64_t, uint64_t,
			     void *);
static void		 session_message_cb(const char *, const char *, size_t,
			     void *);
static void		 session_teardown(struct session *, const char *,
			     enum session_end);
static void		 session_reread(struct session *, int, session_load_cb,
			     void *);
static void		 session_gone(struct session *, const char *, int);
static void		 session_announced(enum announce_kind, const char *,
			     const char *, void *);

static const struct announce_hooks session_announce_hooks = {
	ANNOUNCE_HERE,
	session_announced,
	NULL
};

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
	announce_subscribe(&session_announce_hooks, NULL);
}

static void
session_stored_cb(enum eventlog_status status, void *arg)
{
	struct session		*s = arg;
	session_stored_fn	 cb = s->stored_cb;

	if (status == EVENTLOG_NOT_FOUND && !s->closed)
		session_gone(s, "gone from the shared log (found when "
		    "storing it again)", 1);
	else if (status != EVENTLOG_OK && !s->closed) {
		log_limited(LOG_LEVEL_WARN, "session-store", "session=%s store "
		    "failed: %s", s->id, eventlog_status_name(status));
	}
	if (cb != NULL) {
		s->stored_cb = NULL;
		cb(s, status, s->stored_arg);
	}
	session_unref(s);
}

/*
 * The session's meta into the log: created (create) or replaced, where a
 * replace is refused once the log has lost the session, so a process
 * holding it in memory never brings it back.
 */
static void
session_store(struct session *s, int create)
{
	cJSON	*meta = cJSON_CreateObject();
	char	*text;

	cJSON_AddStringToObject(meta, "version", s->version);
	cJSON_AddStringToObject(meta, "log_level",
	    mcp_log_level_name(s->log_level));
	cJSON_AddNumberToObject(meta, "standalone", (double)s->standalone_k);
	/* Who, never a token: issuer, subject, client id. */
	if (s->principal != NULL)
		cJSON_AddItemToObject(meta, "principal",
		    auth_principal_json(s->principal));
	cJSON_AddStringToObject(meta, "endpoint", s->endpoint);
	/* Wall clock: the next process to load it judges its idle time. */
	cJSON_AddNumberToObject(meta, "active", (double)(clock_wall_ms() -
	    (clock_now_ms() - s->last_active_ms)));
	text = cJSON_PrintUnformatted(meta);
	s->stored_ms = clock_now_ms();
	cJSON_Delete(meta);
	session_ref(s);
	if (create)
		eventlog_session_store(server.eventlog, s->id, text,
		    strlen(text), session_stored_cb, s);
	else
		eventlog_session_update(server.eventlog, s->id, text,
		    strlen(text), session_stored_cb, s);
	free(text);
}

/*
 * A new session, or NULL when the table is full. cb runs once, on a later
 * loop turn, when its meta is stored (or could not be): a session id is
 * handed to a client only once the log has it.
 */
struct session *
session_create(const char *version, const cJSON *params,
    struct auth_principal *principal, const char *endpoint,
    session_stored_fn cb, void *arg)
{
	struct session	*s;

	if ((long long)sessions.count >= server.conf->max_sessions) {
		log_limited(LOG_LEVEL_WARN, "max-sessions", "session limit "
		    "reached (max_sessions %lld)", server.conf->max_sessions);
		return (NULL);
	}
	s = session_new(NULL, version);
	s->principal = auth_principal_ref(principal);
	s->endpoint = xstrdup(endpoint != NULL ? endpoint :
	    server.conf->endpoint);
	s->standalone_k = eventlog_new_stream_id();
	s->stored_cb = cb;
	s->stored_arg = arg;
	/* The meta names the standalone stream, so it is written first. */
	session_store(s, 1);
	s->standalone = stream_open_as(s, STREAM_STANDALONE, s->standalone_k);
	log_limited(LOG_LEVEL_INFO, "session-created", "session=%s created "
	    "version=%s", s->id, version);
	return (s);
}

static void
session_live_refreshed_cb(struct session *s, int status, void *arg)
{
}

static void
session_watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	struct session		*s = arg;
	struct stream_watcher	*w;
	size_t			 i;

	if (k != 0) {
		/* Our own commits come back here too: the watcher knows. */
		if ((w = session_attached(s, k)) != NULL)
			stream_watcher_published(w, seq);
		return;
	}
	/*
	 * The watch was (re-)established: commits and messages may have
	 * been missed. Views re-read; producers waiting for a view elsewhere
	 * re-read its progress; requests waiting for an answer look for it;
	 * and the session itself may have been deleted meanwhile (or while
	 * it was being loaded here).
	 */
	for (i = 0; i < s->nattached; i++)
		stream_watcher_missed(s->attached[i].watcher);
	for (i = 0; i < s->nstreams; i++)
		stream_progress_check(s->streams[i], 1);
	outbound_resync(s->id);
	/* Owed until the log answers it (session_cron_shared asks again). */
	s->stale = 1;
	session_reread(s, 1, session_live_refreshed_cb, NULL);
}

/* What another process says of the session (peer.h). */
static void
session_message_cb(const char *sid, const char *text, size_t len, void *arg)
{
	struct session		*s = arg;
	struct peer_message	 m;

	if (s->closed)
		return;
	peer_parse(text, len, &m);
	switch (m.kind) {
	case PEER_DELETED:
		session_teardown(s, "gone from the shared log (deleted "
		    "through another process)", SESSION_GONE);
		break;
	case PEER_GONE:
		/* Asked, not believed; and nobody is told again. */
		session_reread(s, 0, session_live_refreshed_cb, NULL);
		break;
	case PEER_DELIVERED:
		stream_progress(s, m.k, m.seq);
		break;
	case PEER_ANSWER:
		outbound_pushed(s->id, m.id, m.idlen, m.json, m.len);
		break;
	case PEER_UNKNOWN:
		log_limited(LOG_LEVEL_DEBUG, "peer-message", "session=%s: "
		    "message not understood (%zu bytes)", s->id, len);
		break;
	}
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
	s->log_level = 0;
	s->refs = 1;		/* the table's */
	s->last_active_ms = clock_now_ms();
	RB_INSERT(session_tree, &sessions.tree, s);
	sessions.count++;
	sessions.allocated++;
	if (server.shared) {
		s->watching = 1;
		eventlog_watch(server.eventlog, s->id, session_watch_cb,
		    session_message_cb, s);
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
	struct auth_principal	*principal;
	char			*endpoint;
	session_load_cb		 cb;
	void			*arg;
};

static void
session_load_finish(struct session_load *l, struct session *s,
    enum eventlog_status status)
{
	l->cb(s, status, l->arg);
	auth_principal_unref(l->principal);
	free(l->endpoint);
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
	s->principal = l->principal;
	l->principal = NULL;
	s->endpoint = l->endpoint;
	l->endpoint = NULL;
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
	const cJSON		*version, *level, *k, *active, *principal;
	const cJSON		*endpoint;
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
	/*
	 * A principal that cannot be read binds the session to nobody: with
	 * auth, every request naming it is then answered 404.
	 */
	principal = cJSON_GetObjectItemCaseSensitive(json, "principal");
	if (principal != NULL &&
	    (l->principal = auth_principal_from_json(principal)) == NULL)
		l->principal = auth_principal_new("", "", "", NULL);
	/* A session of an older mcpd is the default endpoint's. */
	endpoint = cJSON_GetObjectItemCaseSensitive(json, "endpoint");
	l->endpoint = xstrdup(cJSON_IsString(endpoint) ?
	    endpoint->valuestring : server.conf->endpoint);
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
 * cb once with the log's status. When the log says it has no such session
 * any more, the session is gone here too (session_gone) before cb runs.
 */
struct session_refresh {
	struct session		*session;
	int			 tell;	/* gone: tell the other processes */
	session_load_cb		 cb;
	void			*arg;
};

static void
session_refreshed_cb(enum eventlog_status status, const char *meta,
    size_t len, void *arg)
{
	struct session_refresh	*r = arg;
	struct session		*s = r->session;
	cJSON			*json;
	const cJSON		*level;
	int			 n;

	s->rereading = 0;
	if (status == EVENTLOG_OK || status == EVENTLOG_NOT_FOUND)
		s->stale = 0;
	if (status == EVENTLOG_NOT_FOUND && !s->closed) {
		/* Deleted or expired elsewhere, or lost by the log. */
		session_gone(s, "gone from the shared log", r->tell);
	} else if (status == EVENTLOG_OK && !s->closed) {
		json = cJSON_ParseWithLength(meta, len);
		level = cJSON_GetObjectItemCaseSensitive(json, "log_level");
		if (cJSON_IsString(level) &&
		    (n = mcp_log_level_parse(level->valuestring)) >= 0)
			s->log_level = n;
		cJSON_Delete(json);
	}
	r->cb(s, status, r->arg);
	session_unref(s);
	free(r);
}

static void
session_reread(struct session *s, int tell, session_load_cb cb, void *arg)
{
	struct session_refresh	*r;

	r = xmalloc(sizeof *r);
	r->session = s;
	r->tell = tell;
	r->cb = cb;
	r->arg = arg;
	s->rereading = 1;
	session_ref(s);
	eventlog_session_load(server.eventlog, s->id, session_refreshed_cb,
	    r);
}

void
session_refresh(struct session *s, session_load_cb cb, void *arg)
{
	session_reread(s, 1, cb, arg);
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
 * Takes a session out of this process. SESSION_END also ends it for
 * everyone (DELETE, expiry): its calls are cancelled and the log forgets
 * it; SESSION_GONE does the same here for a session the log has already
 * forgotten (deleted through another process). SESSION_RELEASE (shutdown,
 * a shared log's idle eviction) leaves it in the log for the next process,
 * and calls still running get an error response: the client hears that
 * the call was interrupted instead of waiting forever.
 */
static void
session_teardown(struct session *s, const char *reason, enum session_end how)
{
	int	end = how != SESSION_RELEASE;

	if (s->closed)
		return;
	s->closed = 1;
	RB_REMOVE(session_tree, &sessions.tree, s);
	sessions.count--;
	log_limited(LOG_LEVEL_INFO, "session-closed", "session=%s %s: %s",
	    s->id, end ? "closed" : "released", reason);
	if (s->watching) {
		s->watching = 0;
		eventlog_unwatch(server.eventlog, s->id, session_watch_cb,
		    session_message_cb, s);
	}

	while (s->ncalls > 0) {
		if (end)
			call_cancel(s->calls[s->ncalls - 1], reason);
		else
			call_interrupt(s->calls[s->ncalls - 1], reason);
	}
	lease_forget(s->id);
	provider_session_closed(s);
	while (s->nattached > 0)
		stream_watcher_close(s->attached[s->nattached - 1].watcher,
		    reason);
	while (s->nstreams > 0) {
		if (end)
			stream_discard(s->streams[s->nstreams - 1]);
		else
			stream_release(s->streams[s->nstreams - 1]);
	}
	s->standalone = NULL;

	if (how != SESSION_END) {
		session_unref(s);
		return;
	}
	session_ref(s);
	eventlog_session_delete(server.eventlog, s->id, session_deleted_cb,
	    s);
	session_unref(s);
}

static void
session_told_cb(enum eventlog_status status, void *arg)
{
}

/*
 * The log says it has no such session (its meta could not be read, or
 * re-stored): ended here as by a DELETE elsewhere, so every request is
 * answered 404 from now on and its calls, views and streams end. With
 * tell, the other processes sharing the log hear it ("g", peer.h) and
 * ask the log themselves: a FLUSHALL tells nobody, and one of them may
 * otherwise hold the session, its views open, until its next request.
 */
static void
session_gone(struct session *s, const char *reason, int tell)
{
	if (s->closed)
		return;
	if (tell)
		eventlog_publish(server.eventlog, s->id, PEER_GONE_MESSAGE,
		    strlen(PEER_GONE_MESSAGE), session_told_cb, NULL);
	session_teardown(s, reason, SESSION_GONE);
}

void
session_close(struct session *s, const char *reason)
{
	session_teardown(s, reason, SESSION_END);
}

void
session_ref(struct session *s)
{
	if (s->refs == 0)
		fatalx("session=%s: a reference to a freed session", s->id);
	s->refs++;
}

void
session_unref(struct session *s)
{
	if (s->refs == 0)
		fatalx("session=%s: session references below zero", s->id);
	if (--s->refs > 0)
		return;
	while (s->nsubscriptions > 0)
		free(s->subscriptions[--s->nsubscriptions]);
	free(s->subscriptions);
	free(s->traces);
	free(s->attached);
	free(s->streams);
	free(s->calls);
	auth_principal_unref(s->principal);
	free(s->endpoint);
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

struct auth_principal *
session_principal(const struct session *s)
{
	return (s->principal);
}

const char *
session_endpoint(const struct session *s)
{
	return (s->endpoint);
}

void
session_set_principal(struct session *s, struct auth_principal *p)
{
	auth_principal_ref(p);
	auth_principal_unref(s->principal);
	s->principal = p;
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
	session_store(s, 0);
}

struct stream *
session_standalone(struct session *s)
{
	return (s->standalone);
}

/* The watcher of stream K, if any (one at most). */
struct stream_watcher *
session_attached(struct session *s, uint64_t k)
{
	size_t	i;

	for (i = 0; i < s->nattached; i++) {
		if (s->attached[i].k == k)
			return (s->attached[i].watcher);
	}
	return (NULL);
}

/* Only stream_watch attaches, having ended the watcher before. */
void
session_attach(struct session *s, uint64_t k, struct stream_watcher *w)
{
	s->attached = xrealloc(s->attached,
	    (s->nattached + 1) * sizeof *s->attached);
	s->attached[s->nattached].k = k;
	s->attached[s->nattached].watcher = w;
	s->nattached++;
}

void
session_detach(struct session *s, struct stream_watcher *w)
{
	size_t	i;

	for (i = 0; i < s->nattached; i++) {
		if (s->attached[i].watcher == w) {
			s->attached[i] = s->attached[--s->nattached];
			return;
		}
	}
}

/* Stream K, if this process writes it (it is in the session's list). */
void
session_trace_keep(struct session *s, uint64_t k,
    const struct trace_ctx *ctx)
{
	struct session_trace	*t;

	if (s->traces == NULL)
		s->traces = xcalloc(SESSION_TRACES, sizeof *s->traces);
	t = &s->traces[s->ntraces++ % SESSION_TRACES];
	t->k = k;
	t->ctx = *ctx;
}

/* The context of stream K's call, if this process still knows it. */
const struct trace_ctx *
session_trace_find(struct session *s, uint64_t k)
{
	struct stream	*st = session_stream(s, k);
	size_t		 i, n;

	if (st != NULL)
		return (stream_trace_ctx(st));
	n = s->ntraces < SESSION_TRACES ? s->ntraces : SESSION_TRACES;
	for (i = 0; i < n; i++) {
		if (s->traces[i].k == k)
			return (&s->traces[i].ctx);
	}
	return (NULL);
}

struct stream *
session_stream(struct session *s, uint64_t k)
{
	size_t	i;

	for (i = 0; i < s->nstreams; i++) {
		if (stream_id(s->streams[i]) == k)
			return (s->streams[i]);
	}
	return (NULL);
}

static void
session_lost_refreshed_cb(struct session *s, int status, void *arg)
{
}

/* The calls writing stream K end without a response of their own. */
void
session_cancel_calls(struct session *s, uint64_t k, const char *reason)
{
	size_t	i;

	for (i = 0; i < s->ncalls; i++) {
		if (stream_id(call_stream(s->calls[i])) != k)
			continue;
		/* Cancelling takes the call out of the array. */
		call_abandon(s->calls[i], reason);
		i = (size_t)-1;
	}
}

/*
 * Nothing more will be committed on stream K (its log lost it, could not
 * be reached, or diverged): the calls writing it end. When the log said it
 * has no such session (no_session), it is asked again: if the session is
 * gone, it is closed here too, and the client's next request hears 404.
 */
void
session_stream_lost(struct session *s, uint64_t k, int no_session)
{
	session_cancel_calls(s, k, "the event log lost its stream");
	if (no_session && !s->closed)
		session_refresh(s, session_lost_refreshed_cb, NULL);
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

/* What a session request refused at once is told, on a later turn. */
struct session_refusal {
	session_answer_cb	 cb;
	void			*arg;
};

static void
session_refused_cb(evutil_socket_t fd, short events, void *arg)
{
	struct session_refusal	*r = arg;
	cJSON			*error;

	error = cJSON_CreateObject();
	cJSON_AddNumberToObject(error, "code", JSONRPC_SERVER_ERROR);
	cJSON_AddStringToObject(error, "message", "The session has no "
	    "standalone stream to ask its client on");
	r->cb(NULL, error, r->arg);
	cJSON_Delete(error);
	free(r);
}

/*
 * A server-to-client request outside any call (params taken), on the
 * session's standalone stream: what a session's own upstream asks when
 * none of the session's calls is in flight. cb runs once, on a later
 * turn, with the client's answer, or an error (request_timeout).
 */
void
session_request(struct session *s, const char *method, cJSON *params,
    session_answer_cb cb, void *arg)
{
	struct session_refusal	*r;
	const char		*id;
	cJSON			*msg;
	const char		*text;
	size_t			 len;

	if (s->closed || s->standalone == NULL) {
		cJSON_Delete(params);
		r = xmalloc(sizeof *r);
		r->cb = cb;
		r->arg = arg;
		event_base_once(server.base, -1, EV_TIMEOUT,
		    session_refused_cb, r, NULL);
		return;
	}
	id = outbound_new(NULL, s->id, cb, arg);
	msg = jsonrpc_notification(method, params);
	cJSON_AddStringToObject(msg, "id", id);
	log_debug("session=%s request %s %s sent on the standalone stream",
	    s->id, id, method);
	text = jsonrpc_print_shared(msg, &len);
	stream_append(s->standalone, text, len, 0, NULL, NULL);
	cJSON_Delete(msg);
}

/* A notification (text) on session s's standalone stream, if it has one. */
void
session_notify(struct session *s, const char *text, size_t len)
{
	if (s->standalone != NULL)
		stream_append(s->standalone, text, len, 0, NULL, NULL);
}

/*
 * A change made in this process (announce.h): the standalone stream of
 * every session here hears a list change, and of a resource update those
 * subscribed to it, if its endpoint serves the change's source (and the
 * resource). A session's stream is in the log every instance shares, so
 * only the instance that made the change tells it.
 */
static void
session_announced(enum announce_kind kind, const char *uri,
    const char *source, void *arg)
{
	struct session	*s;
	cJSON		*params = NULL, *msg;
	const char	*text;
	size_t		 len;

	if (kind == ANNOUNCE_TASK)
		return;
	if (kind == ANNOUNCE_RESOURCE_UPDATED) {
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "uri", uri);
	}
	msg = jsonrpc_notification(announce_method(kind), params);
	text = jsonrpc_print_shared(msg, &len);
	RB_FOREACH(s, session_tree, &sessions.tree) {
		if (s->standalone == NULL || (kind ==
		    ANNOUNCE_RESOURCE_UPDATED &&
		    session_subscription_find(s, uri) < 0) ||
		    !provider_endpoint_hears(s->endpoint, kind, uri, source))
			continue;
		stream_append(s->standalone, text, len, 0, NULL, NULL);
	}
	cJSON_Delete(msg);
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

	/* Leases are renewed on their own timer (session_renew_leases). */
	for (i = 0; i < s->nstreams; i++)
		stream_progress_check(s->streams[i], 0);
	if (s->stale && !s->rereading)
		session_reread(s, 1, session_live_refreshed_cb, NULL);
	if (s->last_active_ms > s->stored_ms && now - s->stored_ms >= ttl / 4)
		session_store(s, 0);
	else if (now - s->last_active_ms >= ttl && s->ncalls == 0)
		session_teardown(s, "idle here for session_ttl",
		    SESSION_RELEASE);
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
		if (s->nattached > 0)
			s->last_active_ms = now;
		if (server.shared) {
			session_cron_shared(s, now, ttl);
			continue;
		}
		if (now - s->last_active_ms >= ttl)
			session_close(s, "idle for session_ttl");
	}
}

/*
 * With a shared log, every lease_renew_ms() (server.c's lease timer, not
 * the cron: a lease may be shorter than three cron ticks): the leases of
 * the request streams this process still writes.
 */
void
session_renew_leases(void)
{
	struct session	*s;
	size_t		 i;

	RB_FOREACH(s, session_tree, &sessions.tree) {
		for (i = 0; i < s->nstreams; i++) {
			if (stream_is_request_open(s->streams[i]))
				lease_renew(s->id, stream_id(s->streams[i]));
		}
	}
}

/* Calls running in this process, over all sessions: a drain waits. */
size_t
session_running_calls(void)
{
	struct session	*s;
	size_t		 n = 0;

	RB_FOREACH(s, session_tree, &sessions.tree)
		n += s->ncalls;
	return (n);
}

/*
 * A drain ran out of time: every running call ends with an error response
 * saying why, committed like any response; sessions and views stay, so
 * the clients read it.
 */
void
session_interrupt_calls(const char *reason)
{
	struct session	*s;
	size_t		 i;

	/* Each call leaves the array as it answers: from the top down. */
	RB_FOREACH(s, session_tree, &sessions.tree) {
		for (i = s->ncalls; i > 0; i--) {
			if (i <= s->ncalls)
				call_interrupt(s->calls[i - 1], reason);
		}
	}
}

void
session_shutdown(void)
{
	struct session	*s, *s1;

	RB_FOREACH_SAFE(s, session_tree, &sessions.tree, s1)
		session_teardown(s, "shutdown", SESSION_RELEASE);
}
