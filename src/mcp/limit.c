/*
 * Limits: whether a tools/call may run now (conf `limit NAME { }`,
 * docs/limits.md).
 *
 * Each limit that covers a call (its tools patterns match the tool, its
 * endpoints the request's path) counts it under one key, made of what
 * its key line names (principal, client, tool, upstream). A key has an
 * entry here: its token bucket with the daily quota, and its concurrency
 * slots. A check takes one token (and one call of the quota) and, with
 * concurrency, one slot, from every limit that covers the call; if any
 * refuses, what the others gave is given back and the call is refused
 * with the longest wait any refusal named.
 *
 * Where the buckets live:
 *
 * - A process whose log is its own (memory) keeps them here, exactly:
 *   every check answers at once.
 * - With a shared log (Redis) the buckets live in Redis so that every
 *   instance counts against one limit (redis_script.c, take). A check
 *   does not go there each time: an instance takes a lease of tokens at
 *   once (limit_lease_size: a tenth of a second of the rate, at most a
 *   quarter of the burst) and serves checks from it, fetching the next
 *   lease when a quarter is left, so the happy path makes no round trip
 *   at all. Tokens leave the bucket when leased, so leasing never admits
 *   more than one shared bucket would; tokens a lease holds unused for
 *   LIMIT_LEASE_MS go back (clipped at the burst), so the most other
 *   instances can hold unused is (instances - 1) x lease, less than a
 *   burst with three of them: what is admitted stays within the limit
 *   and one burst. A check that finds no token waits for the one fetch in
 *   flight for its key; Redis's "none before W ms" is kept, and checks
 *   are refused here until then without asking again.
 * - Concurrency with a shared log is a set of slots in Redis, one member
 *   per running call, each living lease_ttl unless renewed (limit_renew,
 *   with the calls' leases): a take is one round trip per call, a free
 *   one more that nobody waits for, and the slots of an instance that
 *   died lapse within lease_ttl.
 * - While Redis cannot answer, limit_fallback says: local (this
 *   instance's own buckets and counts, so each instance admits up to the
 *   whole limit) or refuse.
 *
 * Entries are freed once they hold nothing a later check needs (a full
 * bucket is no bucket); at most LIMIT_KEYS_MAX are kept, and a key past
 * that is not limited (counted, logged). All of it runs on the loop:
 * a store answer arriving after a reload is applied to what the check
 * started with.
 */
#include <sys/queue.h>
#include <sys/tree.h>

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "clock.h"
#include "conf.h"
#include "digest.h"
#include "eventlog.h"
#include "lease.h"
#include "limit.h"
#include "log.h"
#include "provider.h"
#include "random.h"
#include "server.h"
#include "xmalloc.h"

#define LIMIT_U			1000000ULL	/* millionths of a token */
#define LIMIT_DAY_MS		86400000ULL
#define LIMIT_LEASE_MS		1000	/* unused leased tokens go back */
#define LIMIT_KEYS_MAX		100000
#define LIMIT_STATS_MAX		256	/* names counted apart */
#define LIMIT_SLOT_RETRY_MS	1000	/* a refused slot: try again */
#define LIMIT_RENEW_BATCH	512	/* members in one renewal */
#define LIMIT_ID_MAX		(128 + 1 + 32 + 1)

/* What a check uses of a limit, copied: a reload may come meanwhile. */
struct limit_params {
	uint64_t	rate;
	uint64_t	period_ms;
	uint64_t	burst;
	uint64_t	quota;
	uint64_t	concurrency;
};

struct limit_stage;
TAILQ_HEAD(limit_stages, limit_stage);
struct limit_slot;
TAILQ_HEAD(limit_slots, limit_slot);

/* One key of one limit. */
struct limit_entry {
	RB_ENTRY(limit_entry)	 entry;
	char			*raw;		/* name, then the key's parts */
	size_t			 rawlen;
	char			 id[LIMIT_ID_MAX];	/* "NAME:HEX": Redis's */
	char			 name[129];
	u_int			 refs;		/* stages, slots, store ops */
	/* This process's bucket (memory log, or the fallback). */
	int			 local;		/* set up */
	uint64_t		 tokens;	/* millionths */
	uint64_t		 ts_ms;
	uint64_t		 day;		/* of used */
	uint64_t		 used;		/* the quota's count */
	/* A shared log's lease. */
	uint64_t		 leased;
	uint64_t		 leased_day;
	uint64_t		 lease_ms;	/* the last fetch answered */
	uint64_t		 refused_until;	/* monotonic ms */
	int			 refused_quota;
	int			 fetching;
	struct limit_stages	 waiters;
	/* Concurrency: slots held by calls here. */
	u_int			 running;
	struct limit_slots	 slots;		/* a shared log's */
};
RB_HEAD(limit_entries, limit_entry);

enum limit_stage_kind {
	LIMIT_STAGE_TOKEN,
	LIMIT_STAGE_SLOT
};

struct limit_check;

/* A token or a slot of one limit, for one check. */
struct limit_stage {
	struct limit_check	*check;
	struct limit_entry	*e;
	enum limit_stage_kind	 kind;
	struct limit_params	 p;
	int			 started;
	enum limit_verdict	 verdict;	/* PENDING until answered */
	struct limit_refusal	 refusal;
	int			 from_local;	/* the token: own bucket */
	struct limit_slot	*slot;		/* the slot held */
	TAILQ_ENTRY(limit_stage) wentry;	/* on e->waiters */
};

struct limit_check {
	limit_checked_cb	*cb;		/* NULL: answered at shutdown */
	void			*arg;
	TAILQ_ENTRY(limit_check) entry;		/* pending */
	u_int			 pending;
	size_t			 n;
	struct limit_stage	 stages[];
};

/* A concurrency slot held by a call. */
struct limit_slot {
	struct limit_entry	*e;
	char			*member;	/* shared log: in Redis */
	TAILQ_ENTRY(limit_slot)	 entry;
};

struct limit_ticket {
	size_t			 n;
	struct limit_slot	*slots[];
};

struct limit_namestat {
	char		name[129];
	uint64_t	admitted;
	uint64_t	refused[LIMIT_REASONS];
};

static struct {
	struct limit_entries	 entries;
	TAILQ_HEAD(, limit_check) pending;
	size_t			 nentries;
	char			 token[17];	/* this process's, for members */
	uint64_t		 members;
	struct limit_namestat	 stats[LIMIT_STATS_MAX + 1];
	size_t			 nstats;
	struct limit_totals	 totals;
} limit;

static const char *limit_reason_names[LIMIT_REASONS] = {
	"rate", "quota", "concurrency", "unavailable"
};

static int
limit_entry_cmp(struct limit_entry *a, struct limit_entry *b)
{
	int	c;

	c = memcmp(a->raw, b->raw, a->rawlen < b->rawlen ? a->rawlen :
	    b->rawlen);
	if (c != 0)
		return (c);
	return (a->rawlen < b->rawlen ? -1 : a->rawlen > b->rawlen);
}
RB_GENERATE_STATIC(limit_entries, limit_entry, entry, limit_entry_cmp);

const char *
limit_reason_name(enum limit_reason reason)
{
	return (reason < LIMIT_REASONS ? limit_reason_names[reason] : "?");
}

void
limit_init(void)
{
	RB_INIT(&limit.entries);
	TAILQ_INIT(&limit.pending);
	random_hex(limit.token, sizeof limit.token);
}

int
limit_any(void)
{
	return (server.conf->nlimits > 0);
}

uint64_t
limit_retry_seconds(const struct limit_refusal *r)
{
	uint64_t	s = (r->retry_ms + 999) / 1000;

	return (s > 0 ? s : 1);
}

/* ---------------------------------------------------------------------
 * Counting.
 */

static struct limit_namestat *
limit_namestat(const char *name)
{
	size_t	i;

	for (i = 0; i < limit.nstats; i++) {
		if (strcmp(limit.stats[i].name, name) == 0)
			return (&limit.stats[i]);
	}
	if (limit.nstats == LIMIT_STATS_MAX) {
		strlcpy(limit.stats[i].name, "other",
		    sizeof limit.stats[i].name);
		return (&limit.stats[LIMIT_STATS_MAX]);
	}
	strlcpy(limit.stats[i].name, name, sizeof limit.stats[i].name);
	return (&limit.stats[limit.nstats++]);
}

size_t
limit_stat_count(void)
{
	return (limit.nstats + (limit.stats[LIMIT_STATS_MAX].name[0] != '\0'));
}

void
limit_stat(size_t i, struct limit_stat *st)
{
	struct limit_namestat	*ns = i < limit.nstats ? &limit.stats[i] :
				    &limit.stats[LIMIT_STATS_MAX];
	struct limit_entry	*e;

	memset(st, 0, sizeof *st);
	st->name = ns->name;
	st->admitted = ns->admitted;
	memcpy(st->refused, ns->refused, sizeof st->refused);
	RB_FOREACH(e, limit_entries, &limit.entries) {
		if (strcmp(e->name, ns->name) == 0)
			st->running += e->running;
	}
}

void
limit_totals(struct limit_totals *t)
{
	*t = limit.totals;
	t->keys = limit.nentries;
}

/* ---------------------------------------------------------------------
 * Keys and entries.
 */

static void
limit_raw_add(char **raw, size_t *len, char tag, const char *a, const char *b)
{
	size_t	la = a != NULL ? strlen(a) : 0, lb = b != NULL ? strlen(b) : 0;
	size_t	n = 1 + la + (b != NULL ? 1 + lb : 0) + 1;

	*raw = xrealloc(*raw, *len + n);
	(*raw)[(*len)++] = tag;
	memcpy(*raw + *len, a, la);
	*len += la;
	if (b != NULL) {
		(*raw)[(*len)++] = '\n';
		memcpy(*raw + *len, b, lb);
		*len += lb;
	}
	(*raw)[(*len)++] = '\0';
}

/*
 * What limit l counts the subject's call under: its name, then each part
 * its key line names, tagged and NUL-ended (a subject may hold any byte
 * but NUL; JSON strings cannot carry one past jsonrpc.c).
 */
static char *
limit_raw(const struct conf_limit *l, const struct limit_subject *sub,
    size_t *len)
{
	const char	*iss = NULL, *subj = NULL, *client = NULL, *up;
	char		*raw = NULL;

	*len = 0;
	if (sub->who != NULL) {
		iss = auth_principal_issuer(sub->who);
		subj = auth_principal_subject(sub->who);
		client = auth_principal_client_id(sub->who);
	}
	limit_raw_add(&raw, len, 'L', l->name, NULL);
	if (l->keys & CONF_LIMIT_KEY_PRINCIPAL)
		limit_raw_add(&raw, len, 'p', iss != NULL ? iss : "",
		    subj != NULL ? subj : "");
	if (l->keys & CONF_LIMIT_KEY_CLIENT)
		limit_raw_add(&raw, len, 'c', client != NULL ? client : "",
		    NULL);
	if (l->keys & CONF_LIMIT_KEY_TOOL)
		limit_raw_add(&raw, len, 't', sub->tool, NULL);
	if (l->keys & CONF_LIMIT_KEY_UPSTREAM) {
		up = provider_tool_upstream(sub->tool);
		limit_raw_add(&raw, len, 'u', up != NULL ? up : "-", NULL);
	}
	return (raw);
}

/* Whether the entry holds nothing a later check could miss. */
static int
limit_entry_idle(const struct limit_entry *e, uint64_t now)
{
	if (e->refs > 0 || e->running > 0 || e->leased > 0 ||
	    e->refused_until > now)
		return (0);
	if (!e->local)
		return (1);
	/* Its own bucket: only once full, and the day's count with it. */
	return (e->tokens == UINT64_MAX && e->used == 0);
}

static void
limit_entry_free(struct limit_entry *e)
{
	RB_REMOVE(limit_entries, &limit.entries, e);
	limit.nentries--;
	free(e->raw);
	free(e);
}

static void
limit_entry_unref(struct limit_entry *e)
{
	if (e->refs == 0)
		fatalx("limit: entry reference count below zero");
	e->refs--;
}

static struct limit_entry *
limit_entry_get(const struct conf_limit *l, const struct limit_subject *sub)
{
	struct limit_entry	 find, *e, *victim;
	char			 hex[33];
	uint64_t		 now;

	find.raw = limit_raw(l, sub, &find.rawlen);
	if ((e = RB_FIND(limit_entries, &limit.entries, &find)) != NULL) {
		free(find.raw);
		return (e);
	}
	if (limit.nentries >= LIMIT_KEYS_MAX) {
		now = clock_now_ms();
		victim = NULL;
		RB_FOREACH(e, limit_entries, &limit.entries) {
			if (limit_entry_idle(e, now)) {
				victim = e;
				break;
			}
		}
		if (victim == NULL) {
			free(find.raw);
			limit.totals.overflows++;
			log_limited(LOG_LEVEL_WARN, "limit-keys", "limit %s: "
			    "%d keys tracked already, all in use: this call "
			    "is not limited", l->name, LIMIT_KEYS_MAX);
			return (NULL);
		}
		limit_entry_free(victim);
	}
	e = xcalloc(1, sizeof *e);
	e->raw = find.raw;
	e->rawlen = find.rawlen;
	strlcpy(e->name, l->name, sizeof e->name);
	digest_sha256_hex(e->raw, e->rawlen, hex, 16);
	snprintf(e->id, sizeof e->id, "%s:%s", l->name, hex);
	TAILQ_INIT(&e->waiters);
	TAILQ_INIT(&e->slots);
	RB_INSERT(limit_entries, &limit.entries, e);
	limit.nentries++;
	return (e);
}

static int
limit_covers(const struct conf_limit *l, const struct limit_subject *sub)
{
	size_t	i;
	int	ok;

	if (l->ntools > 0) {
		for (i = 0, ok = 0; !ok && i < l->ntools; i++)
			ok = fnmatch(l->tools[i], sub->tool, 0) == 0;
		if (!ok)
			return (0);
	}
	if (l->nendpoints > 0) {
		for (i = 0, ok = 0; !ok && i < l->nendpoints; i++)
			ok = sub->endpoint != NULL &&
			    strcmp(l->endpoints[i], sub->endpoint) == 0;
		if (!ok)
			return (0);
	}
	return (1);
}

static void
limit_params(const struct conf_limit *l, struct limit_params *p)
{
	p->rate = (uint64_t)l->rate;
	p->period_ms = (uint64_t)(l->period_ms > 0 ? l->period_ms : 1000);
	p->burst = (uint64_t)l->burst;
	p->quota = (uint64_t)l->quota;
	p->concurrency = (uint64_t)l->concurrency;
}

/*
 * Tokens an instance leases at once: a tenth of a second of the rate,
 * at most a quarter of the burst (so unused leases of two other
 * instances hold less than a burst), and with a quota alone a
 * thousandth of it, 100 at most. At least 1.
 */
static uint64_t
limit_lease_size(const struct limit_params *p)
{
	unsigned __int128	n;

	if (p->rate > 0) {
		n = (unsigned __int128)p->rate * 100 / p->period_ms;
		if (n > p->burst / 4)
			n = p->burst / 4;
	} else
		n = p->quota / 1000 < 100 ? p->quota / 1000 : 100;
	if (p->quota > 0 && n > p->quota / 100)
		n = p->quota / 100;
	return (n > 0 ? (uint64_t)n : 1);
}

/* ---------------------------------------------------------------------
 * This process's own buckets: exact, on the loop.
 */

static uint64_t
limit_today(void)
{
	return (clock_wall_ms() / LIMIT_DAY_MS);
}

static uint64_t
limit_until_midnight(void)
{
	uint64_t	wall = clock_wall_ms();

	return ((wall / LIMIT_DAY_MS + 1) * LIMIT_DAY_MS - wall);
}

/*
 * e's own bucket brought up to now. A full bucket is kept as UINT64_MAX,
 * so that it reads as full whatever a reload makes the burst; the day's
 * count starts again at midnight UTC.
 */
static uint64_t
limit_local_refill(struct limit_entry *e, const struct limit_params *p)
{
	uint64_t		 now = clock_now_ms(), today = limit_today();
	uint64_t		 cap = p->burst * LIMIT_U, tokens;
	unsigned __int128	 add;

	if (!e->local) {
		e->local = 1;
		e->tokens = UINT64_MAX;
		e->ts_ms = now;
		e->day = today;
	}
	if (e->day != today) {
		e->day = today;
		e->used = 0;
	}
	tokens = e->tokens > cap ? cap : e->tokens;
	if (p->rate > 0 && now > e->ts_ms) {
		add = (unsigned __int128)(now - e->ts_ms) * p->rate * LIMIT_U /
		    p->period_ms;
		tokens = add >= cap - tokens ? cap : tokens + (uint64_t)add;
	}
	e->ts_ms = now;
	e->tokens = tokens >= cap ? UINT64_MAX : tokens;
	return (tokens);
}

/*
 * Takes a token (and, with a quota, a call of the day's) from e's own
 * bucket: 1, or 0 with the wait and the reason in r.
 */
static int
limit_local_take(struct limit_entry *e, const struct limit_params *p,
    struct limit_refusal *r)
{
	uint64_t	tokens = limit_local_refill(e, p);

	strlcpy(r->limit, e->name, sizeof r->limit);
	if (p->quota > 0 && e->used >= p->quota) {
		r->reason = LIMIT_QUOTA;
		r->retry_ms = limit_until_midnight();
		return (0);
	}
	if (p->rate > 0 && tokens < LIMIT_U) {
		r->reason = LIMIT_RATE;
		r->retry_ms = (uint64_t)(((unsigned __int128)(LIMIT_U -
		    tokens) * p->period_ms + p->rate * LIMIT_U - 1) /
		    ((unsigned __int128)p->rate * LIMIT_U));
		return (0);
	}
	if (p->rate > 0)
		e->tokens = tokens - LIMIT_U;
	if (p->quota > 0)
		e->used++;
	return (1);
}

/* A token taken from e's own bucket goes back (its check was refused). */
static void
limit_local_give(struct limit_entry *e, const struct limit_params *p)
{
	uint64_t	cap = p->burst * LIMIT_U;

	if (p->rate > 0 && e->tokens != UINT64_MAX)
		e->tokens = e->tokens + LIMIT_U >= cap ? UINT64_MAX :
		    e->tokens + LIMIT_U;
	if (p->quota > 0 && e->used > 0)
		e->used--;
}

/* ---------------------------------------------------------------------
 * Stages and checks.
 */

static void	limit_check_done(struct limit_check *);

/* Stage s is answered: its check goes on once none is pending. */
static void
limit_stage_answer(struct limit_stage *s, enum limit_verdict v)
{
	struct limit_check	*c = s->check;

	s->verdict = v;
	if (--c->pending == 0)
		limit_check_done(c);
}

static void
limit_refuse(struct limit_stage *s, enum limit_reason reason,
    uint64_t retry_ms)
{
	strlcpy(s->refusal.limit, s->e->name, sizeof s->refusal.limit);
	s->refusal.reason = reason;
	s->refusal.retry_ms = retry_ms;
}

/* A slot counted here (one more call running on e): it holds e. */
static struct limit_slot *
limit_slot_new(struct limit_entry *e)
{
	struct limit_slot	*sl;

	sl = xcalloc(1, sizeof *sl);
	sl->e = e;
	e->running++;
	e->refs++;
	return (sl);
}

/* What a stage does while the shared store cannot answer it. */
static enum limit_verdict
limit_fallback(struct limit_stage *s)
{
	limit.totals.fallbacks++;
	log_limited(LOG_LEVEL_WARN, "limit-fallback", "limit %s: the event "
	    "log cannot answer; %s (limit_fallback)", s->e->name,
	    server.conf->limit_fallback == CONF_LIMIT_LOCAL ? "counting in "
	    "this instance's own buckets" : "refusing calls");
	if (server.conf->limit_fallback == CONF_LIMIT_REFUSE) {
		limit_refuse(s, LIMIT_UNAVAILABLE, 1000);
		return (LIMIT_REFUSE);
	}
	if (s->kind == LIMIT_STAGE_SLOT) {
		if (s->e->running >= s->p.concurrency) {
			limit_refuse(s, LIMIT_CONCURRENCY,
			    LIMIT_SLOT_RETRY_MS);
			return (LIMIT_REFUSE);
		}
		s->slot = limit_slot_new(s->e);
		return (LIMIT_ADMIT);
	}
	s->from_local = 1;
	return (limit_local_take(s->e, &s->p, &s->refusal) ? LIMIT_ADMIT :
	    LIMIT_REFUSE);
}

static void	limit_fetch(struct limit_entry *, const struct limit_params *);

/* Waiters served from the lease, refused, or still waiting. */
static void
limit_serve(struct limit_entry *e, const struct limit_params *p,
    uint64_t wait_ms)
{
	struct limit_stage	*s;

	while ((s = TAILQ_FIRST(&e->waiters)) != NULL) {
		if (e->leased == 0 && wait_ms == 0) {
			if (!e->fetching)
				limit_fetch(e, &s->p);
			return;
		}
		TAILQ_REMOVE(&e->waiters, s, wentry);
		if (e->leased > 0) {
			e->leased--;
			limit_stage_answer(s, LIMIT_ADMIT);
		} else {
			limit_refuse(s, e->refused_quota ? LIMIT_QUOTA :
			    LIMIT_RATE, wait_ms);
			limit_stage_answer(s, LIMIT_REFUSE);
		}
	}
}

static void
limit_fetched_cb(enum eventlog_status status, const struct eventlog_taken *t,
    void *arg)
{
	struct limit_entry	*e = arg;
	struct limit_stage	*s;
	uint64_t		 now = clock_now_ms(), wait = 0;

	/* The fetch's reference stays while its waiters are answered. */
	e->fetching = 0;
	if (status != EVENTLOG_OK || t == NULL) {
		while ((s = TAILQ_FIRST(&e->waiters)) != NULL) {
			TAILQ_REMOVE(&e->waiters, s, wentry);
			limit_stage_answer(s, limit_fallback(s));
		}
		limit_entry_unref(e);
		return;
	}
	if (t->granted > 0) {
		e->leased += t->granted;
		e->leased_day = t->day;
		e->lease_ms = now;
		e->refused_until = 0;
	} else {
		wait = t->wait_ms > 0 ? t->wait_ms : 1;
		e->refused_until = now + wait;
		e->refused_quota = t->quota;
	}
	if ((s = TAILQ_FIRST(&e->waiters)) != NULL)
		limit_serve(e, &s->p, wait);
	limit_entry_unref(e);
}

static void
limit_fetch(struct limit_entry *e, const struct limit_params *p)
{
	struct eventlog_take	 t;
	struct limit_stage	*s;
	uint64_t		 waiting = 0;

	TAILQ_FOREACH(s, &e->waiters, wentry)
		waiting++;
	memset(&t, 0, sizeof t);
	t.key = e->id;
	t.rate = p->rate;
	t.period_ms = p->period_ms;
	t.burst = p->burst;
	t.quota = p->quota;
	t.want = limit_lease_size(p);
	if (t.want < waiting)
		t.want = waiting;
	t.min = 1;
	e->fetching = 1;
	e->refs++;
	limit.totals.store_calls++;
	eventlog_take(server.eventlog, &t, limit_fetched_cb, e);
}

static void
limit_given_cb(enum eventlog_status status, const struct eventlog_taken *t,
    void *arg)
{
	limit_entry_unref(arg);
}

/* Unused leased tokens back to the bucket (and the quota, same day). */
static void
limit_give_back(struct limit_entry *e, const struct conf_limit *l)
{
	struct eventlog_take	t;
	struct limit_params	p;

	limit_params(l, &p);
	memset(&t, 0, sizeof t);
	t.key = e->id;
	t.rate = p.rate;
	t.period_ms = p.period_ms;
	t.burst = p.burst;
	t.quota = p.quota;
	t.back = e->leased;
	t.back_day = e->leased_day;
	e->leased = 0;
	e->refs++;
	limit.totals.store_calls++;
	eventlog_take(server.eventlog, &t, limit_given_cb, e);
}

/* A token stage, with a shared log: from the lease, or wait for one. */
static enum limit_verdict
limit_take_shared(struct limit_stage *s)
{
	struct limit_entry	*e = s->e;
	uint64_t		 now = clock_now_ms();

	if (!eventlog_available(server.eventlog))
		return (limit_fallback(s));
	if (e->leased > 0 && TAILQ_EMPTY(&e->waiters)) {
		e->leased--;
		/*
		 * The next lease comes before this one runs out (unless
		 * Redis said there is none before a while).
		 */
		if (!e->fetching && e->refused_until <= now &&
		    e->leased < (limit_lease_size(&s->p) + 3) / 4)
			limit_fetch(e, &s->p);
		return (LIMIT_ADMIT);
	}
	if (e->refused_until > now && TAILQ_EMPTY(&e->waiters)) {
		limit_refuse(s, e->refused_quota ? LIMIT_QUOTA : LIMIT_RATE,
		    e->refused_until - now);
		return (LIMIT_REFUSE);
	}
	TAILQ_INSERT_TAIL(&e->waiters, s, wentry);
	if (!e->fetching)
		limit_fetch(e, &s->p);
	return (LIMIT_PENDING);
}

static void
limit_slot_taken_cb(enum eventlog_status status, int granted, void *arg)
{
	struct limit_stage	*s = arg;
	struct limit_entry	*e = s->e;
	char			*member = s->slot->member;

	e->running--;			/* reserved while asked */
	e->refs--;
	free(s->slot);
	s->slot = NULL;
	if (status != EVENTLOG_OK) {
		free(member);
		limit_stage_answer(s, limit_fallback(s));
		return;
	}
	if (!granted) {
		free(member);
		limit_refuse(s, LIMIT_CONCURRENCY, LIMIT_SLOT_RETRY_MS);
		limit_stage_answer(s, LIMIT_REFUSE);
		return;
	}
	s->slot = limit_slot_new(e);
	s->slot->member = member;
	TAILQ_INSERT_TAIL(&e->slots, s->slot, entry);
	limit_stage_answer(s, LIMIT_ADMIT);
}

/* A slot stage: counted here, or (shared log) taken in Redis. */
static enum limit_verdict
limit_take_slot(struct limit_stage *s)
{
	struct limit_entry	*e = s->e;
	const char		*member;

	if (e->running >= s->p.concurrency) {
		limit_refuse(s, LIMIT_CONCURRENCY, LIMIT_SLOT_RETRY_MS);
		return (LIMIT_REFUSE);
	}
	if (!server.shared) {
		s->slot = limit_slot_new(e);
		return (LIMIT_ADMIT);
	}
	if (!eventlog_available(server.eventlog))
		return (limit_fallback(s));
	/* Reserved while asked: this process asks for no more than max. */
	s->slot = limit_slot_new(e);
	xasprintf(&s->slot->member, "%s:%llu", limit.token,
	    (unsigned long long)++limit.members);
	member = s->slot->member;
	limit.totals.store_calls++;
	eventlog_slot(server.eventlog, EVENTLOG_SLOT_TAKE, e->id,
	    s->p.concurrency, lease_ttl_ms(), &member, 1,
	    limit_slot_taken_cb, s);
	return (LIMIT_PENDING);
}

static void
limit_slot_freed_cb(enum eventlog_status status, int granted, void *arg)
{
	limit_entry_unref(arg);
}

static void
limit_slot_release(struct limit_slot *sl)
{
	struct limit_entry	*e = sl->e;
	const char		*member = sl->member;

	e->running--;
	if (sl->member != NULL) {
		TAILQ_REMOVE(&e->slots, sl, entry);
		e->refs++;		/* the free's */
		limit.totals.store_calls++;
		eventlog_slot(server.eventlog, EVENTLOG_SLOT_FREE, e->id, 0,
		    lease_ttl_ms(), &member, 1, limit_slot_freed_cb, e);
		free(sl->member);
	}
	limit_entry_unref(e);		/* the slot's */
	free(sl);
}

/* Undoes what an admitted stage took: its check was refused. */
static void
limit_stage_undo(struct limit_stage *s)
{
	if (!s->started || s->verdict != LIMIT_ADMIT)
		return;
	if (s->kind == LIMIT_STAGE_SLOT) {
		limit_slot_release(s->slot);
		s->slot = NULL;
	} else if (s->from_local || !server.shared)
		limit_local_give(s->e, &s->p);
	else
		s->e->leased++;
}

/* The check's verdict from its stages: a ticket, or the refusal. */
static enum limit_verdict
limit_check_verdict(struct limit_check *c, struct limit_ticket **ticket,
    struct limit_refusal *r)
{
	struct limit_stage	*s, *worst = NULL;
	struct limit_ticket	*t;
	struct limit_namestat	*ns;
	size_t			 i, nslots = 0;

	for (i = 0; i < c->n; i++) {
		s = &c->stages[i];
		if (!s->started)
			continue;
		if (s->verdict == LIMIT_REFUSE && (worst == NULL ||
		    s->refusal.retry_ms > worst->refusal.retry_ms))
			worst = s;
		if (s->verdict == LIMIT_ADMIT && s->slot != NULL)
			nslots++;
	}
	if (worst != NULL) {
		for (i = 0; i < c->n; i++)
			limit_stage_undo(&c->stages[i]);
		*r = worst->refusal;
		limit_namestat(r->limit)->refused[r->reason]++;
		*ticket = NULL;
		return (LIMIT_REFUSE);
	}
	t = NULL;
	if (nslots > 0) {
		t = xcalloc(1, sizeof *t + nslots * sizeof t->slots[0]);
		for (i = 0; i < c->n; i++) {
			if (c->stages[i].slot != NULL)
				t->slots[t->n++] = c->stages[i].slot;
		}
	}
	for (i = 0; i < c->n; i++) {
		ns = limit_namestat(c->stages[i].e->name);
		/* Once per limit: its token stage, or its only one. */
		if (c->stages[i].kind == LIMIT_STAGE_TOKEN ||
		    c->stages[i].p.rate + c->stages[i].p.quota == 0)
			ns->admitted++;
	}
	*ticket = t;
	return (LIMIT_ADMIT);
}

/* The check is over: its stages let go of their entries. */
static void
limit_check_free(struct limit_check *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		limit_entry_unref(c->stages[i].e);
	free(c);
}

static void
limit_check_done(struct limit_check *c)
{
	struct limit_ticket	*t;
	struct limit_refusal	 r;

	TAILQ_REMOVE(&limit.pending, c, entry);
	if (limit_check_verdict(c, &t, &r) == LIMIT_ADMIT) {
		if (c->cb != NULL)
			c->cb(t, NULL, c->arg);
		else
			limit_ticket_free(t);
	} else if (c->cb != NULL)
		c->cb(NULL, &r, c->arg);
	limit_check_free(c);
}

/*
 * Shutdown: the requests still waiting for a check are answered now (as
 * refused: their clients try again, elsewhere), before the HTTP server
 * goes; their checks end when the store answers them.
 */
void
limit_shutdown(void)
{
	struct limit_check	*c;
	struct limit_refusal	 r;
	limit_checked_cb	*cb;

	TAILQ_FOREACH(c, &limit.pending, entry) {
		if ((cb = c->cb) == NULL)
			continue;
		memset(&r, 0, sizeof r);
		strlcpy(r.limit, c->n > 0 ? c->stages[0].e->name : "",
		    sizeof r.limit);
		r.reason = LIMIT_UNAVAILABLE;
		r.retry_ms = 1000;
		c->cb = NULL;
		cb(NULL, &r, c->arg);
	}
}

/* Starts stage s now: its verdict, or pending. */
static enum limit_verdict
limit_stage_start(struct limit_stage *s)
{
	if (s->kind == LIMIT_STAGE_SLOT)
		return (limit_take_slot(s));
	if (server.shared)
		return (limit_take_shared(s));
	return (limit_local_take(s->e, &s->p, &s->refusal) ? LIMIT_ADMIT :
	    LIMIT_REFUSE);
}

/* A stage of check c on e for limit l; it holds e until c is over. */
static void
limit_stage_add(struct limit_check *c, enum limit_stage_kind kind,
    struct limit_entry *e, const struct conf_limit *l)
{
	struct limit_stage	*s = &c->stages[c->n++];

	s->kind = kind;
	s->e = e;
	s->check = c;
	e->refs++;
	limit_params(l, &s->p);
}

enum limit_verdict
limit_check(const struct limit_subject *sub, struct limit_ticket **ticket,
    struct limit_refusal *r, limit_checked_cb *cb, void *arg)
{
	const struct conf	*conf = server.conf;
	const struct conf_limit	*l;
	struct limit_check	*c;
	struct limit_stage	*s;
	struct limit_entry	*e;
	enum limit_verdict	 v, out;
	size_t			 i;

	*ticket = NULL;
	if (conf->nlimits == 0)
		return (LIMIT_ADMIT);
	c = xcalloc(1, sizeof *c + 2 * conf->nlimits * sizeof c->stages[0]);
	c->cb = cb;
	c->arg = arg;
	c->pending = 1;			/* the starting's own */
	for (i = 0; i < conf->nlimits; i++) {
		l = &conf->limits[i];
		if (!limit_covers(l, sub) ||
		    (e = limit_entry_get(l, sub)) == NULL)
			continue;
		if (l->rate > 0 || l->quota > 0)
			limit_stage_add(c, LIMIT_STAGE_TOKEN, e, l);
		if (l->concurrency > 0)
			limit_stage_add(c, LIMIT_STAGE_SLOT, e, l);
	}
	/* In order; the first refusal starts no more of them. */
	for (i = 0; i < c->n; i++) {
		s = &c->stages[i];
		s->started = 1;
		s->verdict = LIMIT_PENDING;
		c->pending++;
		if ((v = limit_stage_start(s)) == LIMIT_PENDING)
			continue;
		s->verdict = v;
		c->pending--;
		if (v == LIMIT_REFUSE)
			break;
	}
	if (--c->pending > 0) {
		TAILQ_INSERT_TAIL(&limit.pending, c, entry);
		return (LIMIT_PENDING);
	}
	out = limit_check_verdict(c, ticket, r);
	limit_check_free(c);
	return (out);
}

void
limit_ticket_free(struct limit_ticket *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++)
		limit_slot_release(t->slots[i]);
	free(t);
}

/* ---------------------------------------------------------------------
 * Upkeep.
 */

static void
limit_renewed_cb(enum eventlog_status status, int granted, void *arg)
{
	limit_entry_unref(arg);
}

/* Every lease_renew_ms with a shared log: slots held here live on. */
void
limit_renew(void)
{
	struct limit_entry	*e;
	struct limit_slot	*sl;
	const char		*members[LIMIT_RENEW_BATCH];
	size_t			 n;

	if (!server.shared || !eventlog_available(server.eventlog))
		return;
	RB_FOREACH(e, limit_entries, &limit.entries) {
		n = 0;
		TAILQ_FOREACH(sl, &e->slots, entry) {
			members[n++] = sl->member;
			if (n < LIMIT_RENEW_BATCH && TAILQ_NEXT(sl, entry) !=
			    NULL)
				continue;
			e->refs++;
			limit.totals.store_calls++;
			eventlog_slot(server.eventlog, EVENTLOG_SLOT_RENEW,
			    e->id, 0, lease_ttl_ms(), members, n,
			    limit_renewed_cb, e);
			n = 0;
		}
	}
}

/*
 * A reload: Redis's "none before" was said of the old limits; the new
 * ones may admit a call sooner, so the next check asks again.
 */
void
limit_reload(void)
{
	struct limit_entry	*e;

	RB_FOREACH(e, limit_entries, &limit.entries)
		e->refused_until = 0;
}

/*
 * Once a second: leases unused for LIMIT_LEASE_MS go back; entries that
 * hold nothing are freed (those of limits a reload removed too, once
 * their calls have ended).
 */
void
limit_cron(void)
{
	struct limit_entry	*e, *e1;
	const struct conf_limit	*l;
	struct limit_params	 p;
	uint64_t		 now = clock_now_ms();

	RB_FOREACH_SAFE(e, limit_entries, &limit.entries, e1) {
		l = conf_limit_find(server.conf, e->name);
		if (e->leased > 0 && !e->fetching &&
		    (l == NULL || now - e->lease_ms >= LIMIT_LEASE_MS)) {
			if (l != NULL && eventlog_available(server.eventlog))
				limit_give_back(e, l);
			else
				e->leased = 0;
		}
		if (e->local && l != NULL) {
			limit_params(l, &p);
			limit_local_refill(e, &p);
		} else if (e->local) {
			e->tokens = UINT64_MAX;
			e->used = 0;
		}
		if (limit_entry_idle(e, now))
			limit_entry_free(e);
	}
}
