/*
 * How upstream.c reaches an MCP server (src/upstream/ only): a transport
 * carries one run, a program's stdin and stdout (upstream_stdio.c) or a
 * Streamable HTTP session (upstream_http.c), behind one table of
 * operations, as the event log's backends are behind theirs. upstream.c
 * picks the transport once, by the conf (exec or url), and never asks
 * which one it has.
 *
 * The callbacks run from loop callbacks, never inside a transport's
 * operation, and none runs after close has said the run is over (1) or,
 * for a run that ends later (0), after its ended.
 */
#ifndef MCPD_UPSTREAM_INT_H
#define MCPD_UPSTREAM_INT_H

#include <stddef.h>
#include <stdint.h>

struct auth_principal;
struct conf_upstream;
struct credential;

struct upstream_transport_cbs {
	/*
	 * One JSON-RPC message from the server (text, not NUL-ended), and
	 * our request whose stream it came on (0: none, or the transport
	 * does not say).
	 */
	void	(*message)(const char *, size_t, int64_t, void *);
	/* Request id will get no answer: why. */
	void	(*lost)(int64_t, const char *, void *);
	/* The run cannot go on: why. upstream.c closes it. */
	void	(*failed)(const char *, void *);
	/*
	 * A run close left to end later is over (a program reaped): whether
	 * it was killed, and how it ended ("exited with status 1").
	 */
	void	(*ended)(int, const char *, void *);
};

struct upstream_transport {
	/* What comes after a broken run, for the log: "killing it". */
	const char	*broken;
	/* The process the run is, 0 for none. Optional. */
	long		 (*pid)(void *);
	/*
	 * A message: a line, its newline included (len counts it), the id
	 * of our request it is (0: a notification or an answer), and on
	 * whose behalf (NULL: mcpd's own; HTTP sends its credentials). NULL,
	 * or why the run cannot go on.
	 */
	const char	*(*send)(void *, const char *, size_t, int64_t,
			    struct auth_principal *);
	/* Request id is no longer awaited (timeout, cancel). Optional. */
	void		 (*forget)(void *, int64_t);
	/* The revision initialize agreed on. Optional. */
	void		 (*set_version)(void *, const char *);
	/* Initialized: listen for the server's own messages. Optional. */
	void		 (*listen)(void *);
	/*
	 * Ends the run (stopping: for good, nothing more is read): 1 when
	 * it is over now, 0 when ended will say so later.
	 */
	int		 (*close)(void *, int);
};

/*
 * A run of def's server: the transport (its operations in *ops), or NULL
 * and *cause when it cannot start. name and sid (a client session, or
 * "-") name it in log lines. An HTTP run's requests carry cred's headers
 * (NULL: none).
 */
void	*upstream_stdio_open(const struct conf_upstream *, const char *,
	    const char *, const struct upstream_transport_cbs *, void *,
	    const struct upstream_transport **, char **);
void	*upstream_http_open(const struct conf_upstream *, const char *,
	    const char *, struct credential *,
	    const struct upstream_transport_cbs *, void *,
	    const struct upstream_transport **, char **);

#endif
