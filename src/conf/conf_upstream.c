/*
 * Upstream blocks: upstream NAME { ... }, an MCP server mcpd is a client
 * of (src/upstream/): its table and its parser, which checks that exactly
 * one of exec and url is there.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

static conf_parse_cb	conf_upstream_env;
static conf_line_cb	conf_upstream_exec;

static const struct conf_enum conf_upstream_sharing[] = {
	{ "shared", CONF_SHARING_SHARED },
	{ "session", CONF_SHARING_SESSION },
	{ NULL, 0 }
};

/* The directives inside "upstream NAME { }"; into struct conf_upstream. */
#define CONF_UPSTREAM_OFF(f)	offsetof(struct conf_upstream, f)
static const struct conf_entry conf_upstream_entries[] = {
	{ .name = "exec", .type = CONF_LINE, .line = conf_upstream_exec,
	  .args = "PROGRAM [ARG...]",
	  .help = "A server speaking MCP on its standard input and output "
	  "(newline-delimited JSON-RPC), run directly, no shell involved. "
	  "PROGRAM is an absolute path or a name looked up in mcpd's PATH "
	  "when the file is read. Its standard error goes to mcpd's log, "
	  "each line with the upstream's name, rate-limited. Exactly one of "
	  "exec and url." },
	{ .name = "url", .type = CONF_STRING, .offset = CONF_UPSTREAM_OFF(url),
	  .check = conf_check_url, .args = "URL",
	  .help = "A Streamable HTTP MCP server, http://HOST[:PORT]/PATH or "
	  "https://... (the certificate is verified against the system's "
	  "trust store). Exactly one of exec and url." },
	{ .name = "sharing", .type = CONF_ENUM,
	  .offset = CONF_UPSTREAM_OFF(sharing), .values = conf_upstream_sharing,
	  .def = "shared",
	  .help = "shared: one upstream session, started with mcpd, serves "
	  "every client session. session: each client session gets its own, "
	  "started on its first call and stopped when the session ends (or "
	  "is released by this instance)." },
	{ .name = "prefix", .type = CONF_STRING,
	  .offset = CONF_UPSTREAM_OFF(prefix), .check = conf_check_prefix,
	  .args = "STRING", .def = "",
	  .help = "Put before the names of the upstream's tools, prompts and "
	  "resource templates as clients see them (and taken off again on the "
	  "way to it): how two upstreams with a tool of the same name are "
	  "served side by side. Letters, digits, \"_\", \"-\" and \".\"; "
	  "\"\" for none." },
	{ .name = "env", .type = CONF_CUSTOM, .parse = conf_upstream_env,
	  .flags = CONF_REPEAT, .args = "NAME=VALUE",
	  .help = "One variable of the program's environment. The program "
	  "gets HOME, LOGNAME, PATH, SHELL, TERM and USER from mcpd's "
	  "environment (as the MCP SDKs give their stdio servers) and these; "
	  "an env line overrides one of them." },
	{ .name = "cwd", .type = CONF_STRING, .offset = CONF_UPSTREAM_OFF(cwd),
	  .check = conf_check_dir, .args = "DIR",
	  .def_text = "mcpd's working directory",
	  .help = "Working directory of the program, an absolute path to a "
	  "directory that exists when the file is read." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_UPSTREAM_OFF(timeout), .min = 1, .max = 86400,
	  .def = "60",
	  .help = "How long one request to the upstream may take. Then the "
	  "client's call ends with a JSON-RPC error naming the upstream, and "
	  "the upstream gets notifications/cancelled." },
	{ .name = "max_concurrency", .type = CONF_INTEGER,
	  .offset = CONF_UPSTREAM_OFF(max_concurrency), .min = 1,
	  .max = 65536, .def = "64",
	  .help = "Requests in flight to one upstream session at once; a "
	  "request beyond this ends at once with a JSON-RPC error saying "
	  "the upstream is busy." },
	{ .name = "restart_delay", .type = CONF_SECONDS,
	  .offset = CONF_UPSTREAM_OFF(restart_delay), .min = 1, .max = 3600,
	  .def = "1",
	  .help = "After the program exits (or fails its handshake) mcpd "
	  "starts it again after this long, doubled after each failure in a "
	  "row up to 60 times this; a run that stayed up for a minute "
	  "resets it." },
	{ .name = "max_instances", .type = CONF_INTEGER,
	  .offset = CONF_UPSTREAM_OFF(max_instances), .min = 1, .max = 4096,
	  .def = "64",
	  .help = "With sharing session, programs of this upstream running "
	  "at once (one per client session using it); a session's first "
	  "call beyond this ends with a JSON-RPC error saying so." },
	{ .name = "scope", .type = CONF_STRING,
	  .offset = CONF_UPSTREAM_OFF(scope), .check = conf_check_scope,
	  .args = "SCOPE",
	  .def_text = "none: every token that passes auth may call them",
	  .help = "With an auth block, the OAuth scope a token needs to "
	  "call any tool of this upstream, as scope in a tool block: "
	  "tools/list shows them only to tokens that have it, and a "
	  "tools/call without it is answered 403 with "
	  "error=\"insufficient_scope\". Without an auth block it has no "
	  "effect." },
	{ .name = "max_message", .type = CONF_SIZE,
	  .offset = CONF_UPSTREAM_OFF(max_line), .min = 64 * CONF_KIB,
	  .max = 64 * CONF_MIB, .def = "4m",
	  .help = "Longest message accepted from the upstream (one line on "
	  "stdio). A longer one is a protocol failure: the upstream is "
	  "restarted and its calls end with an error. Over HTTP it also "
	  "bounds one piece of a response as it arrives (a chunk, a "
	  "Content-Length body): a larger one is refused before it is "
	  "read." },
	{ .name = "idle_timeout", .type = CONF_SECONDS,
	  .offset = CONF_UPSTREAM_OFF(idle_timeout), .min = 1, .max = 86400,
	  .def = "120",
	  .help = "A url upstream's GET stream (what the server sends outside "
	  "requests) on which nothing at all arrives for this long, not "
	  "even a keep-alive comment, is closed and opened again, as one "
	  "the server ended: a half-open connection is found and replaced. "
	  "No effect on an exec upstream." },
	{ .name = "tools", .type = CONF_LINE, .line = conf_catalog_tools,
	  .offset = CONF_UPSTREAM_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every tool",
	  .help = "Which of the upstream's tools are served, by the names "
	  "the upstream gives them (before rename and prefix), as shell "
	  "patterns (* ? [...]): with allow lines (a line without allow or "
	  "deny is one) only the tools one of their patterns matches, and "
	  "never one a deny pattern matches. A tool left out is in no "
	  "tools/list, and a tools/call of it is answered as an unknown "
	  "tool (-32602), as for a name no provider has." },
	{ .name = "prompts", .type = CONF_LINE, .line = conf_catalog_prompts,
	  .offset = CONF_UPSTREAM_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every prompt",
	  .help = "The same for the upstream's prompts, by their names." },
	{ .name = "resources", .type = CONF_LINE,
	  .line = conf_catalog_resources,
	  .offset = CONF_UPSTREAM_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "[allow|deny] PATTERN...", .def_text = "every resource",
	  .help = "The same for the upstream's resources, by URI, and "
	  "resource templates, by uriTemplate." },
	{ .name = "rename", .type = CONF_LINE, .line = conf_catalog_rename,
	  .offset = CONF_UPSTREAM_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "OLD NEW",
	  .help = "Serve the upstream's tool OLD as NEW (then the prefix "
	  "goes before NEW); calls of NEW reach the upstream as OLD, and "
	  "OLD is not served under its own name. tools patterns still "
	  "match OLD." },
	{ .name = "description", .type = CONF_LINE,
	  .line = conf_catalog_describe,
	  .offset = CONF_UPSTREAM_OFF(catalog), .flags = CONF_REPEAT,
	  .args = "NAME TEXT",
	  .help = "Serve the upstream's tool NAME (its own name) with the "
	  "description TEXT (one quoted word) in place of the upstream's." },
	{ .name = "credentials", .type = CONF_BLOCK,
	  .block = conf_credentials_block, .sub = &conf_credentials_table,
	  .offset = CONF_UPSTREAM_OFF(credentials), .args = "{ ... }",
	  .help = "With url: what mcpd sends to the server with its "
	  "requests, never the caller's token (MCP forbids passing it "
	  "through): headers from files, and a bearer token of mcpd's own "
	  "or one exchanged for the caller (docs/upstreams.md, "
	  "Credentials). Inside the block, one directive per line; header "
	  "may repeat:" },
	{ .name = "max_tools", .type = CONF_INTEGER,
	  .offset = CONF_UPSTREAM_OFF(max_tools), .min = 1, .max = 1000000,
	  .def = "10000",
	  .help = "Most tools served from this upstream (also the most "
	  "prompts, resources and resource templates, each). Those past it "
	  "in the upstream's list are not served, and one log line names "
	  "the upstream and how many were left out." },
};

const struct conf_table conf_upstream_table = {
	conf_upstream_entries, CONF_NITEMS(conf_upstream_entries)
};

const char conf_upstream_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"upstream everything {\n"
"    exec node /opt/everything/dist/index.js stdio\n"
"    sharing shared\n"
"    timeout 60\n"
"    max_concurrency 64\n"
"}\n"
"\n"
"upstream files {\n"
"    exec /usr/bin/node /opt/server-filesystem/dist/index.js /srv\n"
"    sharing session\n"
"    prefix \"fs_\"\n"
"    tools deny write_* move_file\n"
"    rename read_text_file read\n"
"    description read \"Reads a text file under /srv\"\n"
"    cwd /srv\n"
"    env NODE_OPTIONS=--max-old-space-size=256\n"
"    restart_delay 2\n"
"}\n"
"\n"
"upstream github {\n"
"    url https://mcp.example.com/github\n"
"    prefix \"gh_\"\n"
"    credentials {\n"
"        grant token_exchange\n"
"        token_endpoint https://auth.example.com/token\n"
"        client_id mcpd\n"
"        client_secret_file /etc/mcpd/client.secret\n"
"        resource https://mcp.example.com/github\n"
"    }\n"
"}\n";

static void
conf_upstream_clear(struct conf_upstream *up)
{
	free(up->name);
	free(up->program);
	xfree_words(up->argv);
	free(up->url);
	free(up->prefix);
	xfree_words(up->env);
	free(up->cwd);
	free(up->scope);
	conf_catalog_clear(&up->catalog);
	conf_credentials_delete(up->credentials);
	memset(up, 0, sizeof *up);
}

static int
conf_upstream_env(void *base, const struct conf_entry *ce,
    const char *s, char **why)
{
	struct conf_upstream	*up = base;

	return (conf_env_add(&up->env, &up->nenv, s, why));
}

/* exec PROGRAM [ARG...], as written: no argument substitution here. */
static int
conf_upstream_exec(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_upstream	*up = base;
	char			*path;
	int			 i;

	if (conf_find_program(argv[0], &path, why) != 0)
		return (-1);
	up->program = path;
	up->argc = argc;
	up->argv = xcalloc(argc + 1, sizeof *up->argv);
	for (i = 0; i < argc; i++)
		up->argv[i] = xstrdup(argv[i]);
	return (0);
}

int
conf_upstream_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_upstream	 up;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_upstream_entries)];
	int			 exec_line, url_line;
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: upstream: expected \"upstream %s\"",
		    file, cd->line, ce->args);
		return (-1);
	}
	if (!conf_name_ok(cd->argv[1], "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(cause, "%s:%d: upstream: invalid name \"%s\" (1 to "
		    "%d letters, digits, \"_\", \"-\" or \".\")", file,
		    cd->line, cd->argv[1], CONF_TOOL_NAME_MAX);
		return (-1);
	}
	for (i = 0; i < conf->nupstreams; i++) {
		if (strcmp(conf->upstreams[i].name, cd->argv[1]) != 0)
			continue;
		xasprintf(cause, "%s:%d: duplicate upstream %s (first "
		    "declared on line %d)", file, cd->line, cd->argv[1],
		    conf->upstreams[i].line);
		return (-1);
	}

	memset(&up, 0, sizeof up);
	up.name = xstrdup(cd->argv[1]);
	up.line = cd->line;
	conf_set_defaults(&up, conf_upstream_entries,
	    CONF_NITEMS(conf_upstream_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_upstream_entries;
	cs.nentries = CONF_NITEMS(conf_upstream_entries);
	cs.base = &up;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}

	exec_line = conf_scope_line(&cs, "exec");
	url_line = conf_scope_line(&cs, "url");
	if (exec_line == 0 && url_line == 0) {
		xasprintf(cause, "%s:%d: upstream %s: missing \"exec PROGRAM "
		    "[ARG...]\" or \"url URL\"", file, cd->line, up.name);
		goto fail;
	}
	if (exec_line != 0 && url_line != 0) {
		xasprintf(cause, "%s:%d: upstream %s: exec (line %d) and url "
		    "exclude each other", file, url_line, up.name, exec_line);
		goto fail;
	}
	if (exec_line != 0 && up.credentials != NULL) {
		xasprintf(cause, "%s:%d: upstream %s: credentials are for a "
		    "url upstream, not an exec one", file, up.credentials->line,
		    up.name);
		goto fail;
	}
	if (url_line != 0 && (conf_scope_line(&cs, "env") != 0 ||
	    conf_scope_line(&cs, "cwd") != 0)) {
		xasprintf(cause, "%s:%d: upstream %s: env and cwd are for an "
		    "exec upstream, not a url one", file, cd->line, up.name);
		goto fail;
	}

	conf->upstreams = xrealloc(conf->upstreams,
	    (conf->nupstreams + 1) * sizeof *conf->upstreams);
	conf->upstreams[conf->nupstreams++] = up;
	return (0);

fail:
	conf_upstream_clear(&up);
	return (-1);
}

/* Once the whole file is read: a token exchange needs a caller's token. */
int
conf_upstream_done(void *base, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_upstream	*up;
	size_t			 i;

	for (i = 0; i < conf->nupstreams; i++) {
		up = &conf->upstreams[i];
		if (up->credentials == NULL || conf->auth != NULL ||
		    up->credentials->grant != CONF_GRANT_TOKEN_EXCHANGE)
			continue;
		xasprintf(cause, "%s:%d: upstream %s: grant token_exchange "
		    "needs an auth block (the caller's token is what is "
		    "exchanged)", file, up->credentials->line, up->name);
		return (-1);
	}
	return (0);
}

/* What the upstream blocks put into base: conf_free's. */
void
conf_upstream_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->nupstreams; i++)
		conf_upstream_clear(&conf->upstreams[i]);
	free(conf->upstreams);
}

const struct conf_upstream *
conf_upstream_find(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->nupstreams; i++) {
		if (strcmp(conf->upstreams[i].name, name) == 0)
			return (&conf->upstreams[i]);
	}
	return (NULL);
}
