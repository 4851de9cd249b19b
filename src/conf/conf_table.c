/*
 * The main directive table: every directive of the file's top level, in
 * the order -h, -M and mcpd.conf.example list them. A row is a name, a
 * type, bounds, a default, an offsetof into struct conf and its help
 * text; the engine (conf.c) parses by it and conf_print.c documents it.
 * The blocks' own directives are in their files' tables (conf_tool.c,
 * conf_auth.c, conf_upstream.c).
 */
#include <stddef.h>

#include "conf_int.h"

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

static const struct conf_enum conf_limit_fallback_values[] = {
	{ "local", CONF_LIMIT_LOCAL },
	{ "refuse", CONF_LIMIT_REFUSE },
	{ NULL, 0 }
};

static const struct conf_enum conf_fixtures_values[] = {
	{ "conformance", 1 },
	{ "off", 0 },
	{ NULL, 0 }
};

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
	  .args = "PATH [{ ... }]", .def = "/mcp", .flags = CONF_EXAMPLE_ACTIVE,
	  .block = conf_endpoint_block, .sub = &conf_endpoint_table,
	  .free = conf_endpoint_free, .done = conf_endpoint_done,
	  .block_example = conf_endpoint_examples,
	  .help = "URL path of the MCP endpoint, where POST, GET and DELETE "
	  "are served. Starts with \"/\". As a block, endpoint PATH { ... } "
	  "is one more endpoint on the same listener, serving what its "
	  "lines select (everything when they select nothing) and, with "
	  "an auth block, with its own resource and required scopes; a "
	  "session belongs to the endpoint that created it (another "
	  "endpoint answers 404 for it), and change notifications reach an "
	  "endpoint's sessions and listen streams only for what it serves "
	  "(docs/protocol.md, Endpoints). A block whose PATH is the plain "
	  "line's configures the default endpoint. Endpoint blocks may "
	  "repeat and are taken up by a reload; the plain PATH is not. "
	  "Inside a block, one directive per line; tools, prompts and "
	  "resources may repeat:" },
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

	{ .name = "auth", .type = CONF_BLOCK, .block = conf_auth_block,
	  .sub = &conf_auth_table, .free = conf_auth_free,
	  .keep = conf_auth_keep,
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
	  .parse = conf_parse_eventlog, .done = conf_redis_done,
	  .keep = conf_redis_keep, .free = conf_redis_free,
	  .args = "memory|URL", .def = "memory",
	  .flags = CONF_EXAMPLE_ACTIVE, .section = "Event log",
	  .examples = "redis://10.0.0.5:6379/0\n"
	  "redis://mcpd@10.0.0.5/2\n"
	  "rediss://mcpd@redis.example.com:6380/0\n"
	  "unix:///run/redis/redis.sock?db=0\n"
	  "redis-sentinel://10.0.0.1,10.0.0.2,10.0.0.3:26380/mymaster/0\n"
	  "redis-cluster://mcpd@10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
	  .help = "Where committed events live. memory keeps bounded rings "
	  "in this process (one instance, lost on restart). A Redis URL "
	  "keeps them in Redis Streams shared by every instance: "
	  "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB] (port 6379, DB 0 to "
	  "15, default 0); rediss://... the same over TLS (redis_tls_*); "
	  "unix:///PATH[?db=N], a unix socket; "
	  "redis-sentinel://[USER[:PASSWORD]@]H1[:P1],H2[:P2],.../MASTER[/DB]"
	  " asks the sentinels (port 26379) which server is the primary of "
	  "MASTER, and follows it through failovers; "
	  "redis-cluster://[USER[:PASSWORD]@]H1[:P1],H2[:P2],... is a Redis "
	  "Cluster (7 or later; any of its nodes as seeds, database 0): "
	  "sessions spread over its primaries by their slot, the map "
	  "followed through resharding and failovers. USER and PASSWORD are "
	  "percent-decoded (%40 for \"@\"); redis://:PASSWORD@HOST is a "
	  "password alone (requirepass); or leave the password out and use "
	  "redis_password_file. Log lines show the URL with its password "
	  "as ***. docs/deployment.md has the ACL rules mcpd needs and what "
	  "a failover does to committed events." },
	{ .name = "redis_user", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_user), .check = conf_check_redis_user,
	  .args = "none|NAME", .def = "none",
	  .help = "With the redis event log, the Redis ACL user mcpd "
	  "authenticates as (AUTH USER PASSWORD) when the URL names none; "
	  "none: the default user (AUTH PASSWORD, as requirepass wants). "
	  "Taken up by a reload, for the connections made after it." },
	{ .name = "redis_password_file", .type = CONF_CUSTOM,
	  .parse = conf_parse_password_file,
	  .offset = CONF_OFF(redis_password_file),
	  .offset2 = CONF_OFF(redis_password), .args = "none|PATH",
	  .def = "none",
	  .help = "A file whose first line is the Redis password, so that "
	  "it need not be in this file or in the URL. Read at start-up and "
	  "at every reload (SIGHUP): a rotated password is taken up then; a "
	  "connection refused for its password is tried again at once with "
	  "the new one. Never logged, never shown. For example "
	  "/etc/mcpd/redis.password, mode 0400, owned by mcpd's user." },
	{ .name = "redis_sentinel_user", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_sentinel_user),
	  .check = conf_check_redis_user, .args = "none|NAME", .def = "none",
	  .help = "With redis-sentinel://, the user for the sentinels "
	  "when they do not share Redis's credentials (with "
	  "redis_sentinel_password_file). By default mcpd authenticates to "
	  "the sentinels as to Redis; a sentinel without a password takes "
	  "it anyway." },
	{ .name = "redis_sentinel_password_file", .type = CONF_CUSTOM,
	  .parse = conf_parse_password_file,
	  .offset = CONF_OFF(redis_sentinel_password_file),
	  .offset2 = CONF_OFF(redis_sentinel_password),
	  .args = "none|PATH", .def = "none",
	  .help = "The sentinels' password, the first line of this file; "
	  "read at start-up and at every reload, as redis_password_file." },
	{ .name = "redis_tls", .type = CONF_BOOL,
	  .offset = CONF_OFF(redis_tls), .values = conf_bool_values,
	  .def = "off",
	  .help = "With redis-sentinel://, reach the sentinels and the "
	  "primary over TLS; with redis-cluster://, every node (one server "
	  "over TLS is rediss://)." },
	{ .name = "redis_tls_ca_file", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_tls_ca_file), .check = conf_check_tls_file,
	  .args = "none|PATH", .def = "none",
	  .help = "With TLS, the CA certificates (PEM) the server's "
	  "certificate must chain to; none: the system's store. The "
	  "certificate must also name the server (redis_tls_server_name). "
	  "The TLS files are read at start-up and at every reload, for the "
	  "connections made after it." },
	{ .name = "redis_tls_cert_file", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_tls_cert_file),
	  .check = conf_check_tls_file, .args = "none|PATH", .def = "none",
	  .help = "With TLS, a client certificate (PEM, with its chain) for "
	  "a server that asks for one (tls-auth-clients); with "
	  "redis_tls_key_file." },
	{ .name = "redis_tls_key_file", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_tls_key_file), .check = conf_check_tls_file,
	  .args = "none|PATH", .def = "none",
	  .help = "The private key (PEM) of redis_tls_cert_file." },
	{ .name = "redis_tls_server_name", .type = CONF_STRING,
	  .offset = CONF_OFF(redis_tls_server_name),
	  .check = conf_check_server_name, .args = "none|NAME", .def = "none",
	  .help = "With TLS, the name the server's certificate must carry, "
	  "also sent as SNI; none: the host of the URL (an address must "
	  "then be an IP entry of the certificate; behind Sentinel, the "
	  "address the sentinels name)." },
	{ .name = "redis_tls_verify", .type = CONF_BOOL,
	  .offset = CONF_OFF(redis_tls_verify), .values = conf_bool_values,
	  .def = "on",
	  .help = "off accepts any certificate from any server: the "
	  "connection is encrypted, but nothing says who answers it. An "
	  "explicit opt-out for tests, logged as a warning at start-up." },
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
	{ .name = "tool", .type = CONF_BLOCK, .block = conf_tool_block,
	  .sub = &conf_tool_table, .free = conf_tool_free,
	  .done = conf_tool_done,
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
	{ .name = "upstream", .type = CONF_BLOCK, .block = conf_upstream_block,
	  .sub = &conf_upstream_table, .free = conf_upstream_free,
	  .done = conf_upstream_done,
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
	  "directive per line; env, tools, prompts, resources, rename and "
	  "description may repeat:" },
	{ .name = "openapi", .type = CONF_BLOCK, .block = conf_openapi_block,
	  .sub = &conf_openapi_table, .free = conf_openapi_free,
	  .done = conf_openapi_done,
	  .example = conf_openapi_examples, .args = "NAME { ... }",
	  .help = "A REST API described by an OpenAPI 3.0 or 3.1 document "
	  "(JSON or YAML): each operation is served as an MCP tool, named by "
	  "its operationId (or method and path), its inputSchema made of the "
	  "operation's path, query, header and cookie parameters and its "
	  "JSON request body (property \"body\"), its outputSchema of its "
	  "2xx JSON response. A call sends the request and answers with the "
	  "response as structuredContent and text, committed to the event "
	  "log like any tool's answer; a 4xx or 5xx, a timeout, a failed "
	  "connection or a response past max_response is an isError result "
	  "saying which, and a cancelled call aborts its request. A name "
	  "another provider serves is not served from here, with a log "
	  "line. NAME is 1 to 128 letters, digits, \"_\", \"-\" or \".\", "
	  "unique among openapi blocks. See docs/openapi.md. Inside the "
	  "block, one directive per line; operations and header may "
	  "repeat:" },

	{ .name = "limit", .type = CONF_BLOCK, .block = conf_limit_block,
	  .sub = &conf_limit_table, .free = conf_limit_free,
	  .example = conf_limit_examples, .args = "NAME { ... }",
	  .section = "Limits",
	  .help = "A limit on tools/call requests (task-augmented ones "
	  "included): a rate with a burst (token bucket), calls running at "
	  "once, calls a day, each counted per key (principal, client, "
	  "tool, upstream, or a combination); with the redis event log "
	  "every instance sharing it counts together. A call past a limit "
	  "is refused: HTTP 429 with Retry-After when it is the whole "
	  "request, a JSON-RPC error -32023 with data.retryAfter (seconds) "
	  "for a request of a batch and on the 2026-07-28 stateless path. "
	  "A call counts against every limit that covers it. A reload "
	  "changes limits for the calls that follow. See docs/limits.md. "
	  "NAME is 1 to 128 letters, digits, \"_\", \"-\" or \".\", unique "
	  "among limits. Inside the block, one directive per line:" },
	{ .name = "limit_fallback", .type = CONF_ENUM,
	  .offset = CONF_OFF(limit_fallback),
	  .values = conf_limit_fallback_values, .def = "local",
	  .help = "With the redis event log, what a limit check does while "
	  "Redis cannot answer: local counts in this instance's own buckets "
	  "(each instance then admits up to the whole limit), refuse "
	  "refuses the call (HTTP 429 or -32023, Retry-After 1)." },

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

	{ .name = "otel_endpoint", .type = CONF_STRING,
	  .offset = CONF_OFF(otel_endpoint),
	  .check = conf_check_otel_endpoint, .args = "none|URL",
	  .def = "none", .example = "http://127.0.0.1:4318",
	  .section = "Tracing (OpenTelemetry)",
	  .help = "Where spans go: an OTLP/HTTP receiver (an OpenTelemetry "
	  "Collector, Jaeger, Tempo; docs/operations.md), sent as JSON. As "
	  "with OTEL_EXPORTER_OTLP_ENDPOINT, a URL whose path is empty or "
	  "\"/\" is sent to URL/v1/traces, any other path as it is. Spans "
	  "are batched on a bounded queue (otel_queue) that never holds "
	  "the daemon up: past it they are dropped and counted in /metrics; "
	  "a request the receiver answers 429, 502, 503 or 504, or does not "
	  "answer, is sent again with back-off; what is queued is sent at "
	  "exit. Trace context is taken from the traceparent and tracestate "
	  "headers and from params._meta (which wins for its message), and "
	  "passed on to upstreams, exec tools (TRACEPARENT), key-set and "
	  "introspection requests. none: no tracing, nothing passed on." },
	{ .name = "otel_header", .type = CONF_LINE,
	  .line = conf_line_otel_header, .free = conf_otel_headers_free,
	  .flags = CONF_REPEAT, .args = "NAME FILE",
	  .def_text = "none",
	  .help = "A header every export request carries (an API key, an "
	  "Authorization), its value the first line of FILE, an absolute "
	  "path (otel_header Authorization /etc/mcpd/otel-auth), read at "
	  "start-up and on every reload and never logged. May repeat, at "
	  "most 32 headers." },
	{ .name = "otel_sample", .type = CONF_CUSTOM,
	  .parse = conf_parse_otel_sample, .args = "RATIO", .def = "1",
	  .help = "The ratio of traces started here that are sampled, from "
	  "0 to 1, parent-based: a request whose traceparent (header or "
	  "params._meta) says sampled is traced whatever this says, one "
	  "that says not sampled is not; for the others the decision comes "
	  "from the trace id, so every instance decides alike. 0 costs "
	  "almost nothing." },
	{ .name = "otel_service_name", .type = CONF_STRING,
	  .offset = CONF_OFF(otel_service_name),
	  .check = conf_check_otel_name, .args = "NAME", .def = "mcpd",
	  .help = "The resource attribute service.name of every span "
	  "(service.version is mcpd's version)." },
	{ .name = "otel_instance_id", .type = CONF_STRING,
	  .offset = CONF_OFF(otel_instance_id),
	  .check = conf_check_otel_instance, .args = "random|ID",
	  .def = "random",
	  .help = "The resource attribute service.instance.id: random is a "
	  "UUID drawn at start-up, so each process is told apart." },
	{ .name = "otel_resource", .type = CONF_WORDS,
	  .offset = CONF_OFF(otel_resource),
	  .offset2 = CONF_OFF(notel_resource),
	  .check = conf_check_otel_attribute, .args = "KEY=VALUE...",
	  .def_text = "none",
	  .example = "deployment.environment.name=production",
	  .help = "More resource attributes, as strings (a KEY of letters, "
	  "digits, \".\", \"_\" and \"-\"); they override the three "
	  "above when they name one of them." },
	CONF_NUMBER("otel_queue", CONF_INTEGER, otel_queue, 16, 1000000,
	    "4096", "Finished spans waiting to be sent, at most (each at "
	    "most 16 KiB encoded); a span past it is dropped and counted "
	    "(mcpd_otel_spans_dropped_total{reason=\"queue_full\"})."),
	CONF_NUMBER("otel_batch", CONF_INTEGER, otel_batch, 1, 100000, "512",
	    "Spans sent in one export request, at most."),
	CONF_NUMBER("otel_interval_ms", CONF_MILLISECONDS, otel_interval_ms,
	    10, 60000, "1000", "How long a span may wait for its batch to "
	    "fill before the batch is sent anyway."),
	CONF_NUMBER("otel_timeout", CONF_SECONDS, otel_timeout, 1, 300, "10",
	    "How long one export request may take; one that takes longer "
	    "counts as failed and is sent again (OTLP_ATTEMPTS, 5, at "
	    "most)."),

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
	{ .name = "audit_log", .type = CONF_STRING,
	  .offset = CONF_OFF(audit_log), .check = conf_check_audit_log,
	  .args = "none|syslog|PATH", .def = "none", .section = "Audit",
	  .help = "One JSON line per tools/call, resources/read, "
	  "prompts/get and tasks/cancel (a task's creation is its tools/call), "
	  "written once its outcome is committed: who (issuer, subject, "
	  "client id), what (tool, resource, prompt, task; the SHA-256 of "
	  "the arguments), where (instance, endpoint, session or request "
	  "id) and how it ended (ok, error and its code, cancelled, "
	  "interrupted, limited), with its duration and response bytes "
	  "(docs/audit.md). syslog sends them to syslog (facility authpriv, "
	  "ident mcpd-audit); PATH is an absolute path, appended to and "
	  "created (mode 0640), reopened on SIGUSR1 as log_file is. A "
	  "thread of its own writes them, so a slow or full disk never "
	  "stalls the event loop; lines it could not write are counted "
	  "(/metrics) and logged, rate-limited." },
	{ .name = "audit_arguments", .type = CONF_BOOL,
	  .offset = CONF_OFF(audit_arguments), .values = conf_bool_values,
	  .def = "off",
	  .help = "Whether audit lines also carry the arguments themselves, "
	  "not only their SHA-256 (they may hold what should not be kept)." },
	CONF_NUMBER("audit_queue", CONF_SIZE, audit_queue, 64 * CONF_KIB,
	    CONF_GIB, "8m", "Bytes of audit lines waiting for the writer at "
	    "most: a line that would go past it is dropped, counted and "
	    "logged, so a stalled disk costs at most this much memory."),
};

const struct conf_table conf_table_main = {
	conf_entries, CONF_NITEMS(conf_entries)
};
