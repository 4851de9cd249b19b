/*
 * credentials { ... }: what mcpd sends with its own requests to an HTTP
 * peer (an upstream with a url, an openapi block's API; credential.c does
 * it), never the caller's token: headers whose values come from files,
 * and an OAuth grant for a token of mcpd's own (client credentials) or
 * one on the caller's behalf (RFC 8693 token exchange). The files are
 * read when the configuration is (start, reload), so a reload takes up a
 * rotated secret. A block handler for any block whose row's offset is a
 * struct conf_credentials *.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_HEADER_NAME_MAX	64

/* Headers mcpd writes itself to an MCP server (upstream_http.c). */
static const char *const conf_header_taken[] = {
	"Host", "Content-Type", "Content-Length", "Accept", "Connection",
	"Transfer-Encoding", "Mcp-Session-Id", "MCP-Protocol-Version",
	"Last-Event-ID"
};

static conf_line_cb	conf_credentials_header;

static const struct conf_enum conf_grants[] = {
	{ "none", CONF_GRANT_NONE },
	{ "client_credentials", CONF_GRANT_CLIENT_CREDENTIALS },
	{ "token_exchange", CONF_GRANT_TOKEN_EXCHANGE },
	{ NULL, 0 }
};

static const struct conf_enum conf_client_auths[] = {
	{ "basic", CONF_CLIENT_AUTH_BASIC },
	{ "post", CONF_CLIENT_AUTH_POST },
	{ NULL, 0 }
};

static const struct conf_enum conf_subject_types[] = {
	{ "access_token", CONF_SUBJECT_ACCESS_TOKEN },
	{ "jwt", CONF_SUBJECT_JWT },
	{ NULL, 0 }
};

#define CONF_CRED_OFF(f)	offsetof(struct conf_credentials, f)
static const struct conf_entry conf_credentials_entries[] = {
	{ .name = "header", .type = CONF_LINE, .line = conf_credentials_header,
	  .flags = CONF_REPEAT, .args = "NAME FILE",
	  .help = "A header sent with every request to the server, its "
	  "value the first line of FILE (an absolute path; printable "
	  "ASCII, at most 4096 bytes), read when the configuration is, so "
	  "a reload (SIGHUP) takes up a new value without restarting the "
	  "upstream. Not a header mcpd sets itself (Content-Type, Accept, "
	  "Mcp-Session-Id, ...), and not Authorization with a grant." },
	{ .name = "grant", .type = CONF_ENUM, .offset = CONF_CRED_OFF(grant),
	  .values = conf_grants, .def = "none",
	  .help = "How mcpd gets the bearer token it sends as Authorization. "
	  "client_credentials: a token of mcpd's own from token_endpoint "
	  "(RFC 6749 4.4), kept until it expires and fetched again before "
	  "(at 80% of its life, at most 60 seconds early). token_exchange: "
	  "for a call, a token on the calling principal's behalf (RFC "
	  "8693: the caller's token is the subject_token, exchanged at "
	  "token_endpoint for one meant for this server), kept per "
	  "principal until it expires and never longer than the caller's "
	  "own token; what mcpd sends on nobody's behalf (the handshake, "
	  "listings, the GET stream) carries its own client_credentials "
	  "token. The caller's token itself is never sent to the server. A "
	  "call whose exchange is refused ends with error -32024 naming the "
	  "OAuth error. token_exchange needs an auth block." },
	{ .name = "token_endpoint", .type = CONF_STRING,
	  .offset = CONF_CRED_OFF(token_endpoint), .check = conf_check_url,
	  .args = "URL",
	  .help = "The authorization server's token endpoint. Required with "
	  "a grant." },
	{ .name = "client_id", .type = CONF_STRING,
	  .offset = CONF_CRED_OFF(client_id), .args = "ID",
	  .help = "mcpd's client id at the authorization server. Required "
	  "with a grant." },
	{ .name = "client_secret_file", .type = CONF_STRING,
	  .offset = CONF_CRED_OFF(client_secret_file), .check = conf_check_file,
	  .args = "PATH",
	  .help = "The file whose first line is mcpd's client secret, read "
	  "when the configuration is. Required with a grant." },
	{ .name = "client_auth", .type = CONF_ENUM,
	  .offset = CONF_CRED_OFF(client_auth), .values = conf_client_auths,
	  .def = "basic",
	  .help = "How mcpd authenticates at the token endpoint: basic is "
	  "HTTP Basic with the id and secret form-encoded "
	  "(client_secret_basic), post puts them in the request body "
	  "(client_secret_post)." },
	{ .name = "resource", .type = CONF_STRING,
	  .offset = CONF_CRED_OFF(resource), .check = conf_check_url,
	  .args = "URI", .def_text = "none",
	  .help = "The resource parameter of token requests (RFC 8707): "
	  "the server's canonical URI, which its tokens' aud names." },
	{ .name = "audience", .type = CONF_STRING,
	  .offset = CONF_CRED_OFF(audience), .args = "AUDIENCE",
	  .def_text = "none",
	  .help = "The audience parameter of token requests, for "
	  "authorization servers that name the target that way (RFC 8693, "
	  "Keycloak, Auth0)." },
	{ .name = "scope", .type = CONF_WORDS, .offset = CONF_CRED_OFF(scopes),
	  .offset2 = CONF_CRED_OFF(nscopes), .check = conf_check_scope,
	  .args = "SCOPE...", .def_text = "none",
	  .help = "The scope parameter of token requests." },
	{ .name = "subject_token_type", .type = CONF_ENUM,
	  .offset = CONF_CRED_OFF(subject_token_type),
	  .values = conf_subject_types, .def = "access_token",
	  .help = "With token_exchange, what the caller's token is said to "
	  "be: urn:ietf:params:oauth:token-type:access_token or ...:jwt." },
	{ .name = "expires_in", .type = CONF_SECONDS,
	  .offset = CONF_CRED_OFF(expires_in), .min = 10, .max = 86400,
	  .def = "300",
	  .help = "How long a token lives when the token endpoint does not "
	  "say (expires_in is only recommended)." },
	{ .name = "max_tokens", .type = CONF_INTEGER,
	  .offset = CONF_CRED_OFF(max_tokens), .min = 1, .max = 1000000,
	  .def = "10000",
	  .help = "With token_exchange, exchanged tokens kept at once (one "
	  "per principal); past it the least recently used is forgotten." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_CRED_OFF(timeout), .min = 1, .max = 120, .def = "10",
	  .help = "How long one request to the token endpoint may take." },
};

const struct conf_table conf_credentials_table = {
	conf_credentials_entries, CONF_NITEMS(conf_credentials_entries)
};

/* header NAME FILE: a token of RFC 9110, not one mcpd writes itself. */
static int
conf_credentials_header(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_credentials	*cc = base;
	struct conf_header	 h;
	size_t			 i, len;

	if (argc != 2) {
		xasprintf(why, "expected \"header %s\"", ce->args);
		return (-1);
	}
	len = strlen(argv[0]);
	if (len == 0 || len > CONF_HEADER_NAME_MAX || strspn(argv[0],
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	    "!#$%&'*+-.^_`|~") != len) {
		xasprintf(why, "invalid header name \"%s\"", argv[0]);
		return (-1);
	}
	for (i = 0; i < CONF_NITEMS(conf_header_taken); i++) {
		if (strcasecmp(argv[0], conf_header_taken[i]) == 0) {
			xasprintf(why, "%s is a header mcpd sets itself",
			    argv[0]);
			return (-1);
		}
	}
	for (i = 0; i < cc->nheaders; i++) {
		if (strcasecmp(cc->headers[i].name, argv[0]) == 0) {
			xasprintf(why, "header %s is set twice", argv[0]);
			return (-1);
		}
	}
	memset(&h, 0, sizeof h);
	if (conf_check_file(argv[1], &h.file, why) != 0)
		return (-1);
	if (conf_read_secret(h.file, &h.value, why) != 0) {
		free(h.file);
		return (-1);
	}
	h.name = xstrdup(argv[0]);
	cc->headers = xreallocarray(cc->headers, cc->nheaders + 1,
	    sizeof *cc->headers);
	cc->headers[cc->nheaders++] = h;
	return (0);
}

void
conf_credentials_delete(struct conf_credentials *cc)
{
	size_t	i;

	if (cc == NULL)
		return;
	for (i = 0; i < cc->nheaders; i++) {
		free(cc->headers[i].name);
		free(cc->headers[i].file);
		explicit_bzero(cc->headers[i].value,
		    strlen(cc->headers[i].value));
		free(cc->headers[i].value);
	}
	free(cc->headers);
	free(cc->token_endpoint);
	free(cc->client_id);
	free(cc->client_secret_file);
	if (cc->client_secret != NULL) {
		explicit_bzero(cc->client_secret, strlen(cc->client_secret));
		free(cc->client_secret);
	}
	free(cc->resource);
	free(cc->audience);
	xfree_words(cc->scopes);
	free(cc);
}

int
conf_credentials_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf_credentials	**slot, *cc;
	struct conf_scope	  cs;
	int			  seen[CONF_NITEMS(conf_credentials_entries)];
	char			 *why;
	size_t			  i;

	slot = (struct conf_credentials **)((char *)base + ce->offset);
	if (cd->argc != 1) {
		xasprintf(cause, "%s:%d: credentials: expected \"credentials "
		    "{\"", file, cd->line);
		return (-1);
	}
	if (*slot != NULL) {
		xasprintf(cause, "%s:%d: duplicate credentials (first set on "
		    "line %d)", file, cd->line, (*slot)->line);
		return (-1);
	}
	cc = xcalloc(1, sizeof *cc);
	cc->line = cd->line;
	conf_set_defaults(cc, conf_credentials_entries,
	    CONF_NITEMS(conf_credentials_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_credentials_entries;
	cs.nentries = CONF_NITEMS(conf_credentials_entries);
	cs.base = cc;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}
	if (cc->grant != CONF_GRANT_NONE && (cc->token_endpoint == NULL ||
	    cc->client_id == NULL || cc->client_secret_file == NULL)) {
		xasprintf(cause, "%s:%d: credentials: grant %s needs "
		    "token_endpoint, client_id and client_secret_file", file,
		    cd->line, conf_grants[cc->grant].name);
		goto fail;
	}
	if (cc->grant == CONF_GRANT_NONE && cc->nheaders == 0) {
		xasprintf(cause, "%s:%d: credentials: neither a header nor a "
		    "grant", file, cd->line);
		goto fail;
	}
	for (i = 0; cc->grant != CONF_GRANT_NONE && i < cc->nheaders; i++) {
		if (strcasecmp(cc->headers[i].name, "Authorization") == 0) {
			xasprintf(cause, "%s:%d: credentials: header "
			    "Authorization and a grant exclude each other",
			    file, conf_scope_line(&cs, "header"));
			goto fail;
		}
	}
	if (cc->client_id != NULL && (*cc->client_id == '\0' ||
	    strlen(cc->client_id) > CONF_HEADER_NAME_MAX * 4)) {
		xasprintf(cause, "%s:%d: credentials: invalid client_id", file,
		    conf_scope_line(&cs, "client_id"));
		goto fail;
	}
	if (cc->client_secret_file != NULL && conf_read_secret(
	    cc->client_secret_file, &cc->client_secret, &why) != 0) {
		xasprintf(cause, "%s:%d: credentials: client_secret_file %s",
		    file, conf_scope_line(&cs, "client_secret_file"), why);
		free(why);
		goto fail;
	}
	*slot = cc;
	return (0);

fail:
	conf_credentials_delete(cc);
	return (-1);
}

static int
conf_headers_differ(const struct conf_credentials *a,
    const struct conf_credentials *b)
{
	size_t	i;

	if (a->nheaders != b->nheaders)
		return (1);
	for (i = 0; i < a->nheaders; i++) {
		if (strcmp(a->headers[i].name, b->headers[i].name) != 0 ||
		    strcmp(a->headers[i].value, b->headers[i].value) != 0)
			return (1);
	}
	return (0);
}

/* Whether two blocks say something different, the files' values too. */
int
conf_credentials_differ(const struct conf_credentials *a,
    const struct conf_credentials *b)
{
	if (a == NULL || b == NULL)
		return (a != b);
	return (conf_headers_differ(a, b) || a->grant != b->grant ||
	    conf_str_differ(a->token_endpoint, b->token_endpoint) ||
	    conf_str_differ(a->client_id, b->client_id) ||
	    conf_str_differ(a->client_secret, b->client_secret) ||
	    a->client_auth != b->client_auth ||
	    conf_str_differ(a->resource, b->resource) ||
	    conf_str_differ(a->audience, b->audience) ||
	    conf_words_differ(a->scopes, a->nscopes, b->scopes, b->nscopes) ||
	    a->subject_token_type != b->subject_token_type ||
	    a->expires_in != b->expires_in ||
	    a->max_tokens != b->max_tokens || a->timeout != b->timeout);
}
