/*
 * The world the unit tests of sessions, streams, calls, views, leases,
 * tasks and authorization run in, built as server_run builds it: one event
 * base, a configuration, the memory event log, server_init and the session
 * table. A test's setup calls world_setup() (then may change conf),
 * world_start(), then starts what else it tests; its teardown stops that,
 * then calls world_teardown(), or world_stop() and world_free() with its
 * own frees between them (an evhttp server lives on the base).
 *
 * As in eventlog_cases.h, what every test starts with has short names;
 * the fixture's entry points carry its name.
 */
#ifndef MCPD_WORLD_H
#define MCPD_WORLD_H

struct conf;
struct event_base;
struct eventlog;
struct session;
struct stream;

extern struct event_base	*base;
extern struct conf		*conf;
extern struct eventlog		*el;	/* NULL until world_start() */

/* The base, and conf (NULL: the defaults), which the world now owns. */
void		 world_setup(struct conf *);
/* The memory event log on conf, server_init, the session table. */
void		 world_start(void);
/*
 * Closes every session, runs the loop until they are freed and checks
 * that none is left (nothing if world_start() never ran).
 */
void		 world_stop(void);
/* Frees the log (then lets what it cancelled run), the base and conf. */
void		 world_free(void);
/* world_stop(), then world_free(). */
void		 world_teardown(void);

/* A new session of a protocol version; the test fails if it is refused. */
struct session	*world_session(const char *);
/* A request stream of a session, created in the log (entry 0 committed). */
struct stream	*world_request_stream(struct session *);
/* Runs the loop, timers included, for ms milliseconds. */
void		 run_for(int);

#endif
