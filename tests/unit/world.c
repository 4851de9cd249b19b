/*
 * The memory-log world of the unit tests (world.h): built and torn down
 * in one place, so that every test waits the same turns for what a close
 * or a free defers and checks that no session outlives it.
 */
#include <sys/time.h>

#include <stdlib.h>

#include <event2/event.h>

#include "unit.h"
#include "world.h"

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stream.h"

/* Loop turns for what a close or a free defers to later turns. */
#define WORLD_TURNS	50

struct event_base	*base;
struct conf		*conf;
struct eventlog		*el;

/* world_start() ran (a test may free the log itself and NULL el). */
static int		 started;

void
world_setup(struct conf *c)
{
	log_level = LOG_LEVEL_ERROR;
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	conf = c != NULL ? c : conf_default();
	conf->eventlog = CONF_EVENTLOG_MEMORY;
}

void
world_start(void)
{
	char	*cause = NULL;

	el = eventlog_create(base, conf, &cause);
	ck_assert_msg(el != NULL, "eventlog_create: %s", cause);
	server_init(base, conf, el);
	session_init();
	started = 1;
}

void
world_stop(void)
{
	if (!started)
		return;
	session_shutdown();
	unit_turns(base, WORLD_TURNS);
	ck_assert_uint_eq(session_allocated(), 0);
}

void
world_free(void)
{
	if (el != NULL) {
		eventlog_free(el);
		el = NULL;
		unit_turns(base, WORLD_TURNS);
	}
	event_base_free(base);
	base = NULL;
	conf_free(conf);
	conf = NULL;
	started = 0;
}

void
world_teardown(void)
{
	world_stop();
	world_free();
}

struct session *
world_session(const char *version)
{
	struct session	*s;

	s = session_create(version, NULL, NULL, NULL, NULL, NULL);
	ck_assert_msg(s != NULL, "session_create refused");
	return (s);
}

static void
world_created_cb(struct stream *st, int ok, void *arg)
{
	*(int *)arg = ok ? 1 : -1;
}

struct stream *
world_request_stream(struct session *s)
{
	struct stream	*st;
	int		 created = 0, n;

	st = stream_open(s, STREAM_REQUEST, world_created_cb, &created);
	for (n = 0; created == 0 && n < WORLD_TURNS; n++)
		unit_turns(base, 1);
	ck_assert_int_eq(created, 1);
	return (st);
}

static void
world_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	*(int *)arg = 1;
}

void
run_for(int ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };
	struct event	*ev;
	int		 fired = 0, n;

	ev = evtimer_new(base, world_timer_cb, &fired);
	evtimer_add(ev, &tv);
	for (n = 0; !fired && n < 100000; n++)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(ev);
	ck_assert(fired);
}
