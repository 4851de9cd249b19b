/*
 * Upstreams: mcpd as the MCP client of a server, one run after another.
 * A run is carried by a transport (upstream_int.h): a program's stdin and
 * stdout (upstream_stdio.c), or one Streamable HTTP session
 * (upstream_http.c). This file frames messages, does the handshake,
 * keeps the catalog and the requests, and starts a new run with back-off
 * when one ends: a program exits, or an HTTP session fails.
 *
 * An upstream's state:
 *
 *	STARTING --(initialize answered)--> LISTING --(catalog)--> READY
 *	    ^                                  |                     |
 *	    |                        (exit, bad handshake, framing failure)
 *	    +--(timer)-- BACKOFF <-------------+---------------------+
 *
 *	any --(upstream_stop)--> STOPPING --(reaped)--> STOPPED (freed)
 *
 * Requests made before READY wait (they are sent once it is), unless the
 * last start failed before READY: then they end at once with its error, so
 * a broken program does not hold every call for its timeout. Every request
 * has the upstream's timeout; on exit every request in flight ends with an
 * error naming the upstream and how it ended.
 *
 * Restart back-off: restart_delay, doubled after each run in a row that
 * did not stay up for UPSTREAM_STABLE_MS, up to UPSTREAM_BACKOFF_MAX times
 * restart_delay.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "auth.h"
#include "clock.h"
#include "conf.h"
#include "credential.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "mcpd.h"
#include "mcptrace.h"
#include "server.h"
#include "upstream.h"
#include "trace.h"
#include "upstream_int.h"
#include "xmalloc.h"

/* A run this long resets the back-off. */
#define UPSTREAM_STABLE_MS	60000
/* The back-off stops doubling at this many times restart_delay. */
#define UPSTREAM_BACKOFF_MAX	60
/* Pages of one list fetched at most (a server that never ends a list). */
#define UPSTREAM_LIST_PAGES	100
/* The revision mcpd asks its upstreams for. */
#define UPSTREAM_VERSION	"2025-06-18"

static const char *const upstream_state_names[UPSTREAM_STATE_MAX] = {
	"starting", "listing", "ready", "backoff", "stopping", "stopped"
};

static const char *const upstream_list_methods[UPSTREAM_LIST_MAX] = {
	"tools/list", "prompts/list", "resources/list",
	"resources/templates/list"
};
static const char *const upstream_list_keys[UPSTREAM_LIST_MAX] = {
	"tools", "prompts", "resources", "resourceTemplates"
};
static const char *const upstream_list_caps[UPSTREAM_LIST_MAX] = {
	"tools", "prompts", "resources", "resources"
};

struct upstream_req {
	struct upstream		*u;
	int64_t			 id;
	char			*method;
	cJSON			*params;	/* until sent */
	int			 sent;
	int			 internal;	/* ours: handshake, lists */
	upstream_cb		 cb;
	void			*arg;
	struct auth_principal	*who;		/* on whose behalf, or NULL */
	char			*error;		/* set: fail it (fail_ev) */
	struct event		*timer;
	struct trace_span	*span;		/* a caller's: CLIENT */
	TAILQ_ENTRY(upstream_req) entry;
};
TAILQ_HEAD(upstream_reqs, upstream_req);

struct upstream {
	const struct conf	*conf;		/* holds def */
	const struct conf_upstream *def;
	char			*name;
	char			*key;		/* session id, or NULL */
	enum upstream_state	 state;

	struct credential	*cred;		/* HTTP: what to send, or NULL */
	const struct upstream_transport *ops;	/* stdio or HTTP */
	void			*tp;		/* the run; NULL: none */
	long			 pid;		/* of the last run, 0: none */
	uint64_t		 started_ms;
	u_int			 failures;	/* runs in a row not stable */
	u_int			 ended;		/* runs that ended, in all */
	int			 start_failed;	/* the last never got READY */
	char			*last_error;	/* how the last run ended */
	struct event		*restart_ev;
	struct event		*fail_ev;	/* runs failed requests' cbs */

	int64_t			 next_id;
	struct upstream_reqs	 reqs;		/* all, sent or not */
	u_int			 inflight;	/* not internal */

	cJSON			*capabilities;	/* the server's */
	cJSON			*lists[UPSTREAM_LIST_MAX];
	cJSON			*loading[UPSTREAM_LIST_MAX];
	int			 list_seq[UPSTREAM_LIST_MAX];
	u_int			 pending_lists;	/* bits: 1 << list */
	int			 generation;	/* of the running program */

	const struct upstream_hooks *hooks;
	void			*arg;
};

static const struct upstream_hooks upstream_no_hooks;

static void	upstream_spawn(struct upstream *);
static void	upstream_fail_requests(struct upstream *, const char *, int);
static void	upstream_load_list(struct upstream *, enum upstream_list);

/* ---------------------------------------------------------------------
 * Pure helpers.
 */

/* A message as one line: compact JSON and a newline (allocated). */
char *
upstream_frame(const cJSON *msg, size_t *len)
{
	char	*text, *line;
	size_t	 n;

	text = jsonrpc_print(msg);
	n = strlen(text);
	line = xmalloc(n + 2);
	memcpy(line, text, n);
	line[n] = '\n';
	line[n + 1] = '\0';
	free(text);
	*len = n + 1;
	return (line);
}

/* Milliseconds before the next start after failures runs in a row. */
int
upstream_backoff_ms(long long base_s, u_int failures)
{
	long long	ms = base_s * 1000, max = ms * UPSTREAM_BACKOFF_MAX;
	u_int		i;

	for (i = 1; i < failures && ms < max; i++)
		ms *= 2;
	if (ms > max)
		ms = max;
	return ((int)(ms > 3600000 ? 3600000 : ms));
}

/* ---------------------------------------------------------------------
 * State.
 */

const char *
upstream_state_name(enum upstream_state state)
{
	return (state < UPSTREAM_STATE_MAX ? upstream_state_names[state] :
	    "?");
}

static const char *
upstream_sid(const struct upstream *u)
{
	return (u->key != NULL ? u->key : "-");
}

static void
upstream_set_state(struct upstream *u, enum upstream_state state)
{
	log_limited(state == UPSTREAM_BACKOFF ? LOG_LEVEL_WARN : LOG_LEVEL_INFO,
	    "upstream-state", "upstream=%s session=%s pid=%ld: %s -> %s",
	    u->name, upstream_sid(u), u->pid, upstream_state_names[u->state],
	    upstream_state_names[state]);
	u->state = state;
}

const char *
upstream_name(const struct upstream *u)
{
	return (u->name);
}

const char *
upstream_key(const struct upstream *u)
{
	return (u->key);
}

enum upstream_state
upstream_state(const struct upstream *u)
{
	return (u->state);
}

long
upstream_pid(const struct upstream *u)
{
	return (u->tp != NULL ? u->pid : 0);
}

const cJSON *
upstream_capabilities(const struct upstream *u)
{
	return (u->capabilities);
}

const cJSON *
upstream_catalog(const struct upstream *u, enum upstream_list l)
{
	return (u->lists[l]);
}

u_int
upstream_inflight(const struct upstream *u)
{
	return (u->inflight);
}

/* Runs that ended other than by upstream_stop (exits, failures). */
u_int
upstream_ended(const struct upstream *u)
{
	return (u->ended);
}

/* ---------------------------------------------------------------------
 * Requests.
 */

static void
upstream_req_free(struct upstream_req *r)
{
	if (r->error != NULL)
		mcptrace_error(r->span, JSONRPC_INTERNAL_ERROR, r->error);
	trace_end(r->span);
	if (r->timer != NULL)
		event_free(r->timer);
	cJSON_Delete(r->params);
	auth_principal_unref(r->who);
	free(r->method);
	free(r->error);
	free(r);
}

static void	upstream_maybe_free(struct upstream *);

/* Takes r out of the table; the caller runs or drops its callback. */
static void
upstream_req_remove(struct upstream *u, struct upstream_req *r)
{
	TAILQ_REMOVE(&u->reqs, r, entry);
	if (!r->internal)
		u->inflight--;
	if (r->timer != NULL)
		evtimer_del(r->timer);
}

static void
upstream_fail_cb(evutil_socket_t fd, short events, void *arg)
{
	struct upstream		*u = arg;
	struct upstream_req	*r, *r1;
	cJSON			*error;

	TAILQ_FOREACH_SAFE(r, &u->reqs, entry, r1) {
		if (r->error == NULL)
			continue;
		upstream_req_remove(u, r);
		error = cJSON_CreateObject();
		cJSON_AddNumberToObject(error, "code", JSONRPC_INTERNAL_ERROR);
		cJSON_AddStringToObject(error, "message", r->error);
		if (r->cb != NULL)
			r->cb(NULL, error, r->arg);
		cJSON_Delete(error);
		upstream_req_free(r);
	}
	upstream_maybe_free(u);
}

/* r ends with an error, on a later turn. */
static void
upstream_req_fail(struct upstream_req *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
upstream_req_fail(struct upstream_req *r, const char *fmt, ...)
{
	va_list	ap;

	if (r->error != NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&r->error, fmt, ap) == -1)
		fatalx("vasprintf");
	va_end(ap);
	if (r->timer != NULL)
		evtimer_del(r->timer);
	event_active(r->u->fail_ev, EV_TIMEOUT, 0);
}

/* The run cannot go on (its transport says why). */
static void	upstream_broken(struct upstream *, const char *);

/* Whether a run is under way: a program, or an HTTP session. */
static int
upstream_running(const struct upstream *u)
{
	return (u->tp != NULL);
}

/*
 * A message to the server; id: of a request (its answer is awaited), on
 * behalf of who (NULL: mcpd's own).
 */
static void
upstream_write(struct upstream *u, const cJSON *msg, int64_t id,
    struct auth_principal *who)
{
	const char	*why;
	char		*line;
	size_t		 len;

	if (!upstream_running(u))
		return;
	line = upstream_frame(msg, &len);
	if ((why = u->ops->send(u->tp, line, len, id, who)) != NULL)
		upstream_broken(u, why);
	free(line);
}

/* Request id is no longer awaited: the transport may let go of it. */
static void
upstream_forget(struct upstream *u, int64_t id)
{
	if (upstream_running(u) && u->ops->forget != NULL)
		u->ops->forget(u->tp, id);
}

/*
 * A request goes out. A caller's is traced: its trace context in
 * params._meta (traceparent, tracestate), and its span current while the
 * transport sends it (the HTTP transport puts it in a header too).
 */
static void
upstream_send(struct upstream *u, struct upstream_req *r)
{
	cJSON	*msg;
	int	 depth;

	mcptrace_inject(r->params, r->span);
	msg = jsonrpc_notification(r->method, r->params);
	r->params = NULL;
	cJSON_AddNumberToObject(msg, "id", (double)r->id);
	r->sent = 1;
	depth = trace_enter(r->span);
	upstream_write(u, msg, r->id, r->who);
	trace_leave(depth);
	cJSON_Delete(msg);
}

static void
upstream_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
	struct upstream_req	*r = arg;
	struct upstream		*u = r->u;
	cJSON			*params;

	log_limited(LOG_LEVEL_WARN, "upstream-timeout", "upstream=%s "
	    "session=%s: %s id=%lld: no answer within %lld s", u->name,
	    upstream_sid(u), r->method, (long long)r->id, u->def->timeout);
	if (r->sent && upstream_running(u)) {
		params = cJSON_CreateObject();
		cJSON_AddNumberToObject(params, "requestId", (double)r->id);
		cJSON_AddStringToObject(params, "reason", "timed out");
		upstream_notify(u, "notifications/cancelled", params);
		upstream_forget(u, r->id);
	}
	upstream_req_fail(r, "upstream %s: no answer to %s within %lld s "
	    "(timeout)", u->name, r->method, u->def->timeout);
	if (r->internal)
		upstream_broken(u, "the handshake timed out");
}

static struct upstream_req *
upstream_req_new(struct upstream *u, const char *method, cJSON *params,
    int internal, upstream_cb cb, void *arg)
{
	struct upstream_req	*r;
	struct timeval		 tv;
	cJSON			*idj;

	r = xcalloc(1, sizeof *r);
	r->u = u;
	r->id = ++u->next_id;
	r->method = xstrdup(method);
	r->params = params;
	r->internal = internal;
	r->cb = cb;
	r->arg = arg;
	if (!internal && trace_enabled) {
		/* Under the span of whoever asks (the call's, current). */
		idj = cJSON_CreateNumber((double)r->id);
		r->span = mcptrace_client(method, params, idj, trace_current(),
		    u->def->url != NULL ? "tcp" : "pipe");
		cJSON_Delete(idj);
		trace_attr_str(r->span, "mcpd.upstream", u->name);
	}
	r->timer = evtimer_new(server.base, upstream_timeout_cb, r);
	tv.tv_sec = u->def->timeout;
	tv.tv_usec = 0;
	evtimer_add(r->timer, &tv);
	TAILQ_INSERT_TAIL(&u->reqs, r, entry);
	if (!internal)
		u->inflight++;
	return (r);
}

/*
 * A request to the server (params taken) on behalf of who (NULL: mcpd's
 * own; over HTTP, whose credentials it carries, credential.h). Returns
 * its id, which upstream_cancel takes. cb runs once, on a later turn.
 */
int64_t
upstream_request_as(struct upstream *u, const char *method, cJSON *params,
    struct auth_principal *who, upstream_cb cb, void *arg)
{
	struct upstream_req	*r;

	r = upstream_req_new(u, method, params, 0, cb, arg);
	r->who = auth_principal_ref(who);
	switch (u->state) {
	case UPSTREAM_READY:
		upstream_send(u, r);
		break;
	case UPSTREAM_STOPPING:
	case UPSTREAM_STOPPED:
		upstream_req_fail(r, "upstream %s is stopping", u->name);
		break;
	case UPSTREAM_BACKOFF:
		if (u->start_failed) {
			upstream_req_fail(r, "upstream %s is not running: %s",
			    u->name, u->last_error != NULL ? u->last_error :
			    "its start failed");
		}
		break;
	default:
		break;	/* sent once READY */
	}
	return (r->id);
}

int64_t
upstream_request(struct upstream *u, const char *method, cJSON *params,
    upstream_cb cb, void *arg)
{
	return (upstream_request_as(u, method, params, NULL, cb, arg));
}

static struct upstream_req *
upstream_req_find(struct upstream *u, int64_t id)
{
	struct upstream_req	*r;

	TAILQ_FOREACH(r, &u->reqs, entry) {
		if (r->id == id)
			return (r);
	}
	return (NULL);
}

/* The caller gave up on request id: the server is told, cb runs later. */
void
upstream_cancel(struct upstream *u, int64_t id, const char *reason)
{
	struct upstream_req	*r;
	cJSON			*params;

	if ((r = upstream_req_find(u, id)) == NULL || r->error != NULL)
		return;
	if (r->sent && upstream_running(u)) {
		params = cJSON_CreateObject();
		cJSON_AddNumberToObject(params, "requestId", (double)id);
		cJSON_AddStringToObject(params, "reason", reason);
		upstream_notify(u, "notifications/cancelled", params);
		upstream_forget(u, id);
	}
	upstream_req_fail(r, "cancelled: %s", reason);
}

void
upstream_notify(struct upstream *u, const char *method, cJSON *params)
{
	cJSON	*msg = jsonrpc_notification(method, params);

	if (u->state == UPSTREAM_READY || u->state == UPSTREAM_LISTING ||
	    strcmp(method, "notifications/initialized") == 0)
		upstream_write(u, msg, 0, NULL);
	cJSON_Delete(msg);
}

/* Our answer to the server's request id (result or error taken). */
void
upstream_answer(struct upstream *u, const cJSON *id, cJSON *result,
    cJSON *error)
{
	cJSON	*msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, 1));
	if (error != NULL) {
		cJSON_AddItemToObject(msg, "error", error);
		cJSON_Delete(result);
	} else
		cJSON_AddItemToObject(msg, "result", result != NULL ? result :
		    cJSON_CreateObject());
	if (u->state != UPSTREAM_STOPPING)
		upstream_write(u, msg, 0, NULL);
	cJSON_Delete(msg);
}

/*
 * The run is over: what was sent, and our own requests, end with text; so
 * do the callers' requests not sent yet when all is set (else they wait
 * for the next run).
 */
static void
upstream_fail_requests(struct upstream *u, const char *text, int all)
{
	struct upstream_req	*r;

	TAILQ_FOREACH(r, &u->reqs, entry) {
		if (all || r->internal || r->sent)
			upstream_req_fail(r, "%s", text);
	}
}

/* ---------------------------------------------------------------------
 * The handshake and the catalog.
 */

static void
upstream_lists_clear(cJSON **lists)
{
	int	i;

	for (i = 0; i < UPSTREAM_LIST_MAX; i++) {
		cJSON_Delete(lists[i]);
		lists[i] = NULL;
	}
}

struct upstream_page {
	struct upstream		*u;
	enum upstream_list	 l;
	int			 generation;
	int			 seq;
	int			 pages;
	size_t			 count;		/* items kept */
	size_t			 over;		/* past max_tools, left out */
};

static const char *const upstream_list_items[UPSTREAM_LIST_MAX] = {
	"tool", "prompt", "resource", "resource template"
};

/* An item's name for a log line (escaped there), or "". */
static const char *
upstream_item_name(enum upstream_list l, const cJSON *item)
{
	const char	*name = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(item,
			    l == UPSTREAM_RESOURCES ? "uri" : "name"));

	return (name != NULL ? name : "");
}

/*
 * Why an item of a list cannot be served, or NULL. Its name (a resource's
 * URI) must be a string of at least one character without control
 * characters: a name goes into log lines, clients' menus and, prefixed,
 * back to the upstream, and one with a newline or an escape sequence
 * forges what it is shown in. MCP asks tool names for [A-Za-z0-9_.-]
 * (SHOULD); more is accepted, control characters never. A string that
 * held a NUL (\u0000) cannot be passed on whole anywhere in the item.
 */
static const char *
upstream_item_refused(enum upstream_list l, const cJSON *item)
{
	const char	*key = l == UPSTREAM_RESOURCES ? "uri" : "name";
	const char	*name = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(item, key));
	const unsigned char *p;

	if (name == NULL || *name == '\0')
		return (l == UPSTREAM_RESOURCES ? "no uri" : "no name");
	if (jsonrpc_has_nul(item))
		return ("a string holds a NUL (\\u0000)");
	for (p = (const unsigned char *)name; *p != '\0'; p++) {
		/* C0, DEL, and C1 (U+0080 to U+009F, 0xc2 0x80-0x9f). */
		if (*p < 0x20 || *p == 0x7f ||
		    (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return ("its name holds a control character");
	}
	return (NULL);
}

/* Whether the list's items past max_tools were left out: one line. */
static void
upstream_page_over(struct upstream *u, const struct upstream_page *pg)
{
	if (pg->over == 0)
		return;
	log_limited(LOG_LEVEL_WARN, "upstream-max-tools", "upstream=%s "
	    "session=%s: %zu %ss past max_tools (%lld) not served",
	    u->name, upstream_sid(u), pg->over, upstream_list_items[pg->l],
	    u->def->max_tools);
}

/* READY at last: the callers' requests that waited for it go out. */
static void
upstream_send_waiting(struct upstream *u)
{
	struct upstream_req	*r;

	TAILQ_FOREACH(r, &u->reqs, entry) {
		if (!r->sent && r->error == NULL)
			upstream_send(u, r);
	}
}

static void
upstream_list_done(struct upstream *u, enum upstream_list l)
{
	cJSON_Delete(u->lists[l]);
	u->lists[l] = u->loading[l];
	u->loading[l] = NULL;
	u->pending_lists &= ~(1U << l);
	if (u->pending_lists != 0)
		return;
	if (u->state == UPSTREAM_LISTING) {
		upstream_set_state(u, UPSTREAM_READY);
		u->start_failed = 0;
		log_info("upstream=%s session=%s pid=%ld: ready, %d tools, %d "
		    "prompts, %d resources, %d resource templates", u->name,
		    upstream_sid(u), u->pid,
		    cJSON_GetArraySize(u->lists[UPSTREAM_TOOLS]),
		    cJSON_GetArraySize(u->lists[UPSTREAM_PROMPTS]),
		    cJSON_GetArraySize(u->lists[UPSTREAM_RESOURCES]),
		    cJSON_GetArraySize(u->lists[UPSTREAM_TEMPLATES]));
		upstream_send_waiting(u);
	}
	if (u->hooks->catalog != NULL)
		u->hooks->catalog(u, u->arg);
}

static void
upstream_page_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct upstream_page	*pg = arg;
	struct upstream		*u = pg->u;
	const cJSON		*items, *next, *item;
	const char		*why;
	cJSON			*params;

	if (pg->generation != u->generation || pg->seq != u->list_seq[pg->l] ||
	    u->state == UPSTREAM_STOPPING) {
		free(pg);
		return;
	}
	if (error != NULL) {
		/* A list it cannot give is an empty list, not a dead server. */
		log_limited(LOG_LEVEL_WARN, "upstream-list", "upstream=%s "
		    "session=%s: %s failed: %s", u->name, upstream_sid(u),
		    upstream_list_methods[pg->l], cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(error, "message")));
		upstream_page_over(u, pg);
		upstream_list_done(u, pg->l);
		free(pg);
		return;
	}
	items = cJSON_GetObjectItemCaseSensitive(result,
	    upstream_list_keys[pg->l]);
	cJSON_ArrayForEach(item, items) {
		if (!cJSON_IsObject(item))
			continue;
		if ((why = upstream_item_refused(pg->l, item)) != NULL) {
			/* The log escapes what the name holds. */
			log_limited(LOG_LEVEL_WARN, "upstream-item", "upstream="
			    "%s session=%s: %s \"%s\" not served: %s", u->name,
			    upstream_sid(u), upstream_list_items[pg->l],
			    upstream_item_name(pg->l, item), why);
			continue;
		}
		if (pg->count >= (size_t)u->def->max_tools) {
			pg->over++;
			continue;
		}
		pg->count++;
		cJSON_AddItemToArray(u->loading[pg->l], cJSON_Duplicate(item,
		    1));
	}
	next = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
	if (cJSON_IsString(next) && ++pg->pages < UPSTREAM_LIST_PAGES) {
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "cursor", next->valuestring);
		upstream_send(u, upstream_req_new(u,
		    upstream_list_methods[pg->l], params, 1, upstream_page_cb,
		    pg));
		return;
	}
	upstream_page_over(u, pg);
	upstream_list_done(u, pg->l);
	free(pg);
}

static void
upstream_load_list(struct upstream *u, enum upstream_list l)
{
	struct upstream_page	*pg;

	cJSON_Delete(u->loading[l]);
	u->loading[l] = cJSON_CreateArray();
	pg = xcalloc(1, sizeof *pg);
	pg->u = u;
	pg->l = l;
	pg->generation = u->generation;
	pg->seq = ++u->list_seq[l];
	u->pending_lists |= 1U << l;
	upstream_send(u, upstream_req_new(u, upstream_list_methods[l],
	    cJSON_CreateObject(), 1, upstream_page_cb, pg));
}

static int
upstream_has_cap(const struct upstream *u, enum upstream_list l)
{
	return (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(
	    u->capabilities, upstream_list_caps[l])));
}

static void
upstream_initialized_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct upstream	*u = arg;
	const cJSON	*caps, *version;
	cJSON		*params;
	int		 l;

	if (u->state != UPSTREAM_STARTING)
		return;		/* stopped, or the run ended meanwhile */
	if (error != NULL) {
		upstream_broken(u, cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(error, "message")));
		return;
	}
	caps = cJSON_GetObjectItemCaseSensitive(result, "capabilities");
	version = cJSON_GetObjectItemCaseSensitive(result, "protocolVersion");
	if (!cJSON_IsObject(caps) || !cJSON_IsString(version)) {
		upstream_broken(u, "its initialize result has no capabilities "
		    "or protocolVersion");
		return;
	}
	cJSON_Delete(u->capabilities);
	u->capabilities = cJSON_Duplicate(caps, 1);
	log_debug("upstream=%s session=%s: initialized, revision %s", u->name,
	    upstream_sid(u), version->valuestring);
	if (upstream_running(u) && u->ops->set_version != NULL)
		u->ops->set_version(u->tp, version->valuestring);
	upstream_notify(u, "notifications/initialized", NULL);
	if (upstream_running(u) && u->ops->listen != NULL)
		u->ops->listen(u->tp);
	/* mcpd filters log messages per client session itself. */
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(caps, "logging"))) {
		params = cJSON_CreateObject();
		cJSON_AddStringToObject(params, "level", "debug");
		upstream_send(u, upstream_req_new(u, "logging/setLevel", params,
		    1, NULL, NULL));
	}

	upstream_set_state(u, UPSTREAM_LISTING);
	u->pending_lists = 0;
	for (l = 0; l < UPSTREAM_LIST_MAX; l++) {
		if (upstream_has_cap(u, l))
			upstream_load_list(u, l);
		else {
			cJSON_Delete(u->lists[l]);
			u->lists[l] = cJSON_CreateArray();
		}
	}
	if (u->pending_lists == 0) {
		/* A server with nothing to list is ready at once. */
		u->loading[UPSTREAM_TOOLS] = cJSON_CreateArray();
		upstream_list_done(u, UPSTREAM_TOOLS);
	}
}

static void
upstream_handshake(struct upstream *u)
{
	cJSON	*params, *caps, *info, *roots, *elicit;

	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "protocolVersion", UPSTREAM_VERSION);
	caps = cJSON_AddObjectToObject(params, "capabilities");
	cJSON_AddObjectToObject(caps, "sampling");
	/*
	 * Both modes: an empty elicitation object means form only, and a
	 * server then keeps its url-mode tools from every client. The client
	 * a request reaches answers it, or refuses a mode it lacks.
	 */
	elicit = cJSON_AddObjectToObject(caps, "elicitation");
	cJSON_AddObjectToObject(elicit, "form");
	cJSON_AddObjectToObject(elicit, "url");
	roots = cJSON_AddObjectToObject(caps, "roots");
	cJSON_AddBoolToObject(roots, "listChanged", 0);
	info = cJSON_AddObjectToObject(params, "clientInfo");
	cJSON_AddStringToObject(info, "name", "mcpd");
	cJSON_AddStringToObject(info, "version", MCPD_VERSION);
	upstream_send(u, upstream_req_new(u, "initialize", params, 1,
	    upstream_initialized_cb, u));
}

/* ---------------------------------------------------------------------
 * Messages from the server.
 */

static void
upstream_response(struct upstream *u, const cJSON *msg)
{
	const cJSON		*id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON		*result, *error;
	struct upstream_req	*r = NULL;
	uint64_t		 n;

	if (jsonrpc_whole_number(id, 9007199254740992.0, &n) == 0)
		r = upstream_req_find(u, (int64_t)n);
	if (r == NULL || r->error != NULL) {
		log_limited(LOG_LEVEL_INFO, "upstream-stray", "upstream=%s "
		    "session=%s: an answer to no request in flight (unknown, "
		    "cancelled or timed out)", u->name, upstream_sid(u));
		return;
	}
	result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	error = cJSON_GetObjectItemCaseSensitive(msg, "error");
	mcptrace_outcome(r->span, result, cJSON_IsObject(error) ? error :
	    result == NULL ? msg : NULL);
	upstream_req_remove(u, r);
	if (r->cb != NULL) {
		if (cJSON_IsObject(error))
			r->cb(NULL, error, r->arg);
		else if (result != NULL)
			r->cb(result, NULL, r->arg);
		else {
			cJSON	*e = cJSON_CreateObject();

			cJSON_AddNumberToObject(e, "code",
			    JSONRPC_INTERNAL_ERROR);
			cJSON_AddStringToObject(e, "message", "upstream "
			    "answered with neither result nor error");
			r->cb(NULL, e, r->arg);
			cJSON_Delete(e);
		}
	}
	upstream_req_free(r);
}

static void
upstream_notification(struct upstream *u, const cJSON *msg, int64_t related)
{
	const char	*method = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(msg, "method"));
	int		 l = -1;

	if (strcmp(method, "notifications/tools/list_changed") == 0)
		l = UPSTREAM_TOOLS;
	else if (strcmp(method, "notifications/prompts/list_changed") == 0)
		l = UPSTREAM_PROMPTS;
	else if (strcmp(method, "notifications/resources/list_changed") == 0)
		l = UPSTREAM_RESOURCES;
	if (l != -1) {
		if (u->state != UPSTREAM_READY &&
		    u->state != UPSTREAM_LISTING)
			return;
		if (l == UPSTREAM_RESOURCES && upstream_has_cap(u,
		    UPSTREAM_TEMPLATES))
			upstream_load_list(u, UPSTREAM_TEMPLATES);
		upstream_load_list(u, l);
		return;
	}
	if (u->hooks->notification != NULL)
		u->hooks->notification(u, msg, related, u->arg);
}

static void
upstream_server_request(struct upstream *u, const cJSON *msg,
    int64_t related)
{
	const char	*method = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(msg, "method"));
	const cJSON	*id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	cJSON		*error;

	if (strcmp(method, "ping") == 0) {
		upstream_answer(u, id, cJSON_CreateObject(), NULL);
		return;
	}
	/* Servers ask (roots/list) as soon as they are initialized. */
	if (u->hooks->request != NULL && (u->state == UPSTREAM_READY ||
	    u->state == UPSTREAM_LISTING)) {
		u->hooks->request(u, msg, related, u->arg);
		return;
	}
	error = cJSON_CreateObject();
	cJSON_AddNumberToObject(error, "code", JSONRPC_METHOD_NOT_FOUND);
	cJSON_AddStringToObject(error, "message", "mcpd: not ready for "
	    "requests");
	upstream_answer(u, id, NULL, error);
}

/*
 * An answer whose result holds a NUL (\u0000) cannot be passed on, and
 * jsonrpc_classify refuses it whole: ignored, its request would wait for
 * its timeout, and a list request failing so fails the handshake, again
 * at each restart. So the result is mended first: a list keeps the items
 * without a NUL (upstream_item_refused logs the others), and any other
 * answer becomes an error saying why.
 */
static void
upstream_response_nul(struct upstream *u, cJSON *msg)
{
	const cJSON		*id;
	cJSON			*result, *items, *item, *next, *error;
	struct upstream_req	*r = NULL;
	uint64_t		 n;
	int			 l;

	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	result = cJSON_GetObjectItemCaseSensitive(msg, "result");
	if (cJSON_HasObjectItem(msg, "method") || !jsonrpc_has_nul(result))
		return;
	if (jsonrpc_whole_number(id, 9007199254740992.0, &n) == 0)
		r = upstream_req_find(u, (int64_t)n);
	for (l = 0; r != NULL && r->internal && l < UPSTREAM_LIST_MAX; l++) {
		if (strcmp(r->method, upstream_list_methods[l]) != 0)
			continue;
		items = cJSON_GetObjectItemCaseSensitive(result,
		    upstream_list_keys[l]);
		for (item = items != NULL ? items->child : NULL; item != NULL;
		    item = next) {
			next = item->next;
			if (!jsonrpc_has_nul(item))
				continue;
			log_limited(LOG_LEVEL_WARN, "upstream-item", "upstream="
			    "%s session=%s: %s \"%s\" not served: a string "
			    "holds a NUL (\\u0000)", u->name, upstream_sid(u),
			    upstream_list_items[l], upstream_item_name(l,
			    item));
			cJSON_Delete(cJSON_DetachItemViaPointer(items, item));
		}
	}
	if (!jsonrpc_has_nul(result))
		return;
	log_limited(LOG_LEVEL_WARN, "upstream-garbage", "upstream=%s "
	    "session=%s: an answer holds a NUL (\\u0000) in a string; "
	    "answered as an error", u->name, upstream_sid(u));
	error = cJSON_CreateObject();
	cJSON_AddNumberToObject(error, "code", JSONRPC_INTERNAL_ERROR);
	cJSON_AddStringToObject(error, "message", "the upstream's answer "
	    "holds a NUL (\\u0000) in a string, which mcpd cannot pass on");
	cJSON_DeleteItemFromObjectCaseSensitive(msg, "result");
	cJSON_AddItemToObject(msg, "error", error);
}

/* A message of the server; related: our request it came with, or 0. */
static void
upstream_message(struct upstream *u, const char *line, size_t len,
    int64_t related)
{
	cJSON		*msg;
	const char	*cause;
	int		 code;

	if (len == 0 || (len == 1 && line[0] == '\r'))
		return;
	if ((msg = jsonrpc_parse(line, len, &code, &cause)) == NULL ||
	    !cJSON_IsObject(msg)) {
		log_limited(LOG_LEVEL_WARN, "upstream-garbage", "upstream=%s "
		    "session=%s pid=%ld: a line of its output is not a "
		    "JSON-RPC message (%s), ignored: %.*s", u->name,
		    upstream_sid(u), u->pid, msg == NULL ? cause : "not an "
		    "object", (int)(len > 80 ? 80 : len), line);
		cJSON_Delete(msg);
		return;
	}
	upstream_response_nul(u, msg);
	switch (jsonrpc_classify(msg, &cause)) {
	case JSONRPC_RESPONSE:
		upstream_response(u, msg);
		break;
	case JSONRPC_NOTIFICATION:
		upstream_notification(u, msg, related);
		break;
	case JSONRPC_REQUEST:
		upstream_server_request(u, msg, related);
		break;
	default:
		log_limited(LOG_LEVEL_WARN, "upstream-garbage", "upstream=%s "
		    "session=%s: an invalid JSON-RPC message (%s), ignored",
		    u->name, upstream_sid(u), cause);
		break;
	}
	cJSON_Delete(msg);
}

/* ---------------------------------------------------------------------
 * Runs.
 */

static void	upstream_run_ended(struct upstream *, char *);

/*
 * The run cannot go on: its transport closes it, now (an HTTP session)
 * or later (a program is killed; upstream_ended_cb sees its end).
 */
static void
upstream_broken(struct upstream *u, const char *why)
{
	if (!upstream_running(u) || u->state == UPSTREAM_STOPPING)
		return;
	log_limited(LOG_LEVEL_WARN, "upstream-broken", "upstream=%s session=%s "
	    "pid=%ld: %s; %s", u->name, upstream_sid(u), u->pid, why,
	    u->ops->broken);
	free(u->last_error);
	xasprintf(&u->last_error, "%s", why);
	if (u->ops->close(u->tp, 0)) {
		u->tp = NULL;
		upstream_run_ended(u, xstrdup(why));
	}
}

static void
upstream_restart_cb(evutil_socket_t fd, short events, void *arg)
{
	upstream_spawn(arg);
}

/*
 * A run close left to end later is over (a program reaped). Killed, it
 * ended as its last error said (why it was killed), if there was one.
 */
static void
upstream_ended_cb(int killed, const char *how, void *arg)
{
	struct upstream	*u = arg;

	u->tp = NULL;
	if (u->state == UPSTREAM_STOPPING) {
		u->generation++;
		upstream_set_state(u, UPSTREAM_STOPPED);
		event_active(u->fail_ev, EV_TIMEOUT, 0);
		return;
	}
	upstream_run_ended(u, xstrdup(killed && u->last_error != NULL ?
	    u->last_error : how));
}

/* A run is over (how, taken): its requests fail, a restart is due. */
static void
upstream_run_ended(struct upstream *u, char *how)
{
	struct timeval	 tv;
	char		*text;
	int		 ms;

	u->generation++;
	u->ended++;
	xasprintf(&text, "upstream %s: %s", u->name, how);
	free(u->last_error);
	u->last_error = how;

	if (u->state != UPSTREAM_READY)
		u->start_failed = 1;
	if (clock_now_ms() - u->started_ms >= UPSTREAM_STABLE_MS &&
	    !u->start_failed)
		u->failures = 0;
	u->failures++;
	/* Requests not yet sent wait for the next run, unless it is doomed. */
	upstream_fail_requests(u, text, u->start_failed);
	free(text);
	upstream_set_state(u, UPSTREAM_BACKOFF);
	ms = upstream_backoff_ms(u->def->restart_delay, u->failures);
	log_warn("upstream=%s session=%s pid=%ld: %s; restarting in %d ms",
	    u->name, upstream_sid(u), u->pid, u->last_error, ms);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(u->restart_ev, &tv);
}

static void
upstream_message_cb(const char *text, size_t len, int64_t related,
    void *arg)
{
	upstream_message(arg, text, len, related);
}

static void
upstream_lost_cb(int64_t id, const char *why, void *arg)
{
	struct upstream		*u = arg;
	struct upstream_req	*r;

	if ((r = upstream_req_find(u, id)) == NULL)
		return;
	log_limited(LOG_LEVEL_WARN, "upstream-lost", "upstream=%s session=%s: "
	    "%s id=%lld: %s", u->name, upstream_sid(u), r->method,
	    (long long)id, why);
	upstream_req_fail(r, "upstream %s: %s", u->name, why);
	if (r->internal)
		upstream_broken(u, why);
}

static void
upstream_failed_cb(const char *why, void *arg)
{
	upstream_broken(arg, why);
}

static const struct upstream_transport_cbs upstream_transport_cbs = {
	upstream_message_cb,
	upstream_lost_cb,
	upstream_failed_cb,
	upstream_ended_cb
};

/* A run: by the transport the conf says (exec or url). */
static void
upstream_spawn(struct upstream *u)
{
	char		*cause = NULL;
	struct timeval	 tv;
	int		 ms;

	if (u->def->url != NULL)
		u->tp = upstream_http_open(u->def, u->name, upstream_sid(u),
		    u->cred, &upstream_transport_cbs, u, &u->ops, &cause);
	else
		u->tp = upstream_stdio_open(u->def, u->name, upstream_sid(u),
		    &upstream_transport_cbs, u, &u->ops, &cause);
	u->started_ms = clock_now_ms();
	if (u->tp == NULL) {
		free(u->last_error);
		u->last_error = cause;
		u->start_failed = 1;
		u->failures++;
		upstream_fail_requests(u, u->last_error, 1);
		upstream_set_state(u, UPSTREAM_BACKOFF);
		ms = upstream_backoff_ms(u->def->restart_delay, u->failures);
		log_warn("upstream=%s session=%s: %s; trying again in %d ms",
		    u->name, upstream_sid(u), u->last_error, ms);
		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
		evtimer_add(u->restart_ev, &tv);
		return;
	}
	u->pid = u->ops->pid != NULL ? u->ops->pid(u->tp) : 0;
	upstream_set_state(u, UPSTREAM_STARTING);
	upstream_handshake(u);
}

/*
 * Starts an upstream of definition def; key names the client session it
 * serves (sharing session), NULL for a shared one; cred (a reference is
 * taken; NULL: none) is what an HTTP upstream's requests carry.
 */
struct upstream *
upstream_start(const struct conf_upstream *def, const char *key,
    struct credential *cred, const struct upstream_hooks *hooks, void *arg)
{
	struct upstream	*u;

	u = xcalloc(1, sizeof *u);
	u->conf = conf_ref(server.conf);
	u->cred = cred != NULL ? credential_ref(cred) : NULL;
	u->def = def;
	u->name = xstrdup(def->name);
	u->key = key != NULL ? xstrdup(key) : NULL;
	u->state = UPSTREAM_STOPPED;
	u->hooks = hooks;
	u->arg = arg;
	TAILQ_INIT(&u->reqs);
	u->restart_ev = evtimer_new(server.base, upstream_restart_cb, u);
	u->fail_ev = event_new(server.base, -1, 0, upstream_fail_cb, u);
	upstream_spawn(u);
	return (u);
}

static void
upstream_maybe_free(struct upstream *u)
{
	if (u->state != UPSTREAM_STOPPED || !TAILQ_EMPTY(&u->reqs))
		return;
	event_free(u->restart_ev);
	event_free(u->fail_ev);
	upstream_lists_clear(u->lists);
	upstream_lists_clear(u->loading);
	cJSON_Delete(u->capabilities);
	free(u->last_error);
	free(u->name);
	free(u->key);
	credential_unref(u->cred);
	conf_release(u->conf);
	free(u);
}

/*
 * The owner lets go: every request ends with an error (later); a program
 * is killed with its process group and the upstream freed once it has
 * been reaped, an HTTP upstream's requests are closed at once. No hook
 * runs after this.
 */
void
upstream_stop(struct upstream *u, const char *why)
{
	char	*text;

	if (u->state == UPSTREAM_STOPPING || u->state == UPSTREAM_STOPPED)
		return;
	u->hooks = &upstream_no_hooks;
	evtimer_del(u->restart_ev);
	if (upstream_running(u) && u->ops->close(u->tp, 1))
		u->tp = NULL;
	xasprintf(&text, "upstream %s stopped (%s)", u->name, why);
	upstream_fail_requests(u, text, 1);
	free(text);
	if (!upstream_running(u)) {
		upstream_set_state(u, UPSTREAM_STOPPED);
		event_active(u->fail_ev, EV_TIMEOUT, 0);
		return;
	}
	/* A program: stopped once it has been reaped (upstream_ended_cb). */
	upstream_set_state(u, UPSTREAM_STOPPING);
}
