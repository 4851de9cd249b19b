/*
 * The audit trail (audit.c, conf audit_log, docs/audit.md): one JSON line
 * per tools/call, resources/read, prompts/get and tasks/cancel, written
 * once its outcome is committed, by the process that committed it.
 *
 * A request that is audited has a record from when it starts
 * (audit_begin, NULL when it is not audited) to when its line is written
 * (audit_write, which frees it) or it is dropped without one
 * (audit_free). The outcome is the response's (audit_respond), unless
 * the request was cancelled, interrupted or limited (audit_set).
 */
#ifndef MCPD_AUDIT_H
#define MCPD_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

struct auth_principal;
struct audit_rec;
struct conf;
struct spool_stats;

enum audit_outcome {
	AUDIT_OK,
	AUDIT_ERROR,		/* a JSON-RPC error, or a tool's isError */
	AUDIT_CANCELLED,	/* no response: the client, DELETE, expiry */
	AUDIT_INTERRUPTED,	/* shutdown, its log lost, its instance died */
	AUDIT_LIMITED,		/* refused by a limit */
	AUDIT_OUTCOMES
};

int		 audit_init(const struct conf *, char **);
/* A reload: another destination, queue or arguments option. */
void		 audit_configure(const struct conf *);
void		 audit_reopen(void);
void		 audit_cron(void);
void		 audit_shutdown(void);
int		 audit_enabled(void);
const char	*audit_outcome_name(enum audit_outcome);

/*
 * Starts the record of request id (method, params) of who (NULL: no
 * auth), in session sid (NULL: stateless) speaking protocol, arrived on
 * endpoint. NULL when audit is off or the method is not audited.
 */
struct audit_rec *audit_begin(const char *, const cJSON *,
		     const struct auth_principal *, const char *,
		     const char *, const cJSON *, const char *);
/* The response (len bytes as sent) decides the outcome, unless set. */
void		 audit_respond(struct audit_rec *, const cJSON *, size_t);
/* The outcome, whatever the response says; limit: the limit's name. */
void		 audit_set(struct audit_rec *, enum audit_outcome, int,
		     const char *);
void		 audit_write(struct audit_rec *);
void		 audit_free(struct audit_rec *);
/*
 * What another process needs to write the line of a call whose process
 * died (lease.c keeps it with the call's lease): a JSON object, taken.
 */
cJSON		*audit_context(const struct audit_rec *);
/*
 * The line of request id of session sid, answered here with an
 * interrupted error (message) as its process died: ctx is what
 * audit_context said (NULL when it was not kept).
 */
void		 audit_orphan(const cJSON *, const char *, const cJSON *,
		     const char *);

/* /metrics: lines written, dropped (queue full) and failed, and queued. */
void		 audit_stats(struct spool_stats *);

#endif
