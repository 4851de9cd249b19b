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
	char			**allowed_origins;	/* NULL-terminated */
	size_t			 nallowed_origins;
	struct conf_auth	*auth;		/* NULL: no authorization */

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
