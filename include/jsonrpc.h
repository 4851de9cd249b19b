/* JSON-RPC 2.0 message validation and construction. */
#ifndef MCPD_JSONRPC_H
#define MCPD_JSONRPC_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define JSONRPC_PARSE_ERROR	 -32700
#define JSONRPC_INVALID_REQUEST	 -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS	 -32602
#define JSONRPC_INTERNAL_ERROR	 -32603
/* Server-defined range. */
#define JSONRPC_SERVER_ERROR	 -32000
#define JSONRPC_RESUME_FAILED	 -32004
#define JSONRPC_SESSION_NOT_FOUND -32001
#define JSONRPC_UNAVAILABLE	 -32003
/* MCP: resources/read and subscribe of an unknown URI. */
#define JSONRPC_RESOURCE_NOT_FOUND -32002
/* MCP 2026-07-28: a header disagrees with the body it mirrors. */
#define JSONRPC_HEADER_MISMATCH	 -32020
/* MCP 2026-07-28: the request lacks a client capability it needs. */
#define JSONRPC_MISSING_CAPABILITY -32021
/* MCP 2026-07-28: a protocol version this server does not speak. */
#define JSONRPC_UNSUPPORTED_VERSION -32022
/*
 * A call refused by a limit (docs/limits.md): the code the draft MCP SEP
 * "rate-limited error" proposes, data.retryAfter (seconds) and
 * data.retryAfterMs with it.
 */
#define JSONRPC_RATE_LIMITED	 -32023
/*
 * mcpd: no credentials toward an upstream for this call (a token exchange
 * or a client credentials grant refused or failed); data names the
 * upstream and the OAuth error.
 */
#define JSONRPC_UPSTREAM_CREDENTIALS -32024

/* Deepest nesting accepted in a request body. */
#define JSONRPC_MAX_DEPTH	64

enum jsonrpc_kind {
	JSONRPC_REQUEST,
	JSONRPC_NOTIFICATION,
	JSONRPC_RESPONSE,
	JSONRPC_INVALID
};

cJSON			*jsonrpc_parse(const char *, size_t, int *,
			     const char **);
enum jsonrpc_kind	 jsonrpc_classify(const cJSON *, const char **);
int			 jsonrpc_utf8_valid(const char *, size_t);
int			 jsonrpc_depth_ok(const char *, size_t, int);
int			 jsonrpc_has_nul(const cJSON *);
int			 jsonrpc_whole_number(const cJSON *, double, uint64_t *);
const cJSON		*jsonrpc_reply_id(const cJSON *);

cJSON	*jsonrpc_result(const cJSON *, cJSON *);
cJSON	*jsonrpc_error(const cJSON *, int, const char *, cJSON *);
cJSON	*jsonrpc_notification(const char *, cJSON *);
/*
 * The -32021 error: the client did not declare a capability the request
 * needs, a top-level one (capability, such as "sampling") or an
 * extension's (extension, its name); data.requiredCapabilities names it.
 */
cJSON	*jsonrpc_missing_capability(const cJSON *, const char *,
	    const char *);
cJSON	*jsonrpc_id_dup(const cJSON *);
cJSON	*jsonrpc_take(cJSON *);
int	 jsonrpc_id_equal(const cJSON *, const cJSON *);
/* Prints a message to send; its numbers may be left in printed form. */
char	*jsonrpc_print(const cJSON *);
/* The same in a buffer reused by the next call; *len set. */
const char *jsonrpc_print_shared(const cJSON *, size_t *);

#endif
