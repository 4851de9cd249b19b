/*
 * Draining: how an instance leaves a load balancer's pool without losing
 * a call. SIGTERM, SIGINT or SIGQUIT drain, then exit; SIGUSR2 drains
 * and stays up, not ready and not accepting, until SIGTERM. One state
 * machine:
 *
 *   serving -> delay    /readyz answers 503 at once; everything else is
 *                       served as usual for drain_delay, so the balancer
 *                       notices before a connection is refused.
 *   delay -> calls      the listening socket closes (new connections are
 *                       refused and the balancer retries them elsewhere);
 *                       requests still arriving on open connections are
 *                       answered with Connection: close; running calls
 *                       finish, for drain_timeout at most, then the ones
 *                       left end with the interrupted error, committed.
 *   calls -> views      responses that will not end here soon (the
 *                       standalone stream, streams written elsewhere) end
 *                       with retry: now; those of this process's request
 *                       streams show their last entries first, for
 *                       DRAIN_VIEWS_GRACE_MS at most.
 *   views -> done       every response still open ends with retry:, and
 *                       the process exits (0), or stays until SIGTERM,
 *                       ending at once the responses that still begin on
 *                       open connections.
 *
 * A second SIGTERM or SIGINT during a drain that exits stops at once, as
 * a stop without drain does: calls are interrupted.
 */
#include <signal.h>
#include <stdint.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "drain.h"
#include "log.h"
#include "stateless.h"
#include "notify.h"
#include "server.h"
#include "session.h"
#include "task.h"
#include "view.h"

/* How often the calls and views phases look whether they are over. */
#define DRAIN_POLL_MS		100
/* How long responses of this process's streams may take to show their end. */
#define DRAIN_VIEWS_GRACE_MS	5000

enum drain_state {
	DRAIN_NONE,		/* serving */
	DRAIN_DELAY,		/* not ready, serving as usual */
	DRAIN_CALLS,		/* not accepting, calls finishing */
	DRAIN_VIEWS,		/* responses showing their streams' ends */
	DRAIN_DONE,		/* drained: exiting, or staying until SIGTERM */
	DRAIN_STATE_MAX
};

static const char *drain_state_names[DRAIN_STATE_MAX] = {
	"serving", "delay", "calls", "views", "done"
};

static struct {
	enum drain_state	 state;
	int			 exit;		/* exit once drained */
	uint64_t		 deadline_ms;	/* of the calls or views phase */
	struct event		*ev;
	void			(*stop_listening)(void);
	void			(*stop)(void);
} drain;

static void	drain_step(void);

static void
drain_set_state(enum drain_state state)
{
	log_debug("drain %s -> %s", drain_state_names[drain.state],
	    drain_state_names[state]);
	drain.state = state;
}

static void
drain_arm(uint64_t ms)
{
	struct timeval	tv = { (time_t)(ms / 1000),
			    (suseconds_t)(ms % 1000) * 1000 };

	evtimer_add(drain.ev, &tv);
}

static void
drain_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	if (drain.state == DRAIN_DELAY) {
		drain.stop_listening();
		drain_set_state(DRAIN_CALLS);
		drain.deadline_ms = clock_now_ms() +
		    (uint64_t)server.conf->drain_timeout * 1000;
		log_info("drain: listening socket closed after drain_delay; "
		    "%zu call(s) running, waiting up to %llds (drain_timeout)",
		    session_running_calls() + stateless_running_calls() +
		    task_running(),
		    server.conf->drain_timeout);
	}
	drain_step();
}

/* The end: exit, or stay up not ready until SIGTERM. */
static void
drain_finish(void)
{
	size_t	n;

	n = view_drain_end();
	drain_set_state(DRAIN_DONE);
	log_info("drain: done; %zu more SSE response(s) ended with retry:%s", n,
	    drain.exit ? "; exiting" : "; staying up, not ready, until SIGTERM");
	if (drain.exit)
		drain.stop();
	else
		drain_arm(DRAIN_POLL_MS);
}

/* The calls and views phases: is this one over? */
static void
drain_step(void)
{
	uint64_t	now = clock_now_ms();
	size_t		n, left;

	if (drain.state == DRAIN_CALLS) {
		if ((n = session_running_calls() +
		    stateless_running_calls() + task_running()) > 0) {
			if (now < drain.deadline_ms) {
				drain_arm(DRAIN_POLL_MS);
				return;
			}
			log_info("drain: drain_timeout reached; interrupting "
			    "%zu call(s)", n);
			session_interrupt_calls("the server is shutting down "
			    "(drain_timeout)");
			stateless_interrupt_calls("the server is shutting down "
			    "(drain_timeout)");
			task_interrupt("the server is shutting down "
			    "(drain_timeout)");
		} else
			log_info("drain: no call running");
		drain_set_state(DRAIN_VIEWS);
		drain.deadline_ms = now + DRAIN_VIEWS_GRACE_MS;
		left = view_drain_step();
		log_info("drain: SSE responses to resume elsewhere ended with "
		    "retry:; %zu wait(s) for its stream's end", left);
		if (left > 0) {
			drain_arm(DRAIN_POLL_MS);
			return;
		}
	}
	if (drain.state == DRAIN_DONE) {
		/*
		 * Staying up: a response begun on a connection still open
		 * (it announced Connection: close) ends as soon as it has
		 * begun, so its client resumes elsewhere.
		 */
		if (!drain.exit) {
			view_drain_end();
			drain_arm(DRAIN_POLL_MS);
		}
		return;
	}
	if (drain.state != DRAIN_VIEWS)
		return;
	if ((left = view_drain_step()) > 0 && now < drain.deadline_ms) {
		drain_arm(DRAIN_POLL_MS);
		return;
	}
	if (left > 0)
		log_info("drain: %zu SSE response(s) did not reach their "
		    "stream's end in %d ms", left, DRAIN_VIEWS_GRACE_MS);
	drain_finish();
}

static void
drain_start(int exit)
{
	drain.exit = exit;
	drain_set_state(DRAIN_DELAY);
	log_info("drain: /readyz answers 503; serving as usual for %llds "
	    "(drain_delay), then %s", server.conf->drain_delay,
	    exit ? "exiting once drained" : "staying up, not ready");
	drain_arm((uint64_t)server.conf->drain_delay * 1000);
	if (exit)
		notify_send("STOPPING=1\nSTATUS=draining, then exiting");
	else
		notify_send("STATUS=draining (SIGUSR2): not ready, not "
		    "accepting new connections");
}

/*
 * The process's hooks (server.c): close the listening socket, and leave
 * the loop to shut down.
 */
void
drain_init(void (*stop_listening)(void), void (*stop)(void))
{
	drain.stop_listening = stop_listening;
	drain.stop = stop;
	drain.state = DRAIN_NONE;
	drain.exit = 0;
	drain.ev = evtimer_new(server.base, drain_timer_cb, NULL);
}

void
drain_free(void)
{
	if (drain.ev != NULL)
		event_free(drain.ev);
	drain.ev = NULL;
}

/* A signal, as a loop event (server.c). */
void
drain_signal(int sig)
{
	if (sig == SIGUSR2) {
		if (drain.state == DRAIN_NONE)
			drain_start(0);
		else
			log_info("signal %d: already draining", sig);
		return;
	}
	switch (drain.state) {
	case DRAIN_NONE:
		log_info("signal %d: draining, then exiting", sig);
		drain_start(1);
		break;
	case DRAIN_DONE:
		log_info("signal %d: drained; exiting", sig);
		notify_send("STOPPING=1");
		drain.exit = 1;
		drain_finish();
		break;
	default:
		if (!drain.exit) {
			log_info("signal %d: exiting once the drain is over",
			    sig);
			notify_send("STOPPING=1");
			drain.exit = 1;
			break;
		}
		log_info("signal %d during the drain: exiting at once", sig);
		drain.stop();
		break;
	}
}

/* Whether /readyz answers 503 "draining". */
int
drain_active(void)
{
	return (drain.state != DRAIN_NONE);
}

/* Whether requests are answered with Connection: close. */
int
drain_closing(void)
{
	return (drain.state >= DRAIN_CALLS);
}
