/*
 * Endpoint blocks: endpoint PATH { ... }, one more MCP endpoint on the
 * listener with a catalog of its own (which upstreams it serves, which of
 * the tools, prompts and resources it would serve, and its tools' names
 * and descriptions there), and with an auth block
 * its own resource (so its own protected resource metadata, RFC 9728) and
 * its own required scopes. The plain "endpoint PATH" line stays the default
 * endpoint's (conf_table.c); a block of the same PATH configures it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

/* Paths mcpd serves itself (transport.c), never an endpoint's. */
static const char *const conf_endpoint_reserved[] = {
	"/healthz", "/readyz", "/livez", "/metrics"
};
#define CONF_WELL_KNOWN		"/.well-known/"

static conf_line_cb	conf_endpoint_upstreams;

#define CONF_ENDPOINT_OFF(f)	offsetof(struct conf_endpoint, f)
static const struct conf_entry conf_endpoint_entries[] = {
	{ .name = "upstreams", .type = CONF_LINE,
	  .line = conf_endpoint_upstreams, .args = "NAME...|none",
	  .def_text = "every upstream block",
	  .help = "The upstream blocks whose tools, prompts, resources and "
	  "resource templates this endpoint serves (none: no upstream's). "
	  "mcpd's own tools (built-in, exec, fixtures) are served on every "
	  "endpoint unless its tools lines leave them out." },
	{ .name = "tools", .type = CONF_LINE, .line = conf_catalog_tools,
	  .offset = CONF_ENDPOINT_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every tool",
	  .help = "Which tools this endpoint serves (built-in, exec, "
	  "fixtures and upstream tools alike), by the names mcpd serves them "
	  "under (an upstream's after its prefix and renames, before this "
	  "block's rename), as shell patterns (* ? [...]): with allow lines "
	  "(a line without allow or deny is one) only the tools one of their "
	  "patterns matches, and never one a deny pattern matches. A tool the "
	  "endpoint does not serve is not in its tools/list, and a "
	  "tools/call of it there is answered as an unknown tool "
	  "(-32602)." },
	{ .name = "rename", .type = CONF_LINE, .line = conf_catalog_rename,
	  .offset = CONF_ENDPOINT_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "OLD NEW",
	  .help = "Serve tool OLD (any provider's: built-in, exec, an "
	  "upstream's by the name mcpd serves it under) as NEW on this "
	  "endpoint; a call of NEW there runs OLD, OLD is not served there "
	  "under its own name, and a tool named NEW is hidden there. tools "
	  "patterns match OLD." },
	{ .name = "description", .type = CONF_LINE,
	  .line = conf_catalog_describe,
	  .offset = CONF_ENDPOINT_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "NAME TEXT",
	  .help = "Serve tool NAME (before this block's rename) with the "
	  "description TEXT on this endpoint." },
	{ .name = "prompts", .type = CONF_LINE, .line = conf_catalog_prompts,
	  .offset = CONF_ENDPOINT_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every prompt",
	  .help = "The same for prompts, by name." },
	{ .name = "resources", .type = CONF_LINE,
	  .line = conf_catalog_resources,
	  .offset = CONF_ENDPOINT_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every resource",
	  .help = "The same for resources, by URI, and resource templates, "
	  "by uriTemplate; resources/read and resources/subscribe of a URI "
	  "the endpoint does not serve are answered as not found." },
	{ .name = "scopes", .type = CONF_WORDS,
	  .offset = CONF_ENDPOINT_OFF(scopes),
	  .offset2 = CONF_ENDPOINT_OFF(nscopes), .check = conf_check_scope,
	  .args = "SCOPE...", .def_text = "none beyond the auth block's",
	  .help = "With an auth block, scopes every request to this endpoint "
	  "needs besides the auth block's scopes; a token without one is "
	  "answered 403 with error=\"insufficient_scope\" and this "
	  "endpoint's resource_metadata." },
	{ .name = "resource", .type = CONF_STRING,
	  .offset = CONF_ENDPOINT_OFF(resource), .check = conf_check_url,
	  .args = "URI",
	  .def_text = "the auth block's resource with this PATH as its path",
	  .help = "With an auth block, this endpoint's canonical URI (RFC "
	  "8707): a token's aud must name it, and its protected resource "
	  "metadata is served at /.well-known/oauth-protected-resource "
	  "followed by its path (RFC 9728), which the endpoint's 401 and "
	  "403 challenges name." },
};

const struct conf_table conf_endpoint_table = {
	conf_endpoint_entries, CONF_NITEMS(conf_endpoint_entries)
};

const char conf_endpoint_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"endpoint /mcp/github {\n"
"    upstreams github\n"
"    tools gh_*\n"
"    tools deny gh_delete_*\n"
"    scopes github\n"
"}\n"
"\n"
"endpoint /mcp/ops {\n"
"    upstreams none\n"
"    tools disk_usage journal\n"
"}\n";

/* upstreams NAME...|none: the names are checked once the file is read. */
static int
conf_endpoint_upstreams(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_endpoint	*ep = base;
	int			 i;

	ep->all_upstreams = 0;
	if (argc == 1 && strcmp(argv[0], "none") == 0)
		return (0);
	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "none") == 0) {
			xasprintf(why, "none stands alone");
			return (-1);
		}
	}
	xfree_words(ep->upstreams);
	ep->upstreams = conf_words_copy(argv, argc);
	ep->nupstreams = argc;
	return (0);
}

static void
conf_endpoint_clear(struct conf_endpoint *ep)
{
	free(ep->path);
	xfree_words(ep->upstreams);
	conf_catalog_clear(&ep->catalog);
	free(ep->resource);
	xfree_words(ep->scopes);
	memset(ep, 0, sizeof *ep);
}

int
conf_endpoint_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_endpoint	 ep;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_endpoint_entries)];
	char			*why;
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: endpoint: expected \"endpoint PATH "
		    "{\"", file, cd->line);
		return (-1);
	}
	memset(&ep, 0, sizeof ep);
	if (conf_check_path(cd->argv[1], &ep.path, &why) != 0) {
		xasprintf(cause, "%s:%d: endpoint: %s", file, cd->line, why);
		free(why);
		return (-1);
	}
	for (i = 0; i < conf->nendpoints; i++) {
		if (strcmp(conf->endpoints[i].path, ep.path) != 0)
			continue;
		xasprintf(cause, "%s:%d: duplicate endpoint %s (first "
		    "declared on line %d)", file, cd->line, ep.path,
		    conf->endpoints[i].line);
		free(ep.path);
		return (-1);
	}
	ep.line = cd->line;
	ep.all_upstreams = 1;
	conf_set_defaults(&ep, conf_endpoint_entries,
	    CONF_NITEMS(conf_endpoint_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_endpoint_entries;
	cs.nentries = CONF_NITEMS(conf_endpoint_entries);
	cs.base = &ep;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0) {
			conf_endpoint_clear(&ep);
			return (-1);
		}
	}
	conf->endpoints = xreallocarray(conf->endpoints, conf->nendpoints + 1,
	    sizeof *conf->endpoints);
	conf->endpoints[conf->nendpoints++] = ep;
	return (0);
}

static int
conf_endpoint_reserved_path(const char *path)
{
	size_t	i;

	if (strncmp(path, CONF_WELL_KNOWN, strlen(CONF_WELL_KNOWN)) == 0)
		return (1);
	for (i = 0; i < CONF_NITEMS(conf_endpoint_reserved); i++) {
		if (strcmp(path, conf_endpoint_reserved[i]) == 0)
			return (1);
	}
	return (0);
}

/* Once the whole file is read: the names and paths against the rest. */
int
conf_endpoint_done(void *base, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_endpoint	*ep;
	size_t			 i, j;

	for (i = 0; i < conf->nendpoints; i++) {
		ep = &conf->endpoints[i];
		if (conf_endpoint_reserved_path(ep->path)) {
			xasprintf(cause, "%s:%d: endpoint %s is a path mcpd "
			    "serves itself", file, ep->line, ep->path);
			return (-1);
		}
		for (j = 0; j < ep->nupstreams; j++) {
			if (conf_upstream_find(conf, ep->upstreams[j]) != NULL)
				continue;
			xasprintf(cause, "%s:%d: endpoint %s: no upstream "
			    "block named %s", file, ep->line, ep->path,
			    ep->upstreams[j]);
			return (-1);
		}
		if (conf->auth == NULL || ep->resource == NULL)
			continue;
		if (strcmp(ep->path, conf->endpoint) != 0 &&
		    strcmp(ep->resource, conf->auth->resource) == 0) {
			xasprintf(cause, "%s:%d: endpoint %s: resource %s is "
			    "the default endpoint's (auth's resource)", file,
			    ep->line, ep->path, ep->resource);
			return (-1);
		}
		for (j = 0; j < i; j++) {
			if (conf->endpoints[j].resource == NULL ||
			    strcmp(conf->endpoints[j].resource,
			    ep->resource) != 0)
				continue;
			xasprintf(cause, "%s:%d: endpoint %s: resource %s is "
			    "endpoint %s's too", file, ep->line, ep->path,
			    ep->resource, conf->endpoints[j].path);
			return (-1);
		}
	}
	return (0);
}

void
conf_endpoint_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->nendpoints; i++)
		conf_endpoint_clear(&conf->endpoints[i]);
	free(conf->endpoints);
	conf->endpoints = NULL;
	conf->nendpoints = 0;
}

const struct conf_endpoint *
conf_endpoint_find(const struct conf *conf, const char *path)
{
	size_t	i;

	if (path == NULL)
		return (NULL);
	for (i = 0; i < conf->nendpoints; i++) {
		if (strcmp(conf->endpoints[i].path, path) == 0)
			return (&conf->endpoints[i]);
	}
	return (NULL);
}

int
conf_endpoint_exists(const struct conf *conf, const char *path)
{
	return (strcmp(path, conf->endpoint) == 0 ||
	    conf_endpoint_find(conf, path) != NULL);
}

int
conf_endpoint_serves_source(const struct conf_endpoint *ep,
    const char *source)
{
	size_t	i;

	if (ep == NULL || source == NULL || ep->all_upstreams)
		return (1);
	for (i = 0; i < ep->nupstreams; i++) {
		if (strcmp(ep->upstreams[i], source) == 0)
			return (1);
	}
	return (0);
}

int
conf_endpoint_serves(const struct conf_endpoint *ep, int l, const char *name,
    const char *source)
{
	if (ep == NULL)
		return (1);
	if (!conf_endpoint_serves_source(ep, source))
		return (0);
	return (name == NULL || conf_catalog_allows(&ep->catalog, l, name));
}
