/*
 * The configuration: tables of directives (src/conf/: conf_table.c, and a
 * table per block) filling struct conf; conf.c parses by them.
 * A configuration is immutable once loaded; a reload builds a new one.
 */
#ifndef MCPD_CONF_H
#define MCPD_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum conf_backpressure {
	CONF_BACKPRESSURE_BLOCK,
	CONF_BACKPRESSURE_CLOSE
};

enum conf_eventlog {
	CONF_EVENTLOG_MEMORY,
	CONF_EVENTLOG_REDIS
};

/* How the redis event log reaches Redis: the eventlog URL's scheme. */
enum conf_redis_kind {
	CONF_REDIS_TCP,		/* redis:// */
	CONF_REDIS_TLS,		/* rediss:// */
	CONF_REDIS_UNIX,	/* unix:// */
	CONF_REDIS_SENTINEL,	/* redis-sentinel:// */
	CONF_REDIS_CLUSTER	/* redis-cluster:// */
};

/*
 * One sentinel of a redis-sentinel:// URL, or one seed node of a
 * redis-cluster:// URL (both in redis_sentinels).
 */
struct conf_redis_node {
	char			*host;
	int			 port;
};

/* The JSON type of one argument of an exec tool. */
enum conf_param_type {
	CONF_PARAM_STRING,
	CONF_PARAM_INTEGER,
	CONF_PARAM_NUMBER,
	CONF_PARAM_BOOLEAN
};

/* param NAME TYPE [required] [STRING] */
struct conf_param {
	char			*name;
	enum conf_param_type	 type;
	int			 required;
	char			*description;	/* NULL if none */
};

/*
 * tool NAME { ... }: a program run for each call. argv is the exec line as
 * written (argv[0] is PROGRAM); a word that is exactly "{NAME}" is replaced
 * by the value of param argv_param[i] (-1 for a literal word).
 */
/* A tool's execution.taskSupport. */
enum conf_task_support {
	CONF_TASK_FORBIDDEN,
	CONF_TASK_OPTIONAL,
	CONF_TASK_REQUIRED
};

struct conf_tool {
	char			*name;
	int			 line;		/* of "tool NAME {" */
	char			*description;	/* NULL if none */
	struct conf_param	*params;
	size_t			 nparams;
	char			*program;	/* resolved path of PROGRAM */
	char			**argv;		/* NULL-terminated */
	int			*argv_param;
	size_t			 argc;
	char			**env;		/* NAME=VALUE, NULL at the end */
	size_t			 nenv;
	char			*cwd;		/* NULL: mcpd's own */
	long long		 timeout;	/* seconds */
	long long		 max_output;	/* bytes of stdout kept */
	long long		 max_concurrency; /* 0: only max_children */
	char			*scope;		/* NULL: no scope of its own */
	int			 task_support;	/* enum conf_task_support */
};

/*
 * auth { ... }: mcpd as an OAuth 2.1 resource server (docs/authorization.md).
 * NULL in struct conf when the block is absent: no authorization.
 */
/* auth { token_type ... }: what a JWT's typ header must say. */
enum conf_token_type {
	CONF_TOKEN_ANY,		/* not looked at */
	CONF_TOKEN_AT_JWT	/* at+jwt (RFC 9068) */
};

struct conf_auth {
	int			 line;		/* of "auth {" */
	char			*resource;	/* canonical URI, RFC 8707 */
	char			**authorization_servers; /* NULL-terminated */
	size_t			 nauthorization_servers;
	char			*issuer;	/* JWT iss */
	int			 token_type;	/* enum conf_token_type */
	char			*jwks_file;
	char			*jwks_uri;
	char			*introspection;	/* RFC 7662 endpoint URL */
	char			*client_id;	/* for introspection, or NULL */
	char			*client_secret;	/* read from its file */
	long long		 introspection_rate; /* new tokens a second */
	char			**scopes;	/* required on every request */
	size_t			 nscopes;
	char			*token_file;
	long long		 leeway;	/* seconds, exp and nbf */
	long long		 max_token;	/* bytes of one token */
	long long		 jwks_cache;	/* seconds jwks_uri is kept */
	long long		 jwks_refresh_min; /* seconds between fetches */
	long long		 cache_max;	/* introspection results kept */
	long long		 max_pending;	/* requests waiting for a check */
	long long		 timeout;	/* seconds, outbound requests */
};

/*
 * A catalog (conf_catalog.c): which items of a source are served, under
 * which names and with which descriptions. In an upstream block the names
 * are the upstream's own (before its prefix); in an endpoint block, the
 * names clients see. Patterns are shell patterns (fnmatch).
 */
enum conf_catalog_list {
	CONF_CATALOG_TOOLS,
	CONF_CATALOG_PROMPTS,
	CONF_CATALOG_RESOURCES,		/* URIs, and templates' uriTemplate */
	CONF_CATALOG_MAX
};

/* rename OLD NEW; description NAME TEXT (tools) */
struct conf_rename {
	char			*from;
	char			*to;
};

struct conf_catalog {
	char			**allow[CONF_CATALOG_MAX];	/* NULL: all */
	size_t			 nallow[CONF_CATALOG_MAX];
	char			**deny[CONF_CATALOG_MAX];
	size_t			 ndeny[CONF_CATALOG_MAX];
	struct conf_rename	*renames;
	size_t			 nrenames;
	struct conf_rename	*descriptions;	/* from: name, to: text */
	size_t			 ndescriptions;
};

/*
 * credentials { ... } of an upstream with a url or of an openapi block
 * (conf_credential.c): what mcpd sends with its requests to it, never the
 * caller's token.
 */
enum conf_grant {
	CONF_GRANT_NONE,		/* static headers only */
	CONF_GRANT_CLIENT_CREDENTIALS,	/* mcpd's own token */
	CONF_GRANT_TOKEN_EXCHANGE	/* RFC 8693, on the caller's behalf */
};

enum conf_client_auth {
	CONF_CLIENT_AUTH_BASIC,		/* client_secret_basic */
	CONF_CLIENT_AUTH_POST		/* client_secret_post */
};

enum conf_subject_type {
	CONF_SUBJECT_ACCESS_TOKEN,
	CONF_SUBJECT_JWT
};

/* header NAME FILE: the value is the file's first line, read at load. */
struct conf_header {
	char			*name;
	char			*file;
	char			*value;
};

struct conf_credentials {
	int			 line;		/* of "credentials {" */
	struct conf_header	*headers;
	size_t			 nheaders;
	int			 grant;		/* enum conf_grant */
	char			*token_endpoint;
	char			*client_id;
	char			*client_secret_file;
	char			*client_secret;	/* read from its file */
	int			 client_auth;	/* enum conf_client_auth */
	char			*resource;	/* RFC 8707, or NULL */
	char			*audience;	/* or NULL */
	char			**scopes;	/* NULL-terminated */
	size_t			 nscopes;
	int			 subject_token_type; /* enum conf_subject_type */
	long long		 expires_in;	/* seconds, when not said */
	long long		 max_tokens;	/* exchanged tokens kept */
	long long		 timeout;	/* seconds, token requests */
};

/* upstream NAME { sharing shared|session } */
enum conf_sharing {
	CONF_SHARING_SHARED,
	CONF_SHARING_SESSION
};

/*
 * upstream NAME { ... }: an MCP server mcpd is a client of. Either a
 * program speaking MCP on its stdin and stdout (argv[0] is PROGRAM, no
 * shell) or a Streamable HTTP endpoint (url).
 */
struct conf_upstream {
	char			*name;
	int			 line;		/* of "upstream NAME {" */
	char			*program;	/* resolved path, NULL for url */
	char			**argv;		/* NULL-terminated */
	size_t			 argc;
	char			*url;		/* NULL for exec */
	int			 sharing;	/* enum conf_sharing */
	char			*prefix;	/* "" if none */
	char			**env;		/* NAME=VALUE, NULL at the end */
	size_t			 nenv;
	char			*cwd;		/* NULL: mcpd's own */
	long long		 timeout;	/* seconds, per request */
	long long		 max_concurrency; /* requests in flight */
	long long		 restart_delay;	/* seconds, back-off base */
	long long		 max_instances;	/* sharing session: children */
	long long		 max_line;	/* bytes of one message */
	char			*scope;		/* its tools' OAuth scope */
	long long		 idle_timeout;	/* seconds, url: GET stream */
	long long		 max_tools;	/* items of one list served */
	struct conf_catalog	 catalog;	/* tools allow|deny, rename, ... */
	struct conf_credentials	*credentials;	/* NULL: none */
};

/*
 * endpoint PATH { ... } (conf_endpoint.c): one more MCP endpoint on the
 * listener, with a catalog of its own (which upstreams, which tools,
 * prompts and resources) and, with an auth block, its own resource and
 * required scopes. A block whose PATH is the plain endpoint's configures
 * the default endpoint.
 */
struct conf_endpoint {
	char			*path;
	int			 line;		/* of "endpoint PATH {" */
	int			 all_upstreams;	/* no upstreams line */
	char			**upstreams;	/* NULL-terminated */
	size_t			 nupstreams;
	struct conf_catalog	 catalog;	/* by the names clients see */
	char			*resource;	/* NULL: derived from auth's */
	char			**scopes;	/* required here, besides auth's */
	size_t			 nscopes;
};

/* openapi NAME { header NAME VALUE|file:PATH } */
/*
 * openapi NAME { ... }: a REST API described by an OpenAPI 3.0 or 3.1
 * document, each operation an MCP tool (src/providers/provider_openapi.c).
 */
struct conf_openapi {
	char			*name;
	int			 line;		/* of "openapi NAME {" */
	char			*spec;		/* an absolute path, or a URL */
	int			 spec_url;	/* http:// or https:// */
	char			*base_url;	/* NULL: the spec's server */
	char			*prefix;	/* "" if none */
	char			**allow;	/* operations allow: patterns */
	size_t			 nallow;
	char			**deny;		/* operations deny: patterns */
	size_t			 ndeny;
	struct conf_header	*headers;
	size_t			 nheaders;
	long long		 timeout;	/* seconds, one request */
	long long		 max_response;	/* bytes of one response */
	long long		 max_concurrency; /* calls in flight */
	char			*scope;		/* its tools' OAuth scope */
	long long		 max_spec;	/* bytes of the document */
	long long		 max_operations;
	long long		 max_schema_depth;
	struct conf_credentials	*credentials;	/* NULL: none */
};

/*
 * limit NAME { ... }: a token bucket (rate, burst), a daily quota and a
 * bound on calls running at once, each per key (docs/limits.md).
 */
#define CONF_LIMIT_KEY_PRINCIPAL	0x1	/* issuer and subject */
#define CONF_LIMIT_KEY_CLIENT		0x2	/* client id */
#define CONF_LIMIT_KEY_TOOL		0x4
#define CONF_LIMIT_KEY_UPSTREAM		0x8

struct conf_limit {
	char			*name;
	int			 line;		/* of "limit NAME {" */
	int			 keys;		/* CONF_LIMIT_KEY_* */
	long long		 rate;		/* tokens a period; 0: none */
	long long		 period_ms;	/* of rate: 1 s, 1 min, 1 h */
	long long		 burst;		/* the bucket's size */
	long long		 concurrency;	/* calls at once; 0: none */
	long long		 quota;		/* calls a day (UTC); 0: none */
	char			**tools;	/* patterns; none: every tool */
	size_t			 ntools;
	char			**endpoints;	/* paths; none: every one */
	size_t			 nendpoints;
};

/* What a limit check does while the shared store cannot answer. */
enum conf_limit_fallback {
	CONF_LIMIT_LOCAL,	/* this process's own buckets */
	CONF_LIMIT_REFUSE	/* refused */
};

enum conf_log_format {
	CONF_LOG_TEXT,
	CONF_LOG_JSON
};

struct conf {
	char			*path;		/* file it was loaded from */
	unsigned int		 refs;		/* conf_free drops one */

	/* listen HOST:PORT */
	char			*listen_host;
	int			 listen_port;
	char			*endpoint;	/* endpoint PATH, "/mcp" */
	struct conf_endpoint	*endpoints;	/* endpoint PATH { }, in order */
	size_t			 nendpoints;

	/*
	 * eventlog memory | redis://, rediss://, unix://, redis-sentinel://
	 * (conf_redis.c). The URL as written holds the password: it is only
	 * compared (a reload); redis_name masks it, for every log line.
	 */
	enum conf_eventlog	 eventlog;
	enum conf_redis_kind	 redis_kind;
	char			*redis_url;
	char			*redis_name;
	char			*redis_host;	/* tcp, tls */
	int			 redis_port;
	char			*redis_path;	/* unix */
	char			*redis_master;	/* sentinel: the service */
	struct conf_redis_node	*redis_sentinels;
	size_t			 nredis_sentinels;
	int			 redis_db;
	char			*redis_url_user;	/* percent-decoded */
	char			*redis_url_password;
	/* redis_user, redis_password_file (and what it holds), TLS */
	char			*redis_user;
	char			*redis_password_file;
	char			*redis_password;
	char			*redis_sentinel_user;
	char			*redis_sentinel_password_file;
	char			*redis_sentinel_password;
	int			 redis_tls;	/* sentinel URLs: over TLS */
	char			*redis_tls_ca_file;
	char			*redis_tls_cert_file;
	char			*redis_tls_key_file;
	char			*redis_tls_server_name;
	int			 redis_tls_verify;
	int			 commit_replicas; /* commit primary = 0 */
	long long		 eventlog_outage_grace;	/* seconds ops wait */
	long long		 eventlog_wait;	/* seconds start-up waits */

	long long		 stream_maxlen;	/* entries kept per stream */
	long long		 stream_window;	/* undelivered entries before pause */
	int			 stream_window_line; /* 0: unset */
	int			 eventlog_line;	/* 0: unset (memory) */
	long long		 stream_ttl;	/* seconds, after a stream ends */
	long long		 session_ttl;	/* seconds idle */
	long long		 max_sessions;
	long long		 session_max_streams;
	long long		 max_views;	/* open SSE responses, all sessions */

	long long		 sse_high_watermark;	/* bytes */
	long long		 sse_keepalive;		/* seconds */
	long long		 sse_retry_ms;
	long long		 slow_consumer_grace_ms;
	enum conf_backpressure	 backpressure_request;
	enum conf_backpressure	 backpressure_standalone;

	long long		 max_body;		/* bytes */
	long long		 max_header_size;	/* bytes */
	long long		 request_timeout;	/* seconds, client answers */

	int			 builtin_tools;
	int			 fixtures_conformance;
	long long		 max_children;	/* exec tool programs running */
	struct conf_tool	*tools;		/* tool blocks, in file order */
	size_t			 ntools;
	struct conf_upstream	*upstreams;	/* in file order */
	size_t			 nupstreams;
	struct conf_openapi	*openapis;	/* in file order */
	size_t			 nopenapis;
	char			**allowed_origins;	/* NULL-terminated */
	size_t			 nallowed_origins;
	struct conf_auth	*auth;		/* NULL: no authorization */
	struct conf_limit	*limits;	/* limit blocks, in file order */
	size_t			 nlimits;
	int			 limit_fallback; /* enum conf_limit_fallback */

	long long		 drain_delay;	/* seconds not ready, serving */
	long long		 drain_timeout;	/* seconds calls may finish */
	long long		 lease_ttl;	/* seconds, a call's lease */

	long long		 task_ttl;	/* seconds, from creation */
	long long		 max_tasks;	/* running here; memory: kept */
	long long		 max_tasks_per_principal; /* running here */
	long long		 task_poll_ms;

	int			 log_level;	/* enum log_level */
	char			*log_file;	/* "stderr" or a path */
	int			 log_format;	/* enum conf_log_format */
	int			 access_log;
	char			*audit_log;	/* NULL: none; "syslog"; a path */
	int			 audit_arguments;
	long long		 audit_queue;	/* bytes of lines waiting */

	/* Tracing (OpenTelemetry): conf_otel.c, core/telemetry.c. */
	char			*otel_endpoint;	/* NULL: no tracing */
	char			**otel_headers;	/* "Name: value" */
	size_t			 notel_headers;
	double			 otel_sample;	/* roots sampled */
	char			*otel_service_name;
	char			*otel_instance_id; /* NULL: random */
	char			**otel_resource; /* KEY=VALUE, NULL-ended */
	size_t			 notel_resource;
	long long		 otel_queue;	/* spans waiting */
	long long		 otel_batch;	/* spans a request */
	long long		 otel_interval_ms;
	long long		 otel_timeout;	/* seconds, a request */

	char			*state_key_file;	/* NULL: none */
	char			*state_key_previous_file;
	long long		 state_key_rotation;	/* seconds */
};

/*
 * conf_load(path, &cause) and conf_parse_string(text, name, &cause) return a
 * new configuration, or NULL with *cause set ("FILE:LINE: message", allocated,
 * the caller frees it). conf_default() never fails.
 */
struct conf	*conf_default(void);
const struct conf *conf_ref(const struct conf *);
void		 conf_release(const struct conf *);
int		 conf_keep_restart_only(struct conf *, const struct conf *,
		     const char **, size_t, size_t *, char **);
struct conf	*conf_load(const char *, char **);
struct conf	*conf_parse_string(const char *, const char *, char **);
void		 conf_free(struct conf *);
/* The text of mcpd.conf.example, and the directives part of --help. */
void		 conf_print_example(FILE *);
void		 conf_print_help(FILE *);
void		 conf_print_man(FILE *, const char *);
/*
 * Whether an Origin header value is allowed: one of allowed_origins (scheme
 * and host compared without case, default port ignored) or, when none are
 * configured, a loopback origin. NULL (no header) is allowed; "null" never.
 */
int		 conf_origin_allowed(const struct conf *, const char *);
/* log_init and log_open as its log_level, log_file and log_format say. */
int		 conf_log_open(const struct conf *, char **);
/* The tool block named NAME, or NULL. */
const struct conf_tool *conf_tool_find(const struct conf *, const char *);
const char	*conf_param_type_name(enum conf_param_type);
/* The upstream block named NAME, or NULL. */
const struct conf_upstream *conf_upstream_find(const struct conf *,
		     const char *);
/* The openapi block named NAME, or NULL. */
const struct conf_openapi *conf_openapi_find(const struct conf *,
		     const char *);
/*
 * The endpoint block of PATH (the default endpoint's too, if a block
 * configures it), or NULL: then PATH serves everything if it is the
 * default endpoint, and is no endpoint otherwise.
 */
const struct conf_endpoint *conf_endpoint_find(const struct conf *,
		     const char *);
/* Whether PATH is an MCP endpoint of conf (the default, or a block). */
int		 conf_endpoint_exists(const struct conf *, const char *);
/*
 * Whether endpoint ep (NULL: the default with no block, which serves
 * everything) serves item name of list l (enum conf_catalog_list) from
 * source (an upstream's name, NULL for mcpd's own providers).
 */
int		 conf_endpoint_serves(const struct conf_endpoint *, int,
		     const char *, const char *);
/* Whether ep serves anything of source at all (its upstreams line). */
int		 conf_endpoint_serves_source(const struct conf_endpoint *,
		     const char *);
/* Whether a catalog lets item name of list l through (allow, deny). */
int		 conf_catalog_allows(const struct conf_catalog *, int,
		     const char *);
/* The name a catalog serves a tool under (its own if not renamed). */
const char	*conf_catalog_served_name(const struct conf_catalog *,
		     const char *);
/* The tool name NAME was served for (NULL: a renamed one's old name). */
const char	*conf_catalog_own_name(const struct conf_catalog *,
		     const char *);
/* The description a catalog gives tool NAME (its own name), or NULL. */
const char	*conf_catalog_description(const struct conf_catalog *,
		     const char *);
int		 conf_catalog_differ(const struct conf_catalog *,
		     const struct conf_catalog *);
int		 conf_credentials_differ(const struct conf_credentials *,
		     const struct conf_credentials *);

/* The limit block named NAME, or NULL. */
const struct conf_limit *conf_limit_find(const struct conf *, const char *);
/*
 * What `mcpd -t` and start-up warn about (exec tools reachable from the
 * network without authorization), or NULL.
 */
const char	*conf_warning(const struct conf *);
/* Whether a scope is a scope-token of RFC 6749 (3.3). */
int		 conf_scope_ok(const char *);
/*
 * The redis event log's credentials: for the data (URL's, else
 * redis_user and redis_password_file's), and for the sentinels
 * (redis_sentinel_user and redis_sentinel_password_file's, else the
 * data's). A NULL password: no AUTH. Inline: the event log reads them
 * as it reads the fields, and calls nothing of conf/ (callgraph.rules).
 */
static inline const char *
conf_redis_user(const struct conf *c)
{
	return (c->redis_url_user != NULL ? c->redis_url_user :
	    c->redis_user);
}

static inline const char *
conf_redis_password(const struct conf *c)
{
	return (c->redis_url_password != NULL ? c->redis_url_password :
	    c->redis_password);
}

static inline const char *
conf_redis_sentinel_user(const struct conf *c)
{
	if (c->redis_sentinel_password != NULL)
		return (c->redis_sentinel_user);
	return (conf_redis_user(c));
}

static inline const char *
conf_redis_sentinel_password(const struct conf *c)
{
	if (c->redis_sentinel_password != NULL)
		return (c->redis_sentinel_password);
	return (conf_redis_password(c));
}

/* Whether the redis event log speaks TLS (rediss://, or redis_tls on). */
static inline int
conf_redis_tls(const struct conf *c)
{
	return (c->eventlog == CONF_EVENTLOG_REDIS &&
	    (c->redis_kind == CONF_REDIS_TLS ||
	    ((c->redis_kind == CONF_REDIS_SENTINEL ||
	    c->redis_kind == CONF_REDIS_CLUSTER) && c->redis_tls)));
}

#endif
