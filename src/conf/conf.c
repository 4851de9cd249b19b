/*
 * The configuration file. Every directive is one row of conf_entries: its
 * name, type, bounds, default, place in struct conf and help text. Parsing,
 * the defaults, `mcpd --help` and mcpd.conf.example all come from that table,
 * so a new directive is one new row.
 *
 * Reading happens in two layers. The lexer turns lines into words (double
 * quotes, escapes, comments) and gathers "NAME ARG... {" ... "}" into a tree
 * of directives; the dispatcher looks each directive up in a table and hands
 * its words to the row's type, or its whole block to the row's handler. A
 * block handler may run the same dispatcher over the block's lines with a
 * table of its own (the offsets then point into the block's struct). Checks
 * that involve more than one directive run once the file has been read.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf.h"
#include "log.h"
#include "xmalloc.h"

#define CONF_NITEMS(a)		(sizeof (a) / sizeof (a)[0])
#define CONF_MAX_DEPTH		8		/* blocks inside blocks */
#define CONF_MAX_FILE		(1024 * 1024)	/* bytes */
#define CONF_ORIGIN_MAX		320		/* canonical origin, with NUL */
#define CONF_HOST_MAX		253		/* longest DNS name */
#define CONF_REDIS_PORT		6379
#define CONF_REDIS_DB_MAX	15
#define CONF_REPLICAS_MAX	16
#define CONF_TOOL_NAME_MAX	128		/* as MCP allows */
#define CONF_PARAM_NAME_MAX	64
#define CONF_PREFIX_MAX		64
#define CONF_DEFAULT_PATH	"/usr/local/bin:/usr/bin:/bin"

#define CONF_KIB		1024LL
#define CONF_MIB		(1024LL * 1024)
#define CONF_GIB		(1024LL * 1024 * 1024)

/* Enums are written through an int pointer. */
_Static_assert(sizeof (enum conf_backpressure) == sizeof (int),
    "enum conf_backpressure is not int-sized");

/* Tool names the built-in provider serves (docs/protocol.md). */
static const char *const conf_builtin_tools[] = {
	"echo", "stream", "notify"
};

/*
 * One line of the file, split into words, and the lines of its block if it
 * ended with "{". argv[0] is the directive's name.
 */
struct conf_directive {
	int			 line;
	int			 argc;
	char			**argv;
	int			 has_block;
	struct conf_directive	*children;
	size_t			 nchildren;
};

enum conf_type {
	CONF_STRING,		/* one word; char * */
	CONF_HOSTPORT,		/* HOST:PORT; char * at offset, int at offset2 */
	CONF_INTEGER,		/* long long */
	CONF_SIZE,		/* bytes, suffix k, m or g; long long */
	CONF_SECONDS,		/* suffix s, m, h or d; long long */
	CONF_MILLISECONDS,	/* suffix ms or s; long long */
	CONF_BOOL,		/* on or off; int */
	CONF_ENUM,		/* one of values; int */
	CONF_WORDS,		/* one or more words; char ** (NULL-terminated)
				   at offset, size_t count at offset2 */
	CONF_CUSTOM,		/* one word given to the row's parse */
	CONF_LINE,		/* all the words given to the row's line */
	CONF_BLOCK		/* NAME ... { }, given to the row's block */
};

struct conf_enum {
	const char	*name;
	int		 value;
};

struct conf_entry;

/*
 * A word checker validates one word and returns the value to store
 * (allocated) or -1 with the reason in *why.
 */
typedef int	conf_check_cb(const char *, char **, char **);
/* A custom parser sets the fields of base from one word. */
typedef int	conf_parse_cb(void *, const struct conf_entry *, const char *,
		    char **);
/* A line parser sets the fields of base from all the words. */
typedef int	conf_line_cb(void *, const struct conf_entry *, int, char **,
		    char **);
/* A block handler; its errors carry file and line (of the block's lines). */
typedef int	conf_block_cb(void *, const struct conf_entry *,
		    const struct conf_directive *, const char *, char **);

#define CONF_EXAMPLE_ACTIVE	0x1	/* set, not commented, in the example */
#define CONF_REPEAT		0x2	/* may appear more than once */

struct conf_entry {
	const char		*name;
	enum conf_type		 type;
	size_t			 offset;
	size_t			 offset2;
	long long		 min;
	long long		 max;
	const struct conf_enum	*values;	/* CONF_ENUM */
	conf_check_cb		*check;		/* CONF_STRING, CONF_WORDS */
	conf_parse_cb		*parse;		/* CONF_CUSTOM */
	conf_line_cb		*line;		/* CONF_LINE */
	conf_block_cb		*block;		/* CONF_BLOCK */
	const struct conf_entry	*sub;		/* CONF_BLOCK: its directives */
	size_t			 nsub;
	const char		*args;		/* synopsis; NULL: from type */
	const char		*def;		/* one word, as in the file */
	const char		*def_text;	/* documents a NULL def */
	/* The example file's value (NULL: def); a block's commented-out
	   examples, and its active ones. */
	const char		*example;
	const char		*example_active;
	int			 flags;
	const char		*section;	/* heading printed before it */
	const char		*help;
};

/* A table of directives and the struct its offsets point into. */
struct conf_scope {
	const struct conf_entry	*entries;
	size_t			 nentries;
	void			*base;
	int			*seen;		/* line each was set on, or 0 */
};

static conf_check_cb	conf_check_path;
static conf_check_cb	conf_check_log_file;
static conf_check_cb	conf_check_origin;
static conf_check_cb	conf_check_key_file;
static conf_check_cb	conf_check_dir;
static conf_check_cb	conf_check_url;
static conf_check_cb	conf_check_file;
static conf_check_cb	conf_check_scope;
static conf_line_cb	conf_line_introspection;
static conf_block_cb	conf_block_auth;
static conf_parse_cb	conf_parse_eventlog;
static conf_parse_cb	conf_parse_commit;
static conf_parse_cb	conf_parse_log_level;
static conf_parse_cb	conf_parse_env;
static conf_line_cb	conf_line_param;
static conf_line_cb	conf_line_exec;
static conf_block_cb	conf_block_tool;
static conf_check_cb	conf_check_prefix;
static conf_check_cb	conf_check_upstream_url;
static conf_parse_cb	conf_parse_upstream_env;
static conf_line_cb	conf_line_upstream_exec;
static conf_block_cb	conf_block_upstream;
static int		conf_scope_line(struct conf_scope *, const char *);

static const struct conf_enum conf_bool_values[] = {
	{ "on", 1 },
	{ "off", 0 },
	{ NULL, 0 }
};

static const struct conf_enum conf_backpressure_values[] = {
	{ "block", CONF_BACKPRESSURE_BLOCK },
	{ "close", CONF_BACKPRESSURE_CLOSE },
	{ NULL, 0 }
};

static const struct conf_enum conf_log_format_values[] = {
	{ "text", CONF_LOG_TEXT },
	{ "json", CONF_LOG_JSON },
	{ NULL, 0 }
};

static const struct conf_enum conf_fixtures_values[] = {
	{ "conformance", 1 },
	{ "off", 0 },
	{ NULL, 0 }
};

static const struct conf_enum conf_sharing_values[] = {
	{ "shared", CONF_SHARING_SHARED },
	{ "session", CONF_SHARING_SESSION },
	{ NULL, 0 }
};

static const struct conf_enum conf_task_support_values[] = {
	{ "forbidden", CONF_TASK_FORBIDDEN },
	{ "optional", CONF_TASK_OPTIONAL },
	{ "required", CONF_TASK_REQUIRED },
	{ NULL, 0 }
};

static const struct conf_enum conf_token_type_values[] = {
	{ "any", CONF_TOKEN_ANY },
	{ "at+jwt", CONF_TOKEN_AT_JWT },
	{ NULL, 0 }
};

static const struct conf_enum conf_param_types[] = {
	{ "string", CONF_PARAM_STRING },
	{ "integer", CONF_PARAM_INTEGER },
	{ "number", CONF_PARAM_NUMBER },
	{ "boolean", CONF_PARAM_BOOLEAN },
	{ NULL, 0 }
};

/* The directives inside "tool NAME { }"; offsets into struct conf_tool. */
#define CONF_TOOL_OFF(f)	offsetof(struct conf_tool, f)
static const struct conf_entry conf_tool_entries[] = {
	{ .name = "description", .type = CONF_STRING,
	  .offset = CONF_TOOL_OFF(description), .args = "STRING",
	  .help = "What the tool does, in words for the model: the tool's "
	  "description in tools/list." },
	{ .name = "param", .type = CONF_LINE, .line = conf_line_param,
	  .flags = CONF_REPEAT,
	  .args = "NAME string|integer|number|boolean [required] [STRING]",
	  .help = "One argument of the tool: its name (letters, digits, "
	  "\"_\" and \"-\"), its JSON type, whether calls must give it, "
	  "and its description. The params make the tool's inputSchema. A "
	  "call whose arguments have another type, lack a required one or "
	  "name one not declared gets an isError result and runs nothing." },
	{ .name = "exec", .type = CONF_LINE, .line = conf_line_exec,
	  .args = "PROGRAM [ARG...]",
	  .help = "The program and its arguments, run directly: no shell "
	  "is involved unless PROGRAM is one. PROGRAM is an absolute path, "
	  "or a name looked up in mcpd's PATH when the file is read; it "
	  "must exist and be executable. An ARG that is exactly {NAME} is "
	  "replaced by the value of argument NAME as one word, never split "
	  "or expanded: strings as given, integers in digits, numbers in "
	  "JSON notation, booleans as true or false, and an optional "
	  "argument the call leaves out as an empty word. With a shell, "
	  "pass values as its positional parameters (sh -c \"... "
	  "\\\"$1\\\" ...\" sh {NAME}), never inside the script. "
	  "Required." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_TOOL_OFF(timeout), .min = 1, .max = 86400,
	  .def = "60",
	  .help = "How long one call may run. Then, as when the call is "
	  "cancelled, its session deleted or mcpd shut down, the program's "
	  "process group gets SIGTERM and SIGKILL 2 seconds later; a timed "
	  "out call ends with an isError result. Shutdown waits until every "
	  "program has been reaped (3 seconds at most)." },
	{ .name = "max_output", .type = CONF_SIZE,
	  .offset = CONF_TOOL_OFF(max_output), .min = CONF_KIB,
	  .max = 16 * CONF_MIB, .def = "1m",
	  .help = "Bytes of standard output kept for the result; beyond "
	  "them the result is cut and says so. Progress notifications "
	  "carry every line regardless." },
	{ .name = "env", .type = CONF_CUSTOM, .parse = conf_parse_env,
	  .flags = CONF_REPEAT, .args = "NAME=VALUE",
	  .help = "One variable of the program's environment, which holds "
	  "nothing else: mcpd's own environment is not passed on (set PATH "
	  "here if the program needs one). Quote the whole word when VALUE "
	  "has blanks: env \"GREETING=hello world\"." },
	{ .name = "cwd", .type = CONF_STRING, .offset = CONF_TOOL_OFF(cwd),
	  .check = conf_check_dir, .args = "DIR",
	  .def_text = "mcpd's working directory",
	  .help = "Working directory of the program, an absolute path to a "
	  "directory that exists when the file is read." },
	{ .name = "max_concurrency", .type = CONF_INTEGER,
	  .offset = CONF_TOOL_OFF(max_concurrency), .min = 1, .max = 65536,
	  .def_text = "no limit of its own, only max_children",
	  .help = "Calls of this tool running at once; a call beyond this "
	  "gets the isError result \"tool busy\"." },
	{ .name = "scope", .type = CONF_STRING, .offset = CONF_TOOL_OFF(scope),
	  .check = conf_check_scope, .args = "SCOPE",
	  .def_text = "none: every token that passes auth may call it",
	  .help = "With an auth block, the OAuth scope a token needs to "
	  "call this tool: tools/list shows the tool only to tokens that "
	  "have it, and a tools/call without it is answered 403 with "
	  "error=\"insufficient_scope\". Without an auth block it has no "
	  "effect." },
	{ .name = "task", .type = CONF_ENUM,
	  .offset = CONF_TOOL_OFF(task_support),
	  .values = conf_task_support_values, .def = "forbidden",
	  .help = "Whether a call may run as a task (the "
	  "io.modelcontextprotocol/tasks extension; tools/list says it as "
	  "execution.taskSupport): optional runs it as a task when the "
	  "client's request declares the extension, and as a plain call "
	  "otherwise; required refuses a call whose request does not "
	  "declare it (-32021); forbidden never makes it a task. A task's "
	  "call answers at once with the task, its program runs on, and "
	  "its result is kept for task_ttl, readable from any instance "
	  "with the redis event log." },
};

/* The directives inside "auth { }"; offsets into struct conf_auth. */
#define CONF_AUTH_OFF(f)	offsetof(struct conf_auth, f)
static const struct conf_entry conf_auth_entries[] = {
	{ .name = "resource", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(resource), .check = conf_check_url,
	  .args = "URI",
	  .help = "This server's canonical URI as clients reach it, such as "
	  "https://mcp.example.com/mcp (RFC 8707): a JWT's aud must "
	  "contain it, and the protected resource metadata names it. "
	  "Required." },
	{ .name = "authorization_server", .type = CONF_WORDS,
	  .offset = CONF_AUTH_OFF(authorization_servers),
	  .offset2 = CONF_AUTH_OFF(nauthorization_servers),
	  .check = conf_check_url, .args = "URL...",
	  .help = "The issuer URL of each authorization server clients may "
	  "get tokens from, as the protected resource metadata "
	  "(/.well-known/oauth-protected-resource) lists them. Required." },
	{ .name = "issuer", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(issuer), .args = "ISSUER",
	  .def_text = "the first authorization_server",
	  .help = "The iss a JWT access token must carry, exactly." },
	{ .name = "token_type", .type = CONF_ENUM,
	  .offset = CONF_AUTH_OFF(token_type),
	  .values = conf_token_type_values, .def = "any",
	  .help = "at+jwt: a JWT access token's header must say typ at+jwt "
	  "or application/at+jwt (RFC 9068, in any case), so that another "
	  "JWT signed with the same keys (an ID token, say) cannot pass as "
	  "an access token; any: typ is not looked at, for authorization "
	  "servers that do not set it." },
	{ .name = "jwks_file", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(jwks_file), .check = conf_check_file,
	  .args = "PATH",
	  .help = "A JSON Web Key Set (RFC 7517) whose keys verify JWT "
	  "access tokens: RSA (RS256, PS256), EC P-256 (ES256) and Ed25519 "
	  "(EdDSA). Read at start-up." },
	{ .name = "jwks_uri", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(jwks_uri), .check = conf_check_url,
	  .args = "URL",
	  .help = "Where the authorization server publishes its key set; "
	  "fetched at start-up, again after jwks_cache, and when a token "
	  "names a kid the set lacks (at most once per jwks_refresh_min). "
	  "With jwks_file too, both sets count." },
	{ .name = "introspection", .type = CONF_LINE,
	  .line = conf_line_introspection,
	  .args = "URL [CLIENT_ID CLIENT_SECRET_FILE]",
	  .help = "Tokens that are not JWTs are sent to this token "
	  "introspection endpoint (RFC 7662), authenticated with HTTP Basic "
	  "as CLIENT_ID with the secret in the file (its first line); an "
	  "active answer is cached until the token's exp, at most "
	  "jwks_cache seconds." },
	{ .name = "introspection_rate", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(introspection_rate), .min = 1,
	  .max = 1000000, .def = "50",
	  .help = "Tokens the introspection endpoint is asked about per "
	  "second, at most. Only tokens without a cached answer count, so "
	  "a client sending made-up tokens cannot flood the authorization "
	  "server; past the rate such a token is answered 503 with "
	  "Retry-After (it cannot be checked now), never let through." },
	{ .name = "scopes", .type = CONF_WORDS, .offset = CONF_AUTH_OFF(scopes),
	  .offset2 = CONF_AUTH_OFF(nscopes), .check = conf_check_scope,
	  .args = "SCOPE...", .def_text = "none",
	  .help = "Scopes every request's token must have; one that lacks "
	  "one is answered 403 with error=\"insufficient_scope\"." },
	{ .name = "token_file", .type = CONF_STRING,
	  .offset = CONF_AUTH_OFF(token_file), .check = conf_check_file,
	  .args = "PATH",
	  .help = "Static tokens, one per line: the SHA-256 of the token in "
	  "hex, the principal (subject) it stands for, and its scopes, "
	  "separated by blanks; \"#\" starts a comment. Make the hash with "
	  "printf %s TOKEN | sha256sum. Read at start-up." },
	{ .name = "leeway", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(leeway), .min = 0, .max = 600, .def = "60",
	  .help = "Clock skew allowed when checking a token's exp and nbf." },
	{ .name = "max_token", .type = CONF_SIZE,
	  .offset = CONF_AUTH_OFF(max_token), .min = 256, .max = 64 * CONF_KIB,
	  .def = "8k",
	  .help = "Largest access token accepted; a longer one is answered "
	  "401 without being parsed." },
	{ .name = "jwks_cache", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(jwks_cache), .min = 10, .max = 86400,
	  .def = "300",
	  .help = "How long a key set fetched from jwks_uri, an "
	  "introspection answer or a verified JWT is used before it is "
	  "asked for or checked again (a JWT at most until its exp)." },
	{ .name = "jwks_refresh_min", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(jwks_refresh_min), .min = 1, .max = 86400,
	  .def = "10",
	  .help = "Least time between two fetches of jwks_uri, so tokens "
	  "naming unknown keys cannot make mcpd hammer the authorization "
	  "server; such a token waits for a fetch under way, or is "
	  "answered 401." },
	{ .name = "cache_max", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(cache_max), .min = 1, .max = 1000000,
	  .def = "10000",
	  .help = "Introspection answers and verified JWTs remembered at "
	  "once (by the token's SHA-256, never the token)." },
	{ .name = "max_pending", .type = CONF_INTEGER,
	  .offset = CONF_AUTH_OFF(max_pending), .min = 1, .max = 1000000,
	  .def = "1024",
	  .help = "Requests that may wait at once for a key set or an "
	  "introspection answer; more are answered 503." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_AUTH_OFF(timeout), .min = 1, .max = 120, .def = "5",
	  .help = "How long a fetch of jwks_uri or an introspection request "
	  "may take." },
};

static const char conf_auth_examples[] =
"auth {\n"
"    resource https://mcp.example.com/mcp\n"
"    authorization_server https://auth.example.com\n"
"    issuer https://auth.example.com\n"
"    jwks_uri https://auth.example.com/jwks\n"
"    scopes mcp\n"
"}\n";

/* Commented out in the example file: "# " goes before each line. */
static const char conf_tool_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"tool disk_usage {\n"
"    description \"Size, use and free space of the mounted file systems\"\n"
"    exec /bin/df --human-readable --print-type --exclude-type=tmpfs\n"
"    timeout 10\n"
"}\n"
"\n"
"tool journal {\n"
"    description \"The latest lines of a systemd unit's journal\"\n"
"    param unit string required \"Unit name, such as nginx.service\"\n"
"    param lines integer required \"How many lines\"\n"
"    exec /bin/journalctl --no-pager --unit {unit} --lines {lines}\n"
"    timeout 20\n"
"    max_output 256k\n"
"    max_concurrency 4\n"
"}\n"
"\n"
"# Each reply line reaches the client as it comes, as a progress\n"
"# notification, when the call has a progressToken.\n"
"tool ping {\n"
"    description \"Send 4 ICMP echo requests to a host and show the replies\"\n"
"    param host string required \"Host name or IP address\"\n"
"    exec /bin/ping -c 4 -W 2 -- {host}\n"
"    timeout 15\n"
"}\n"
"\n"
"# A shell gets values as positional parameters, never inside its script.\n"
"tool find_files {\n"
"    description \"Files under /srv whose name matches a pattern, "
    "at most 100\"\n"
"    param pattern string required \"Shell-style pattern, such as *.log\"\n"
"    exec /bin/sh -c \"find /srv -type f -name \\\"$1\\\" | "
    "head -n 100\" sh {pattern}\n"
"    env PATH=/usr/bin:/bin\n"
"    timeout 30\n"
"}\n";

/* Active in the example file: harmless, and every Debian system has it. */
static const char conf_tool_example_active[] =
"tool date {\n"
"    description \"The server's current date and time in UTC (ISO 8601)\"\n"
"    exec /bin/date -u +%Y-%m-%dT%H:%M:%SZ\n"
"    timeout 5\n"
"}\n";

/* The directives inside "upstream NAME { }"; into struct conf_upstream. */
#define CONF_UPSTREAM_OFF(f)	offsetof(struct conf_upstream, f)
static const struct conf_entry conf_upstream_entries[] = {
	{ .name = "exec", .type = CONF_LINE, .line = conf_line_upstream_exec,
	  .args = "PROGRAM [ARG...]",
	  .help = "A server speaking MCP on its standard input and output "
	  "(newline-delimited JSON-RPC), run directly, no shell involved. "
	  "PROGRAM is an absolute path or a name looked up in mcpd's PATH "
	  "when the file is read. Its standard error goes to mcpd's log, "
	  "each line with the upstream's name, rate-limited. Exactly one of "
	  "exec and url." },
	{ .name = "url", .type = CONF_STRING, .offset = CONF_UPSTREAM_OFF(url),
	  .check = conf_check_upstream_url, .args = "URL",
	  .help = "A Streamable HTTP MCP server, http://HOST[:PORT]/PATH or "
	  "https://... (the certificate is verified against the system's "
	  "trust store). Exactly one of exec and url." },
	{ .name = "sharing", .type = CONF_ENUM,
	  .offset = CONF_UPSTREAM_OFF(sharing), .values = conf_sharing_values,
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
	{ .name = "env", .type = CONF_CUSTOM, .parse = conf_parse_upstream_env,
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
	{ .name = "max_tools", .type = CONF_INTEGER,
	  .offset = CONF_UPSTREAM_OFF(max_tools), .min = 1, .max = 1000000,
	  .def = "10000",
	  .help = "Most tools served from this upstream (also the most "
	  "prompts, resources and resource templates, each). Those past it "
	  "in the upstream's list are not served, and one log line names "
	  "the upstream and how many were left out." },
};

static const char conf_upstream_examples[] =
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
"    cwd /srv\n"
"    env NODE_OPTIONS=--max-old-space-size=256\n"
"    restart_delay 2\n"
"}\n";

#define CONF_OFF(f)	offsetof(struct conf, f)
#define CONF_NUMBER(n, t, f, lo, hi, d, h)				\
	{ .name = n, .type = t, .offset = CONF_OFF(f), .min = lo,	\
	  .max = hi, .def = d, .help = h }

static const struct conf_entry conf_entries[] = {
	{ .name = "listen", .type = CONF_HOSTPORT,
	  .offset = CONF_OFF(listen_host), .offset2 = CONF_OFF(listen_port),
	  .min = 0, .max = 65535, .args = "HOST:PORT",
	  .def = "127.0.0.1:8080", .flags = CONF_EXAMPLE_ACTIVE,
	  .section = "HTTP",
	  .help = "Address and port the HTTP server listens on. HOST is a "
	  "name, an IPv4 address or an IPv6 address in brackets "
	  "([::1]:8080). Port 0 picks a free port." },
	{ .name = "endpoint", .type = CONF_STRING,
	  .offset = CONF_OFF(endpoint), .check = conf_check_path,
	  .args = "PATH", .def = "/mcp", .flags = CONF_EXAMPLE_ACTIVE,
	  .help = "URL path of the MCP endpoint, where POST, GET and DELETE "
	  "are served. Starts with \"/\"." },
	{ .name = "allowed_origins", .type = CONF_WORDS,
	  .offset = CONF_OFF(allowed_origins),
	  .offset2 = CONF_OFF(nallowed_origins), .check = conf_check_origin,
	  .args = "ORIGIN...", .def_text = "none (loopback origins only)",
	  .example = "https://app.example.com https://example.com:8443",
	  .help = "Browser origins allowed in the Origin header, each "
	  "exactly http://HOST[:PORT] or https://HOST[:PORT] (no "
	  "wildcards, no path); a request with another Origin is answered "
	  "403, one without Origin is not affected. When not set, only "
	  "loopback origins are allowed: http or https with host "
	  "localhost, 127.0.0.1 or [::1] and any port." },
	CONF_NUMBER("max_body", CONF_SIZE, max_body, CONF_KIB, CONF_GIB,
	    "4m", "Largest request body accepted; a larger one is answered "
	    "413."),
	CONF_NUMBER("max_header_size", CONF_SIZE, max_header_size, CONF_KIB,
	    CONF_MIB, "16k", "Largest size of the request line and headers "
	    "accepted."),

	{ .name = "auth", .type = CONF_BLOCK, .block = conf_block_auth,
	  .sub = conf_auth_entries, .nsub = CONF_NITEMS(conf_auth_entries),
	  .example = conf_auth_examples, .args = "{ ... }",
	  .section = "Authorization",
	  .help = "Makes mcpd an OAuth 2.1 resource server, as MCP's "
	  "authorization specification has it (docs/authorization.md): "
	  "every request to the endpoint needs an access token "
	  "(Authorization: Bearer), a JWT verified with the keys of "
	  "jwks_file or jwks_uri, a token the introspection endpoint "
	  "vouches for, or one of token_file; a request without a valid "
	  "one is answered 401 with a WWW-Authenticate header naming the "
	  "protected resource metadata, served at "
	  "/.well-known/oauth-protected-resource. A session belongs to the "
	  "principal (issuer, subject, client) that created it; another "
	  "principal's requests naming it are answered 404. Without this "
	  "block nothing is checked. Read at start-up only: a reload keeps "
	  "the running one. Inside the block, one directive per line:" },

	{ .name = "eventlog", .type = CONF_CUSTOM,
	  .parse = conf_parse_eventlog,
	  .args = "memory|redis://HOST[:PORT][/DB]", .def = "memory",
	  .flags = CONF_EXAMPLE_ACTIVE, .section = "Event log",
	  .help = "Where committed events live. memory keeps bounded rings "
	  "in this process (one instance, lost on restart). "
	  "redis://HOST:PORT/DB keeps them in Redis Streams shared by every "
	  "instance; the port defaults to 6379 and DB (0 to 15) to 0." },
	CONF_NUMBER("eventlog_wait", CONF_SECONDS, eventlog_wait, 0, 3600,
	    "10", "At start-up, how long mcpd waits for the event log to be "
	    "reachable before it listens (redis; memory always is). Until "
	    "then it accepts no connection and does not tell the service "
	    "manager it is ready, so a load balancer sends requests to "
	    "another instance rather than to one that could only answer 503. "
	    "Past it, mcpd listens anyway, not ready (/readyz 503 "
	    "\"starting\") until the log is reachable, and logs why; 0 "
	    "listens at once."),
	{ .name = "commit", .type = CONF_CUSTOM, .parse = conf_parse_commit,
	  .args = "primary|replicas:N", .def = "primary",
	  .help = "With the redis event log, when an event counts as "
	  "committed: primary once Redis has it, replicas:N once N "
	  "replicas (1 to 16) have acknowledged it too (WAIT)." },
	CONF_NUMBER("eventlog_outage_grace", CONF_SECONDS,
	    eventlog_outage_grace, 0, 300, "10", "With the redis event log, "
	    "how long an outage of Redis is waited out: a stall (no reply "
	    "for 2 seconds), a lost connection, a restart. Meanwhile every "
	    "operation waits, in order: running calls pause as producers do "
	    "under block (their clients get keep-alives, not an error), and "
	    "new requests wait too; once Redis answers, everything is "
	    "committed in order, each append exactly once. An outage longer "
	    "than this (and than 2 seconds) ends the running calls with an "
	    "error saying the event log was unavailable, and until Redis "
	    "answers requests are answered 503 at once. At most 64 MiB of "
	    "operations wait; more are refused. 0 waits out no outage."),
	CONF_NUMBER("stream_maxlen", CONF_INTEGER, stream_maxlen, 1, 1000000,
	    "1000", "Events retained per stream for resumption; resuming "
	    "from an older, trimmed event is answered 410 \"trimmed\"."),
	CONF_NUMBER("stream_window", CONF_INTEGER, stream_window, 1, 1000000,
	    "256", "Events a stream may hold that its client has not "
	    "received yet, those on their way to the log included, before "
	    "its producers are paused (block policy). An event counts as "
	    "received once the client's side of the connection acknowledged "
	    "it; what a proxy acknowledged and did not forward is lost at a "
	    "cut, so the window may be at most half of stream_maxlen, "
	    "leaving as much again in flight. Unset: half of stream_maxlen, "
	    "at most 256."),
	CONF_NUMBER("stream_ttl", CONF_SECONDS, stream_ttl, 1, 604800, "300",
	    "How long a finished stream stays resumable."),

	{ .name = "session_ttl", .type = CONF_SECONDS,
	  .offset = CONF_OFF(session_ttl), .min = 10, .max = 2592000,
	  .def = "1800", .section = "Sessions",
	  .help = "How long an idle session lives." },
	CONF_NUMBER("max_sessions", CONF_INTEGER, max_sessions, 1, 10000000,
	    "10000", "Sessions that may exist at once; initialize beyond "
	    "this is refused."),
	CONF_NUMBER("session_max_streams", CONF_INTEGER, session_max_streams,
	    2, 100000, "256", "Streams one session may hold at once, its "
	    "standalone stream included."),
	CONF_NUMBER("request_timeout", CONF_SECONDS, request_timeout, 1, 3600,
	    "60", "How long the server waits for the client's answer to a "
	    "server-to-client request."),

	{ .name = "max_views", .type = CONF_INTEGER,
	  .offset = CONF_OFF(max_views), .min = 1, .max = 1000000,
	  .def = "10000", .section = "SSE and backpressure",
	  .help = "Streams open at once: the sessions' SSE responses, "
	  "running stateless (2026-07-28) calls and listen streams "
	  "together; more are answered 503." },
	CONF_NUMBER("sse_high_watermark", CONF_SIZE, sse_high_watermark,
	    4 * CONF_KIB, 64 * CONF_MIB, "256k", "Bytes queued on one SSE "
	    "connection above which its writer stops pulling events from "
	    "the log."),
	CONF_NUMBER("sse_keepalive", CONF_SECONDS, sse_keepalive, 1, 3600,
	    "15", "Time between comment heartbeats on an idle SSE stream."),
	CONF_NUMBER("sse_retry_ms", CONF_MILLISECONDS, sse_retry_ms, 0,
	    600000, "1000", "Reconnection delay sent to clients in the SSE "
	    "retry: field."),
	CONF_NUMBER("slow_consumer_grace_ms", CONF_MILLISECONDS,
	    slow_consumer_grace_ms, 0, 600000, "5000", "How long an SSE "
	    "connection may stay above sse_high_watermark before the close "
	    "policy disconnects it."),
	{ .name = "backpressure_request", .type = CONF_ENUM,
	  .offset = CONF_OFF(backpressure_request),
	  .values = conf_backpressure_values, .def = "block",
	  .help = "What a request's stream does when its client falls "
	  "behind: block pauses the producer (the events wait in the log), "
	  "close disconnects the client." },
	{ .name = "backpressure_standalone", .type = CONF_ENUM,
	  .offset = CONF_OFF(backpressure_standalone),
	  .values = conf_backpressure_values, .def = "close",
	  .help = "The same for a session's standalone (GET) stream: close "
	  "sends a backpressure-disconnect event naming the last id written "
	  "and closes, and the client resumes from its cursor; block pauses "
	  "the producers." },

	{ .name = "builtin_tools", .type = CONF_BOOL,
	  .offset = CONF_OFF(builtin_tools), .values = conf_bool_values,
	  .def = "off", .example = "on", .flags = CONF_EXAMPLE_ACTIVE,
	  .section = "Tools",
	  .help = "Serve the built-in diagnostic tools echo, stream and "
	  "notify." },
	{ .name = "fixtures", .type = CONF_ENUM,
	  .offset = CONF_OFF(fixtures_conformance),
	  .values = conf_fixtures_values, .def = "off",
	  .help = "conformance serves the tools, resources and prompts the "
	  "official MCP conformance suite expects." },
	CONF_NUMBER("max_children", CONF_INTEGER, max_children, 1, 4096,
	    "64", "Programs of exec tools running at once, over all tools "
	    "(a program counts until it has been reaped); a call beyond "
	    "this gets the isError result \"tool busy\"."),
	{ .name = "tool", .type = CONF_BLOCK, .block = conf_block_tool,
	  .sub = conf_tool_entries, .nsub = CONF_NITEMS(conf_tool_entries),
	  .example = conf_tool_examples,
	  .example_active = conf_tool_example_active,
	  .args = "NAME { ... }",
	  .help = "A command-line program served as an MCP tool: each call "
	  "runs it with the call's arguments, stdin from /dev/null, in a "
	  "process group of its own. With a progressToken, every line it "
	  "writes to standard output is sent at once as "
	  "notifications/progress (progress counts the lines, message is "
	  "the line; a line longer than 64 KiB is split). The result is a "
	  "text item with the standard output; it is an isError result, "
	  "with the exit status or signal and the start of standard error, "
	  "when the program exits non-zero or is killed. While the client "
	  "reads slowly, mcpd stops reading the program's output, so the "
	  "program waits. When the program exits, anything it left running "
	  "in its process group is killed. NAME is 1 to 128 letters, "
	  "digits, \"_\", \"-\" or \".\"; it is unique, and not echo, "
	  "stream or notify while builtin_tools is on. Inside the block, "
	  "one directive per line; param and env may repeat:" },
	{ .name = "upstream", .type = CONF_BLOCK, .block = conf_block_upstream,
	  .sub = conf_upstream_entries,
	  .nsub = CONF_NITEMS(conf_upstream_entries),
	  .example = conf_upstream_examples, .args = "NAME { ... }",
	  .help = "An MCP server mcpd is a client of: its tools, resources, "
	  "resource templates, prompts and completions are served to clients "
	  "with the others, every message it sends committed to the event "
	  "log like mcpd's own. Requests are forwarded with their ids "
	  "remapped, progress and log notifications reach the call's "
	  "stream, its sampling, elicitation and roots requests reach the "
	  "client whose call it serves. A name served by two providers is "
	  "an error naming both at start-up (prefix resolves it). NAME is 1 "
	  "to 128 letters, digits, \"_\", \"-\" or \".\", unique among "
	  "upstreams. See docs/upstreams.md. Inside the block, one "
	  "directive per line; env may repeat:" },

	{ .name = "drain_delay", .type = CONF_SECONDS,
	  .offset = CONF_OFF(drain_delay), .min = 0, .max = 3600, .def = "5",
	  .section = "Drain and failover",
	  .help = "On SIGTERM or SIGINT (drain, then exit) or SIGUSR2 "
	  "(drain and stay up until SIGTERM), /readyz answers 503 at once, "
	  "and the instance goes on serving as usual for this long, so the "
	  "load balancer notices before connections are refused. Then the "
	  "listening socket closes, requests still arriving on open "
	  "connections are answered with Connection: close, and running "
	  "calls may finish (drain_timeout). A second SIGTERM or SIGINT "
	  "exits at once." },
	CONF_NUMBER("drain_timeout", CONF_SECONDS, drain_timeout, 0, 86400,
	    "30", "How long running calls may take to finish after "
	    "drain_delay. Calls still running then end with an error "
	    "response saying they were interrupted. Once the calls are "
	    "over, SSE responses still open end with a retry: field, and "
	    "with the redis event log their clients resume on another "
	    "instance."),
	CONF_NUMBER("lease_ttl", CONF_SECONDS, lease_ttl, 1, 300, "5",
	    "With the redis event log, how long the lease of a running "
	    "call lives without renewal. The instance running the call "
	    "renews it every lease_ttl/3 (every second at most); an "
	    "instance showing the call's stream checks it twice a second, "
	    "and once it has lapsed answers the call with an error saying "
	    "it was interrupted. A smaller lease finds a dead instance's "
	    "calls sooner (within lease_ttl + 1 seconds); but if Redis or "
	    "the running instance's event loop stalls for longer than "
	    "lease_ttl, other instances take a live call for dead and "
	    "answer it with that error while it still runs."),

	{ .name = "task_ttl", .type = CONF_SECONDS,
	  .offset = CONF_OFF(task_ttl), .min = 10, .max = 2592000,
	  .def = "3600", .section = "Tasks",
	  .help = "How long a task (io.modelcontextprotocol/tasks) and its "
	  "result stay readable with tasks/get, from its creation: the "
	  "ttlMs it reports. After that tasks/get answers that the task is "
	  "not found. A task still running then is failed." },
	CONF_NUMBER("max_tasks", CONF_INTEGER, max_tasks, 1, 1000000, "1000",
	    "Tasks one instance runs at once; a tools/call that would start "
	    "another is answered with an error. The memory event log also "
	    "keeps at most this many task records, finished ones included, "
	    "until their task_ttl ends; when a new task finds it full, the "
	    "record finished longest ago is forgotten for it (a running "
	    "task's never is)."),
	CONF_NUMBER("max_tasks_per_principal", CONF_INTEGER,
	    max_tasks_per_principal, 1, 1000000, "100",
	    "With an auth block: tasks one instance runs at once for one "
	    "principal (issuer, subject, client id), so one client cannot "
	    "take every one of max_tasks; a tools/call that would start "
	    "another is answered with an error. Without auth every client is "
	    "the same anonymous one, and only max_tasks counts."),
	CONF_NUMBER("task_poll_ms", CONF_MILLISECONDS, task_poll_ms, 10,
	    600000, "1000", "The pollIntervalMs tasks suggest to clients: "
	    "how often they should ask tasks/get. (With the redis event "
	    "log, the instance running a task reads its record every 250 "
	    "ms for a tasks/cancel or tasks/update another instance took.)"),

	{ .name = "log_level", .type = CONF_CUSTOM,
	  .parse = conf_parse_log_level, .args = "debug|info|warn|error",
	  .def = "info", .section = "Logging",
	  .help = "Least severe level of the lines logged." },
	{ .name = "log_file", .type = CONF_STRING,
	  .offset = CONF_OFF(log_file), .check = conf_check_log_file,
	  .args = "stderr|PATH", .def = "stderr",
	  .help = "Where log lines go: stderr (the journal under systemd, "
	  "the runtime's log in a container), or the file at the absolute "
	  "PATH, appended to and created (mode 0640) if needed. SIGUSR1 "
	  "reopens the file, after log rotation moved it away." },
	{ .name = "state_key_file", .type = CONF_STRING,
	  .offset = CONF_OFF(state_key_file), .check = conf_check_key_file,
	  .args = "none|PATH", .def = "none", .section = "Stateless requests",
	  .example = "/etc/mcpd/state.key",
	  .help = "The key (a file of 32 to 1023 bytes, say 64 random hex "
	  "digits) that signs the requestState of input_required results "
	  "(2026-07-28 multi round-trip requests) with HMAC-SHA256, so that "
	  "any instance holding the same key can continue a round another "
	  "began, and a changed state is refused. none: the keys of the "
	  "event log's keyring, which every instance sharing the log reads "
	  "and the log rotates every state_key_rotation (with the memory "
	  "log, keys of this process alone). Read again on reload." },
	{ .name = "state_key_previous_file", .type = CONF_STRING,
	  .offset = CONF_OFF(state_key_previous_file),
	  .check = conf_check_key_file, .args = "none|PATH", .def = "none",
	  .example = "/etc/mcpd/state.key.old",
	  .help = "A key that no longer signs but whose states are still "
	  "accepted: the one state_key_file held before a rotation, or the "
	  "last key file when moving to the event log's keys. Rotate by "
	  "giving every instance the new key with the old one here, then, "
	  "once the rounds in flight are over (15 minutes), dropping this "
	  "line." },
	CONF_NUMBER("state_key_rotation", CONF_SECONDS, state_key_rotation,
	    3600, 31536000, "86400", "Without state_key_file: how often the "
	    "event log replaces the key that signs requestStates. Each key "
	    "is known to every instance a period before it signs and opens "
	    "states for a period after, so a rotation refuses no state in "
	    "flight; at least an hour, as a state lives 15 minutes."),
	{ .name = "access_log", .type = CONF_BOOL,
	  .offset = CONF_OFF(access_log), .values = conf_bool_values,
	  .def = "off",
	  .help = "One line per HTTP request in the log, whatever log_level "
	  "says, written when its response ends: method, path, status, "
	  "session, stream (an SSE response's K), body bytes and "
	  "milliseconds from the request to the end of its response (for "
	  "an SSE response, of the stream)." },
	{ .name = "log_format", .type = CONF_ENUM,
	  .offset = CONF_OFF(log_format), .values = conf_log_format_values,
	  .def = "text",
	  .help = "text: TIME LEVEL MESSAGE, one line each. json: one JSON "
	  "object per line with time, level and msg, for log collectors; "
	  "bytes of a message that are not UTF-8 are escaped, so every line "
	  "is valid JSON." },
};

/* ---------------------------------------------------------------------
 * Lexer: text to lines of words.
 */

struct conf_lexer {
	const char	*file;
	const char	*next;		/* start of the next line */
	int		 line;		/* number of the last line read */
};

struct conf_line {
	int		 line;
	int		 argc;
	char		**argv;
	int		 open;		/* ended with an unquoted "{" */
	int		 close;		/* was a lone unquoted "}" */
};

struct conf_buf {
	char		*data;
	size_t		 len;
	size_t		 size;
};

static void
conf_buf_add(struct conf_buf *b, char ch)
{
	if (b->len + 1 >= b->size) {
		b->size = b->size == 0 ? 64 : b->size * 2;
		b->data = xrealloc(b->data, b->size);
	}
	b->data[b->len++] = ch;
	b->data[b->len] = '\0';
}

static void
conf_line_clear(struct conf_line *ln)
{
	int	i;

	for (i = 0; i < ln->argc; i++)
		free(ln->argv[i]);
	free(ln->argv);
	memset(ln, 0, sizeof *ln);
}

static int
conf_lex_space(char ch)
{
	return (ch == ' ' || ch == '\t' || ch == '\r');
}

static int
conf_lex_end(char ch)
{
	return (ch == '\0' || ch == '\n' || ch == '#' || conf_lex_space(ch));
}

static int
conf_lex_control(char ch)
{
	u_char	uch = ch;

	return ((uch < 0x20 && uch != '\t') || uch == 0x7f);
}

/*
 * Split the line at cl->next into words, appended to ln with quoted[] saying
 * which were quoted, and move cl->next to the following line.
 */
static int
conf_lex_words(struct conf_lexer *cl, struct conf_line *ln, int **quoted,
    char **cause)
{
	const char	*p = cl->next;
	struct conf_buf	 b;
	int		 q;

	for (;;) {
		while (conf_lex_space(*p))
			p++;
		if (*p == '\0' || *p == '\n' || *p == '#')
			break;

		b.data = xstrdup("");
		b.len = 0;
		b.size = 1;
		q = (*p == '"');
		if (q) {
			for (p++; *p != '"'; p++) {
				if (*p == '\0' || *p == '\n') {
					xasprintf(cause, "%s:%d: unterminated "
					    "quoted string", cl->file, cl->line);
					goto fail;
				}
				if (*p == '\\') {
					p++;
					if (*p != '"' && *p != '\\') {
						xasprintf(cause, "%s:%d: invalid "
						    "escape in quoted string "
						    "(only \\\" and \\\\)",
						    cl->file, cl->line);
						goto fail;
					}
				} else if (conf_lex_control(*p))
					goto control;
				conf_buf_add(&b, *p);
			}
			p++;
			if (!conf_lex_end(*p)) {
				xasprintf(cause, "%s:%d: missing space after "
				    "quoted string", cl->file, cl->line);
				goto fail;
			}
		} else {
			for (; !conf_lex_end(*p); p++) {
				if (*p == '"') {
					xasprintf(cause, "%s:%d: unexpected "
					    "quote inside a word", cl->file,
					    cl->line);
					goto fail;
				}
				if (conf_lex_control(*p))
					goto control;
				conf_buf_add(&b, *p);
			}
		}

		ln->argv = xrealloc(ln->argv, (ln->argc + 1) *
		    sizeof *ln->argv);
		*quoted = xrealloc(*quoted, (ln->argc + 1) * sizeof **quoted);
		ln->argv[ln->argc] = b.data;
		(*quoted)[ln->argc] = q;
		ln->argc++;
	}

	while (*p != '\0' && *p != '\n')
		p++;
	if (*p == '\n')
		p++;
	cl->next = p;
	return (0);

control:
	xasprintf(cause, "%s:%d: invalid character 0x%02x", cl->file,
	    cl->line, (u_char)*p);
fail:
	free(b.data);
	return (-1);
}

/*
 * Read the next line that has words. Returns 1 with the line in ln, 0 at the
 * end of the text, -1 on error.
 */
static int
conf_lex_line(struct conf_lexer *cl, struct conf_line *ln, char **cause)
{
	int	*quoted = NULL, last;

	memset(ln, 0, sizeof *ln);
	while (*cl->next != '\0') {
		cl->line++;
		if (conf_lex_words(cl, ln, &quoted, cause) != 0)
			goto fail;
		if (ln->argc == 0)
			continue;
		ln->line = cl->line;

		/* Braces count only as words of their own, unquoted. */
		last = ln->argc - 1;
		if (!quoted[last] && strcmp(ln->argv[last], "{") == 0) {
			if (ln->argc == 1) {
				xasprintf(cause, "%s:%d: \"{\" without a "
				    "directive", cl->file, cl->line);
				goto fail;
			}
			free(ln->argv[last]);
			ln->argc--;
			ln->open = 1;
		} else if (!quoted[0] && strcmp(ln->argv[0], "}") == 0) {
			if (ln->argc != 1) {
				xasprintf(cause, "%s:%d: \"}\" must be on a "
				    "line of its own", cl->file, cl->line);
				goto fail;
			}
			free(ln->argv[0]);
			ln->argc = 0;
			ln->close = 1;
		}
		for (last = 0; last < ln->argc; last++) {
			if (quoted[last])
				continue;
			if (strcmp(ln->argv[last], "{") == 0 ||
			    strcmp(ln->argv[last], "}") == 0) {
				xasprintf(cause, "%s:%d: unexpected \"%s\"",
				    cl->file, cl->line, ln->argv[last]);
				goto fail;
			}
		}
		free(quoted);
		return (1);
	}
	free(quoted);
	return (0);

fail:
	free(quoted);
	conf_line_clear(ln);
	return (-1);
}

static void
conf_directive_clear(struct conf_directive *cd)
{
	size_t	i;
	int	j;

	for (i = 0; i < cd->nchildren; i++)
		conf_directive_clear(&cd->children[i]);
	free(cd->children);
	for (j = 0; j < cd->argc; j++)
		free(cd->argv[j]);
	free(cd->argv);
	memset(cd, 0, sizeof *cd);
}

/* Move a lexed line into a directive. */
static void
conf_directive_set(struct conf_directive *cd, struct conf_line *ln)
{
	memset(cd, 0, sizeof *cd);
	cd->line = ln->line;
	cd->argc = ln->argc;
	cd->argv = ln->argv;
	ln->argv = NULL;
	ln->argc = 0;
}

/* Read the lines of cd's block up to its closing brace. */
static int
conf_read_block(struct conf_lexer *cl, struct conf_directive *cd, int depth,
    char **cause)
{
	struct conf_line	 ln;
	struct conf_directive	*child;
	int			 r;

	cd->has_block = 1;
	if (depth > CONF_MAX_DEPTH) {
		xasprintf(cause, "%s:%d: blocks nested too deeply", cl->file,
		    cd->line);
		return (-1);
	}
	for (;;) {
		if ((r = conf_lex_line(cl, &ln, cause)) == -1)
			return (-1);
		if (r == 0) {
			xasprintf(cause, "%s:%d: %s: block not closed "
			    "(missing \"}\")", cl->file, cd->line,
			    cd->argv[0]);
			return (-1);
		}
		if (ln.close) {
			conf_line_clear(&ln);
			return (0);
		}
		cd->children = xrealloc(cd->children,
		    (cd->nchildren + 1) * sizeof *cd->children);
		child = &cd->children[cd->nchildren++];
		conf_directive_set(child, &ln);
		if (ln.open &&
		    conf_read_block(cl, child, depth + 1, cause) != 0)
			return (-1);
	}
}

/* ---------------------------------------------------------------------
 * Values.
 */

static int
conf_host_char(char ch)
{
	return (isalnum((u_char)ch) || ch == '-' || ch == '.' || ch == '_');
}

/* A port, 0 to 65535, digits only. */
static int
conf_parse_port(const char *s, int *port)
{
	size_t	len = strlen(s);

	if (len == 0 || len > 5 || strspn(s, "0123456789") != len)
		return (-1);
	*port = atoi(s);
	if (*port > 65535)
		return (-1);
	return (0);
}

/*
 * Split HOST:PORT. HOST is a name, an IPv4 address or an IPv6 address in
 * brackets (returned without them). Without a port, dflt is used if it is
 * not -1.
 */
static int
conf_parse_hostport(const char *s, int dflt, char **hostp, int *portp,
    char **why)
{
	const char	*end, *rest;
	char		*host;
	struct in6_addr	 in6;
	struct in_addr	 in4;
	size_t		 len;

	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL) {
			xasprintf(why, "missing \"]\" in \"%s\"", s);
			return (-1);
		}
		host = xstrndup(s + 1, end - s - 1);
		if (inet_pton(AF_INET6, host, &in6) != 1) {
			xasprintf(why, "invalid IPv6 address \"%s\"", host);
			goto fail;
		}
		rest = end + 1;
	} else {
		if ((end = strchr(s, ':')) == NULL)
			end = s + strlen(s);
		else if (strchr(end + 1, ':') != NULL) {
			xasprintf(why, "invalid address \"%s\" (an IPv6 "
			    "address goes in brackets)", s);
			return (-1);
		}
		if (*end == '\0' && dflt == -1) {
			xasprintf(why, "missing port in \"%s\"", s);
			return (-1);
		}
		host = xstrndup(s, end - s);
		len = strlen(host);
		if (len == 0) {
			xasprintf(why, "missing host in \"%s\"", s);
			goto fail;
		}
		if (len > CONF_HOST_MAX ||
		    strspn(host, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != len ||
		    *host == '-' || *host == '.') {
			xasprintf(why, "invalid host \"%s\"", host);
			goto fail;
		}
		if (strspn(host, "0123456789.") == len &&
		    inet_pton(AF_INET, host, &in4) != 1) {
			xasprintf(why, "invalid IPv4 address \"%s\"", host);
			goto fail;
		}
		rest = end;
	}

	if (*rest == '\0') {
		if (dflt == -1) {
			xasprintf(why, "missing port in \"%s\"", s);
			goto fail;
		}
		*portp = dflt;
	} else if (*rest != ':') {
		xasprintf(why, "invalid address \"%s\"", s);
		goto fail;
	} else if (conf_parse_port(rest + 1, portp) != 0) {
		xasprintf(why, "invalid port \"%s\"", rest + 1);
		goto fail;
	}
	*hostp = host;
	return (0);

fail:
	free(host);
	return (-1);
}

/* Multiplier of a number's unit suffix for type, or 0 if not one. */
static long long
conf_unit(enum conf_type type, const char *suffix)
{
	static const struct {
		enum conf_type	 type;
		const char	*suffix;
		long long	 factor;
	} units[] = {
		{ CONF_INTEGER, "", 1 },
		{ CONF_SIZE, "", 1 },
		{ CONF_SIZE, "b", 1 },
		{ CONF_SIZE, "k", CONF_KIB },
		{ CONF_SIZE, "kb", CONF_KIB },
		{ CONF_SIZE, "kib", CONF_KIB },
		{ CONF_SIZE, "m", CONF_MIB },
		{ CONF_SIZE, "mb", CONF_MIB },
		{ CONF_SIZE, "mib", CONF_MIB },
		{ CONF_SIZE, "g", CONF_GIB },
		{ CONF_SIZE, "gb", CONF_GIB },
		{ CONF_SIZE, "gib", CONF_GIB },
		{ CONF_SECONDS, "", 1 },
		{ CONF_SECONDS, "s", 1 },
		{ CONF_SECONDS, "m", 60 },
		{ CONF_SECONDS, "h", 3600 },
		{ CONF_SECONDS, "d", 86400 },
		{ CONF_MILLISECONDS, "", 1 },
		{ CONF_MILLISECONDS, "ms", 1 },
		{ CONF_MILLISECONDS, "s", 1000 },
	};
	size_t	i;

	for (i = 0; i < CONF_NITEMS(units); i++) {
		if (units[i].type == type &&
		    strcasecmp(units[i].suffix, suffix) == 0)
			return (units[i].factor);
	}
	return (0);
}

static int
conf_parse_number(enum conf_type type, const char *s, long long *v,
    char **why)
{
	static const char *const kinds[][2] = {
		[CONF_INTEGER] = { "number", "" },
		[CONF_SIZE] = { "size", " (bytes, or with k, m or g)" },
		[CONF_SECONDS] = { "time", " (seconds, or with s, m, h or d)" },
		[CONF_MILLISECONDS] = { "time",
		    " (milliseconds, or with ms or s)" },
	};
	const char	*p = s;
	char		*end;
	long long	 n, factor;

	if (*p == '-')
		p++;
	if (!isdigit((u_char)*p))
		goto invalid;
	errno = 0;
	n = strtoll(s, &end, 10);
	if ((factor = conf_unit(type, end)) == 0)
		goto invalid;
	if (errno == ERANGE || n > LLONG_MAX / factor ||
	    n < LLONG_MIN / factor) {
		xasprintf(why, "%s is too large", s);
		return (-1);
	}
	*v = n * factor;
	return (0);

invalid:
	xasprintf(why, "invalid %s \"%s\"%s", kinds[type][0], s,
	    kinds[type][1]);
	return (-1);
}

/* Write v as it would be written in the file. */
static void
conf_format_number(enum conf_type type, long long v, char *buf, size_t len)
{
	if (type == CONF_SIZE && v != 0 && v % CONF_GIB == 0)
		snprintf(buf, len, "%lldg", v / CONF_GIB);
	else if (type == CONF_SIZE && v != 0 && v % CONF_MIB == 0)
		snprintf(buf, len, "%lldm", v / CONF_MIB);
	else if (type == CONF_SIZE && v != 0 && v % CONF_KIB == 0)
		snprintf(buf, len, "%lldk", v / CONF_KIB);
	else
		snprintf(buf, len, "%lld", v);
}

/* The names of an enum's values, "a|b|c". */
static char *
conf_enum_names(const struct conf_enum *values)
{
	const struct conf_enum	*e;
	struct conf_buf		 b;
	const char		*p;

	b.data = xstrdup("");
	b.len = 0;
	b.size = 1;
	for (e = values; e->name != NULL; e++) {
		if (e != values)
			conf_buf_add(&b, '|');
		for (p = e->name; *p != '\0'; p++)
			conf_buf_add(&b, *p);
	}
	return (b.data);
}

static int
conf_parse_enum(const struct conf_enum *values, const char *s, int *v,
    char **why)
{
	const struct conf_enum	*e;
	char			*names;

	for (e = values; e->name != NULL; e++) {
		if (strcmp(e->name, s) == 0) {
			*v = e->value;
			return (0);
		}
	}
	names = conf_enum_names(values);
	xasprintf(why, "expected %s, not \"%s\"", names, s);
	free(names);
	return (-1);
}

/* Set one directive's value(s) on cs->base. */
static int
conf_set(void *base, const struct conf_entry *ce, int argc, char **argv,
    char **why)
{
	char		*field = (char *)base + ce->offset;
	char		*s, **list;
	char		 lo[32], hi[32];
	long long	 n;
	int		 i, port;

	if (ce->type != CONF_WORDS && ce->type != CONF_LINE && argc > 1) {
		xasprintf(why, "unexpected extra value \"%s\"", argv[1]);
		return (-1);
	}

	switch (ce->type) {
	case CONF_STRING:
		if (ce->check != NULL) {
			if (ce->check(argv[0], &s, why) != 0)
				return (-1);
		} else
			s = xstrdup(argv[0]);
		free(*(char **)field);
		*(char **)field = s;
		return (0);
	case CONF_HOSTPORT:
		if (conf_parse_hostport(argv[0], -1, &s, &port, why) != 0)
			return (-1);
		if (port < ce->min || port > ce->max) {
			xasprintf(why, "port %d out of range (%lld to %lld)",
			    port, ce->min, ce->max);
			free(s);
			return (-1);
		}
		free(*(char **)field);
		*(char **)field = s;
		*(int *)((char *)base + ce->offset2) = port;
		return (0);
	case CONF_INTEGER:
	case CONF_SIZE:
	case CONF_SECONDS:
	case CONF_MILLISECONDS:
		if (conf_parse_number(ce->type, argv[0], &n, why) != 0)
			return (-1);
		if (n < ce->min || n > ce->max) {
			conf_format_number(ce->type, ce->min, lo, sizeof lo);
			conf_format_number(ce->type, ce->max, hi, sizeof hi);
			xasprintf(why, "%s out of range (%s to %s)", argv[0],
			    lo, hi);
			return (-1);
		}
		*(long long *)field = n;
		return (0);
	case CONF_BOOL:
	case CONF_ENUM:
		return (conf_parse_enum(ce->values, argv[0], (int *)field,
		    why));
	case CONF_WORDS:
		list = xcalloc(argc + 1, sizeof *list);
		for (i = 0; i < argc; i++) {
			if (ce->check == NULL)
				list[i] = xstrdup(argv[i]);
			else if (ce->check(argv[i], &list[i], why) != 0) {
				xfree_words(list);
				return (-1);
			}
		}
		xfree_words(*(char ***)field);
		*(char ***)field = list;
		*(size_t *)((char *)base + ce->offset2) = argc;
		return (0);
	case CONF_CUSTOM:
		return (ce->parse(base, ce, argv[0], why));
	case CONF_LINE:
		return (ce->line(base, ce, argc, argv, why));
	case CONF_BLOCK:
		break;
	}
	xasprintf(why, "cannot be set");
	return (-1);
}

/* Set every directive of a table that has a default. */
static void
conf_set_defaults(void *base, const struct conf_entry *entries, size_t n)
{
	const struct conf_entry	*ce;
	char			*why, *def;
	size_t			 i;

	for (i = 0; i < n; i++) {
		ce = &entries[i];
		if (ce->type == CONF_WORDS && ce->def == NULL) {
			*(char ***)((char *)base + ce->offset) =
			    xcalloc(1, sizeof (char *));
			continue;
		}
		if (ce->def == NULL)
			continue;
		def = (char *)ce->def;
		if (conf_set(base, ce, 1, &def, &why) != 0)
			fatalx("conf: default of %s: %s", ce->name, why);
	}
}

/* Look a directive up in cs and apply it. */
static int
conf_apply(struct conf_scope *cs, const struct conf_directive *cd,
    const char *file, char **cause)
{
	const struct conf_entry	*ce = NULL;
	const char		*name = cd->argv[0];
	char			*why;
	size_t			 i;

	for (i = 0; i < cs->nentries; i++) {
		if (strcmp(cs->entries[i].name, name) == 0) {
			ce = &cs->entries[i];
			break;
		}
	}
	if (ce == NULL) {
		xasprintf(cause, "%s:%d: unknown directive \"%s\"", file,
		    cd->line, name);
		return (-1);
	}

	if (ce->type == CONF_BLOCK) {
		if (!cd->has_block) {
			xasprintf(cause, "%s:%d: %s: expected \"%s %s\"", file,
			    cd->line, name, name, ce->args);
			return (-1);
		}
		return (ce->block(cs->base, ce, cd, file, cause));
	}
	if (cd->has_block) {
		xasprintf(cause, "%s:%d: %s does not take a block", file,
		    cd->line, name);
		return (-1);
	}
	if (cs->seen[i] != 0 && (ce->flags & CONF_REPEAT) == 0) {
		xasprintf(cause, "%s:%d: duplicate %s (first set on line %d)",
		    file, cd->line, name, cs->seen[i]);
		return (-1);
	}
	if (cs->seen[i] == 0)
		cs->seen[i] = cd->line;
	if (cd->argc < 2) {
		xasprintf(cause, "%s:%d: %s: missing value", file, cd->line,
		    name);
		return (-1);
	}
	if (conf_set(cs->base, ce, cd->argc - 1, cd->argv + 1, &why) != 0) {
		xasprintf(cause, "%s:%d: %s: %s", file, cd->line, name, why);
		free(why);
		return (-1);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * Directives with their own syntax.
 */

static int
conf_check_path(const char *s, char **value, char **why)
{
	const char	*p;

	if (*s != '/') {
		xasprintf(why, "path must start with \"/\", not \"%s\"", s);
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if (*p == '?' || *p == '#' || *p == ' ' || *p == '\t') {
			xasprintf(why, "invalid path \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* "stderr", or an absolute path to a file (not checked before opening). */
static int
conf_check_log_file(const char *s, char **value, char **why)
{
	if (strcmp(s, "stderr") != 0 && *s != '/') {
		xasprintf(why, "log_file must be stderr or an absolute path, "
		    "not \"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

static int
conf_check_key_file(const char *s, char **value, char **why)
{
	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (*s != '/') {
		xasprintf(why, "a key file must be none or an absolute path, "
		    "not \"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/*
 * Parse an origin as a browser sends it, http[s]://HOST[:PORT], and write
 * its canonical form to buf (CONF_ORIGIN_MAX bytes): scheme and host in
 * lower case, an IPv6 address in its shortest form, the scheme's default
 * port left out. *loopback says whether HOST is localhost, 127.0.0.1 or
 * [::1].
 */
static int
conf_origin_parse(const char *s, char *buf, int *loopback)
{
	const char	*p, *end, *scheme;
	char		 host[CONF_HOST_MAX + 3], a6[INET6_ADDRSTRLEN];
	struct in6_addr	 in6;
	size_t		 n;
	int		 port, dflt;

	if (strncasecmp(s, "http://", 7) == 0) {
		scheme = "http";
		dflt = 80;
		p = s + 7;
	} else if (strncasecmp(s, "https://", 8) == 0) {
		scheme = "https";
		dflt = 443;
		p = s + 8;
	} else
		return (-1);

	if (*p == '[') {
		if ((end = strchr(p, ']')) == NULL)
			return (-1);
		n = end - p - 1;
		if (n == 0 || n >= sizeof a6)
			return (-1);
		memcpy(a6, p + 1, n);
		a6[n] = '\0';
		if (inet_pton(AF_INET6, a6, &in6) != 1 ||
		    inet_ntop(AF_INET6, &in6, a6, sizeof a6) == NULL)
			return (-1);
		snprintf(host, sizeof host, "[%s]", a6);
		p = end + 1;
	} else {
		for (n = 0; conf_host_char(*p); p++) {
			if (n == CONF_HOST_MAX)
				return (-1);
			host[n++] = tolower((u_char)*p);
		}
		if (n == 0 || host[0] == '-' || host[0] == '.')
			return (-1);
		host[n] = '\0';
	}

	port = dflt;
	if (*p == ':') {
		if (conf_parse_port(p + 1, &port) != 0 || port == 0)
			return (-1);
	} else if (*p != '\0')
		return (-1);

	if (port == dflt)
		snprintf(buf, CONF_ORIGIN_MAX, "%s://%s", scheme, host);
	else
		snprintf(buf, CONF_ORIGIN_MAX, "%s://%s:%d", scheme, host,
		    port);
	*loopback = (strcmp(host, "localhost") == 0 ||
	    strcmp(host, "127.0.0.1") == 0 || strcmp(host, "[::1]") == 0);
	return (0);
}

static int
conf_check_origin(const char *s, char **value, char **why)
{
	char	buf[CONF_ORIGIN_MAX];
	int	loopback;

	if (strchr(s, '*') != NULL) {
		xasprintf(why, "invalid origin \"%s\" (no wildcards: list "
		    "each origin)", s);
		return (-1);
	}
	if (conf_origin_parse(s, buf, &loopback) != 0) {
		xasprintf(why, "invalid origin \"%s\" (expected "
		    "http://HOST[:PORT] or https://HOST[:PORT])", s);
		return (-1);
	}
	*value = xstrdup(buf);
	return (0);
}

/* memory | redis://HOST[:PORT][/DB] */
static int
conf_parse_eventlog(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf	*conf = base;
	const char	*p, *slash, *db;
	char		*hostport, *host, *sub;
	int		 port, n;

	if (strcmp(s, "memory") == 0) {
		conf->eventlog = CONF_EVENTLOG_MEMORY;
		free(conf->redis_host);
		conf->redis_host = NULL;
		conf->redis_port = CONF_REDIS_PORT;
		conf->redis_db = 0;
		return (0);
	}
	if (strncasecmp(s, "redis://", 8) != 0) {
		xasprintf(why, "expected memory or redis://HOST[:PORT][/DB], "
		    "not \"%s\"", s);
		return (-1);
	}

	p = s + 8;
	if ((slash = strchr(p, '/')) == NULL)
		slash = p + strlen(p);
	hostport = xstrndup(p, slash - p);
	n = conf_parse_hostport(hostport, CONF_REDIS_PORT, &host, &port, &sub);
	free(hostport);
	if (n != 0) {
		xasprintf(why, "invalid redis URL \"%s\" (%s)", s, sub);
		free(sub);
		return (-1);
	}
	if (port == 0) {
		xasprintf(why, "invalid redis URL \"%s\" (port 0)", s);
		free(host);
		return (-1);
	}

	n = 0;
	if (*slash == '/') {
		db = slash + 1;
		if (*db == '\0' || strlen(db) > 2 ||
		    strspn(db, "0123456789") != strlen(db) ||
		    (n = atoi(db)) > CONF_REDIS_DB_MAX) {
			xasprintf(why, "invalid redis URL \"%s\" (database "
			    "must be 0 to %d)", s, CONF_REDIS_DB_MAX);
			free(host);
			return (-1);
		}
	}

	conf->eventlog = CONF_EVENTLOG_REDIS;
	free(conf->redis_host);
	conf->redis_host = host;
	conf->redis_port = port;
	conf->redis_db = n;
	return (0);
}

/* primary | replicas:N */
static int
conf_parse_commit(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf	*conf = base;
	const char	*p;
	size_t		 len;
	int		 n;

	if (strcmp(s, "primary") == 0) {
		conf->commit_replicas = 0;
		return (0);
	}
	if (strncmp(s, "replicas:", 9) == 0) {
		p = s + 9;
		len = strlen(p);
		if (len > 0 && len <= 2 && strspn(p, "0123456789") == len) {
			n = atoi(p);
			if (n >= 1 && n <= CONF_REPLICAS_MAX) {
				conf->commit_replicas = n;
				return (0);
			}
		}
	}
	xasprintf(why, "expected primary or replicas:N (N 1 to %d), not "
	    "\"%s\"", CONF_REPLICAS_MAX, s);
	return (-1);
}

static int
conf_parse_log_level(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf	*conf = base;
	enum log_level	 level;

	if (log_level_parse(s, &level) != 0) {
		xasprintf(why, "expected %s, not \"%s\"", ce->args, s);
		return (-1);
	}
	conf->log_level = level;
	return (0);
}

/* ---------------------------------------------------------------------
 * Tool blocks: tool NAME { ... }.
 */

/* Letters, digits and the characters of extra; at least one, at most max. */
static int
conf_name_ok(const char *s, const char *extra, size_t max)
{
	size_t	len = strlen(s), i;

	if (len == 0 || len > max)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((u_char)s[i]) && strchr(extra, s[i]) == NULL)
			return (0);
	}
	return (1);
}

static int
conf_param_name_ok(const char *s)
{
	return (conf_name_ok(s, "_-", CONF_PARAM_NAME_MAX) &&
	    !isdigit((u_char)*s) && *s != '-');
}

/*
 * The index of the param a word "{NAME}" refers to; -1 if NAME is not a
 * param of the tool, -2 if the word is not of that form.
 */
static int
conf_tool_param_ref(const struct conf_tool *tool, const char *word)
{
	size_t	len = strlen(word), i;
	char	name[CONF_PARAM_NAME_MAX + 1];

	if (len < 3 || len - 2 > CONF_PARAM_NAME_MAX || word[0] != '{' ||
	    word[len - 1] != '}')
		return (-2);
	memcpy(name, word + 1, len - 2);
	name[len - 2] = '\0';
	if (!conf_param_name_ok(name))
		return (-2);
	for (i = 0; i < tool->nparams; i++) {
		if (strcmp(tool->params[i].name, name) == 0)
			return ((int)i);
	}
	return (-1);
}

static void
conf_tool_clear(struct conf_tool *tool)
{
	size_t	i;

	free(tool->name);
	free(tool->description);
	for (i = 0; i < tool->nparams; i++) {
		free(tool->params[i].name);
		free(tool->params[i].description);
	}
	free(tool->params);
	free(tool->program);
	xfree_words(tool->argv);
	free(tool->argv_param);
	xfree_words(tool->env);
	free(tool->cwd);
	free(tool->scope);
	memset(tool, 0, sizeof *tool);
}

/* An absolute path to an existing directory. */
static int
conf_check_dir(const char *s, char **value, char **why)
{
	struct stat	sb;

	if (*s != '/') {
		xasprintf(why, "\"%s\" is not an absolute path", s);
		return (-1);
	}
	if (stat(s, &sb) != 0) {
		xasprintf(why, "\"%s\": %s", s, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(sb.st_mode)) {
		xasprintf(why, "\"%s\" is not a directory", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* NAME=VALUE onto an environment list; each NAME once. */
static int
conf_env_add(char ***env, size_t *nenv, const char *s, char **why)
{
	const char	*eq = strchr(s, '=');
	size_t		 n, i;

	if (eq == NULL) {
		xasprintf(why, "expected NAME=VALUE, not \"%s\"", s);
		return (-1);
	}
	n = eq - s;
	if (n == 0 || isdigit((u_char)*s) || strspn(s,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
	    != n) {
		xasprintf(why, "invalid variable name \"%.*s\" (letters, "
		    "digits and \"_\", not starting with a digit)", (int)n, s);
		return (-1);
	}
	for (i = 0; i < *nenv; i++) {
		if (strncmp((*env)[i], s, n + 1) == 0) {
			xasprintf(why, "%.*s is set twice", (int)n, s);
			return (-1);
		}
	}
	*env = xrealloc(*env, (*nenv + 2) * sizeof **env);
	(*env)[(*nenv)++] = xstrdup(s);
	(*env)[*nenv] = NULL;
	return (0);
}

/* env NAME=VALUE; each NAME once per tool. */
static int
conf_parse_env(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf_tool	*tool = base;

	return (conf_env_add(&tool->env, &tool->nenv, s, why));
}

/* param NAME TYPE [required] [STRING] */
static int
conf_line_param(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_tool	*tool = base;
	struct conf_param	 param;
	char			*names;
	int			 type, i = 2;
	size_t			 j;

	if (argc < 2) {
		xasprintf(why, "expected \"param %s\"", ce->args);
		return (-1);
	}
	if (!conf_param_name_ok(argv[0])) {
		xasprintf(why, "invalid name \"%s\" (letters, digits, \"_\" "
		    "and \"-\", starting with a letter or \"_\", at most %d)",
		    argv[0], CONF_PARAM_NAME_MAX);
		return (-1);
	}
	for (j = 0; j < tool->nparams; j++) {
		if (strcmp(tool->params[j].name, argv[0]) == 0) {
			xasprintf(why, "%s is declared twice", argv[0]);
			return (-1);
		}
	}
	if (conf_parse_enum(conf_param_types, argv[1], &type, why) != 0) {
		free(*why);
		names = conf_enum_names(conf_param_types);
		xasprintf(why, "type of %s: expected %s, not \"%s\"", argv[0],
		    names, argv[1]);
		free(names);
		return (-1);
	}
	memset(&param, 0, sizeof param);
	param.type = type;
	if (i < argc && strcmp(argv[i], "required") == 0) {
		param.required = 1;
		i++;
	}
	if (i < argc)
		param.description = xstrdup(argv[i++]);
	if (i < argc) {
		xasprintf(why, "unexpected extra value \"%s\"", argv[i]);
		free(param.description);
		return (-1);
	}
	param.name = xstrdup(argv[0]);
	tool->params = xrealloc(tool->params,
	    (tool->nparams + 1) * sizeof *tool->params);
	tool->params[tool->nparams++] = param;
	return (0);
}

/* Whether path is a regular file we may execute; else *why says why not. */
static int
conf_check_program(const char *path, char **why)
{
	struct stat	sb;

	if (stat(path, &sb) != 0) {
		xasprintf(why, "program \"%s\": %s", path, strerror(errno));
		return (-1);
	}
	if (!S_ISREG(sb.st_mode)) {
		xasprintf(why, "program \"%s\" is not a regular file", path);
		return (-1);
	}
	if (access(path, X_OK) != 0) {
		xasprintf(why, "program \"%s\" is not executable", path);
		return (-1);
	}
	return (0);
}

/*
 * An absolute path as it is, or a name looked up in PATH as a shell would
 * (relative directories in PATH are skipped).
 */
static int
conf_find_program(const char *name, char **path, char **why)
{
	const char	*search, *p, *end;
	char		*candidate, *sub;
	size_t		 n;

	if (strchr(name, '/') != NULL) {
		if (*name != '/') {
			xasprintf(why, "program must be an absolute path or a "
			    "name found in PATH, not \"%s\"", name);
			return (-1);
		}
		if (conf_check_program(name, why) != 0)
			return (-1);
		*path = xstrdup(name);
		return (0);
	}
	if ((search = getenv("PATH")) == NULL || *search == '\0')
		search = CONF_DEFAULT_PATH;
	for (p = search; *p != '\0'; p = end) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		n = end - p;
		if (*end == ':')
			end++;
		if (n == 0 || *p != '/')
			continue;
		xasprintf(&candidate, "%.*s/%s", (int)n, p, name);
		if (conf_check_program(candidate, &sub) == 0) {
			*path = candidate;
			return (0);
		}
		free(sub);
		free(candidate);
	}
	xasprintf(why, "program \"%s\" not found in PATH (%s)", name, search);
	return (-1);
}

/* exec PROGRAM [ARG...]; "{NAME}" words are resolved after the block. */
static int
conf_line_exec(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_tool	*tool = base;
	char			*path;
	int			 i;

	if (conf_tool_param_ref(tool, argv[0]) != -2) {
		xasprintf(why, "PROGRAM cannot be an argument (%s)", argv[0]);
		return (-1);
	}
	if (conf_find_program(argv[0], &path, why) != 0)
		return (-1);
	tool->program = path;
	tool->argc = argc;
	tool->argv = xcalloc(argc + 1, sizeof *tool->argv);
	tool->argv_param = xcalloc(argc, sizeof *tool->argv_param);
	for (i = 0; i < argc; i++) {
		tool->argv[i] = xstrdup(argv[i]);
		tool->argv_param[i] = -1;
	}
	return (0);
}

/* The line tool NAME was declared on, 0 if it was not (yet). */
static int
conf_tool_line(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->ntools; i++) {
		if (strcmp(conf->tools[i].name, name) == 0)
			return (conf->tools[i].line);
	}
	return (0);
}

/*
 * tool NAME { ... }: the block's lines go through conf_apply with the tool
 * table, then come the checks that need the whole block.
 */
static int
conf_block_tool(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_tool	 tool;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_tool_entries)];
	int			 line, ref;
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: tool: expected \"tool %s\"", file,
		    cd->line, ce->args);
		return (-1);
	}
	if (!conf_name_ok(cd->argv[1], "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(cause, "%s:%d: tool: invalid name \"%s\" (1 to %d "
		    "letters, digits, \"_\", \"-\" or \".\")", file, cd->line,
		    cd->argv[1], CONF_TOOL_NAME_MAX);
		return (-1);
	}
	if ((line = conf_tool_line(conf, cd->argv[1])) != 0) {
		xasprintf(cause, "%s:%d: duplicate tool %s (first declared on "
		    "line %d)", file, cd->line, cd->argv[1], line);
		return (-1);
	}

	memset(&tool, 0, sizeof tool);
	tool.name = xstrdup(cd->argv[1]);
	tool.line = cd->line;
	conf_set_defaults(&tool, conf_tool_entries,
	    CONF_NITEMS(conf_tool_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_tool_entries;
	cs.nentries = CONF_NITEMS(conf_tool_entries);
	cs.base = &tool;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}

	if ((line = conf_scope_line(&cs, "exec")) == 0) {
		xasprintf(cause, "%s:%d: tool %s: missing \"exec PROGRAM "
		    "[ARG...]\"", file, cd->line, tool.name);
		goto fail;
	}
	for (i = 1; i < tool.argc; i++) {
		if ((ref = conf_tool_param_ref(&tool, tool.argv[i])) == -1) {
			xasprintf(cause, "%s:%d: exec: %s is not a param of "
			    "tool %s", file, line, tool.argv[i], tool.name);
			goto fail;
		}
		tool.argv_param[i] = ref < 0 ? -1 : ref;
	}

	conf->tools = xrealloc(conf->tools,
	    (conf->ntools + 1) * sizeof *conf->tools);
	conf->tools[conf->ntools++] = tool;
	return (0);

fail:
	conf_tool_clear(&tool);
	return (-1);
}

/* ---------------------------------------------------------------------
 * The auth block: auth { ... }.
 */

#define CONF_URL_MAX		2048
#define CONF_SECRET_MAX		4096

/*
 * An absolute http or https URL with a host and no fragment: what the
 * metadata documents and the outbound requests need. http is allowed for
 * loopback set-ups and tests; docs/authorization.md says to use https.
 */
static int
conf_check_url(const char *s, char **value, char **why)
{
	const char	*p;
	size_t		 len = strlen(s);

	if (strncasecmp(s, "https://", 8) == 0)
		p = s + 8;
	else if (strncasecmp(s, "http://", 7) == 0)
		p = s + 7;
	else {
		xasprintf(why, "\"%s\" is not an http:// or https:// URL", s);
		return (-1);
	}
	if (len > CONF_URL_MAX || *p == '\0' || *p == '/' || *p == ':' ||
	    strchr(s, '#') != NULL) {
		xasprintf(why, "invalid URL \"%s\" (a host is needed, no "
		    "fragment, at most %d bytes)", s, CONF_URL_MAX);
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if ((u_char)*p <= 0x20 || (u_char)*p >= 0x7f || *p == '"' ||
		    *p == '\\') {
			xasprintf(why, "invalid character in URL \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* An absolute path to a regular file mcpd can read now. */
static int
conf_check_file(const char *s, char **value, char **why)
{
	struct stat	sb;

	if (*s != '/') {
		xasprintf(why, "\"%s\" is not an absolute path", s);
		return (-1);
	}
	if (stat(s, &sb) != 0 || access(s, R_OK) != 0) {
		xasprintf(why, "\"%s\": %s", s, strerror(errno));
		return (-1);
	}
	if (!S_ISREG(sb.st_mode)) {
		xasprintf(why, "\"%s\" is not a regular file", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

int
conf_scope_ok(const char *s)
{
	const u_char	*p;

	if (*s == '\0' || strlen(s) > 256)
		return (0);
	for (p = (const u_char *)s; *p != '\0'; p++) {
		if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\\')
			return (0);
	}
	return (1);
}

static int
conf_check_scope(const char *s, char **value, char **why)
{
	if (!conf_scope_ok(s)) {
		xasprintf(why, "invalid scope \"%s\" (printable ASCII, no "
		    "blank, quote or backslash, at most 256)", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* The first line of a secret file, without its newline. */
static int
conf_read_secret(const char *path, char **secret, char **why)
{
	FILE	*f;
	char	 buf[CONF_SECRET_MAX + 2];
	size_t	 len;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(why, "\"%s\": %s", path, strerror(errno));
		return (-1);
	}
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (len == 0 || len > CONF_SECRET_MAX) {
		xasprintf(why, "\"%s\": the secret must be one line of 1 to "
		    "%d bytes", path, CONF_SECRET_MAX);
		return (-1);
	}
	*secret = xstrdup(buf);
	explicit_bzero(buf, sizeof buf);
	return (0);
}

/* introspection URL [CLIENT_ID CLIENT_SECRET_FILE] */
static int
conf_line_introspection(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_auth	*auth = base;
	char			*url, *path, *secret;

	if (argc != 1 && argc != 3) {
		xasprintf(why, "expected \"introspection %s\"", ce->args);
		return (-1);
	}
	if (conf_check_url(argv[0], &url, why) != 0)
		return (-1);
	if (argc == 3) {
		if (conf_check_file(argv[2], &path, why) != 0) {
			free(url);
			return (-1);
		}
		free(path);
		if (conf_read_secret(argv[2], &secret, why) != 0) {
			free(url);
			return (-1);
		}
		if (strchr(argv[1], ':') != NULL || *argv[1] == '\0') {
			xasprintf(why, "invalid client id \"%s\"", argv[1]);
			free(url);
			free(secret);
			return (-1);
		}
		auth->client_id = xstrdup(argv[1]);
		auth->client_secret = secret;
	}
	auth->introspection = url;
	return (0);
}

static void
conf_auth_free(struct conf_auth *auth)
{
	const struct conf_entry	*ce;
	char			*field;
	size_t			 i;

	if (auth == NULL)
		return;
	for (i = 0; i < CONF_NITEMS(conf_auth_entries); i++) {
		ce = &conf_auth_entries[i];
		field = (char *)auth + ce->offset;
		if (ce->type == CONF_STRING)
			free(*(char **)field);
		else if (ce->type == CONF_WORDS)
			xfree_words(*(char ***)field);
	}
	free(auth->introspection);
	free(auth->client_id);
	if (auth->client_secret != NULL) {
		explicit_bzero(auth->client_secret,
		    strlen(auth->client_secret));
		free(auth->client_secret);
	}
	free(auth);
}

static int
conf_block_auth(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_auth	*auth;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_auth_entries)];
	size_t			 i;

	if (cd->argc != 1) {
		xasprintf(cause, "%s:%d: auth: expected \"auth {\"", file,
		    cd->line);
		return (-1);
	}
	if (conf->auth != NULL) {
		xasprintf(cause, "%s:%d: duplicate auth (first set on line %d)",
		    file, cd->line, conf->auth->line);
		return (-1);
	}
	auth = xcalloc(1, sizeof *auth);
	auth->line = cd->line;
	conf_set_defaults(auth, conf_auth_entries,
	    CONF_NITEMS(conf_auth_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_auth_entries;
	cs.nentries = CONF_NITEMS(conf_auth_entries);
	cs.base = auth;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}
	if (auth->resource == NULL) {
		xasprintf(cause, "%s:%d: auth: missing \"resource URI\"", file,
		    cd->line);
		goto fail;
	}
	if (auth->nauthorization_servers == 0) {
		xasprintf(cause, "%s:%d: auth: missing \"authorization_server "
		    "URL...\"", file, cd->line);
		goto fail;
	}
	if (auth->jwks_file == NULL && auth->jwks_uri == NULL &&
	    auth->introspection == NULL && auth->token_file == NULL) {
		xasprintf(cause, "%s:%d: auth: no way to check a token (set "
		    "jwks_file, jwks_uri, introspection or token_file)", file,
		    cd->line);
		goto fail;
	}
	if (auth->issuer == NULL)
		auth->issuer = xstrdup(auth->authorization_servers[0]);
	conf->auth = auth;
	return (0);

fail:
	conf_auth_free(auth);
	return (-1);
}

/* ---------------------------------------------------------------------
 * Upstream blocks: upstream NAME { ... }.
 */

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
	memset(up, 0, sizeof *up);
}

/* Names as tool names are, or "" for no prefix. */
static int
conf_check_prefix(const char *s, char **value, char **why)
{
	if (*s != '\0' && !conf_name_ok(s, "_-.", CONF_PREFIX_MAX)) {
		xasprintf(why, "invalid prefix \"%s\" (up to %d letters, "
		    "digits, \"_\", \"-\" or \".\")", s, CONF_PREFIX_MAX);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/*
 * http://HOST[:PORT][/PATH] or https://...: http_client.c speaks both
 * (https verified against the system's trust store).
 */
static int
conf_check_upstream_url(const char *s, char **value, char **why)
{
	const char	*host;
	size_t		 i;

	if (strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else {
		xasprintf(why, "\"%s\" is not an http:// or https:// URL", s);
		return (-1);
	}
	if (*host == '\0' || *host == '/' || *host == ':') {
		xasprintf(why, "\"%s\" has no host", s);
		return (-1);
	}
	for (i = 0; s[i] != '\0'; i++) {
		if ((u_char)s[i] <= ' ' || (u_char)s[i] >= 0x7f) {
			xasprintf(why, "\"%s\" has a blank or non-ASCII "
			    "character", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

static int
conf_parse_upstream_env(void *base, const struct conf_entry *ce,
    const char *s, char **why)
{
	struct conf_upstream	*up = base;

	return (conf_env_add(&up->env, &up->nenv, s, why));
}

/* exec PROGRAM [ARG...], as written: no argument substitution here. */
static int
conf_line_upstream_exec(void *base, const struct conf_entry *ce, int argc,
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

static int
conf_block_upstream(void *base, const struct conf_entry *ce,
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

/* The line a directive of cs was set on, 0 if it was not. */
static int
conf_scope_line(struct conf_scope *cs, const char *name)
{
	size_t	i;

	for (i = 0; i < cs->nentries; i++) {
		if (strcmp(cs->entries[i].name, name) == 0)
			return (cs->seen[i]);
	}
	return (0);
}

/* Tool names against the built-in ones, once builtin_tools is known. */
static int
conf_check_tools(struct conf *conf, const char *file, char **cause)
{
	size_t	i, j;

	for (i = 0; conf->builtin_tools && i < conf->ntools; i++) {
		for (j = 0; j < CONF_NITEMS(conf_builtin_tools); j++) {
			if (strcmp(conf->tools[i].name,
			    conf_builtin_tools[j]) != 0)
				continue;
			xasprintf(cause, "%s:%d: tool %s: the name is taken by "
			    "a built-in tool (builtin_tools is on)", file,
			    conf->tools[i].line, conf->tools[i].name);
			return (-1);
		}
	}
	return (0);
}

/*
 * The block window against retention (DESIGN.md, invariant 5: written is
 * not received). A producer runs at most stream_window entries past what
 * its client's connection acknowledged (view.c). What a proxy or the
 * client's own socket acknowledged and did not hand on is invisible here
 * and lost at a cut, and the client resumes from before it: retention must
 * keep that too. So the window is at most half of stream_maxlen, and the
 * other half is room for as much again in flight (an intermediary holding
 * up to a window of events at the cut). Unset, the window is the table's
 * default (256), or half of stream_maxlen when that is less. A
 * stream_maxlen below 2 leaves no room for a window of one.
 *
 * file and maxlen_line name where stream_maxlen was set; running says the
 * stream_maxlen is the running one (a reload keeps it).
 */
static int
conf_check_window(struct conf *conf, const char *file, int maxlen_line,
    int running, char **cause)
{
	long long	most = conf->stream_maxlen / 2;

	if (conf->stream_window_line == 0 && conf->stream_window > most)
		conf->stream_window = most;
	if (most < 1) {
		xasprintf(cause, "%s:%d: stream_maxlen (%lld) leaves no room "
		    "for events in flight: stream_window may be at most half "
		    "of it and is at least 1, so stream_maxlen must be at "
		    "least 2", file, maxlen_line, conf->stream_maxlen);
		return (-1);
	}
	if (conf->stream_window > most) {
		xasprintf(cause, "%s:%d: stream_window (%lld) leaves too "
		    "little room for events in flight: it may be at most half "
		    "of %sstream_maxlen (%lld), %lld", file,
		    conf->stream_window_line, conf->stream_window,
		    running ? "the running " : "", conf->stream_maxlen, most);
		return (-1);
	}
	return (0);
}

/* Checks that involve more than one directive, once all are read. */
static int
conf_check(struct conf *conf, struct conf_scope *cs, const char *file,
    char **cause)
{
	conf->stream_window_line = conf_scope_line(cs, "stream_window");
	if (conf_check_window(conf, file, conf_scope_line(cs,
	    "stream_maxlen"), 0, cause) != 0)
		return (-1);
	return (conf_check_tools(conf, file, cause));
}

/* ---------------------------------------------------------------------
 * Public interface.
 */

struct conf *
conf_default(void)
{
	struct conf	*conf;

	conf = xcalloc(1, sizeof *conf);
	conf->refs = 1;
	conf_set_defaults(conf, conf_entries, CONF_NITEMS(conf_entries));
	return (conf);
}

/*
 * Another holder of a configuration: a reload replaces server.conf while
 * running exec calls still use their tool's definition from the one they
 * started with. Each holder calls conf_free once; the last one frees.
 */
const struct conf *
conf_ref(const struct conf *conf)
{
	((struct conf *)conf)->refs++;
	return (conf);
}

/* A holder's conf_free, for the const pointer conf_ref gave it. */
void
conf_release(const struct conf *conf)
{
	conf_free((struct conf *)conf);
}

static int
conf_str_differ(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != b);
	return (strcmp(a, b) != 0);
}

static void
conf_str_keep(char **dst, const char *src)
{
	free(*dst);
	*dst = src != NULL ? xstrdup(src) : NULL;
}

static int
conf_words_differ(char **a, size_t na, char **b, size_t nb)
{
	size_t	i;

	if (na != nb)
		return (1);
	for (i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0)
			return (1);
	}
	return (0);
}

static char **
conf_words_copy(char **list, size_t n)
{
	char	**copy;
	size_t	  i;

	copy = xcalloc(n + 1, sizeof *copy);
	for (i = 0; i < n; i++)
		copy[i] = xstrdup(list[i]);
	return (copy);
}

/* Whether two auth blocks say different things (file contents aside). */
static int
conf_auth_differ(const struct conf_auth *a, const struct conf_auth *b)
{
	if (a == NULL || b == NULL)
		return (a != b);
	return (conf_str_differ(a->resource, b->resource) ||
	    conf_str_differ(a->issuer, b->issuer) ||
	    conf_str_differ(a->jwks_file, b->jwks_file) ||
	    conf_str_differ(a->jwks_uri, b->jwks_uri) ||
	    conf_str_differ(a->introspection, b->introspection) ||
	    conf_str_differ(a->client_id, b->client_id) ||
	    conf_str_differ(a->client_secret, b->client_secret) ||
	    conf_str_differ(a->token_file, b->token_file) ||
	    conf_words_differ(a->authorization_servers,
	    a->nauthorization_servers, b->authorization_servers,
	    b->nauthorization_servers) ||
	    conf_words_differ(a->scopes, a->nscopes, b->scopes, b->nscopes) ||
	    a->leeway != b->leeway || a->max_token != b->max_token ||
	    a->jwks_cache != b->jwks_cache ||
	    a->jwks_refresh_min != b->jwks_refresh_min ||
	    a->cache_max != b->cache_max || a->max_pending != b->max_pending ||
	    a->timeout != b->timeout);
}

static char *
conf_str_copy(const char *s)
{
	return (s != NULL ? xstrdup(s) : NULL);
}

static struct conf_auth *
conf_auth_copy(const struct conf_auth *a)
{
	struct conf_auth	*c;

	if (a == NULL)
		return (NULL);
	c = xmalloc(sizeof *c);
	*c = *a;
	c->resource = conf_str_copy(a->resource);
	c->authorization_servers = conf_words_copy(a->authorization_servers,
	    a->nauthorization_servers);
	c->issuer = conf_str_copy(a->issuer);
	c->jwks_file = conf_str_copy(a->jwks_file);
	c->jwks_uri = conf_str_copy(a->jwks_uri);
	c->introspection = conf_str_copy(a->introspection);
	c->client_id = conf_str_copy(a->client_id);
	c->client_secret = conf_str_copy(a->client_secret);
	c->scopes = conf_words_copy(a->scopes, a->nscopes);
	c->token_file = conf_str_copy(a->token_file);
	return (c);
}

/*
 * A reload: the directives a running process cannot take up (what it
 * listens on, the event log and what the log was created with) keep the
 * values of old, and their names are put in names (*n of them, at most
 * max). -1 with the reason when what remains is inconsistent.
 */
int
conf_keep_restart_only(struct conf *new, const struct conf *old,
    const char **names, size_t max, size_t *n, char **cause)
{
	*n = 0;
#define CONF_KEEP(name, differ, keep) do {				\
	if (differ) {							\
		keep;							\
		if (*n < max)						\
			names[(*n)++] = name;				\
	}								\
} while (0)
#define CONF_KEEP_NUM(name, f)						\
	CONF_KEEP(name, new->f != old->f, new->f = old->f)

	CONF_KEEP("listen", conf_str_differ(new->listen_host,
	    old->listen_host) || new->listen_port != old->listen_port,
	    (conf_str_keep(&new->listen_host, old->listen_host),
	    new->listen_port = old->listen_port));
	CONF_KEEP("endpoint", conf_str_differ(new->endpoint, old->endpoint),
	    conf_str_keep(&new->endpoint, old->endpoint));
	CONF_KEEP("eventlog", new->eventlog != old->eventlog ||
	    conf_str_differ(new->redis_host, old->redis_host) ||
	    new->redis_port != old->redis_port ||
	    new->redis_db != old->redis_db,
	    (new->eventlog = old->eventlog,
	    conf_str_keep(&new->redis_host, old->redis_host),
	    new->redis_port = old->redis_port, new->redis_db = old->redis_db));
	CONF_KEEP_NUM("commit", commit_replicas);
	CONF_KEEP_NUM("eventlog_outage_grace", eventlog_outage_grace);
	CONF_KEEP_NUM("eventlog_wait", eventlog_wait);
	CONF_KEEP_NUM("stream_maxlen", stream_maxlen);
	CONF_KEEP_NUM("stream_ttl", stream_ttl);
	CONF_KEEP_NUM("session_ttl", session_ttl);
	CONF_KEEP_NUM("session_max_streams", session_max_streams);
	CONF_KEEP("auth", conf_auth_differ(new->auth, old->auth),
	    (conf_auth_free(new->auth), new->auth = conf_auth_copy(old->auth)));
#undef CONF_KEEP_NUM
#undef CONF_KEEP

	/* An unset window is at most half of the stream_maxlen kept. */
	return (conf_check_window(new, new->path, 0, 1, cause));
}

struct conf *
conf_parse_string(const char *text, const char *file, char **cause)
{
	struct conf		*conf;
	struct conf_lexer	 cl;
	struct conf_line	 ln;
	struct conf_directive	 cd;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_entries)];
	int			 r;

	if (file == NULL)
		file = "-";
	conf = conf_default();
	conf->path = xstrdup(file);

	memset(seen, 0, sizeof seen);
	cs.entries = conf_entries;
	cs.nentries = CONF_NITEMS(conf_entries);
	cs.base = conf;
	cs.seen = seen;

	cl.file = file;
	cl.next = text;
	cl.line = 0;
	for (;;) {
		if ((r = conf_lex_line(&cl, &ln, cause)) == -1)
			goto fail;
		if (r == 0)
			break;
		if (ln.close) {
			xasprintf(cause, "%s:%d: unexpected \"}\"", file,
			    ln.line);
			conf_line_clear(&ln);
			goto fail;
		}
		conf_directive_set(&cd, &ln);
		r = 0;
		if (ln.open)
			r = conf_read_block(&cl, &cd, 1, cause);
		if (r == 0)
			r = conf_apply(&cs, &cd, file, cause);
		conf_directive_clear(&cd);
		if (r != 0)
			goto fail;
	}
	if (conf_check(conf, &cs, file, cause) != 0)
		goto fail;
	return (conf);

fail:
	conf_free(conf);
	return (NULL);
}

struct conf *
conf_load(const char *path, char **cause)
{
	FILE		*f;
	struct conf	*conf;
	char		*text;
	size_t		 len, n;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	text = xmalloc(CONF_MAX_FILE + 1);
	len = 0;
	while ((n = fread(text + len, 1, CONF_MAX_FILE + 1 - len, f)) > 0)
		len += n;
	if (ferror(f)) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (len > CONF_MAX_FILE) {
		xasprintf(cause, "%s: file is larger than %d bytes", path,
		    CONF_MAX_FILE);
		goto fail;
	}
	if (memchr(text, '\0', len) != NULL) {
		xasprintf(cause, "%s: file contains a NUL byte", path);
		goto fail;
	}
	text[len] = '\0';
	fclose(f);

	conf = conf_parse_string(text, path, cause);
	free(text);
	return (conf);

fail:
	fclose(f);
	free(text);
	return (NULL);
}

void
conf_free(struct conf *conf)
{
	const struct conf_entry	*ce;
	char			*field;
	size_t			 i;

	if (conf == NULL || --conf->refs > 0)
		return;
	for (i = 0; i < CONF_NITEMS(conf_entries); i++) {
		ce = &conf_entries[i];
		field = (char *)conf + ce->offset;
		if (ce->type == CONF_STRING || ce->type == CONF_HOSTPORT)
			free(*(char **)field);
		else if (ce->type == CONF_WORDS)
			xfree_words(*(char ***)field);
	}
	/* Fields set by custom parsers and blocks. */
	for (i = 0; i < conf->ntools; i++)
		conf_tool_clear(&conf->tools[i]);
	free(conf->tools);
	for (i = 0; i < conf->nupstreams; i++)
		conf_upstream_clear(&conf->upstreams[i]);
	free(conf->upstreams);
	conf_auth_free(conf->auth);
	free(conf->redis_host);
	free(conf->path);
	free(conf);
}

static int
conf_host_loopback(const char *host)
{
	return (strcmp(host, "localhost") == 0 ||
	    strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0);
}

const char *
conf_warning(const struct conf *conf)
{
	if (conf->auth == NULL && conf->ntools > 0 &&
	    !conf_host_loopback(conf->listen_host))
		return ("exec tools are enabled on a listen address that is "
		    "not loopback, and there is no auth block: anyone who "
		    "reaches the port can run them");
	return (NULL);
}

const struct conf_tool *
conf_tool_find(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->ntools; i++) {
		if (strcmp(conf->tools[i].name, name) == 0)
			return (&conf->tools[i]);
	}
	return (NULL);
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

const char *
conf_param_type_name(enum conf_param_type type)
{
	const struct conf_enum	*e;

	for (e = conf_param_types; e->name != NULL; e++) {
		if (e->value == (int)type)
			return (e->name);
	}
	return ("?");
}

/* Log lines from now on go where and as this configuration says. */
int
conf_log_open(const struct conf *conf, char **cause)
{
	log_init(conf->log_level);
	return (log_open(strcmp(conf->log_file, "stderr") == 0 ? NULL :
	    conf->log_file, conf->log_format == CONF_LOG_JSON, cause));
}

int
conf_origin_allowed(const struct conf *conf, const char *origin)
{
	char	buf[CONF_ORIGIN_MAX];
	size_t	i;
	int	loopback;

	if (origin == NULL)
		return (1);
	if (conf_origin_parse(origin, buf, &loopback) != 0)
		return (0);
	if (conf->nallowed_origins == 0)
		return (loopback);
	for (i = 0; i < conf->nallowed_origins; i++) {
		if (strcmp(conf->allowed_origins[i], buf) == 0)
			return (1);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * Documentation from the table.
 */

/* Print text word-wrapped to width columns, each line after prefix. */
static void
conf_print_wrapped(FILE *f, const char *prefix, const char *text,
    size_t width)
{
	const char	*p = text, *word;
	size_t		 col = 0, len;

	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		word = p;
		while (*p != ' ' && *p != '\0')
			p++;
		len = p - word;
		if (col != 0 && col + 1 + len > width) {
			fputc('\n', f);
			col = 0;
		}
		if (col == 0) {
			fputs(prefix, f);
			col = strlen(prefix);
		} else {
			fputc(' ', f);
			col++;
		}
		fwrite(word, 1, len, f);
		col += len;
	}
	if (col != 0)
		fputc('\n', f);
}

/* The words after the directive's name in a synopsis. */
static char *
conf_synopsis(const struct conf_entry *ce)
{
	if (ce->args != NULL)
		return (xstrdup(ce->args));
	switch (ce->type) {
	case CONF_INTEGER:
		return (xstrdup("N"));
	case CONF_SIZE:
		return (xstrdup("BYTES"));
	case CONF_SECONDS:
		return (xstrdup("SECONDS"));
	case CONF_MILLISECONDS:
		return (xstrdup("MILLISECONDS"));
	case CONF_BOOL:
	case CONF_ENUM:
		return (conf_enum_names(ce->values));
	case CONF_WORDS:
		return (xstrdup("WORD..."));
	default:
		return (xstrdup("VALUE"));
	}
}

/* "Default: X (range A to B)", or NULL if there is no default. */
static char *
conf_default_text(const struct conf_entry *ce)
{
	char	*s, lo[32], hi[32];

	if (ce->def == NULL) {
		if (ce->def_text == NULL)
			return (NULL);
		xasprintf(&s, "Default: %s", ce->def_text);
		return (s);
	}
	switch (ce->type) {
	case CONF_INTEGER:
	case CONF_SIZE:
	case CONF_SECONDS:
	case CONF_MILLISECONDS:
		conf_format_number(ce->type, ce->min, lo, sizeof lo);
		conf_format_number(ce->type, ce->max, hi, sizeof hi);
		xasprintf(&s, "Default: %s (range %s to %s)", ce->def, lo, hi);
		break;
	default:
		xasprintf(&s, "Default: %s", ce->def);
		break;
	}
	return (s);
}

/*
 * One directive: synopsis after head, help and default after prefix. A
 * block's own directives follow, each after an empty line (blank), one
 * level further in.
 */
static void
conf_print_entry(FILE *f, const struct conf_entry *ce, const char *head,
    const char *prefix, const char *blank, size_t width)
{
	char	*synopsis, *def, *subprefix;
	size_t	 i;

	synopsis = conf_synopsis(ce);
	fprintf(f, "%s%s %s\n", head, ce->name, synopsis);
	free(synopsis);
	conf_print_wrapped(f, prefix, ce->help, width);
	if ((def = conf_default_text(ce)) != NULL) {
		conf_print_wrapped(f, prefix, def, width);
		free(def);
	}
	if (ce->sub == NULL)
		return;
	xasprintf(&subprefix, "%s  ", prefix);
	for (i = 0; i < ce->nsub; i++) {
		fputs(blank, f);
		conf_print_entry(f, &ce->sub[i], prefix, subprefix, blank,
		    width);
	}
	free(subprefix);
}

/* A block's examples: the commented ones after "# ", then the active. */
static void
conf_print_block_examples(FILE *f, const struct conf_entry *ce)
{
	const char	*p, *end;

	for (p = ce->example; p != NULL && *p != '\0'; p = end + 1) {
		if ((end = strchr(p, '\n')) == NULL)
			end = p + strlen(p);
		if (end == p)
			fputs("#\n", f);
		else
			fprintf(f, "# %.*s\n", (int)(end - p), p);
		if (*end == '\0')
			break;
	}
	if (ce->example_active != NULL)
		fprintf(f, "\n%s", ce->example_active);
}

void
conf_print_example(FILE *f)
{
	const struct conf_entry	*ce;
	const char		*value;
	size_t			 i;

	fputs(
"# mcpd.conf: every directive of mcpd with its help text and default.\n"
"#\n"
"# One directive per line: NAME VALUE... A \"#\" outside double quotes\n"
"# starts a comment that runs to the end of the line. A word in double\n"
"# quotes may hold spaces and \"#\"; inside it, \\\" is a quote and \\\\ a\n"
"# backslash. Sizes take k, m or g (KiB, MiB, GiB); times in seconds take\n"
"# s, m, h or d; times in milliseconds take ms or s. A directive may appear\n"
"# only once.\n"
"#\n"
"# Lines \"#NAME VALUE\" show the default (or an example); remove the \"#\"\n"
"# to change it. This file is generated from the table in src/conf/conf.c.\n",
	    f);
	for (i = 0; i < CONF_NITEMS(conf_entries); i++) {
		ce = &conf_entries[i];
		if (ce->section != NULL)
			fprintf(f, "\n# --- %s ---\n", ce->section);
		fputc('\n', f);
		conf_print_entry(f, ce, "# ", "#   ", "#\n", 76);
		if (ce->type == CONF_BLOCK) {
			fputs("#\n", f);
			conf_print_block_examples(f, ce);
			continue;
		}
		if ((value = ce->example) == NULL)
			value = ce->def;
		if (value == NULL)
			continue;
		if (ce->flags & CONF_EXAMPLE_ACTIVE)
			fprintf(f, "%s %s\n", ce->name, value);
		else
			fprintf(f, "#%s %s\n", ce->name, value);
	}
}

/*
 * roff: a backslash is \e, and a line may not start with "." or "'" (it
 * would be a request); \& before such a line makes it text.
 */
static void
conf_man_text(FILE *f, const char *text)
{
	const char	*p;
	int		 bol = 1;

	for (p = text; *p != '\0'; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", f);
		bol = (*p == '\n');
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
	}
}

/* One directive as a tagged paragraph; a block's own directives inside. */
static void
conf_man_entry(FILE *f, const struct conf_entry *ce)
{
	char	*synopsis, *def;
	size_t	 i;

	synopsis = conf_synopsis(ce);
	fputs(".TP\n\\fB", f);
	conf_man_text(f, ce->name);
	fputs("\\fR \\fI", f);
	conf_man_text(f, synopsis);
	fputs("\\fR\n", f);
	free(synopsis);
	conf_man_text(f, ce->help);
	fputs("\n", f);
	if ((def = conf_default_text(ce)) != NULL) {
		fputs(".br\n", f);
		conf_man_text(f, def);
		fputs("\n", f);
		free(def);
	}
	if (ce->sub == NULL)
		return;
	fputs(".RS\n", f);
	for (i = 0; i < ce->nsub; i++)
		conf_man_entry(f, &ce->sub[i]);
	fputs(".RE\n", f);
}

/* A block's examples, as they appear in the example file, unfilled. */
static void
conf_man_examples(FILE *f, const struct conf_entry *ce)
{
	fputs(".PP\nExamples:\n.PP\n.nf\n.RS\n", f);
	if (ce->example != NULL)
		conf_man_text(f, ce->example);
	if (ce->example_active != NULL) {
		fputs("\n", f);
		conf_man_text(f, ce->example_active);
	}
	fputs(".RE\n.fi\n", f);
}

/* mcpd.conf(5), from the same table as the example file and -h. */
void
conf_print_man(FILE *f, const char *version)
{
	const struct conf_entry	*ce;
	size_t			 i;

	fprintf(f, ".\\\" Generated by mcpd -M from the table in src/conf/conf.c.\n"
	    ".TH MCPD.CONF 5 \"\" \"mcpd %s\" \"File Formats\"\n", version);
	fputs(
".SH NAME\n"
"mcpd.conf \\- configuration file of mcpd\n"
".SH SYNOPSIS\n"
".I /etc/mcpd/mcpd.conf\n"
".SH DESCRIPTION\n"
".BR mcpd (8)\n"
"reads one configuration file, named with\n"
".BR \\-c .\n"
"It holds one directive per line:\n"
".I NAME VALUE...\n"
"A \"#\" outside double quotes starts a comment that runs to the end of\n"
"the line. A word in double quotes may hold spaces and \"#\"; inside it,\n"
"\\e\" is a quote and \\e\\e a backslash. Sizes take k, m or g (KiB, MiB,\n"
"GiB); times in seconds take s, m, h or d; times in milliseconds take ms\n"
"or s. A directive may appear only once, except where it says otherwise.\n"
"A block directive ends its first line with \"{\" and its last with \"}\",\n"
"with one of its own directives on each line in between.\n"
".PP\n"
"An unknown directive, a value out of its range or a malformed line is\n"
"an error that names the file and line;\n"
".B mcpd \\-t \\-c\n"
".I FILE\n"
"checks a file without starting.\n"
".SH DIRECTIVES\n", f);
	for (i = 0; i < CONF_NITEMS(conf_entries); i++) {
		ce = &conf_entries[i];
		if (ce->section != NULL) {
			fputs(".SS ", f);
			conf_man_text(f, ce->section);
			fputs("\n", f);
		}
		conf_man_entry(f, ce);
		if (ce->type == CONF_BLOCK)
			conf_man_examples(f, ce);
	}
	fputs(
".SH FILES\n"
".TP\n"
".I /etc/mcpd/mcpd.conf\n"
"The configuration file the packaged service unit names.\n"
".SH SEE ALSO\n"
".BR mcpd (8)\n", f);
}

void
conf_print_help(FILE *f)
{
	const struct conf_entry	*ce;
	size_t			 i;

	fputs("Configuration file directives (one per line, \"#\" starts a "
	    "comment):\n", f);
	for (i = 0; i < CONF_NITEMS(conf_entries); i++) {
		ce = &conf_entries[i];
		if (ce->section != NULL)
			fprintf(f, "\n%s:\n", ce->section);
		conf_print_entry(f, ce, "  ", "        ", "\n", 79);
	}
}
