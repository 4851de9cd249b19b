/*
 * The event log's behavioural suite, written once and run on every backend
 * (test_eventlog.c: memory, test_eventlog_redis.c: redis), and the harness
 * it is written in, which the backend-specific tests use too.
 *
 * A backend describes itself in a struct eventlog_cases_backend; everything
 * else (one event base per test, the conf, the log, fresh session ids, the
 * operations each waited for) is common. The module's entry points carry
 * its name; the helpers the cases are written in keep short names.
 */
#ifndef MCPD_EVENTLOG_CASES_H
#define MCPD_EVENTLOG_CASES_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "eventlog.h"

struct conf;
struct event_base;

#define K		42	/* the stream most cases use */
#define MAX_ENTRIES	256	/* entries a struct res holds */
#define WAIT_MS		10000	/* longest a callback may take */

/* Where the backends legitimately differ. */
struct eventlog_cases_backend {
	/* Points conf at the backend; run before every log is created. */
	void		(*configure)(struct conf *);
	/* Waits until a log just created answers (NULL: it does at once). */
	void		(*ready)(struct eventlog *);
	/*
	 * Answers need no I/O: wait_for() then insists on each answer within
	 * a bounded number of loop turns that never block, not merely within
	 * WAIT_MS.
	 */
	int		  no_io;
	/*
	 * How much earlier than stream_ttl a stream may read as expired,
	 * measured on our clock when the TTL runs on another (the server's).
	 */
	uint64_t	  expiry_early_ms;
	/*
	 * Checks, behind the API's back, that nothing of a deleted session
	 * is left in the backend's storage (NULL: nothing to look at).
	 */
	void		(*check_gone)(const char *);
	/*
	 * Deletes the keyring behind the API's back, so that a case starts
	 * without one (NULL: a new log has none).
	 */
	void		(*forget_keyring)(void);
};

/* The backend under test, and what every test starts with. */
extern const struct eventlog_cases_backend	*backend;
extern struct event_base	*base;
extern struct conf		*conf;
extern struct eventlog		*el;
extern char			 SID[33];	/* fresh for each test */
extern char			 OTHER_SID[33];

/* What one callback reported; entries are copied out of the callback. */
struct res {
	int			 calls;
	enum eventlog_status	 status;
	int			 has_info;
	struct eventlog_info	 info;
	size_t			 n;
	uint64_t		 seq[MAX_ENTRIES];
	char			*data[MAX_ENTRIES];
	size_t			 len[MAX_ENTRIES];
	char			*meta;
	size_t			 metalen;
	int			 has_committed;	/* an append's entry: */
	char			 committed[128];	/* its start */
	size_t			 committedlen;
	int			*order;	/* shared call counter */
	int			 rank;	/* *order when called */
};

void	res_clear(struct res *);
void	res_called(struct res *, enum eventlog_status,
	    const struct eventlog_info *);
void	done_cb(enum eventlog_status, void *);
void	append_cb(enum eventlog_status, const struct eventlog_info *,
	    void *);
void	read_cb(enum eventlog_status, const struct eventlog_entry *, size_t,
	    const struct eventlog_info *, void *);
void	load_cb(enum eventlog_status, const char *, size_t, void *);

/* The loop. */
void		turn(void);
uint64_t	run_until(int *, int);
void		run_for(int);
void		wait_for(struct res *);
void		spin(void);

/* The operations, each waited for and checked to answer once, later. */
enum eventlog_status	store(const char *, const char *, size_t);
void			load(const char *, struct res *);
enum eventlog_status	create(const char *, uint64_t,
			    struct eventlog_info *);
enum eventlog_status	append(const char *, uint64_t, uint64_t,
			    const char *, int, struct eventlog_info *, int *);
enum eventlog_status	end(const char *, uint64_t, struct eventlog_info *);
enum eventlog_status	readr(const char *, uint64_t, uint64_t, size_t,
			    struct res *);

enum eventlog_status	tput(const char *, uint64_t, const char *, uint64_t);
enum eventlog_status	tput_final(const char *, uint64_t, const char *,
			    uint64_t, int);
enum eventlog_status	tget(const char *, uint64_t *, char **);

void	expect_status(enum eventlog_status, enum eventlog_status);
void	entry_text(char *, size_t, uint64_t);
void	fill(uint64_t, uint64_t);
void	expect_entries(const struct res *, uint64_t, size_t);

/* Re-creates the log with these limits and the conf as the test set it. */
void	reopen(long long, long long);

/* The fixture: a fresh base, conf, log and session ids for every test. */
void	eventlog_cases_setup(void);
void	eventlog_cases_teardown(void);

/*
 * Makes b the backend every test of the program runs on, and adds the
 * behavioural suite's test cases to s.
 */
void	eventlog_cases_add(Suite *, const struct eventlog_cases_backend *);

#endif
