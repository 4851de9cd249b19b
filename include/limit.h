/*
 * Limits (limit.c, conf `limit NAME { }`, docs/limits.md): whether a
 * tools/call may run now, by the token buckets, daily quotas and
 * concurrency slots of the limits that cover it, counted per key.
 *
 * A check answers at once when it can (LIMIT_ADMIT or LIMIT_REFUSE, and
 * its callback never runs), which is every check of a process with its
 * own buckets (the memory log) and, with the redis log, every check a
 * local lease of tokens serves; otherwise LIMIT_PENDING, and the callback
 * runs exactly once, on a later loop turn, with the verdict. An admitted
 * call holds a ticket (NULL when nothing needs releasing): its
 * concurrency slots, freed by limit_ticket_free when the call ends.
 */
#ifndef MCPD_LIMIT_H
#define MCPD_LIMIT_H

#include <stdint.h>

struct auth_principal;
struct limit_ticket;

/* What a check is about. */
struct limit_subject {
	const struct auth_principal	*who;	/* NULL: anonymous */
	const char			*tool;
	const char			*endpoint;	/* the request's path */
};

enum limit_verdict {
	LIMIT_ADMIT,
	LIMIT_REFUSE,
	LIMIT_PENDING
};

/* Why a call was refused (the metrics' reason label). */
enum limit_reason {
	LIMIT_RATE,
	LIMIT_QUOTA,
	LIMIT_CONCURRENCY,
	LIMIT_UNAVAILABLE,	/* Redis could not answer; limit_fallback refuse */
	LIMIT_REASONS
};

struct limit_refusal {
	char			 limit[129];	/* the limit's name */
	enum limit_reason	 reason;
	uint64_t		 retry_ms;	/* when trying again may pass */
};

/* The verdict of a pending check: refusal NULL when admitted. */
typedef void	limit_checked_cb(struct limit_ticket *,
		    const struct limit_refusal *, void *);

void		 limit_init(void);
/* Requests still waiting for a check are answered (refused) now. */
void		 limit_shutdown(void);
void		 limit_cron(void);
/* The configuration was reloaded: new limits for the checks to come. */
void		 limit_reload(void);
/* With a shared log: the concurrency slots held here live on. */
void		 limit_renew(void);
/* Whether any limit covers tool calls on this endpoint. */
int		 limit_any(void);
enum limit_verdict limit_check(const struct limit_subject *,
		     struct limit_ticket **, struct limit_refusal *,
		     limit_checked_cb *, void *);
void		 limit_ticket_free(struct limit_ticket *);
/* Seconds for Retry-After and data.retryAfter: at least 1. */
uint64_t	 limit_retry_seconds(const struct limit_refusal *);
const char	*limit_reason_name(enum limit_reason);

/* What /metrics says of limit i (0 to limit_stat_count - 1). */
struct limit_stat {
	const char	*name;
	uint64_t	 admitted;
	uint64_t	 refused[LIMIT_REASONS];
	uint64_t	 running;	/* slots held by calls here now */
};
size_t		 limit_stat_count(void);
void		 limit_stat(size_t, struct limit_stat *);
/* Keys tracked, shared-store calls made, checks served by the fallback. */
struct limit_totals {
	uint64_t	 keys;
	uint64_t	 store_calls;
	uint64_t	 fallbacks;
	uint64_t	 overflows;
};
void		 limit_totals(struct limit_totals *);

#endif
