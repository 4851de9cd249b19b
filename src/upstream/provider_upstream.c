/*
 * Upstream MCP servers as a provider: the conf's "upstream NAME { }"
 * blocks. Their catalogs (upstream.c keeps them) are merged with the other
 * providers' under each upstream's prefix; a client's tools/call,
 * resources/read, prompts/get and completion/complete are forwarded to
 * the upstream that serves the name, with a new id (upstream.c numbers its
 * own requests) and a progress token of ours in place of the client's.
 *
 * What an upstream sends back reaches the client through its call (the
 * call API, so it is committed to the call's stream like any producer's):
 * progress with the client's own token, log messages at the session's
 * level, and its server-to-client requests (sampling, elicitation, roots)
 * through call_request, so the existing routing (across instances too)
 * brings the answer back, which goes to the upstream under its own id.
 *
 * Which call a message from the upstream belongs to: progress carries our
 * token. Over HTTP a log message or a request comes on the stream of the
 * request it is for, or carries our progress token. Otherwise (stdio) it
 * carries nothing, so it goes to the one call in flight on that upstream
 * session; with sharing
 * session, to the session's latest call (a log message or a request
 * outside any call to the session's standalone stream: session_request);
 * with several calls of different
 * clients in flight on a shared upstream it cannot be placed: a log
 * message is dropped (a debug line says so) and a request is answered
 * with an error saying so (docs/upstreams.md).
 *
 * The slow-client rule: a shared upstream's output is never paused for
 * one client. What a call sends goes to its stream, which under the block
 * policy holds what its client has not received; a call with more than
 * UPSTREAM_BACKLOG(window) sends not committed ends with an error and the
 * upstream is told it was cancelled. So one slow client costs at most that
 * many messages of memory, and other sessions' calls flow on.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "announce.h"
#include "call.h"
#include "conf.h"
#include "credential.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "provider.h"
#include "provider_upstream.h"
#include "server.h"
#include "session.h"
#include "upstream.h"
#include "xmalloc.h"

/* Sends of one call not yet committed before it is ended (slow client). */
#define UPSTREAM_BACKLOG(window)	(2 * (window) + 64)

struct upsrv;

/*
 * A list as served, indexed: by name (a tree, for lookups and collisions)
 * and by position (for pages), so a catalog of any size is merged in
 * linear time and neither lookups nor pages scan it.
 */
struct upname {
	const char		*name;		/* an item's, or a tool's */
	const cJSON		*item;		/* NULL: another provider's */
	const char		*owner;		/* that provider's name */
	RB_ENTRY(upname)	 entry;
};
RB_HEAD(upname_tree, upname);

static int
upname_cmp(struct upname *a, struct upname *b)
{
	return (strcmp(a->name, b->name));
}
RB_GENERATE_STATIC(upname_tree, upname, entry, upname_cmp);

struct uplist {
	cJSON			*json;		/* NULL: not loaded */
	const cJSON		**items;	/* by position */
	struct upname		*nodes;		/* one per item */
	size_t			 n;
	struct upname_tree	 names;
};

/* One upstream session: a shared one, a session's, or the catalog probe. */
struct upinst {
	struct upsrv		*srv;
	struct upstream		*u;
	char			*sid;		/* sharing session: its session */
	struct uplist		 lists[UPSTREAM_LIST_MAX]; /* sid: as served */
	TAILQ_ENTRY(upinst)	 entry;
	RB_ENTRY(upinst)	 tree;
};
TAILQ_HEAD(upinsts, upinst);
RB_HEAD(upinst_tree, upinst);

static int
upinst_cmp(struct upinst *a, struct upinst *b)
{
	return (strcmp(a->sid, b->sid));
}
RB_GENERATE_STATIC(upinst_tree, upinst, tree, upinst_cmp);

/* One upstream block. */
struct upsrv {
	const struct conf_upstream *def;
	struct upinst		*main;		/* shared, or the probe */
	struct upinst_tree	 sessions;	/* sharing session */
	u_int			 nsessions;
	struct uplist		 lists[UPSTREAM_LIST_MAX];	/* as served */
	struct credential	*cred;		/* its credentials, or NULL */
	int			 loaded;
	unsigned long long	 exits_gone;	/* of instances stopped */
};

/* A client's call forwarded to an upstream. */
struct upcall {
	struct call		*call;		/* NULL once released */
	struct upinst		*inst;		/* NULL once it is gone */
	char			*upname;
	int64_t			 id;		/* upstream.c's */
	uint64_t		 token;		/* our progress token, or 0 */
	cJSON			*client_token;
	u_int			 inflight;	/* sends not called back */
	int			 answered;	/* the upstream's cb ran */
	int			 ended;		/* we answered the call */
	uint64_t		 seq;		/* start order */
	TAILQ_ENTRY(upcall)	 entry;
};
TAILQ_HEAD(upcalls, upcall);

/* A server-to-client request of an upstream, waiting for the client. */
struct upask {
	struct upinst		*inst;		/* NULL once it is gone */
	cJSON			*id;		/* the upstream's */
	TAILQ_ENTRY(upask)	 entry;
};
TAILQ_HEAD(upasks, upask);

static struct {
	const struct conf	*conf;		/* holds the defs */
	struct upsrv		**srvs;
	size_t			 nsrvs;
	struct upinsts		 insts;		/* every instance */
	struct upcalls		 calls;		/* not yet answered */
	struct upasks		 asks;
	uint64_t		 next_token;
	uint64_t		 next_seq;
} up = {
	.insts = TAILQ_HEAD_INITIALIZER(up.insts),
	.calls = TAILQ_HEAD_INITIALIZER(up.calls),
	.asks = TAILQ_HEAD_INITIALIZER(up.asks),
};

static const struct upstream_hooks upstream_provider_hooks;
static struct upsrv *upsrv_for_uri(const char *);
static struct upsrv *upsrv_for_uri_any(const char *);

/* ---------------------------------------------------------------------
 * Names: the prefix on the way to clients, off on the way back.
 */

static const char *
upname_of(const cJSON *item, const char *key)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item,
	    key)));
}

/*
 * The upstream's own name for a name of list l as served: the prefix off,
 * and a tool's rename undone (NULL if it has no such prefix).
 */
static const char *
upname_strip(const struct upsrv *srv, enum upstream_list l, const char *name)
{
	size_t	n = strlen(srv->def->prefix);

	if (strncmp(name, srv->def->prefix, n) != 0)
		return (NULL);
	if (l != UPSTREAM_TOOLS)
		return (name + n);
	return (conf_catalog_own_name(&srv->def->catalog, name + n));
}

/* The catalog list (conf.h) a list of the upstream's is filtered as. */
static int
uplist_catalog(enum upstream_list l)
{
	switch (l) {
	case UPSTREAM_TOOLS:
		return (CONF_CATALOG_TOOLS);
	case UPSTREAM_PROMPTS:
		return (CONF_CATALOG_PROMPTS);
	default:
		return (CONF_CATALOG_RESOURCES);
	}
}

/* What the block's catalog matches an item by: its name, URI, template. */
static const char *
uplist_subject(enum upstream_list l, const cJSON *item)
{
	return (cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item,
	    l == UPSTREAM_RESOURCES ? "uri" : l == UPSTREAM_TEMPLATES ?
	    "uriTemplate" : "name")));
}

/* What names an item of a list: a resource its URI, the others a name. */
static const char *
uplist_key(enum upstream_list l)
{
	return (l == UPSTREAM_RESOURCES ? "uri" : "name");
}

static void
uplist_clear(struct uplist *ul)
{
	cJSON_Delete(ul->json);
	free(ul->items);
	free(ul->nodes);
	memset(ul, 0, sizeof *ul);
	RB_INIT(&ul->names);
}

static const cJSON *
uplist_find(const struct uplist *ul, const char *name)
{
	struct upname	 key, *found;

	key.name = name;
	found = RB_FIND(upname_tree, (struct upname_tree *)&ul->names, &key);
	return (found != NULL ? found->item : NULL);
}

/*
 * Another provider's tools, by name, made once per merge (asking each
 * provider per name would make the merge quadratic).
 */
struct upothers {
	struct upname_tree	 names;
	struct upname		*nodes;
	cJSON			*json;
};

static void
upothers_make(struct upothers *o)
{
	const cJSON	*t;
	const char	*name;
	size_t		 n = 0;

	RB_INIT(&o->names);
	o->json = provider_other_tools(&provider_upstream);
	o->nodes = xcalloc((size_t)cJSON_GetArraySize(o->json) + 1,
	    sizeof *o->nodes);
	cJSON_ArrayForEach(t, o->json) {
		if ((name = upname_of(t, "name")) == NULL)
			continue;
		o->nodes[n].name = name;
		o->nodes[n].owner = upname_of(t, "provider");
		RB_INSERT(upname_tree, &o->names, &o->nodes[n]);
		n++;
	}
}

static void
upothers_free(struct upothers *o)
{
	cJSON_Delete(o->json);
	free(o->nodes);
}

/*
 * Another provider, or an earlier upstream, serves a name: the later one
 * does not, and the log says who has it.
 */
static const char *
upname_taken(const struct upsrv *srv, enum upstream_list l, const char *name,
    const struct upothers *others)
{
	static char	 owner[256];
	struct upname	 key, *other;
	size_t		 i;

	for (i = 0; i < up.nsrvs && up.srvs[i] != srv; i++) {
		if (uplist_find(&up.srvs[i]->lists[l], name) != NULL) {
			snprintf(owner, sizeof owner, "upstream %s",
			    up.srvs[i]->def->name);
			return (owner);
		}
	}
	key.name = name;
	if (l == UPSTREAM_TOOLS && (other = RB_FIND(upname_tree,
	    (struct upname_tree *)&others->names, &key)) != NULL) {
		snprintf(owner, sizeof owner, "the %s provider", other->owner);
		return (owner);
	}
	return (NULL);
}

/*
 * The upstream's list as served, into ul: what the block's catalog lets
 * through (tools allow|deny ...), renamed and described as it says,
 * prefixed, collisions left out.
 */
static void
uplist_served(struct upsrv *srv, enum upstream_list l, const cJSON *from,
    int quiet, const struct upothers *others, struct uplist *ul)
{
	static const char *const what[UPSTREAM_LIST_MAX] = {
		"tool", "prompt", "resource", "resource template"
	};
	const struct conf_catalog *cat = &srv->def->catalog;
	const cJSON	*item;
	cJSON		*copy;
	const char	*name, *owner, *subject, *text;
	struct upname	*node;
	char		*full;
	size_t		 max = (size_t)cJSON_GetArraySize(from);

	memset(ul, 0, sizeof *ul);
	RB_INIT(&ul->names);
	ul->json = cJSON_CreateArray();
	ul->items = xcalloc(max + 1, sizeof *ul->items);
	ul->nodes = xcalloc(max + 1, sizeof *ul->nodes);
	cJSON_ArrayForEach(item, from) {
		if ((name = upname_of(item, uplist_key(l))) == NULL)
			continue;
		if ((subject = uplist_subject(l, item)) == NULL ||
		    !conf_catalog_allows(cat, uplist_catalog(l), subject))
			continue;
		if (l == UPSTREAM_RESOURCES)
			full = xstrdup(name);
		else if (l == UPSTREAM_TOOLS)
			xasprintf(&full, "%s%s", srv->def->prefix,
			    conf_catalog_served_name(cat, name));
		else
			xasprintf(&full, "%s%s", srv->def->prefix, name);
		if ((owner = upname_taken(srv, l, full, others)) != NULL ||
		    uplist_find(ul, full) != NULL) {
			if (quiet) {
				free(full);
				continue;
			}
			log_limited(LOG_LEVEL_ERROR, "upstream-collision",
			    "upstream %s: %s %s is also served by %s; not "
			    "served from upstream %s (set a prefix to serve "
			    "both)", srv->def->name, what[l], full,
			    owner != NULL ? owner : "itself", srv->def->name);
			free(full);
			continue;
		}
		copy = cJSON_Duplicate(item, 1);
		if (l != UPSTREAM_RESOURCES)
			cJSON_ReplaceItemInObjectCaseSensitive(copy,
			    uplist_key(l), cJSON_CreateString(full));
		if (l == UPSTREAM_TOOLS &&
		    (text = conf_catalog_description(cat, name)) != NULL) {
			cJSON_DeleteItemFromObjectCaseSensitive(copy,
			    "description");
			cJSON_AddStringToObject(copy, "description", text);
		}
		cJSON_AddItemToArray(ul->json, copy);
		free(full);
		node = &ul->nodes[ul->n];
		node->name = upname_of(copy, uplist_key(l));
		node->item = copy;
		RB_INSERT(upname_tree, &ul->names, node);
		ul->items[ul->n++] = copy;
	}
}

/* Whether a list made again is what was served (then nothing changed). */
static int
uplist_same(const struct uplist *a, const struct uplist *b)
{
	/* Nothing loaded yet is an empty list: no list_changed for it. */
	if (a->json == NULL || b->json == NULL)
		return (a->n == 0 && b->n == 0);
	return (a->n == b->n && cJSON_Compare(a->json, b->json, 1));
}

/* ---------------------------------------------------------------------
 * The catalog, and list_changed for clients.
 */

/* The change each kind of list announces (templates: resources'). */
static const enum announce_kind upsrv_changed[UPSTREAM_LIST_MAX] = {
	ANNOUNCE_TOOLS,
	ANNOUNCE_PROMPTS,
	ANNOUNCE_RESOURCES,
	ANNOUNCE_RESOURCES
};

/*
 * Tells s (NULL: everyone, through announce.h, with srv as the source) of
 * the kinds of srv's list that differ; a session whose endpoint does not
 * serve srv hears nothing.
 */
static void
upsrv_tell(struct session *s, const struct upsrv *srv, const int *differ)
{
	cJSON		*msg;
	const char	*text;
	size_t		 len;
	int		 l;

	for (l = 0; l < UPSTREAM_TEMPLATES; l++) {
		if (!differ[l] && !(l == UPSTREAM_RESOURCES &&
		    differ[UPSTREAM_TEMPLATES]))
			continue;
		if (s == NULL) {
			announce_change_from(upsrv_changed[l], NULL,
			    srv->def->name);
			continue;
		}
		if (!provider_endpoint_hears(session_endpoint(s),
		    upsrv_changed[l], NULL, srv->def->name))
			continue;
		msg = jsonrpc_notification(announce_method(upsrv_changed[l]),
		    NULL);
		text = jsonrpc_print_shared(msg, &len);
		session_notify(s, text, len);
		cJSON_Delete(msg);
	}
}

/*
 * With sharing session, a session's own upstream serves its own lists
 * (tools it registered, resources it made): they are kept as served, and
 * only that session hears that they changed.
 */
static void
upinst_catalog(struct upinst *inst)
{
	struct session	*s;
	struct uplist	 served;
	struct upothers	 others;
	int		 l, loaded = inst->lists[0].json != NULL;
	int		 differ[UPSTREAM_LIST_MAX] = { 0 };

	upothers_make(&others);
	for (l = 0; l < UPSTREAM_LIST_MAX; l++) {
		uplist_served(inst->srv, l, upstream_catalog(inst->u, l), 1,
		    &others, &served);
		if (inst->lists[l].json != NULL &&
		    uplist_same(&served, &inst->lists[l])) {
			uplist_clear(&served);
			continue;
		}
		uplist_clear(&inst->lists[l]);
		inst->lists[l] = served;	/* the tree's nodes stay put */
		differ[l] = 1;
	}
	upothers_free(&others);
	if (loaded && (s = session_find(inst->sid)) != NULL)
		upsrv_tell(s, inst->srv, differ);
}

/*
 * Every upstream's lists as served are made again, in conf order (an
 * earlier upstream keeps a name), and clients hear of the kinds of list
 * that changed, each upstream as the source of its own changes. Linear in
 * the size of the catalogs: names are looked up in trees, other
 * providers' tools listed once. loading: an upstream whose catalog just
 * came, counted as loaded.
 */
static void
upsrv_remake(struct upsrv *loading)
{
	struct upsrv	*srv;
	struct uplist	 served;
	struct upothers	 others;
	size_t		 i;
	int		 l, differ[UPSTREAM_LIST_MAX];

	upothers_make(&others);
	for (i = 0; i < up.nsrvs; i++) {
		srv = up.srvs[i];
		if (srv->main == NULL || (srv != loading && !srv->loaded))
			continue;
		memset(differ, 0, sizeof differ);
		for (l = 0; l < UPSTREAM_LIST_MAX; l++) {
			uplist_served(srv, l, upstream_catalog(srv->main->u,
			    l), 0, &others, &served);
			if (uplist_same(&served, &srv->lists[l])) {
				uplist_clear(&served);
				continue;
			}
			uplist_clear(&srv->lists[l]);
			srv->lists[l] = served;
			differ[l] = 1;
		}
		/* Also the first time: sessions opened before saw none. */
		upsrv_tell(NULL, srv, differ);
	}
	upothers_free(&others);
}

/* A catalog arrived (a start, a list_changed of the upstream's). */
static void
upstream_provider_catalog(struct upstream *u, void *arg)
{
	struct upinst	*inst = arg;

	if (inst->sid != NULL) {
		upinst_catalog(inst);
		return;
	}
	upsrv_remake(inst->srv);
	inst->srv->loaded = 1;
}

/* ---------------------------------------------------------------------
 * Instances.
 */

static struct upinst *
upinst_new(struct upsrv *srv, const char *sid)
{
	struct upinst	*inst;
	int		 l;

	inst = xcalloc(1, sizeof *inst);
	for (l = 0; l < UPSTREAM_LIST_MAX; l++)
		RB_INIT(&inst->lists[l].names);
	inst->srv = srv;
	inst->sid = sid != NULL ? xstrdup(sid) : NULL;
	TAILQ_INSERT_TAIL(&up.insts, inst, entry);
	inst->u = upstream_start(srv->def, sid, srv->cred,
	    &upstream_provider_hooks, inst);
	return (inst);
}

/* Stops an instance; calls and asks still holding it forget it. */
static void
upinst_stop(struct upinst *inst, const char *why)
{
	struct upcall	*uc;
	struct upask	*ua;
	int		 l;

	TAILQ_FOREACH(uc, &up.calls, entry) {
		if (uc->inst == inst)
			uc->inst = NULL;
	}
	TAILQ_FOREACH(ua, &up.asks, entry) {
		if (ua->inst == inst)
			ua->inst = NULL;
	}
	if (inst->sid != NULL) {
		RB_REMOVE(upinst_tree, &inst->srv->sessions, inst);
		inst->srv->nsessions--;
	}
	TAILQ_REMOVE(&up.insts, inst, entry);
	inst->srv->exits_gone += upstream_ended(inst->u);
	upstream_stop(inst->u, why);
	for (l = 0; l < UPSTREAM_LIST_MAX; l++)
		uplist_clear(&inst->lists[l]);
	free(inst->sid);
	free(inst);
}

/* The instance a call of session s uses, or NULL with *why set. */
static struct upinst *
upinst_for(struct upsrv *srv, struct session *s, char **why)
{
	struct upinst	 key, *inst;

	if (srv->def->sharing == CONF_SHARING_SHARED)
		return (srv->main);
	key.sid = (char *)session_id(s);
	if ((inst = RB_FIND(upinst_tree, &srv->sessions, &key)) != NULL)
		return (inst);
	if (srv->nsessions >= (u_int)srv->def->max_instances) {
		xasprintf(why, "upstream %s: %lld sessions have their own "
		    "instance already (max_instances); try again later",
		    srv->def->name, srv->def->max_instances);
		return (NULL);
	}
	inst = upinst_new(srv, session_id(s));
	RB_INSERT(upinst_tree, &srv->sessions, inst);
	srv->nsessions++;
	return (inst);
}

/* ---------------------------------------------------------------------
 * Calls.
 */

static void
upcall_free(struct upcall *uc)
{
	cJSON_Delete(uc->client_token);
	free(uc->upname);
	free(uc);
}

static void
upcall_maybe_free(struct upcall *uc)
{
	if (uc->call != NULL || !uc->answered || uc->inflight > 0)
		return;
	upcall_free(uc);
}

/* The call is over for the client: answered (or cancelled) and let go. */
static void
upcall_release(struct upcall *uc)
{
	if (uc->call == NULL)
		return;
	call_release(uc->call);
	uc->call = NULL;
}

static void
upcall_sent_cb(int ok, void *arg)
{
	struct upcall	*uc = arg;

	uc->inflight--;
	upcall_maybe_free(uc);
}

/*
 * A message for the client on the call's stream. Its client too slow
 * (UPSTREAM_BACKLOG): the call ends with an error, the upstream is told.
 */
static void
upcall_send(struct upcall *uc, cJSON *msg)
{
	long long	 window = server.conf->stream_window;
	char		*text;

	if (uc->call == NULL || uc->ended) {
		cJSON_Delete(msg);
		return;
	}
	if (uc->inflight >= UPSTREAM_BACKLOG(window)) {
		cJSON_Delete(msg);
		log_limited(LOG_LEVEL_WARN, "upstream-slow", "session=%s "
		    "upstream=%s: %u messages of a call not yet delivered to "
		    "its client; the call ends", session_id(call_session(
		    uc->call)), uc->upname, uc->inflight);
		xasprintf(&text, "upstream %s: the client is too slow: %u "
		    "messages of this call were not delivered yet (at most "
		    "2 x stream_window + 64); the call was ended", uc->upname,
		    uc->inflight);
		uc->ended = 1;
		call_respond_error(uc->call, JSONRPC_SERVER_ERROR, text);
		free(text);
		if (uc->inst != NULL && !uc->answered)
			upstream_cancel(uc->inst->u, uc->id, "the client is "
			    "too slow");
		upcall_release(uc);
		return;
	}
	uc->inflight++;
	call_send(uc->call, msg, upcall_sent_cb, uc);
}

static void
upcall_done_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct upcall	*uc = arg;
	const cJSON	*code, *message, *data;
	char		*text;

	uc->answered = 1;
	TAILQ_REMOVE(&up.calls, uc, entry);
	if (uc->call != NULL && !uc->ended) {
		uc->ended = 1;
		if (result != NULL)
			call_respond(uc->call, cJSON_Duplicate(result, 1));
		else {
			code = cJSON_GetObjectItemCaseSensitive(error, "code");
			message = cJSON_GetObjectItemCaseSensitive(error,
			    "message");
			if (cJSON_IsString(message) && strncmp(
			    message->valuestring, "upstream ", 9) == 0)
				text = xstrdup(message->valuestring);
			else
				xasprintf(&text, "upstream %s: %s", uc->upname,
				    cJSON_IsString(message) ?
				    message->valuestring : "error");
			/* data carries what some codes mean (-32042's URLs). */
			data = cJSON_GetObjectItemCaseSensitive(error, "data");
			call_respond_error_data(uc->call, cJSON_IsNumber(code) ?
			    code->valueint : JSONRPC_INTERNAL_ERROR, text,
			    data != NULL ? cJSON_Duplicate(data, 1) : NULL);
			free(text);
		}
		upcall_release(uc);
	}
	upcall_maybe_free(uc);
}

static void
upcall_cancel_cb(void *arg)
{
	struct upcall	*uc = arg;

	uc->ended = 1;
	if (uc->inst != NULL && !uc->answered)
		upstream_cancel(uc->inst->u, uc->id, "cancelled by the client");
	upcall_release(uc);
	upcall_maybe_free(uc);
}

/* An error for the client, the call let go: nothing was forwarded. */
static void
upcall_refuse(struct call *c, int code, const char *text)
{
	call_respond_error(c, code, text);
	call_release(c);
}

/*
 * Forwards method with params (taken) for call c to an instance of srv.
 * _meta.progressToken becomes ours when the client gave one.
 */
static void
upcall_forward(struct upsrv *srv, struct call *c, const char *method,
    cJSON *params)
{
	struct upinst	*inst;
	struct upcall	*uc;
	cJSON		*meta;
	const cJSON	*token;
	char		*why = NULL;

	if ((inst = upinst_for(srv, call_session(c), &why)) == NULL) {
		upcall_refuse(c, JSONRPC_SERVER_ERROR, why);
		free(why);
		cJSON_Delete(params);
		return;
	}
	if (upstream_inflight(inst->u) >= (u_int)srv->def->max_concurrency) {
		xasprintf(&why, "upstream %s is busy: %lld requests in flight "
		    "(max_concurrency); try again later", srv->def->name,
		    srv->def->max_concurrency);
		upcall_refuse(c, JSONRPC_SERVER_ERROR, why);
		free(why);
		cJSON_Delete(params);
		return;
	}

	uc = xcalloc(1, sizeof *uc);
	uc->call = c;
	uc->inst = inst;
	uc->upname = xstrdup(srv->def->name);
	uc->seq = ++up.next_seq;
	cJSON_DeleteItemFromObjectCaseSensitive(params, "_meta");
	if ((token = call_progress_token(c)) != NULL) {
		uc->client_token = cJSON_Duplicate(token, 1);
		uc->token = ++up.next_token;
		meta = cJSON_AddObjectToObject(params, "_meta");
		cJSON_AddNumberToObject(meta, "progressToken",
		    (double)uc->token);
	}
	TAILQ_INSERT_TAIL(&up.calls, uc, entry);
	call_set_cancel(c, upcall_cancel_cb, uc);
	uc->id = upstream_request_as(inst->u, method, params,
	    call_principal(c), upcall_done_cb, uc);
}

/* The client's params, copied, for the upstream. */
static cJSON *
upcall_params(const char *name, const cJSON *args)
{
	cJSON	*params = cJSON_CreateObject();

	cJSON_AddStringToObject(params, "name", name);
	if (args != NULL)
		cJSON_AddItemToObject(params, "arguments",
		    cJSON_Duplicate(args, 1));
	return (params);
}

/* Session s's own instance of srv (sharing session), or NULL. */
static struct upinst *
upinst_of(struct upsrv *srv, struct session *s)
{
	struct upinst	 key;

	if (s == NULL || srv->def->sharing != CONF_SHARING_SESSION)
		return (NULL);
	key.sid = (char *)session_id(s);
	return (RB_FIND(upinst_tree, &srv->sessions, &key));
}

/* What srv serves of list l to session s (NULL: to any). */
static const struct uplist *
upsrv_list(struct upsrv *srv, enum upstream_list l, struct session *s)
{
	struct upinst	*inst;

	if ((inst = upinst_of(srv, s)) != NULL && inst->lists[l].json != NULL)
		return (&inst->lists[l]);
	return (&srv->lists[l]);
}

/*
 * The upstream serving a name of list l to session s (NULL: to any), and
 * its own name for it.
 */
static struct upsrv *
upsrv_find(enum upstream_list l, const char *name, const char **own,
    struct session *s)
{
	struct upsrv	*srv;
	size_t		 i;

	for (i = 0; i < up.nsrvs; i++) {
		srv = up.srvs[i];
		if (uplist_find(upsrv_list(srv, l, s), name) == NULL)
			continue;
		*own = l == UPSTREAM_RESOURCES ? name : upname_strip(srv, l,
		    name);
		if (*own == NULL)
			continue;
		return (srv);
	}
	return (NULL);
}

/* The scope of srv's block in the running configuration (a reload). */
static const char *
upsrv_scope(const struct upsrv *srv)
{
	const struct conf_upstream	*u;

	if ((u = conf_upstream_find(server.conf, srv->def->name)) == NULL)
		return (NULL);
	return (u->scope);
}

/* ---------------------------------------------------------------------
 * The provider's hooks.
 */

static int
upprov_enabled(const struct conf *conf)
{
	return (conf->nupstreams > 0);
}

/* The lists as session s sees them (provider_list is upstream_list). */
static void
upprov_list_for(struct session *s, int l, cJSON *all)
{
	const cJSON	*item;
	size_t		 i;

	for (i = 0; i < up.nsrvs; i++) {
		cJSON_ArrayForEach(item, upsrv_list(up.srvs[i], l, s)->json)
			cJSON_AddItemToArray(all, cJSON_Duplicate(item, 1));
	}
}

/*
 * The items of list l that s sees from position from on, with the scope
 * each needs, until cb says stop; the number of items (all of them). A
 * page starts where it starts: no item before it is looked at.
 */
static size_t
upprov_list_walk(struct session *s, int l, size_t from,
    provider_walk_cb *cb, void *arg)
{
	const struct uplist	*ul;
	const char		*scope;
	size_t			 i, j, total = 0;
	int			 stop = cb == NULL;

	for (i = 0; i < up.nsrvs; i++) {
		ul = upsrv_list(up.srvs[i], l, s);
		total += ul->n;
		if (stop || from >= ul->n) {
			from -= from >= ul->n ? ul->n : from;
			continue;
		}
		scope = upsrv_scope(up.srvs[i]);
		for (j = from; j < ul->n && !stop; j++)
			stop = cb(ul->items[j], scope, up.srvs[i]->def->name,
			    arg);
		from = 0;
	}
	return (total);
}

/* The scope of the upstream serving prompt name, or URI uri. */
static const char *
upprov_item_scope(int l, const char *name)
{
	struct upsrv	*srv;
	const char	*own;

	const cJSON	*t;
	size_t		 i;

	srv = NULL;
	if (l == UPSTREAM_RESOURCES)
		srv = upsrv_for_uri(name);
	else if (l == UPSTREAM_TEMPLATES) {
		/* A completion names a template by its uriTemplate. */
		for (i = 0; srv == NULL && i < up.nsrvs; i++) {
			cJSON_ArrayForEach(t, up.srvs[i]->lists[l].json) {
				if (upname_of(t, "uriTemplate") != NULL &&
				    strcmp(upname_of(t, "uriTemplate"),
				    name) == 0) {
					srv = up.srvs[i];
					break;
				}
			}
		}
	} else
		srv = upsrv_find(l, name, &own, NULL);
	return (srv != NULL ? upsrv_scope(srv) : NULL);
}

/* The upstream block serving item name of list l to s: its name. */
static const char *
upprov_source(struct session *s, int l, const char *name)
{
	struct upsrv	*srv = NULL;
	const cJSON	*t;
	const char	*own;
	size_t		 i;

	if (l == UPSTREAM_RESOURCES)
		srv = upsrv_for_uri(name);
	else if (l == UPSTREAM_TEMPLATES) {
		for (i = 0; srv == NULL && i < up.nsrvs; i++) {
			cJSON_ArrayForEach(t, up.srvs[i]->lists[l].json) {
				if (upname_of(t, "uriTemplate") != NULL &&
				    strcmp(upname_of(t, "uriTemplate"),
				    name) == 0) {
					srv = up.srvs[i];
					break;
				}
			}
		}
	} else
		srv = upsrv_find(l, name, &own, s);
	return (srv != NULL ? srv->def->name : NULL);
}

static int
upprov_has_tool(const char *name)
{
	const char	*own;

	return (upsrv_find(UPSTREAM_TOOLS, name, &own, NULL) != NULL);
}

/*
 * The scope of the upstream block serving tool name, from the running
 * configuration: a reload changes it live.
 */
static const char *
upprov_tool_scope(const char *name)
{
	return (upprov_item_scope(UPSTREAM_TOOLS, name));
}

/* The upstream block serving tool name as clients call it, or NULL. */
static const char *
upprov_tool_upstream(const char *name)
{
	struct upsrv	*srv;
	const char	*own;

	if (up.nsrvs == 0 ||
	    (srv = upsrv_find(UPSTREAM_TOOLS, name, &own, NULL)) == NULL)
		return (NULL);
	return (srv->def->name);
}

size_t
provider_upstream_count(void)
{
	return (up.nsrvs);
}

void
provider_upstream_stats(size_t i, struct provider_upstream_stats *st)
{
	struct upsrv	*srv = up.srvs[i];
	struct upinst	*inst;

	memset(st, 0, sizeof *st);
	st->name = srv->def->name;
	st->up = srv->main != NULL &&
	    upstream_state(srv->main->u) == UPSTREAM_READY;
	st->exits = srv->exits_gone;
	TAILQ_FOREACH(inst, &up.insts, entry) {
		if (inst->srv != srv)
			continue;
		st->instances++;
		st->inflight += upstream_inflight(inst->u);
		st->exits += upstream_ended(inst->u);
	}
}

static int
upprov_call_tool(struct call *c, const char *name, const cJSON *args)
{
	struct upsrv	*srv;
	const char	*own;

	if ((srv = upsrv_find(UPSTREAM_TOOLS, name, &own,
	    call_session(c))) == NULL)
		return (-1);
	upcall_forward(srv, c, "tools/call", upcall_params(own, args));
	return (0);
}

static int
upprov_get_prompt(struct call *c, const char *name, const cJSON *args)
{
	struct upsrv	*srv;
	const char	*own;

	if ((srv = upsrv_find(UPSTREAM_PROMPTS, name, &own,
	    call_session(c))) == NULL)
		return (-1);
	upcall_forward(srv, c, "prompts/get", upcall_params(own, args));
	return (0);
}

/* The literal start of a URI template, before its first expression. */
static size_t
uptemplate_stem(const char *t)
{
	const char	*brace = strchr(t, '{');

	return (brace != NULL ? (size_t)(brace - t) : strlen(t));
}

/*
 * The upstream of a URI: the one listing it, else the one with the
 * longest template stem it starts with, else the only one with resources;
 * none when that upstream's catalog leaves the URI out.
 */
static struct upsrv *
upsrv_for_uri(const char *uri)
{
	struct upsrv	*srv = upsrv_for_uri_any(uri);

	if (srv != NULL && !conf_catalog_allows(&srv->def->catalog,
	    CONF_CATALOG_RESOURCES, uri))
		return (NULL);
	return (srv);
}

static struct upsrv *
upsrv_for_uri_any(const char *uri)
{
	struct upsrv	*srv, *best = NULL, *only = NULL;
	const cJSON	*t;
	const char	*tmpl;
	size_t		 i, n, bestn = 0, nres = 0;

	for (i = 0; i < up.nsrvs; i++) {
		srv = up.srvs[i];
		if (uplist_find(&srv->lists[UPSTREAM_RESOURCES], uri) != NULL)
			return (srv);
		if (srv->main != NULL && cJSON_IsObject(
		    cJSON_GetObjectItemCaseSensitive(upstream_capabilities(
		    srv->main->u), "resources"))) {
			nres++;
			only = srv;
		}
		cJSON_ArrayForEach(t, srv->lists[UPSTREAM_TEMPLATES].json) {
			if ((tmpl = upname_of(t, "uriTemplate")) == NULL)
				continue;
			n = uptemplate_stem(tmpl);
			if (n > bestn && strncmp(uri, tmpl, n) == 0) {
				best = srv;
				bestn = n;
			}
		}
	}
	if (best != NULL)
		return (best);
	return (nres == 1 ? only : NULL);
}

static int
upprov_read_resource(struct call *c, const char *uri)
{
	struct upsrv	*srv;
	cJSON		*params;

	if ((srv = upsrv_for_uri(uri)) == NULL)
		return (-1);
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "uri", uri);
	upcall_forward(srv, c, "resources/read", params);
	return (0);
}

/*
 * resources/subscribe: the upstream is asked (its answer is not waited
 * for); its notifications/resources/updated reach subscribed sessions.
 */
static void
upprov_subscribed_cb(const cJSON *result, const cJSON *error, void *arg)
{
	if (error != NULL)
		log_limited(LOG_LEVEL_INFO, "upstream-subscribe", "upstream: "
		    "resources/subscribe refused: %s", cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(error, "message")));
}

static int
upprov_subscribe(struct session *s, const char *uri)
{
	struct upsrv	*srv;
	struct upinst	*inst;
	cJSON		*params;
	char		*why = NULL;

	if ((srv = upsrv_for_uri(uri)) == NULL)
		return (-1);
	if ((inst = upinst_for(srv, s, &why)) == NULL) {
		free(why);
		return (-1);
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "uri", uri);
	upstream_request_as(inst->u, "resources/subscribe", params,
	    session_principal(s), upprov_subscribed_cb, NULL);
	return (0);
}

static int
upprov_complete(struct call *c, const cJSON *ref, const cJSON *arg,
    const cJSON *context)
{
	struct upsrv	*srv = NULL;
	const char	*type = upname_of(ref, "type"), *name, *own = NULL;
	const cJSON	*t;
	cJSON		*params, *r;
	size_t		 i;

	if (type == NULL)
		return (-1);
	if (strcmp(type, "ref/prompt") == 0 &&
	    (name = upname_of(ref, "name")) != NULL)
		srv = upsrv_find(UPSTREAM_PROMPTS, name, &own,
		    call_session(c));
	else if (strcmp(type, "ref/resource") == 0 &&
	    (name = upname_of(ref, "uri")) != NULL) {
		for (i = 0; srv == NULL && i < up.nsrvs; i++) {
			cJSON_ArrayForEach(t, up.srvs[i]->lists[
			    UPSTREAM_TEMPLATES].json) {
				if (strcmp(upname_of(t, "uriTemplate") != NULL ?
				    upname_of(t, "uriTemplate") : "",
				    name) == 0) {
					srv = up.srvs[i];
					break;
				}
			}
		}
	}
	if (srv == NULL)
		return (-1);
	params = cJSON_CreateObject();
	r = cJSON_Duplicate(ref, 1);
	if (own != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(r, "name",
		    cJSON_CreateString(own));
	cJSON_AddItemToObject(params, "ref", r);
	cJSON_AddItemToObject(params, "argument", cJSON_Duplicate(arg, 1));
	if (context != NULL)
		cJSON_AddItemToObject(params, "context",
		    cJSON_Duplicate(context, 1));
	upcall_forward(srv, c, "completion/complete", params);
	return (0);
}

/* ---------------------------------------------------------------------
 * What upstreams send that is not an answer.
 */

static struct upcall *
upcall_by_token(struct upinst *inst, const cJSON *token)
{
	struct upcall	*uc;
	uint64_t	 n;

	if (jsonrpc_whole_number(token, 9007199254740992.0, &n) != 0)
		return (NULL);
	TAILQ_FOREACH(uc, &up.calls, entry) {
		if (uc->inst == inst && uc->token == n)
			return (uc);
	}
	return (NULL);
}

/*
 * The call a message of the server belongs to: the one whose request it
 * came with (HTTP tells), or whose progress token it carries; else the
 * only one in flight on the instance, or with sharing session the
 * session's latest.
 */
static struct upcall *
upcall_guess(struct upinst *inst, const cJSON *msg, int64_t related,
    u_int *n)
{
	struct upcall	*uc, *last = NULL;
	const cJSON	*meta;

	*n = 0;
	TAILQ_FOREACH(uc, &up.calls, entry) {
		if (related > 0 && uc->inst == inst && uc->id == related &&
		    uc->call != NULL && !uc->ended) {
			*n = 1;
			return (uc);
		}
	}
	meta = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(msg, "params"), "_meta");
	if ((uc = upcall_by_token(inst, cJSON_GetObjectItemCaseSensitive(meta,
	    "progressToken"))) != NULL && uc->call != NULL && !uc->ended) {
		*n = 1;
		return (uc);
	}
	TAILQ_FOREACH(uc, &up.calls, entry) {
		if (uc->inst != inst || uc->call == NULL || uc->ended)
			continue;
		(*n)++;
		if (last == NULL || uc->seq > last->seq)
			last = uc;
	}
	if (*n == 1 || (inst->sid != NULL && last != NULL))
		return (last);
	return (NULL);
}

/*
 * A log message outside any call: a session's own upstream's goes to
 * that session's standalone stream (at its level); a shared one's is for
 * no one in particular and is dropped.
 */
static void
upmsg_outside_call(struct upstream *u, struct upinst *inst, const cJSON *msg,
    const char *level, u_int n)
{
	struct session	*s;
	const char	*text;
	size_t		 len;
	int		 lv = level != NULL ? mcp_log_level_parse(level) : -1;

	if (inst->sid == NULL || n > 0 || (s = session_find(inst->sid)) ==
	    NULL) {
		log_debug("upstream=%s: a log message with %u calls in flight "
		    "is for no one call; dropped", upstream_name(u), n);
		return;
	}
	if (lv < 0 || lv < session_log_level(s))
		return;
	text = jsonrpc_print_shared(msg, &len);
	session_notify(s, text, len);
}

static void
upstream_provider_notification(struct upstream *u, const cJSON *msg,
    int64_t related, void *arg)
{
	struct upinst	*inst = arg;
	struct upcall	*uc;
	const char	*method = upname_of(msg, "method");
	const cJSON	*params = cJSON_GetObjectItemCaseSensitive(msg,
			    "params");
	const char	*level, *uri;
	cJSON		*copy;
	u_int		 n;

	if (strcmp(method, "notifications/progress") == 0) {
		uc = upcall_by_token(inst, cJSON_GetObjectItemCaseSensitive(
		    params, "progressToken"));
		if (uc == NULL || uc->client_token == NULL)
			return;
		copy = cJSON_Duplicate(msg, 1);
		cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(
		    copy, "params"), "progressToken",
		    cJSON_Duplicate(uc->client_token, 1));
		upcall_send(uc, copy);
		return;
	}
	if (strcmp(method, "notifications/message") == 0) {
		level = upname_of(params, "level");
		if ((uc = upcall_guess(inst, msg, related, &n)) == NULL) {
			upmsg_outside_call(u, inst, msg, level, n);
			return;
		}
		if (level == NULL || uc->call == NULL || !call_log_enabled(
		    uc->call, mcp_log_level_parse(level)))
			return;
		upcall_send(uc, cJSON_Duplicate(msg, 1));
		return;
	}
	if (strcmp(method, "notifications/resources/updated") == 0) {
		if ((uri = upname_of(params, "uri")) != NULL &&
		    conf_catalog_allows(&inst->srv->def->catalog,
		    CONF_CATALOG_RESOURCES, uri))
			announce_change_from(ANNOUNCE_RESOURCE_UPDATED, uri,
			    inst->srv->def->name);
		return;
	}
	log_debug("upstream=%s: notification %s ignored", upstream_name(u),
	    method);
}

static void
upask_answered_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct upask	*ua = arg;

	TAILQ_REMOVE(&up.asks, ua, entry);
	if (ua->inst != NULL)
		upstream_answer(ua->inst->u, ua->id, result != NULL ?
		    cJSON_Duplicate(result, 1) : NULL, error != NULL ?
		    cJSON_Duplicate(error, 1) : NULL);
	cJSON_Delete(ua->id);
	free(ua);
}

static struct upask *
upask_new(struct upinst *inst, const cJSON *msg)
{
	struct upask	*ua;

	ua = xcalloc(1, sizeof *ua);
	ua->inst = inst;
	ua->id = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "id"),
	    1);
	TAILQ_INSERT_TAIL(&up.asks, ua, entry);
	return (ua);
}

static void
upstream_provider_request(struct upstream *u, const cJSON *msg,
    int64_t related, void *arg)
{
	struct upinst	*inst = arg;
	struct upcall	*uc;
	struct upask	*ua;
	struct session	*s;
	const char	*method = upname_of(msg, "method");
	const cJSON	*params = cJSON_GetObjectItemCaseSensitive(msg,
			    "params");
	cJSON		*error;
	char		*text;
	u_int		 n;

	if ((uc = upcall_guess(inst, msg, related, &n)) == NULL && n == 0 &&
	    inst->sid != NULL && (s = session_find(inst->sid)) != NULL) {
		/* A session's own upstream asks its client outside a call. */
		ua = upask_new(inst, msg);
		session_request(s, method, params != NULL ?
		    cJSON_Duplicate(params, 1) : cJSON_CreateObject(),
		    upask_answered_cb, ua);
		return;
	}
	if (uc == NULL) {
		if (n == 0 && strcmp(method, "roots/list") == 0) {
			/* Asked outside any call (at start): no client's. */
			upstream_answer(u, cJSON_GetObjectItemCaseSensitive(
			    msg, "id"), cJSON_Parse("{\"roots\":[]}"), NULL);
			return;
		}
		if (n == 0)
			xasprintf(&text, "mcpd: %s reaches clients only "
			    "during a call of theirs, and none is in flight",
			    method);
		else
			xasprintf(&text, "mcpd: %u calls of different "
			    "clients are in flight on shared upstream %s, so "
			    "which one %s is for is unknown (use sharing "
			    "session)", n, upstream_name(u), method);
		log_limited(LOG_LEVEL_WARN, "upstream-ask", "upstream=%s: %s",
		    upstream_name(u), text);
		error = cJSON_CreateObject();
		cJSON_AddNumberToObject(error, "code", JSONRPC_INTERNAL_ERROR);
		cJSON_AddStringToObject(error, "message", text);
		free(text);
		upstream_answer(u, cJSON_GetObjectItemCaseSensitive(msg, "id"),
		    NULL, error);
		return;
	}
	ua = upask_new(inst, msg);
	call_request(uc->call, method, params != NULL ?
	    cJSON_Duplicate(params, 1) : cJSON_CreateObject(),
	    upask_answered_cb, ua);
}

static const struct upstream_hooks upstream_provider_hooks = {
	upstream_provider_catalog,
	upstream_provider_notification,
	upstream_provider_request
};

/* ---------------------------------------------------------------------
 * Start, reload, sessions, shutdown.
 */

static void
upsrv_free(struct upsrv *srv, const char *why)
{
	struct upinst	*inst, *inst1;
	int		 l;

	TAILQ_FOREACH_SAFE(inst, &up.insts, entry, inst1) {
		if (inst->srv == srv)
			upinst_stop(inst, why);
	}
	for (l = 0; l < UPSTREAM_LIST_MAX; l++)
		uplist_clear(&srv->lists[l]);
	credential_unref(srv->cred);
	free(srv);
}

static void
upprov_stop_all(void)
{
	size_t	i;

	for (i = 0; i < up.nsrvs; i++)
		upsrv_free(up.srvs[i], "mcpd is shutting down");
	free(up.srvs);
	up.srvs = NULL;
	up.nsrvs = 0;
	if (up.conf != NULL)
		conf_release(up.conf);
	up.conf = NULL;
}

static int
upwords_equal(char *const *a, char *const *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	for (; *a != NULL && *b != NULL; a++, b++) {
		if (strcmp(*a, *b) != 0)
			return (0);
	}
	return (*a == *b);
}

static int
upstr_equal(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (strcmp(a, b) == 0);
}

/*
 * Whether a reload leaves what runs of an upstream as it was: its catalog
 * and credentials are not part of it (a reload takes them up live).
 */
static int
updef_equal(const struct conf_upstream *a, const struct conf_upstream *b)
{
	return (strcmp(a->name, b->name) == 0 &&
	    upstr_equal(a->program, b->program) &&
	    upwords_equal(a->argv, b->argv) && upstr_equal(a->url, b->url) &&
	    a->sharing == b->sharing && strcmp(a->prefix, b->prefix) == 0 &&
	    upwords_equal(a->env, b->env) && upstr_equal(a->cwd, b->cwd) &&
	    a->timeout == b->timeout &&
	    a->max_concurrency == b->max_concurrency &&
	    a->restart_delay == b->restart_delay &&
	    a->max_instances == b->max_instances &&
	    a->max_line == b->max_line &&
	    a->idle_timeout == b->idle_timeout &&
	    a->max_tools == b->max_tools &&
	    (a->credentials == NULL) == (b->credentials == NULL));
}

/*
 * Start and reload. An upstream whose block is unchanged goes on running
 * (its programs keep the definition they started with, which is the
 * same); one that changed or went away is stopped, its calls ending with
 * an error naming it; a new or changed one starts.
 */
static void
upprov_configure(const struct conf *conf)
{
	struct upsrv	**old = up.srvs, *srv;
	struct upinst	 *inst;
	size_t		  nold = up.nsrvs, i, j;
	int		  l;

	up.srvs = conf->nupstreams > 0 ? xcalloc(conf->nupstreams,
	    sizeof *up.srvs) : NULL;
	up.nsrvs = conf->nupstreams;
	for (i = 0; i < up.nsrvs; i++) {
		for (j = 0; j < nold; j++) {
			if (old[j] != NULL && updef_equal(old[j]->def,
			    &conf->upstreams[i]))
				break;
		}
		if (j < nold) {
			up.srvs[i] = old[j];
			old[j] = NULL;
			log_info("upstream %s: unchanged, goes on running",
			    conf->upstreams[i].name);
		} else {
			srv = up.srvs[i] = xcalloc(1, sizeof *srv);
			RB_INIT(&srv->sessions);
			for (l = 0; l < UPSTREAM_LIST_MAX; l++)
				RB_INIT(&srv->lists[l].names);
		}
		srv = up.srvs[i];
		srv->def = &conf->upstreams[i];
		/* Credentials are taken up live: a new header file's value. */
		if (srv->cred != NULL)
			credential_update(srv->cred, conf,
			    srv->def->credentials);
		else if (srv->def->credentials != NULL)
			srv->cred = credential_new(srv->def->name, conf,
			    srv->def->credentials);
	}
	for (j = 0; j < nold; j++) {
		if (old[j] != NULL)
			upsrv_free(old[j], "its block changed or went away "
			    "in a reload");
	}
	free(old);
	if (up.conf != NULL)
		conf_release(up.conf);
	up.conf = up.nsrvs > 0 ? conf_ref(conf) : NULL;
	for (i = 0; i < up.nsrvs; i++) {
		if (up.srvs[i]->main == NULL)
			up.srvs[i]->main = upinst_new(up.srvs[i], NULL);
	}
	/* Catalogs (tools allow|deny, rename, ...) are taken up live. */
	upsrv_remake(NULL);
	TAILQ_FOREACH(inst, &up.insts, entry) {
		if (inst->sid != NULL && inst->lists[0].json != NULL)
			upinst_catalog(inst);
	}
}

static void
upprov_session_closed(struct session *s)
{
	struct upinst	 key, *inst;
	size_t		 i;

	key.sid = (char *)session_id(s);
	for (i = 0; i < up.nsrvs; i++) {
		if ((inst = RB_FIND(upinst_tree, &up.srvs[i]->sessions,
		    &key)) != NULL)
			upinst_stop(inst, "its client session ended");
	}
}

static void
upprov_shutdown(void)
{
	upprov_stop_all();
}

static int
upprov_lists_change(int rev, int list)
{
	return (up.nsrvs > 0);
}

const struct provider provider_upstream = {
	.name = "upstream",
	.enabled = upprov_enabled,
	.list_for = upprov_list_for,
	.list_walk = upprov_list_walk,
	.item_scope = upprov_item_scope,
	.tool_scope = upprov_tool_scope,
	.call_tool = upprov_call_tool,
	.read_resource = upprov_read_resource,
	.subscribe = upprov_subscribe,
	.get_prompt = upprov_get_prompt,
	.complete = upprov_complete,
	.configure = upprov_configure,
	.session_closed = upprov_session_closed,
	.shutdown = upprov_shutdown,
	.lists_change = upprov_lists_change,
	.has_tool = upprov_has_tool,
	.source = upprov_source,
	.tool_upstream = upprov_tool_upstream,
};
