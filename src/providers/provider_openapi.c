/*
 * OpenAPI blocks as a provider: each "openapi NAME { }" block's document
 * read into a catalog (src/openapi/), its operations served as tools, a
 * call sent as its HTTP request on http_client.c and its response made
 * the call's answer (call_respond: committed to the event log like every
 * tool's answer).
 *
 * A catalog is what one reading of a document made, with the base URL
 * its calls go to. A block holds its latest; a call holds the one it
 * started on (a reference), so a reload that changes the document while
 * calls run leaves them their operation. The tools served are made again
 * (oapi_serve) whenever a catalog or the blocks change: in conf order, a
 * name an earlier block or another provider serves left out with a log
 * line; clients hear tools/list_changed when what is served changed.
 *
 * Documents: a file is read when the configuration is taken up (start,
 * reload); at start, main.c has read it already through
 * provider_openapi_check and refused to start on an error, so here a
 * failure only happens on a reload, and keeps what the block served. A
 * URL is fetched then too, asynchronously: its tools come when it has
 * arrived (tools/list_changed); a failed fetch keeps the catalog there
 * was, and a block that never had one fetches again after
 * OAPI_RETRY_MIN_S, doubling up to OAPI_RETRY_MAX_S.
 *
 * Every request a block sends (a document's fetch, each call) goes out
 * through oapi_send, whose extra headers come from one function,
 * oapi_credentials: the block's header lines, then, with a credentials
 * block, what credential.c gives for the caller (the fetch: for no one,
 * mcpd's own token). A 401 to a request that carried a grant's token
 * makes the credential forget it and the request ask again and go once
 * more. A call whose credentials cannot be had (a refused exchange, a
 * token endpoint down) is answered with the JSON-RPC error
 * JSONRPC_UPSTREAM_CREDENTIALS naming the OAuth error, as an HTTP
 * upstream's call is (upstream_http.c); the API is not called.
 *
 * A call ends once: when its request has (http_client's done callback).
 * Cancelling it (notifications/cancelled, DELETE, shutdown) cancels the
 * request; the answer is then not sent, and the call is let go in the
 * done callback.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/tree.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>

#include "announce.h"
#include "auth.h"
#include "base64.h"
#include "call.h"
#include "conf.h"
#include "credential.h"
#include "http_client.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcpd.h"
#include "openapi.h"
#include "provider.h"
#include "provider_exec.h"
#include "provider_openapi.h"
#include "server.h"
#include "utf8.h"
#include "xmalloc.h"

/* A URL document never fetched yet: fetched again after this, doubling. */
#define OAPI_RETRY_MIN_S	1
#define OAPI_RETRY_MAX_S	60
/* Bytes of an error response's body kept in the isError result. */
#define OAPI_ERROR_BODY		8192
/* Headers a request may have: the operation's, the block's, ours. */
#define OAPI_HEADERS_MAX	256

/* One reading of a document: its tools and where their calls go. */
struct oapi_catalog {
	u_int			 refs;
	struct openapi_spec	*spec;
	char			*base;		/* base URL, no trailing / */
};

/* One openapi block. */
struct oapi_block {
	const struct conf_openapi *def;		/* of oapi.conf */
	char			*name;
	struct oapi_catalog	*cat;		/* NULL: none yet */
	struct credential	*cred;		/* NULL: no credentials */
	struct oapi_req		*fetch;		/* the document, coming */
	u_int			 nfetch;	/* fetches not ended */
	struct event		*retry;
	int			 retry_s;	/* the next retry's delay */
	int			 gone;		/* left the conf: free at end */
	unsigned long long	 failures;	/* readings that failed */
};

/* A tool as served. */
struct oapi_tool {
	const char		*name;
	struct oapi_block	*b;
	struct oapi_catalog	*cat;
	const struct openapi_op	*op;
	RB_ENTRY(oapi_tool)	 entry;
};
RB_HEAD(oapi_tools, oapi_tool);

static int
oapi_tool_cmp(struct oapi_tool *a, struct oapi_tool *b)
{
	return (strcmp(a->name, b->name));
}
RB_GENERATE_STATIC(oapi_tools, oapi_tool, entry, oapi_tool_cmp);

/* A call in flight. */
struct oapi_call {
	struct call		*call;		/* NULL once released */
	struct oapi_catalog	*cat;
	const struct openapi_op	*op;
	const char		*tool;		/* the op's, held by cat */
	const char		*method;
	const char		*path;		/* template */
	char			*block;
	struct oapi_req		*req;		/* NULL once done */
	char			*url;
	long long		 timeout;	/* seconds */
	long long		 max_response;
	int			 cancelled;
	TAILQ_ENTRY(oapi_call)	 entry;
};
TAILQ_HEAD(oapi_calls, oapi_call);

static struct {
	const struct conf	*conf;		/* holds the defs */
	struct oapi_block	**blocks;
	size_t			 nblocks;
	struct oapi_tool	*tools;		/* served, in order */
	size_t			 ntools;
	struct oapi_tools	 names;
	struct oapi_calls	 calls;
} oapi = {
	.names = RB_INITIALIZER(&oapi.names),
	.calls = TAILQ_HEAD_INITIALIZER(oapi.calls),
};

/* ---------------------------------------------------------------------
 * Catalogs.
 */

static struct oapi_catalog *
oapi_catalog_ref(struct oapi_catalog *cat)
{
	cat->refs++;
	return (cat);
}

static void
oapi_catalog_unref(struct oapi_catalog *cat)
{
	if (cat == NULL || --cat->refs > 0)
		return;
	openapi_spec_free(cat->spec);
	free(cat->base);
	free(cat);
}

/* Whether s has a blank, a control or a non-ASCII character. */
static int
oapi_blank(const char *s)
{
	for (; *s != '\0'; s++) {
		if ((u_char)*s <= 0x20 || (u_char)*s >= 0x7f)
			return (1);
	}
	return (0);
}

/* Control characters made "?", for a log line. */
static void
oapi_clean(char *s)
{
	for (; *s != '\0'; s++) {
		if ((u_char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	}
}

/* scheme://host[:port] of an http(s) URL, or NULL. */
static char *
oapi_origin(const char *url)
{
	const char	*host, *end;

	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return (NULL);
	end = host + strcspn(host, "/?#");
	return (xstrndup(url, (size_t)(end - url)));
}

/*
 * Where calls go: base_url; else the document's server, a relative one
 * taken against the document's URL; else (none) the document's origin.
 */
static char *
oapi_base(const struct conf_openapi *def, const char *srv, char **cause)
{
	char	*origin, *base, *slash;
	size_t	 len;

	if (def->base_url != NULL)
		base = xstrdup(def->base_url);
	else if (srv != NULL && (strncmp(srv, "http://", 7) == 0 ||
	    strncmp(srv, "https://", 8) == 0))
		base = xstrdup(srv);
	else if (!def->spec_url) {
		xasprintf(cause, srv == NULL ? "the document names no "
		    "server: set base_url" : "the document's server \"%s\" is "
		    "relative to a file: set base_url", srv);
		return (NULL);
	} else if (srv == NULL || *srv == '/') {
		origin = oapi_origin(def->spec);
		xasprintf(&base, "%s%s", origin, srv != NULL ? srv : "");
		free(origin);
	} else {
		/* Against the document's own directory. */
		slash = strrchr(def->spec, '/');
		xasprintf(&base, "%.*s%s", (int)(slash - def->spec + 1),
		    def->spec, srv);
	}
	if ((strncmp(base, "http://", 7) != 0 &&
	    strncmp(base, "https://", 8) != 0) || oapi_blank(base)) {
		oapi_clean(base);
		xasprintf(cause, "the API's URL \"%s\" is not an http:// or "
		    "https:// URL: set base_url", base);
		free(base);
		return (NULL);
	}
	len = strlen(base);
	while (len > 0 && base[len - 1] == '/')
		base[--len] = '\0';
	return (base);
}

/* Where a skipped operation is said: the log, or mcpd -t's stderr. */
struct oapi_skip {
	const char	*block;
	FILE		*out;
};

static void
oapi_skipped_cb(const char *op, const char *why, void *arg)
{
	struct oapi_skip	*s = arg;

	if (s->out != NULL)
		fprintf(s->out, "mcpd: openapi %s: %s: not served: %s\n",
		    s->block, op, why);
	else
		log_warn("openapi %s: operation %s is not served: %s",
		    s->block, op, why);
}

/* A document's bytes made a catalog, or NULL with *cause. */
static struct oapi_catalog *
oapi_read(const struct conf_openapi *def, const char *buf, size_t len,
    FILE *out, char **cause)
{
	struct openapi_options	 o;
	struct oapi_skip	 skip = { def->name, out };
	struct oapi_catalog	*cat;
	struct openapi_spec	*spec;
	char			*base;

	memset(&o, 0, sizeof o);
	o.prefix = def->prefix;
	o.allow = def->allow;
	o.nallow = def->nallow;
	o.deny = def->deny;
	o.ndeny = def->ndeny;
	o.max_spec = (size_t)def->max_spec;
	o.max_operations = (size_t)def->max_operations;
	o.max_depth = (int)def->max_schema_depth;
	o.skipped = oapi_skipped_cb;
	o.arg = &skip;
	if ((spec = openapi_spec_parse(buf, len, &o, cause)) == NULL)
		return (NULL);
	if ((base = oapi_base(def, openapi_spec_server(spec), cause)) ==
	    NULL) {
		openapi_spec_free(spec);
		return (NULL);
	}
	cat = xcalloc(1, sizeof *cat);
	cat->refs = 1;
	cat->spec = spec;
	cat->base = base;
	return (cat);
}

/* A file's bytes, at most max of them, or NULL with *cause. */
static char *
oapi_read_file(const char *path, long long max, size_t *len, char **cause)
{
	struct stat	 sb;
	char		*buf;
	ssize_t		 n;
	size_t		 got = 0;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s", strerror(errno));
		return (NULL);
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		xasprintf(cause, "not a regular file");
		close(fd);
		return (NULL);
	}
	if (sb.st_size > max) {
		xasprintf(cause, "%lld bytes, more than max_spec (%lld)",
		    (long long)sb.st_size, max);
		close(fd);
		return (NULL);
	}
	buf = xmalloc((size_t)sb.st_size + 1);
	while (got < (size_t)sb.st_size) {
		if ((n = read(fd, buf + got, (size_t)sb.st_size - got)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			xasprintf(cause, "%s", n == 0 ? "cut short while read" :
			    strerror(errno));
			free(buf);
			close(fd);
			return (NULL);
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return (buf);
}

/* ---------------------------------------------------------------------
 * Outgoing requests.
 */

struct oapi_req;
/*
 * A request's end: the response (hc, read during the callback), or why
 * there is none (hc NULL: it could not be sent).
 */
typedef void	oapi_req_cb(struct oapi_req *, struct http_client *,
		    const char *, void *);

/*
 * One request of a block, its document's fetch or a call's, from its
 * extra headers to its end: oapi_send takes it, oapi_credentials adds
 * what the block sends with every request, oapi_go hands it to
 * http_client.c. done runs exactly once, on a later turn than
 * oapi_send, and the request is freed after it returns.
 */
struct oapi_req {
	struct event_base	*base;
	const struct conf	*conf;		/* holds def */
	const struct conf_openapi *def;
	struct auth_principal	*who;		/* NULL: the document's fetch */
	struct http_client_request r;		/* its strings are ours */
	struct http_client_header *h;
	struct http_client	*hc;		/* sent, not ended */
	struct credential	*cred;		/* NULL: none */
	struct credential_ask	*ask;		/* its headers, asked for */
	size_t			 nbase;		/* headers before cred's */
	int			 retried;	/* after a 401, once */
	int			 cancelled;
	char			*cred_error;	/* no credentials: OAuth's */
	char			*cred_text;	/* and its description */
	struct event		*later;		/* an end before it was sent */
	char			*why;
	oapi_req_cb		*done;
	void			*arg;
};

static struct oapi_req *
oapi_req_new(struct event_base *base, const struct conf *conf,
    const struct conf_openapi *def, struct credential *cred,
    struct auth_principal *who, const char *method, const char *url,
    oapi_req_cb *done, void *arg)
{
	struct oapi_req	*req = xcalloc(1, sizeof *req);

	req->base = base;
	req->conf = conf_ref(conf);
	req->def = def;
	if (cred != NULL)
		req->cred = credential_ref(cred);
	if ((req->who = who) != NULL)
		auth_principal_ref(who);
	req->r.method = method;
	req->r.url = xstrdup(url);
	req->h = xcalloc(OAPI_HEADERS_MAX, sizeof *req->h);
	req->r.headers = req->h;
	req->done = done;
	req->arg = arg;
	return (req);
}

/* Headers from the n-th on, dropped (a token's are wiped). */
static void
oapi_req_truncate(struct oapi_req *req, size_t n)
{
	size_t	i;

	for (i = n; i < req->r.nheaders; i++) {
		free((char *)req->h[i].name);
		explicit_bzero((char *)req->h[i].value,
		    strlen(req->h[i].value));
		free((char *)req->h[i].value);
	}
	req->r.nheaders = n;
}

static void
oapi_req_free(struct oapi_req *req)
{
	oapi_req_truncate(req, 0);
	free(req->h);
	credential_unref(req->cred);
	free(req->cred_error);
	free(req->cred_text);
	free((char *)req->r.url);
	free((char *)req->r.body);
	if (req->later != NULL)
		event_free(req->later);
	free(req->why);
	if (req->who != NULL)
		auth_principal_unref(req->who);
	conf_release(req->conf);
	free(req);
}

/* Adds a header (copied); -1 past OAPI_HEADERS_MAX. */
static int
oapi_req_header(struct oapi_req *req, const char *name, const char *value)
{
	if (req->r.nheaders == OAPI_HEADERS_MAX)
		return (-1);
	req->h[req->r.nheaders].name = xstrdup(name);
	req->h[req->r.nheaders++].value = xstrdup(value);
	return (0);
}

static void
oapi_req_body(struct oapi_req *req, const char *body, size_t len)
{
	req->r.body = xmemdup(body, len + 1);
	req->r.bodylen = len;
}

static void
oapi_req_later_cb(evutil_socket_t fd, short events, void *arg)
{
	struct oapi_req	*req = arg;

	req->done(req, NULL, req->why, req->arg);
	oapi_req_free(req);
}

/* It ends unsent, with why, on a later turn. */
static void
oapi_req_fail(struct oapi_req *req, const char *why)
{
	req->why = xstrdup(why);
	req->later = evtimer_new(req->base, oapi_req_later_cb, req);
	event_active(req->later, EV_TIMEOUT, 0);
}

static void	oapi_credential_ask(struct oapi_req *);

static void
oapi_req_done_cb(struct http_client *hc, void *arg)
{
	struct oapi_req	*req = arg;

	req->hc = NULL;
	if (!req->cancelled && req->cred != NULL && !req->retried &&
	    http_client_error(hc) == NULL && http_client_status(hc) == 401 &&
	    credential_has_grant(req->cred)) {
		/* The token was refused (revoked, expired early): once more. */
		credential_refused(req->cred, req->who);
		req->retried = 1;
		oapi_req_truncate(req, req->nbase);
		oapi_credential_ask(req);
		return;
	}
	req->done(req, hc, NULL, req->arg);
	oapi_req_free(req);
}

/* The request, its headers complete, to http_client.c. */
static void
oapi_go(struct oapi_req *req)
{
	char	*cause = NULL;

	req->r.done = oapi_req_done_cb;
	req->r.arg = req;
	if ((req->hc = http_client_start(&req->r, &cause)) == NULL) {
		oapi_req_fail(req, cause);
		free(cause);
	}
}

/* The credentials' headers came (or why there are none): it goes. */
static void
oapi_credential_cb(const struct http_client_header *extra, size_t n,
    const struct credential_error *e, void *arg)
{
	struct oapi_req	*req = arg;
	char		*why;
	size_t		 i;

	req->ask = NULL;
	if (req->cancelled) {
		oapi_req_fail(req, "cancelled");
		return;
	}
	if (e != NULL) {
		req->cred_error = xstrdup(e->error);
		req->cred_text = xstrdup(e->description);
		xasprintf(&why, "no credentials: %s (%s)", e->error,
		    e->description);
		oapi_req_fail(req, why);
		free(why);
		return;
	}
	for (i = 0; i < n; i++) {
		if (oapi_req_header(req, extra[i].name, extra[i].value) != 0) {
			oapi_req_fail(req, "too many headers");
			return;
		}
	}
	oapi_go(req);
}

/* Its credentials' headers asked for, after those it has (nbase). */
static void
oapi_credential_ask(struct oapi_req *req)
{
	req->nbase = req->r.nheaders;
	req->ask = credential_get(req->cred, req->who, oapi_credential_cb,
	    req);
}

/*
 * The extra headers of every request a block sends, its document's fetch
 * and each call's, added before it goes (oapi_go): the block's header
 * lines, values from files as last read (a reload reads them again),
 * then its credentials' (credential.h: headers from files, a token of
 * mcpd's own or exchanged for req->who, mcpd's own for the fetch), which
 * come on a later turn; oapi_req_cancel cancels the ask until they have.
 */
static void
oapi_credentials(struct oapi_req *req)
{
	size_t	i;

	for (i = 0; i < req->def->nheaders; i++) {
		if (oapi_req_header(req, req->def->headers[i].name,
		    req->def->headers[i].value) != 0) {
			oapi_req_fail(req, "too many headers");
			return;
		}
	}
	if (req->cred != NULL)
		oapi_credential_ask(req);
	else
		oapi_go(req);
}

/* Every outgoing request of a block: its extra headers, then the wire. */
static void
oapi_send(struct oapi_req *req)
{
	char	*ua;

	xasprintf(&ua, "mcpd/%s", MCPD_VERSION);
	oapi_req_header(req, "User-Agent", ua);
	free(ua);
	oapi_credentials(req);
}

/* done comes on a later turn, with the response if it was in already. */
static void
oapi_req_cancel(struct oapi_req *req)
{
	req->cancelled = 1;
	if (req->hc != NULL)
		http_client_cancel(req->hc);
	else if (req->ask != NULL)
		credential_cancel(req->ask);
}

/* ---------------------------------------------------------------------
 * The tools served.
 */

static int
oapi_tool_same(const struct oapi_tool *a, const struct oapi_tool *b)
{
	return (a->op == b->op || cJSON_Compare(openapi_spec_op_tool(a->op),
	    openapi_spec_op_tool(b->op), 1));
}

/* The provider of others (provider_other_tools) serving name, or NULL. */
static const char *
oapi_other_owner(const cJSON *others, const char *name)
{
	const cJSON	*o;

	cJSON_ArrayForEach(o, others) {
		if (strcmp(cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(o, "name")), name) == 0)
			return (cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(o, "provider")));
	}
	return (NULL);
}

/*
 * The tools served, made again from the blocks' catalogs: in conf and
 * document order; a name already served, here or by another provider,
 * left out with a line. Clients hear of it when the list changed. The
 * catalogs of what was served must still be there (the callers drop
 * theirs after).
 */
static void
oapi_serve(void)
{
	struct oapi_tool	*old = oapi.tools, *t, key;
	struct oapi_block	*b;
	cJSON			*others;
	const char		*owner;
	size_t			 nold = oapi.ntools, max = 0, i, j, n = 0;
	int			 changed;

	for (i = 0; i < oapi.nblocks; i++) {
		if (oapi.blocks[i]->cat != NULL)
			max += openapi_spec_count(oapi.blocks[i]->cat->spec);
	}
	others = provider_other_tools(&provider_openapi);
	oapi.tools = max > 0 ? xcalloc(max, sizeof *oapi.tools) : NULL;
	RB_INIT(&oapi.names);
	for (i = 0; i < oapi.nblocks; i++) {
		b = oapi.blocks[i];
		for (j = 0; b->cat != NULL &&
		    j < openapi_spec_count(b->cat->spec); j++) {
			t = &oapi.tools[n];
			t->op = openapi_spec_op(b->cat->spec, j);
			t->name = openapi_spec_op_name(t->op);
			t->b = b;
			t->cat = b->cat;
			key.name = t->name;
			owner = RB_FIND(oapi_tools, &oapi.names, &key) !=
			    NULL ? "another openapi block" :
			    oapi_other_owner(others, t->name);
			if (owner != NULL) {
				log_limited(LOG_LEVEL_ERROR,
				    "openapi-collision", "openapi %s: tool %s "
				    "is also served by %s; not served from "
				    "openapi %s (set a prefix to serve both)",
				    b->name, t->name, owner, b->name);
				continue;
			}
			RB_INSERT(oapi_tools, &oapi.names, t);
			n++;
		}
	}
	cJSON_Delete(others);
	oapi.ntools = n;
	changed = n != nold;
	for (i = 0; !changed && i < n; i++)
		changed = !oapi_tool_same(&oapi.tools[i], &old[i]);
	free(old);
	if (changed)
		announce_change(ANNOUNCE_TOOLS, NULL);
}

static struct oapi_tool *
oapi_find(const char *name)
{
	struct oapi_tool	key;

	key.name = name;
	return (RB_FIND(oapi_tools, &oapi.names, &key));
}

/* A block's new catalog in place of its old one (taken). */
static void
oapi_install(struct oapi_block *b, struct oapi_catalog *cat)
{
	struct oapi_catalog	*old = b->cat;

	b->cat = cat;
	oapi_serve();
	oapi_catalog_unref(old);
	log_info("openapi %s: %zu tools from %s (OpenAPI %s), %zu operations "
	    "not served, calls to %s", b->name, openapi_spec_count(cat->spec),
	    b->def->spec, openapi_spec_version(cat->spec),
	    openapi_spec_skipped(cat->spec), cat->base);
}

/* ---------------------------------------------------------------------
 * Documents.
 */

static void	oapi_fetch(struct oapi_block *);

static void
oapi_block_free(struct oapi_block *b)
{
	if (b->retry != NULL)
		event_free(b->retry);
	oapi_catalog_unref(b->cat);
	credential_unref(b->cred);
	free(b->name);
	free(b);
}

static void
oapi_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	oapi_fetch(arg);
}

/* A URL that never gave a catalog is fetched again, later and later. */
static void
oapi_retry(struct oapi_block *b)
{
	struct timeval	tv;

	if (b->cat != NULL || !b->def->spec_url)
		return;
	if (b->retry == NULL)
		b->retry = evtimer_new(server.base, oapi_retry_cb, b);
	b->retry_s = b->retry_s == 0 ? OAPI_RETRY_MIN_S :
	    b->retry_s * 2 > OAPI_RETRY_MAX_S ? OAPI_RETRY_MAX_S :
	    b->retry_s * 2;
	tv.tv_sec = b->retry_s;
	tv.tv_usec = 0;
	evtimer_add(b->retry, &tv);
}

/* A document could not be taken: what stays, said once (after retry). */
static void
oapi_kept(struct oapi_block *b, const char *what, const char *why)
{
	b->failures++;
	if (b->cat != NULL)
		log_error("openapi %s: %s %s: %s; its %zu tools stay as they "
		    "were", b->name, what, b->def->spec, why,
		    openapi_spec_count(b->cat->spec));
	else if (b->def->spec_url)
		log_error("openapi %s: %s %s: %s; no tools from it until it "
		    "can be (again in %d s)", b->name, what, b->def->spec, why,
		    b->retry_s);
	else
		log_error("openapi %s: %s %s: %s; no tools from it", b->name,
		    what, b->def->spec, why);
}

static void
oapi_fetched_cb(struct oapi_req *req, struct http_client *hc,
    const char *unsent, void *arg)
{
	struct oapi_block	*b = arg;
	struct oapi_catalog	*cat;
	const char		*body, *err;
	char			*cause = NULL, *why;
	size_t			 len;
	int			 status;

	b->nfetch--;
	if (req != b->fetch) {
		/* A fetch replaced by a newer one, or its block's. */
		if (b->gone && b->nfetch == 0)
			oapi_block_free(b);
		return;
	}
	b->fetch = NULL;
	err = hc != NULL ? http_client_error(hc) : unsent;
	status = hc != NULL ? http_client_status(hc) : 0;
	if (err != NULL && strcmp(err, "shut down") == 0)
		return;
	if (err != NULL || status != 200) {
		if (err != NULL)
			xasprintf(&why, "%s", err);
		else
			xasprintf(&why, "HTTP %d", status);
		oapi_retry(b);
		oapi_kept(b, "cannot fetch", why);
		free(why);
		return;
	}
	body = http_client_body(hc, &len);
	if ((cat = oapi_read(b->def, body, len, NULL, &cause)) == NULL) {
		oapi_retry(b);
		oapi_kept(b, "cannot take", cause);
		free(cause);
		return;
	}
	b->retry_s = 0;
	oapi_install(b, cat);
}

/* The fetch of a block's document, with the block's headers. */
static struct oapi_req *
oapi_fetch_req(struct event_base *base, const struct conf *conf,
    const struct conf_openapi *def, struct credential *cred,
    oapi_req_cb *done, void *arg)
{
	struct oapi_req	*req;

	req = oapi_req_new(base, conf, def, cred, NULL, "GET", def->spec,
	    done, arg);
	req->r.max_body = (size_t)def->max_spec;
	req->r.timeout_ms = (int)(def->timeout * 1000);
	oapi_req_header(req, "Accept", "application/json, application/yaml, "
	    "application/x-yaml, text/yaml, */*;q=0.5");
	return (req);
}

/* The document of a URL, asked for again (a fetch in flight is dropped). */
static void
oapi_fetch(struct oapi_block *b)
{
	if (b->fetch != NULL) {
		oapi_req_cancel(b->fetch);
		b->fetch = NULL;
	}
	b->fetch = oapi_fetch_req(server.base, oapi.conf, b->def, b->cred,
	    oapi_fetched_cb, b);
	b->nfetch++;
	oapi_send(b->fetch);
}

/* The block's document again: a file now, a URL when it comes. */
static void
oapi_load(struct oapi_block *b)
{
	struct oapi_catalog	*cat;
	char			*buf, *cause = NULL, *why;
	size_t			 len;

	if (b->def->spec_url) {
		oapi_fetch(b);
		return;
	}
	if ((buf = oapi_read_file(b->def->spec, b->def->max_spec, &len,
	    &cause)) == NULL) {
		oapi_kept(b, "cannot read", cause);
		free(cause);
		return;
	}
	cat = oapi_read(b->def, buf, len, NULL, &cause);
	free(buf);
	if (cat == NULL) {
		xasprintf(&why, "%s", cause);
		oapi_kept(b, "cannot take", why);
		free(why);
		free(cause);
		return;
	}
	oapi_install(b, cat);
}

/* A block left the conf: free it now, or when its fetches have ended. */
static void
oapi_block_drop(struct oapi_block *b)
{
	b->gone = 1;
	if (b->retry != NULL)
		evtimer_del(b->retry);
	if (b->fetch != NULL) {
		oapi_req_cancel(b->fetch);
		b->fetch = NULL;
	}
	if (b->nfetch == 0)
		oapi_block_free(b);
}

/* ---------------------------------------------------------------------
 * Calls.
 */

static const char *
oapi_sid(const struct oapi_call *oc)
{
	return (oc->call != NULL ? call_owner(oc->call) : "-");
}

static void
oapi_add_text(cJSON *content, const char *text)
{
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	cJSON_AddItemToArray(content, item);
}

static cJSON *
oapi_error_result(const char *text)
{
	cJSON	*result = cJSON_CreateObject();

	oapi_add_text(cJSON_AddArrayToObject(result, "content"), text);
	cJSON_AddBoolToObject(result, "isError", 1);
	return (result);
}

/* application/json or +json, parameters aside. */
static int
oapi_is_json(const char *type)
{
	size_t	len;

	if (type == NULL)
		return (0);
	len = strcspn(type, "; \t");
	return ((len == 16 && strncasecmp(type, "application/json", 16) == 0) ||
	    (len > 5 && strncasecmp(type + len - 5, "+json", 5) == 0));
}

static int
oapi_utf8(const char *s, size_t len)
{
	size_t	i, n;

	for (i = 0; i < len; i += n) {
		if ((n = utf8_sequence(s + i, len - i, UTF8_NO_NUL)) == 0)
			return (0);
	}
	return (1);
}

/* A body as content: an image or audio as such, text as text. */
static void
oapi_body_content(cJSON *content, const char *type, const char *body,
    size_t len)
{
	cJSON	*item;
	char	*text, *mime;

	if (len == 0)
		return;
	if (type != NULL && (strncasecmp(type, "image/", 6) == 0 ||
	    strncasecmp(type, "audio/", 6) == 0)) {
		item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "type", strncasecmp(type,
		    "image/", 6) == 0 ? "image" : "audio");
		text = base64_encode(body, len, 0);
		cJSON_AddStringToObject(item, "data", text);
		free(text);
		mime = xstrndup(type, strcspn(type, "; \t"));
		cJSON_AddStringToObject(item, "mimeType", mime);
		free(mime);
		cJSON_AddItemToArray(content, item);
		return;
	}
	if (!oapi_utf8(body, len)) {
		xasprintf(&text, "(a binary response of %zu bytes, %s: not "
		    "shown)", len, type != NULL ? type : "no Content-Type");
		oapi_add_text(content, text);
		free(text);
		return;
	}
	text = provider_exec_text(body, len);
	oapi_add_text(content, text);
	free(text);
}

/* A 2xx response as the call's result. */
static cJSON *
oapi_success(const struct oapi_call *oc, struct http_client *hc)
{
	const char	*type = http_client_header(hc, "Content-Type");
	const char	*body;
	cJSON		*result, *content, *json, *sc;
	char		*text;
	size_t		 len;

	body = http_client_body(hc, &len);
	if (oapi_is_json(type) && len > 0) {
		if (!oapi_utf8(body, len) || (json = cJSON_ParseWithLength(
		    body, len)) == NULL) {
			xasprintf(&text, "HTTP %d from %s %s: the response "
			    "says %s but is not valid JSON",
			    http_client_status(hc),
			    oc->method, oc->url, type);
			result = oapi_error_result(text);
			free(text);
			oapi_body_content(cJSON_GetObjectItemCaseSensitive(
			    result, "content"), "text/plain", body, len);
			return (result);
		}
		result = cJSON_CreateObject();
		content = cJSON_AddArrayToObject(result, "content");
		oapi_body_content(content, type, body, len);
		if (cJSON_IsObject(json) && !openapi_spec_op_wraps(oc->op))
			sc = json;
		else {
			sc = cJSON_CreateObject();
			cJSON_AddItemToObject(sc, "result", json);
		}
		cJSON_AddItemToObject(result, "structuredContent", sc);
		return (result);
	}
	if (openapi_spec_op_has_output(oc->op)) {
		xasprintf(&text, "HTTP %d from %s %s: the document promises a "
		    "JSON response, and this one is %s", http_client_status(hc),
		    oc->method, oc->url, len == 0 ? "empty" :
		    type != NULL ? type : "of no Content-Type");
		result = oapi_error_result(text);
		free(text);
		oapi_body_content(cJSON_GetObjectItemCaseSensitive(result,
		    "content"), type, body, len);
		return (result);
	}
	result = cJSON_CreateObject();
	content = cJSON_AddArrayToObject(result, "content");
	if (len == 0) {
		xasprintf(&text, "HTTP %d (no content)",
		    http_client_status(hc));
		oapi_add_text(content, text);
		free(text);
	} else
		oapi_body_content(content, type, body, len);
	return (result);
}

/* What came back: the result, an error status, or why none came. */
static cJSON *
oapi_result(const struct oapi_call *oc, struct http_client *hc)
{
	const char	*err = http_client_error(hc), *body;
	int		 status = http_client_status(hc);
	cJSON		*result, *content;
	char		*text;
	size_t		 len, total;

	if (err != NULL) {
		if (strcmp(err, "timeout") == 0)
			xasprintf(&text, "timeout: %s %s gave no whole "
			    "response within %lld s (the block's timeout)",
			    oc->method, oc->url, oc->timeout);
		else if (strncmp(err, "response body larger than", 25) == 0 ||
		    strncmp(err, "response body or chunk larger", 29) == 0)
			xasprintf(&text, "response refused: %s %s answered "
			    "with more than max_response (%lld bytes)",
			    oc->method, oc->url,
			    oc->max_response);
		else if (strcmp(err, "shut down") == 0)
			xasprintf(&text, "mcpd is shutting down: %s %s was "
			    "abandoned", oc->method, oc->url);
		else
			xasprintf(&text, "connection failed: %s %s: %s",
			    oc->method, oc->url, err);
		result = oapi_error_result(text);
		free(text);
		return (result);
	}
	if (status >= 200 && status < 300)
		return (oapi_success(oc, hc));
	body = http_client_body(hc, &total);
	xasprintf(&text, "HTTP %d from %s %s%s", status,
	    oc->method, oc->url, status >= 300 && status < 400 ?
	    " (redirects are not followed)" : "");
	result = oapi_error_result(text);
	free(text);
	content = cJSON_GetObjectItemCaseSensitive(result, "content");
	len = total;
	if (len > OAPI_ERROR_BODY) {
		/* Not in the middle of a UTF-8 sequence. */
		len = OAPI_ERROR_BODY;
		while (len > 0 && ((u_char)body[len] & 0xc0) == 0x80)
			len--;
	}
	oapi_body_content(content, http_client_header(hc, "Content-Type"),
	    body, len);
	if (len < total) {
		xasprintf(&text, "[the body is cut: the first %zu of %zu bytes "
		    "are shown]", len, total);
		oapi_add_text(content, text);
		free(text);
	}
	return (result);
}

static void
oapi_call_free(struct oapi_call *oc)
{
	TAILQ_REMOVE(&oapi.calls, oc, entry);
	oapi_catalog_unref(oc->cat);
	free(oc->block);
	free(oc->url);
	free(oc);
}

/*
 * A call whose credentials cannot be had: the error an HTTP upstream's
 * call gets then (upstream_http.c), naming the OAuth error, the block in
 * place of the upstream.
 */
static void
oapi_no_credentials(struct oapi_call *oc, const struct oapi_req *req)
{
	cJSON	*data;
	char	*text;

	xasprintf(&text, "openapi %s: no credentials for this request: %s "
	    "(%s)", oc->block, req->cred_error, req->cred_text);
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "openapi", oc->block);
	cJSON_AddStringToObject(data, "error", req->cred_error);
	cJSON_AddStringToObject(data, "error_description", req->cred_text);
	call_respond_error_data(oc->call, JSONRPC_UPSTREAM_CREDENTIALS, text,
	    data);
	free(text);
}

static void
oapi_done_cb(struct oapi_req *req, struct http_client *hc,
    const char *unsent, void *arg)
{
	struct oapi_call	*oc = arg;
	const char		*err = hc != NULL ? http_client_error(hc) :
				    unsent;
	char			*text;

	oc->req = NULL;
	if (err != NULL && !oc->cancelled)
		log_limited(LOG_LEVEL_WARN, "openapi-failed", "session=%s "
		    "openapi %s tool %s: %s %s: %s%s", oapi_sid(oc), oc->block,
		    oc->tool, oc->method,
		    oc->path, hc == NULL ? "not sent: " : "",
		    err);
	else
		log_debug("session=%s openapi %s tool %s: %s %s: %s%d",
		    oapi_sid(oc), oc->block, oc->tool,
		    oc->method, oc->path,
		    oc->cancelled ? "cancelled, " : "", hc != NULL ?
		    http_client_status(hc) : 0);
	if (!oc->cancelled && hc != NULL)
		call_respond(oc->call, oapi_result(oc, hc));
	else if (!oc->cancelled && req->cred_error != NULL)
		oapi_no_credentials(oc, req);
	else if (!oc->cancelled) {
		xasprintf(&text, "cannot send %s %s: %s",
		    oc->method, oc->url, unsent);
		call_respond(oc->call, oapi_error_result(text));
		free(text);
	}
	call_release(oc->call);
	oc->call = NULL;
	oapi_call_free(oc);
}

static void
oapi_cancel_cb(void *arg)
{
	struct oapi_call	*oc = arg;

	oc->cancelled = 1;
	if (oc->req != NULL)
		oapi_req_cancel(oc->req);
}

static size_t
oapi_running(const char *block)
{
	struct oapi_call	*oc;
	size_t			 n = 0;

	TAILQ_FOREACH(oc, &oapi.calls, entry) {
		if (strcmp(oc->block, block) == 0)
			n++;
	}
	return (n);
}

static void
oapi_refuse(struct call *c, char *text)
{
	call_respond(c, oapi_error_result(text));
	call_release(c);
	free(text);
}

static int
oapi_call_tool(struct call *c, const char *name, const cJSON *args)
{
	struct oapi_tool	*t;
	const struct conf_openapi *def;
	struct openapi_request	 req;
	struct oapi_call	*oc;
	char			*cause = NULL, *text;
	size_t			 i;

	if ((t = oapi_find(name)) == NULL)
		return (-1);
	def = t->b->def;
	if (openapi_request_build(t->op, t->cat->base, args, &req,
	    &cause) != 0) {
		xasprintf(&text, "invalid arguments: %s", cause);
		free(cause);
		oapi_refuse(c, text);
		return (0);
	}
	if (oapi_running(t->b->name) >= (size_t)def->max_concurrency) {
		log_limited(LOG_LEVEL_INFO, "openapi-busy", "session=%s "
		    "openapi %s: busy: %lld calls in flight (max_concurrency)",
		    call_owner(c), t->b->name, def->max_concurrency);
		xasprintf(&text, "busy: openapi %s has %lld calls in flight "
		    "(max_concurrency); try again later", t->b->name,
		    def->max_concurrency);
		openapi_request_clear(&req);
		oapi_refuse(c, text);
		return (0);
	}

	oc = xcalloc(1, sizeof *oc);
	oc->call = c;
	oc->cat = oapi_catalog_ref(t->cat);
	oc->op = t->op;
	oc->tool = openapi_spec_op_name(t->op);
	oc->method = openapi_spec_op_method(t->op);
	oc->path = openapi_spec_op_path(t->op);
	oc->block = xstrdup(t->b->name);
	oc->url = xstrdup(req.url);
	oc->timeout = def->timeout;
	oc->max_response = def->max_response;
	TAILQ_INSERT_TAIL(&oapi.calls, oc, entry);

	oc->req = oapi_req_new(server.base, oapi.conf, def, t->b->cred,
	    call_principal(c), req.method, req.url, oapi_done_cb, oc);
	oc->req->r.max_body = (size_t)def->max_response;
	oc->req->r.timeout_ms = (int)(def->timeout * 1000);
	oc->req->r.keepalive = 1;
	if (req.body != NULL)
		oapi_req_body(oc->req, req.body, req.bodylen);
	for (i = 0; i < req.nheaders; i++)
		oapi_req_header(oc->req, req.headers[i].name,
		    req.headers[i].value);
	openapi_request_clear(&req);
	call_set_cancel(c, oapi_cancel_cb, oc);
	oapi_send(oc->req);
	return (0);
}

/* ---------------------------------------------------------------------
 * The provider.
 */

static int
oapi_enabled(const struct conf *conf)
{
	return (conf->nopenapis > 0);
}

static void
oapi_list_tools(cJSON *tools)
{
	size_t	i;

	for (i = 0; i < oapi.ntools; i++)
		cJSON_AddItemToArray(tools, cJSON_Duplicate(
		    openapi_spec_op_tool(oapi.tools[i].op), 1));
}

static size_t
oapi_list_walk(struct session *s, int l, size_t from, provider_walk_cb *cb,
    void *arg)
{
	size_t	i;

	if (l != PROVIDER_TOOLS)
		return (0);
	for (i = from; cb != NULL && i < oapi.ntools; i++) {
		/* Source NULL: an endpoint serves them as mcpd's own. */
		if (cb(openapi_spec_op_tool(oapi.tools[i].op),
		    oapi.tools[i].b->def->scope, NULL, arg))
			break;
	}
	return (oapi.ntools);
}

static int
oapi_has_tool(const char *name)
{
	return (oapi_find(name) != NULL);
}

static const char *
oapi_tool_scope(const char *name)
{
	struct oapi_tool	*t = oapi_find(name);

	return (t != NULL ? t->b->def->scope : NULL);
}

static int
oapi_lists_change(int rev, int list)
{
	return (list == PROVIDER_TOOLS && oapi.nblocks > 0);
}

/*
 * Start and reload: blocks matched by name keep their catalog (and their
 * calls go on), take their new definition and read their document again;
 * blocks gone are dropped (their calls keep their catalog to the end).
 */
static void
oapi_configure(const struct conf *conf)
{
	struct oapi_block	**old = oapi.blocks, *b;
	const struct conf	*old_conf = oapi.conf;
	size_t			  nold = oapi.nblocks, i, j;

	oapi.blocks = conf->nopenapis > 0 ? xcalloc(conf->nopenapis,
	    sizeof *oapi.blocks) : NULL;
	oapi.nblocks = conf->nopenapis;
	for (i = 0; i < oapi.nblocks; i++) {
		for (j = 0; j < nold; j++) {
			if (old[j] != NULL && strcmp(old[j]->name,
			    conf->openapis[i].name) == 0)
				break;
		}
		if (j < nold) {
			b = old[j];
			old[j] = NULL;
			if (b->retry != NULL)
				evtimer_del(b->retry);
			b->retry_s = 0;
		} else {
			b = xcalloc(1, sizeof *b);
			b->name = xstrdup(conf->openapis[i].name);
		}
		b->def = &conf->openapis[i];
		/* Taken up live: tokens kept unless their grant changed. */
		if (b->cred != NULL && b->def->credentials != NULL)
			credential_update(b->cred, conf, b->def->credentials);
		else if (b->cred != NULL) {
			credential_unref(b->cred);
			b->cred = NULL;
		} else if (b->def->credentials != NULL)
			b->cred = credential_new(b->name, conf,
			    b->def->credentials);
		oapi.blocks[i] = b;
	}
	oapi.conf = oapi.nblocks > 0 ? conf_ref(conf) : NULL;
	/* Made while the blocks gone (and what they served) are still here. */
	oapi_serve();
	for (j = 0; j < nold; j++) {
		if (old[j] != NULL)
			oapi_block_drop(old[j]);
	}
	free(old);
	if (old_conf != NULL)
		conf_release(old_conf);
	for (i = 0; i < oapi.nblocks; i++)
		oapi_load(oapi.blocks[i]);
}

static void
oapi_shutdown(void)
{
	size_t	i;

	for (i = 0; i < oapi.nblocks; i++)
		oapi_block_drop(oapi.blocks[i]);
	free(oapi.blocks);
	oapi.blocks = NULL;
	oapi.nblocks = 0;
	free(oapi.tools);
	oapi.tools = NULL;
	oapi.ntools = 0;
	RB_INIT(&oapi.names);
	if (oapi.conf != NULL)
		conf_release(oapi.conf);
	oapi.conf = NULL;
}

const struct provider provider_openapi = {
	.name = "openapi",
	.enabled = oapi_enabled,
	.list_tools = oapi_list_tools,
	.list_walk = oapi_list_walk,
	.call_tool = oapi_call_tool,
	.has_tool = oapi_has_tool,
	.tool_scope = oapi_tool_scope,
	.configure = oapi_configure,
	.shutdown = oapi_shutdown,
	.lists_change = oapi_lists_change,
};

size_t
provider_openapi_count(void)
{
	return (oapi.nblocks);
}

void
provider_openapi_stats(size_t i, struct provider_openapi_stats *st)
{
	struct oapi_block	*b = oapi.blocks[i];
	size_t			 j;

	memset(st, 0, sizeof *st);
	st->name = b->name;
	for (j = 0; j < oapi.ntools; j++)
		st->tools += oapi.tools[j].b == b;
	st->inflight = oapi_running(b->name);
	st->loaded = b->cat != NULL;
	st->failures = b->failures;
}

/* ---------------------------------------------------------------------
 * mcpd -t, and the start's check of document files.
 */

struct oapi_check_fetch {
	char		*body;
	size_t		 len;
	char		*why;
	int		 done;
};

static void
oapi_check_fetched_cb(struct oapi_req *req, struct http_client *hc,
    const char *unsent, void *arg)
{
	struct oapi_check_fetch	*f = arg;
	const char		*body;

	f->done = 1;
	if (hc == NULL)
		xasprintf(&f->why, "cannot fetch: %s", unsent);
	else if (http_client_error(hc) != NULL)
		xasprintf(&f->why, "cannot fetch: %s", http_client_error(hc));
	else if (http_client_status(hc) != 200)
		xasprintf(&f->why, "cannot fetch: HTTP %d",
		    http_client_status(hc));
	else {
		body = http_client_body(hc, &f->len);
		f->body = xmemdup(body, f->len + 1);
	}
}

/* A URL's document, fetched on a loop of its own (mcpd -t). */
static char *
oapi_check_fetch(const struct conf *conf, const struct conf_openapi *def,
    size_t *len, char **cause)
{
	struct oapi_check_fetch	 f;
	struct event_base	*base;
	struct credential	*cred = NULL;

	memset(&f, 0, sizeof f);
	if ((base = event_base_new()) == NULL) {
		*cause = xstrdup("cannot make an event loop");
		return (NULL);
	}
	http_client_init(base);
	/*
	 * credential.c runs on server.base; mcpd -t has no server, so the
	 * check's loop is it while the document comes (a token included).
	 */
	server.base = base;
	if (def->credentials != NULL)
		cred = credential_new(def->name, conf, def->credentials);
	oapi_send(oapi_fetch_req(base, conf, def, cred, oapi_check_fetched_cb,
	    &f));
	while (!f.done && event_base_loop(base, EVLOOP_ONCE) == 0)
		;
	credential_unref(cred);
	server.base = NULL;
	http_client_shutdown();
	event_base_free(base);
	if (f.body == NULL) {
		*cause = f.why != NULL ? f.why : xstrdup("cannot fetch");
		return (NULL);
	}
	*len = f.len;
	return (f.body);
}

int
provider_openapi_check(const struct conf *conf, FILE *out, int urls,
    char **cause)
{
	const struct conf_openapi	*def;
	const struct openapi_op		*op;
	struct oapi_catalog		*cat;
	char				*buf, *why = NULL;
	size_t				 i, j, len;

	for (i = 0; i < conf->nopenapis; i++) {
		def = &conf->openapis[i];
		if (def->spec_url && !urls)
			continue;
		buf = def->spec_url ? oapi_check_fetch(conf, def, &len, &why) :
		    oapi_read_file(def->spec, def->max_spec, &len, &why);
		if (buf == NULL) {
			xasprintf(cause, "%s:%d: openapi %s: %s: %s",
			    conf->path, def->line, def->name, def->spec, why);
			free(why);
			return (-1);
		}
		cat = oapi_read(def, buf, len, out != NULL ? stderr : NULL,
		    &why);
		free(buf);
		if (cat == NULL) {
			xasprintf(cause, "%s:%d: openapi %s: %s: %s",
			    conf->path, def->line, def->name, def->spec, why);
			free(why);
			return (-1);
		}
		if (out != NULL) {
			fprintf(out, "mcpd: openapi %s: %zu tools from %s "
			    "(OpenAPI %s, \"%s\"), %zu operations not served, "
			    "calls to %s\n", def->name,
			    openapi_spec_count(cat->spec), def->spec,
			    openapi_spec_version(cat->spec),
			    openapi_spec_title(cat->spec),
			    openapi_spec_skipped(cat->spec), cat->base);
			for (j = 0; j < openapi_spec_count(cat->spec); j++) {
				op = openapi_spec_op(cat->spec, j);
				fprintf(out, "mcpd: openapi %s:   %s  %s %s\n",
				    def->name, openapi_spec_op_name(op),
				    openapi_spec_op_method(op),
				    openapi_spec_op_path(op));
			}
		}
		oapi_catalog_unref(cat);
	}
	return (0);
}
