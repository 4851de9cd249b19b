/*
 * What /readyz, /livez and /healthz say (transport.c answers them): whether
 * a balancer should send this instance work, whether the process should be
 * restarted, and the event log's state.
 */
#include <stdint.h>

#include "clock.h"
#include "drain.h"
#include "eventlog.h"
#include "health.h"
#include "notify.h"
#include "server.h"
#include "statekey.h"

/* Milliseconds since the cron last ran after which the loop is stalled. */
#define HEALTH_LIVE_MS	5000

static struct {
	uint64_t	cron_ms;	/* the cron's last run */
	int		log_seen;	/* the log was available once */
	int		log_up;		/* last told the service manager */
} health;

void
health_init(void)
{
	health.cron_ms = clock_now_ms();
	health.log_up = -1;
	health.log_seen = 0;
}

/* From the once-a-second cron. */
void
health_cron(void)
{
	int	up;

	health.cron_ms = clock_now_ms();
	up = health_log_available();
	if (server.shared && up != health.log_up) {
		/* The service manager's status follows the log. */
		notify_send("STATUS=%s", up ? "ready: event log connected" :
		    "not ready: event log unreachable");
		health.log_up = up;
	}
}

/*
 * Whether the event log can take operations now; start-up is over once it
 * could.
 */
int
health_log_available(void)
{
	if (!eventlog_available(server.eventlog))
		return (0);
	health.log_seen = 1;
	return (1);
}

/*
 * NULL when ready for new work, else why not: draining, the log is
 * unreachable, or it never was yet (start-up), or the requestState keys
 * are not read from it yet (statekey.c; an instance that signs with keys of
 * its own issues states no other instance opens).
 */
const char *
health_not_ready(void)
{
	if (drain_active())
		return ("draining");
	if (!health_log_available())
		return (health.log_seen ? "eventlog unavailable" : "starting");
	if (!statekey_ready())
		return ("state key unavailable");
	return (NULL);
}

/*
 * Why the log is not available, in words (redis: "AUTH refused: ...",
 * "the ACL forbids XADD ...", "commits reached 0 of 1 replicas ..."), or
 * NULL when it is, or has nothing to say.
 */
const char *
health_not_ready_reason(void)
{
	struct eventlog_where	w;

	if (drain_active() || health_log_available())
		return (NULL);
	eventlog_describe(server.eventlog, &w);
	return (w.why);
}

/*
 * Whether the loop turns. That a handler runs proves little (a loop stuck
 * in one callback answers nothing at all, and one that answers may still
 * starve its timers): the once-a-second cron must have run within
 * HEALTH_LIVE_MS. Neither the log's state nor a drain makes a process not
 * live: restarting it would not help.
 */
int
health_live(void)
{
	return (clock_now_ms() - health.cron_ms < HEALTH_LIVE_MS);
}
