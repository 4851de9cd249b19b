/*
 * Upstreams: one MCP session with an MCP server mcpd is a client of (the
 * conf's "upstream NAME { }"), over a program's stdin and stdout
 * (upstream_stdio.c) or over Streamable HTTP (upstream_http.c). This
 * module frames newline-delimited JSON-RPC with a bounded message size,
 * does the initialize handshake, keeps the server's catalog (tools,
 * prompts, resources, templates) and starts the server again with
 * back-off when a run ends. What the catalog means to clients, and which
 * client a message is for, is provider_upstream.c's.
 *
 * The callback rule: a request's callback runs exactly once, on a later
 * loop turn, with the server's result or error, or with an error of
 * mcpd's own (the program exited, the request timed out or was cancelled,
 * the upstream was stopped). Hooks run from loop callbacks, never inside
 * an upstream_* call.
 */
#ifndef MCPD_UPSTREAM_H
#define MCPD_UPSTREAM_H

#include <sys/types.h>

#include <stdint.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct conf_upstream;
struct credential;
struct upstream;

enum upstream_state {
	UPSTREAM_STARTING,	/* initialize sent */
	UPSTREAM_LISTING,	/* fetching the catalog */
	UPSTREAM_READY,
	UPSTREAM_BACKOFF,	/* exited; restart timer set */
	UPSTREAM_STOPPING,	/* upstream_stop: waiting for the reaping */
	UPSTREAM_STOPPED,
	UPSTREAM_STATE_MAX
};

enum upstream_list {
	UPSTREAM_TOOLS,
	UPSTREAM_PROMPTS,
	UPSTREAM_RESOURCES,
	UPSTREAM_TEMPLATES,
	UPSTREAM_LIST_MAX
};

struct upstream_hooks {
	/* The catalog was loaded (first start, restart, list_changed). */
	void	(*catalog)(struct upstream *, void *);
	/*
	 * A notification from the server (list_changed is handled here),
	 * and the id of our request it came with (HTTP: on that request's
	 * stream), 0 when the transport does not say (stdio).
	 */
	void	(*notification)(struct upstream *, const cJSON *, int64_t,
		    void *);
	/* A request from the server, the same; answer: upstream_answer. */
	void	(*request)(struct upstream *, const cJSON *, int64_t, void *);
};

/* result or error (the other NULL); valid only during the callback. */
typedef void (*upstream_cb)(const cJSON *, const cJSON *, void *);

struct upstream	*upstream_start(const struct conf_upstream *, const char *,
		     struct credential *, const struct upstream_hooks *,
		     void *);
void		 upstream_stop(struct upstream *, const char *);
const char	*upstream_name(const struct upstream *);
const char	*upstream_key(const struct upstream *);
enum upstream_state upstream_state(const struct upstream *);
const char	*upstream_state_name(enum upstream_state);
long		 upstream_pid(const struct upstream *);
const cJSON	*upstream_capabilities(const struct upstream *);
const cJSON	*upstream_catalog(const struct upstream *, enum upstream_list);
u_int		 upstream_inflight(const struct upstream *);
u_int		 upstream_ended(const struct upstream *);

int64_t		 upstream_request(struct upstream *, const char *, cJSON *,
		     upstream_cb, void *);
/* The same on behalf of a principal (whose credentials it carries). */
int64_t		 upstream_request_as(struct upstream *, const char *, cJSON *,
		     struct auth_principal *, upstream_cb, void *);
void		 upstream_cancel(struct upstream *, int64_t, const char *);
void		 upstream_notify(struct upstream *, const char *, cJSON *);
void		 upstream_answer(struct upstream *, const cJSON *, cJSON *,
		     cJSON *);

/* Pure helpers, for the unit tests too. */
char		*upstream_frame(const cJSON *, size_t *);
int		 upstream_backoff_ms(long long, u_int);

#endif
