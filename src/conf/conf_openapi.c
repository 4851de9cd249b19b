/*
 * OpenAPI blocks: openapi NAME { ... }, a REST API whose OpenAPI
 * description makes MCP tools (src/providers/provider_openapi.c): its
 * table and its parser. The description itself is read by the provider
 * (at start, on every reload, and by mcpd -t); here only the block's own
 * words are checked, and the values of header lines given as file:PATH
 * are read, so a reload reads them again. Its credentials { } block is
 * an HTTP upstream's (conf_credential.c).
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_HEADER_NAME_MAX	128
#define CONF_HEADERS_MAX	64
#define CONF_PATTERNS_MAX	1024

static conf_check_cb	conf_openapi_spec;
static conf_check_cb	conf_openapi_base_url;
static conf_line_cb	conf_openapi_operations;
static conf_line_cb	conf_openapi_header;

/* The directives inside "openapi NAME { }"; into struct conf_openapi. */
#define CONF_OPENAPI_OFF(f)	offsetof(struct conf_openapi, f)
static const struct conf_entry conf_openapi_entries[] = {
	{ .name = "spec", .type = CONF_STRING,
	  .offset = CONF_OPENAPI_OFF(spec), .check = conf_openapi_spec,
	  .args = "FILE|URL",
	  .help = "The OpenAPI 3.0 or 3.1 document, JSON or YAML: an "
	  "absolute path, read at start and on every reload, or an http:// "
	  "or https:// URL, fetched at start and on every reload (with the "
	  "block's header lines, credentials and timeout). A document that "
	  "cannot be read at start stops mcpd when it is a file; one that "
	  "cannot be read on a reload, or a URL that cannot be fetched, "
	  "leaves the tools it made before as they were, with an error "
	  "line (a URL never fetched yet is fetched again every 30 s). mcpd "
	  "-t reads it and lists the tools it makes. Required." },
	{ .name = "base_url", .type = CONF_STRING,
	  .offset = CONF_OPENAPI_OFF(base_url), .check = conf_openapi_base_url,
	  .args = "URL",
	  .def_text = "the document's first server (servers[0].url, its "
	  "variables at their defaults; a relative one taken against the "
	  "spec's URL)",
	  .help = "Where the API is: http://HOST[:PORT][/PATH] or https://... "
	  "(verified against the system's trust store); an operation's path "
	  "is put after it." },
	{ .name = "prefix", .type = CONF_STRING,
	  .offset = CONF_OPENAPI_OFF(prefix), .check = conf_check_prefix,
	  .args = "STRING", .def = "",
	  .help = "Put before every tool name made from the document, as "
	  "an upstream's prefix. Letters, digits, \"_\", \"-\" and \".\"; "
	  "\"\" for none." },
	{ .name = "operations", .type = CONF_LINE,
	  .line = conf_openapi_operations, .flags = CONF_REPEAT,
	  .args = "allow|deny PATTERN...",
	  .help = "Which operations become tools: shell patterns (fnmatch) "
	  "matched against the tool's name before the prefix, the "
	  "operationId, and METHOD:PATH as the document writes it "
	  "(GET:/pets/{petId}, GET:/admin/*). With allow lines only the "
	  "operations one of them matches are served; an operation a deny "
	  "line matches never is." },
	{ .name = "header", .type = CONF_LINE, .line = conf_openapi_header,
	  .flags = CONF_REPEAT, .args = "NAME VALUE|file:PATH",
	  .help = "A header sent with every request of the block (each "
	  "call's, and the document's fetch): an API key, a static token. "
	  "file:PATH reads the value from the first line of that file when "
	  "the configuration is read (so on every reload too); keep "
	  "secrets there. Values are never logged nor shown by mcpd -t. "
	  "NAME is an HTTP header name, not one mcpd sets itself (Host, "
	  "Content-Length, Content-Type, Connection, Transfer-Encoding)." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_OPENAPI_OFF(timeout), .min = 1, .max = 86400,
	  .def = "30",
	  .help = "How long one request may take, the whole response "
	  "included. A call past it ends with an isError result saying so; "
	  "a document's fetch past it is a failed fetch." },
	{ .name = "max_response", .type = CONF_SIZE,
	  .offset = CONF_OPENAPI_OFF(max_response), .min = CONF_KIB,
	  .max = 64 * CONF_MIB, .def = "4m",
	  .help = "Largest response body a call takes. A larger one is "
	  "refused, not cut: the call ends with an isError result saying "
	  "so (a Content-Length past it is refused before the body is "
	  "read)." },
	{ .name = "max_concurrency", .type = CONF_INTEGER,
	  .offset = CONF_OPENAPI_OFF(max_concurrency), .min = 1,
	  .max = 65536, .def = "64",
	  .help = "Calls of the block's tools in flight at once; a call "
	  "beyond this ends at once with the isError result \"busy\"." },
	{ .name = "scope", .type = CONF_STRING,
	  .offset = CONF_OPENAPI_OFF(scope), .check = conf_check_scope,
	  .args = "SCOPE",
	  .def_text = "none: every token that passes auth may call them",
	  .help = "With an auth block, the OAuth scope a token needs to "
	  "call any tool of this block, as scope in a tool block. Without "
	  "an auth block it has no effect." },
	{ .name = "max_spec", .type = CONF_SIZE,
	  .offset = CONF_OPENAPI_OFF(max_spec), .min = CONF_KIB,
	  .max = 64 * CONF_MIB, .def = "8m",
	  .help = "Largest document taken (a file, or a URL's response). "
	  "Whatever its size, a document is refused when its YAML aliases "
	  "expand past a million values, a $ref chain is longer than 64 or "
	  "loops, or an enum has more than 1,000 values "
	  "(docs/openapi.md)." },
	{ .name = "max_operations", .type = CONF_INTEGER,
	  .offset = CONF_OPENAPI_OFF(max_operations), .min = 1,
	  .max = 10000, .def = "1000",
	  .help = "Most operations a document may have (all of them, "
	  "before operations lines choose); one with more is refused." },
	{ .name = "max_schema_depth", .type = CONF_INTEGER,
	  .offset = CONF_OPENAPI_OFF(max_schema_depth), .min = 4, .max = 128,
	  .def = "32",
	  .help = "How deep a tool's schema may nest once its $refs are "
	  "expanded (a recursive schema refers to itself through $defs, "
	  "and counts once); an operation whose schema goes deeper is not "
	  "served, with one log line naming it." },
	{ .name = "credentials", .type = CONF_BLOCK,
	  .block = conf_credentials_block, .sub = &conf_credentials_table,
	  .offset = CONF_OPENAPI_OFF(credentials), .args = "{ ... }",
	  .help = "What mcpd sends with the block's requests (each call's "
	  "and the document's fetch) besides its header lines, as an HTTP "
	  "upstream's credentials block: headers from files, and a bearer "
	  "token of mcpd's own (grant client_credentials) or one exchanged "
	  "for the caller (grant token_exchange; the document's fetch "
	  "carries mcpd's own). Never the caller's token. A call whose "
	  "credentials cannot be had ends with error -32024 naming the "
	  "OAuth error, the API not called; a 401 from the API makes mcpd "
	  "fetch a new token and send the call once more "
	  "(docs/openapi.md, Credentials). A header named here and in a "
	  "header line, or a header Authorization line with a grant, is an "
	  "error. Inside the block, one directive per line; header may "
	  "repeat:" },
};

const struct conf_table conf_openapi_table = {
	conf_openapi_entries, CONF_NITEMS(conf_openapi_entries)
};

const char conf_openapi_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"openapi petstore {\n"
"    spec /etc/mcpd/petstore.yaml\n"
"    base_url https://petstore.example.com/v2\n"
"    prefix pets_\n"
"    header X-Api-Key file:/etc/mcpd/petstore.key\n"
"    operations deny deletePet \"DELETE:/store/*\"\n"
"    timeout 10\n"
"}\n"
"\n"
"openapi github {\n"
"    spec https://raw.githubusercontent.com/github/rest-api-description"
    "/main/descriptions/api.github.com/api.github.com.json\n"
"    prefix gh_\n"
"    operations allow repos/get issues/list-for-repo issues/create\n"
"    header Authorization file:/etc/mcpd/github.token\n"
"    max_spec 16m\n"
"}\n"
"\n"
"openapi billing {\n"
"    spec /etc/mcpd/billing.json\n"
"    credentials {\n"
"        grant client_credentials\n"
"        token_endpoint https://auth.example.com/oauth2/token\n"
"        client_id mcpd\n"
"        client_secret_file /etc/mcpd/client.secret\n"
"        resource https://billing.example.com\n"
"    }\n"
"}\n";

static void
conf_openapi_clear(struct conf_openapi *oa)
{
	size_t	i;

	free(oa->name);
	free(oa->spec);
	free(oa->base_url);
	free(oa->prefix);
	xfree_words(oa->allow);
	xfree_words(oa->deny);
	for (i = 0; i < oa->nheaders; i++) {
		free(oa->headers[i].name);
		if (oa->headers[i].value != NULL) {
			explicit_bzero(oa->headers[i].value,
			    strlen(oa->headers[i].value));
			free(oa->headers[i].value);
		}
		free(oa->headers[i].file);
	}
	free(oa->headers);
	free(oa->scope);
	conf_credentials_delete(oa->credentials);
	memset(oa, 0, sizeof *oa);
}

/* An absolute path, or an http(s) URL. */
static int
conf_openapi_spec(const char *s, char **value, char **why)
{
	if (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0)
		return (conf_check_url(s, value, why));
	if (*s != '/') {
		xasprintf(why, "\"%s\" is neither an absolute path nor an "
		    "http:// or https:// URL", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* A URL operations' paths go after: no query, no fragment. */
static int
conf_openapi_base_url(const char *s, char **value, char **why)
{
	if (conf_check_url(s, value, why) != 0)
		return (-1);
	if (strpbrk(s, "?#") != NULL) {
		free(*value);
		*value = NULL;
		xasprintf(why, "\"%s\" has a query or a fragment", s);
		return (-1);
	}
	return (0);
}

/* operations allow|deny PATTERN... */
static int
conf_openapi_operations(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_openapi	*oa = base;
	char			***list;
	size_t			*n;
	int			 i;

	if (argc < 2 || (strcmp(argv[0], "allow") != 0 &&
	    strcmp(argv[0], "deny") != 0)) {
		xasprintf(why, "expected \"operations %s\"", ce->args);
		return (-1);
	}
	list = strcmp(argv[0], "allow") == 0 ? &oa->allow : &oa->deny;
	n = strcmp(argv[0], "allow") == 0 ? &oa->nallow : &oa->ndeny;
	if (*n + (size_t)argc > CONF_PATTERNS_MAX) {
		xasprintf(why, "more than %d patterns", CONF_PATTERNS_MAX);
		return (-1);
	}
	*list = xreallocarray(*list, *n + (size_t)argc, sizeof **list);
	for (i = 1; i < argc; i++)
		(*list)[(*n)++] = xstrdup(argv[i]);
	(*list)[*n] = NULL;
	return (0);
}

/* An HTTP field name (RFC 9110's token). */
static int
conf_openapi_header_name(const char *s)
{
	size_t	len = strlen(s);

	return (len > 0 && len <= CONF_HEADER_NAME_MAX &&
	    strspn(s, "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == len);
}

/* header NAME VALUE|file:PATH */
static int
conf_openapi_header(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	static const char *const reserved[] = {
		"Host", "Content-Length", "Content-Type", "Connection",
		"Transfer-Encoding"
	};
	struct conf_openapi	*oa = base;
	struct conf_header	 h;
	const char		*p;
	size_t			 i;

	if (argc != 2) {
		xasprintf(why, "expected \"header %s\"", ce->args);
		return (-1);
	}
	if (!conf_openapi_header_name(argv[0])) {
		xasprintf(why, "invalid header name \"%s\"", argv[0]);
		return (-1);
	}
	for (i = 0; i < CONF_NITEMS(reserved); i++) {
		if (strcasecmp(argv[0], reserved[i]) == 0) {
			xasprintf(why, "%s is set by mcpd", reserved[i]);
			return (-1);
		}
	}
	for (i = 0; i < oa->nheaders; i++) {
		if (strcasecmp(oa->headers[i].name, argv[0]) == 0) {
			xasprintf(why, "header %s is given twice", argv[0]);
			return (-1);
		}
	}
	if (oa->nheaders == CONF_HEADERS_MAX) {
		xasprintf(why, "more than %d headers", CONF_HEADERS_MAX);
		return (-1);
	}
	memset(&h, 0, sizeof h);
	if (strncmp(argv[1], "file:", 5) == 0) {
		if (argv[1][5] != '/') {
			xasprintf(why, "file:%s is not an absolute path",
			    argv[1] + 5);
			return (-1);
		}
		if (conf_read_secret(argv[1] + 5, &h.value, why) != 0)
			return (-1);
		h.file = xstrdup(argv[1] + 5);
	} else
		h.value = xstrdup(argv[1]);
	for (p = h.value; *p != '\0'; p++) {
		if (((u_char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
			xasprintf(why, "the value of %s has a control "
			    "character", argv[0]);
			explicit_bzero(h.value, strlen(h.value));
			free(h.value);
			free(h.file);
			return (-1);
		}
	}
	h.name = xstrdup(argv[0]);
	oa->headers = xreallocarray(oa->headers, oa->nheaders + 1,
	    sizeof *oa->headers);
	oa->headers[oa->nheaders++] = h;
	return (0);
}

/*
 * The header lines and the credentials block both add headers to every
 * request: one name from both would be sent twice, and a static
 * Authorization beside a grant would hide which token the API saw.
 */
static int
conf_openapi_credentials(const struct conf_openapi *oa, char **why)
{
	const struct conf_credentials	*cc = oa->credentials;
	size_t				 i, j;

	if (cc == NULL)
		return (0);
	for (i = 0; i < oa->nheaders; i++) {
		if (cc->grant != CONF_GRANT_NONE &&
		    strcasecmp(oa->headers[i].name, "Authorization") == 0) {
			*why = xstrdup("a header Authorization line and a "
			    "credentials grant exclude each other");
			return (-1);
		}
		for (j = 0; j < cc->nheaders; j++) {
			if (strcasecmp(oa->headers[i].name,
			    cc->headers[j].name) != 0)
				continue;
			xasprintf(why, "header %s is in a header line and in "
			    "credentials", cc->headers[j].name);
			return (-1);
		}
	}
	return (0);
}

int
conf_openapi_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_openapi	 oa;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_openapi_entries)];
	char			*why;
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: openapi: expected \"openapi %s\"",
		    file, cd->line, ce->args);
		return (-1);
	}
	if (!conf_name_ok(cd->argv[1], "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(cause, "%s:%d: openapi: invalid name \"%s\" (1 to %d "
		    "letters, digits, \"_\", \"-\" or \".\")", file, cd->line,
		    cd->argv[1], CONF_TOOL_NAME_MAX);
		return (-1);
	}
	for (i = 0; i < conf->nopenapis; i++) {
		if (strcmp(conf->openapis[i].name, cd->argv[1]) != 0)
			continue;
		xasprintf(cause, "%s:%d: duplicate openapi %s (first declared "
		    "on line %d)", file, cd->line, cd->argv[1],
		    conf->openapis[i].line);
		return (-1);
	}

	memset(&oa, 0, sizeof oa);
	oa.name = xstrdup(cd->argv[1]);
	oa.line = cd->line;
	conf_set_defaults(&oa, conf_openapi_entries,
	    CONF_NITEMS(conf_openapi_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_openapi_entries;
	cs.nentries = CONF_NITEMS(conf_openapi_entries);
	cs.base = &oa;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}
	if (conf_scope_line(&cs, "spec") == 0) {
		xasprintf(cause, "%s:%d: openapi %s: missing \"spec FILE|URL\"",
		    file, cd->line, oa.name);
		goto fail;
	}
	oa.spec_url = strncmp(oa.spec, "http://", 7) == 0 ||
	    strncmp(oa.spec, "https://", 8) == 0;
	if (conf_openapi_credentials(&oa, &why) != 0) {
		xasprintf(cause, "%s:%d: openapi %s: %s", file,
		    oa.credentials->line, oa.name, why);
		free(why);
		goto fail;
	}

	conf->openapis = xreallocarray(conf->openapis, conf->nopenapis + 1,
	    sizeof *conf->openapis);
	conf->openapis[conf->nopenapis++] = oa;
	return (0);

fail:
	conf_openapi_clear(&oa);
	return (-1);
}

/* Once the whole file is read: a token exchange needs a caller's token. */
int
conf_openapi_done(void *base, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_openapi	*oa;
	size_t			 i;

	for (i = 0; i < conf->nopenapis; i++) {
		oa = &conf->openapis[i];
		if (oa->credentials == NULL || conf->auth != NULL ||
		    oa->credentials->grant != CONF_GRANT_TOKEN_EXCHANGE)
			continue;
		xasprintf(cause, "%s:%d: openapi %s: grant token_exchange "
		    "needs an auth block (the caller's token is what is "
		    "exchanged)", file, oa->credentials->line, oa->name);
		return (-1);
	}
	return (0);
}

/* What the openapi blocks put into base: conf_free's. */
void
conf_openapi_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->nopenapis; i++)
		conf_openapi_clear(&conf->openapis[i]);
	free(conf->openapis);
}

const struct conf_openapi *
conf_openapi_find(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->nopenapis; i++) {
		if (strcmp(conf->openapis[i].name, name) == 0)
			return (&conf->openapis[i]);
	}
	return (NULL);
}
