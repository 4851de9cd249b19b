/*
 * The process around the loop: one event_base, the HTTP listener, signals
 * as loop events (handed to drain.c), one cron a second for timeouts and
 * limits, and with a shared log the lease timers. Shutdown closes sessions
 * (ending their calls and streams) before the log goes, so every pending
 * callback still finds its owner.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "announce.h"
#include "audit.h"
#include "auth.h"
#include "clock.h"
#include "conf.h"
#include "drain.h"
#include "eventlog.h"
#include "exec.h"
#include "health.h"
#include "http_client.h"
#include "lease.h"
#include "limit.h"
#include "listen.h"
#include "log.h"
#include "mcpd.h"
#include "stateless.h"
#include "notify.h"
#include "provider.h"
#include "reload.h"
#include "reply.h"
#include "server.h"
#include "session.h"
#include "statekey.h"
#include "task.h"
#include "telemetry.h"
#include "transport.h"
#include "view.h"
#include "xmalloc.h"

/* Seconds shutdown waits for the log to commit its last entries. */
#define SERVER_DRAIN_TIMEOUT	3
/* Milliseconds the listener rests after accept() failed (no descriptor). */
#define SERVER_ACCEPT_PAUSE_MS	100
/* Milliseconds without a failure that end an episode of them. */
#define SERVER_ACCEPT_CALM_MS	1000
/*
 * Loop turns at most after the log is freed, for what that sets off (see
 * server_run); a chain of deferred frees is a few turns long.
 */
#define SERVER_EXIT_TURNS	16
/* Milliseconds between looks at the log while start-up waits for it. */
#define SERVER_WAIT_POLL_MS	20
/* Milliseconds of that wait before it is logged (a quick one is not). */
#define SERVER_WAIT_QUIET_MS	500
/* Connections the kernel queues before accept(), as evhttp's own bind. */
#define SERVER_BACKLOG		128

struct server server;

/*
 * What every module reads instead of keeping its own copy; unit tests and
 * fuzz harnesses call this without running the server.
 */
void
server_init(struct event_base *base, const struct conf *conf,
    struct eventlog *el)
{
	server.base = base;
	server.conf = conf;
	server.eventlog = el;
	server.shared = eventlog_shared(el);
}

static void
server_signal_cb(evutil_socket_t sig, short events, void *arg)
{
	drain_signal((int)sig);
}

/* Leaves the loop: server_run shuts down. */
static void
server_stop(void)
{
	event_base_loopexit(server.base, NULL);
}

/*
 * Closes the listening socket: new connections are refused (a balancer
 * retries them elsewhere); those open stay.
 */
static void
server_stop_listening(void)
{
	if (server.resume_ev != NULL)
		evtimer_del(server.resume_ev);
	if (server.bound != NULL)
		evhttp_del_accept_socket(server.http, server.bound);
	server.bound = NULL;
	server.lev = NULL;
}

/* The service manager's watchdog: the loop still turns. */
static void
server_watchdog_cb(evutil_socket_t fd, short events, void *arg)
{
	notify_send("WATCHDOG=1");
}

/*
 * SIGHUP while start-up waits for the log (server_await_log): taken up
 * once it listens, as a reload tells the service manager READY=1 and the
 * wait holds the configuration it started with.
 */
static int	server_reload_owed;

/* SIGHUP: the configuration file again (reload.c). */
static void
server_reload_cb(evutil_socket_t sig, short events, void *arg)
{
	if (server.bound == NULL && !drain_active()) {
		log_info("reload: once listening");
		server_reload_owed = 1;
		return;
	}
	if (reload_conf() == 0)
		server_http_limits(server.http, server.conf);
}

/* SIGUSR1: the log file was moved away (rotation); open it again. */
static void
server_reopen_cb(evutil_socket_t sig, short events, void *arg)
{
	log_reopen();
	audit_reopen();
}

/*
 * Every signal an operator might send does what its name promises, and
 * none kills mcpd by accident. SIGQUIT is nginx's graceful stop, and what
 * some container runtimes and supervisors send: a drain, like SIGTERM.
 */
static const struct {
	int	 sig;
	void	(*cb)(evutil_socket_t, short, void *);
} server_signals[] = {
	{ SIGTERM, server_signal_cb },
	{ SIGINT, server_signal_cb },
	{ SIGQUIT, server_signal_cb },
	{ SIGUSR2, server_signal_cb },
	{ SIGUSR1, server_reopen_cb },
	{ SIGHUP, server_reload_cb },
};
#define SERVER_NSIGNALS	(sizeof server_signals / sizeof server_signals[0])

/* The events server_run adds to the loop, deleted before the log goes. */
static struct {
	struct event	*signals[SERVER_NSIGNALS];
	struct event	*cron;
	struct event	*watchdog;	/* with the service manager's watchdog */
	struct event	*renew;		/* with a shared log: lease timers */
	struct event	*check;
} server_ev;

/*
 * accept() failed for a reason that does not pass by itself at once: most
 * often the open file limit, with the pending connection left in the
 * kernel's queue, so the listening socket stays readable and the loop
 * would call accept() again at once, forever. The listener rests instead
 * (as nginx and Redis do) and tries again later; connections wait in the
 * queue meanwhile and are taken as soon as descriptors are free. One line
 * when refusals start, one when they have stopped.
 */
static void
server_accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct timeval	tv = { 0, SERVER_ACCEPT_PAUSE_MS * 1000 };
	int		err = EVUTIL_SOCKET_ERROR();
	uint64_t	now = clock_now_ms();

	if (server.refusing_since == 0) {
		server.refusing_since = now;
		server.refusals = 0;
		log_limited(LOG_LEVEL_WARN, "accept", "accept: %s (open file "
		    "limit %llu, %zu open streams); new connections wait, "
		    "retrying every %d ms", evutil_socket_error_to_string(err),
		    server.nofile, view_count(), SERVER_ACCEPT_PAUSE_MS);
	}
	server.refusals++;
	server.last_refusal = now;
	evconnlistener_disable(lev);
	evtimer_add(server.resume_ev, &tv);
}

static void
server_accept_resume_cb(evutil_socket_t fd, short events, void *arg)
{
	if (server.lev != NULL)
		evconnlistener_enable(server.lev);
}

/* From the cron: refusals are over once a while has passed without one. */
static void
server_accept_cron(void)
{
	uint64_t	now = clock_now_ms();

	if (server.refusing_since == 0 ||
	    now - server.last_refusal < SERVER_ACCEPT_CALM_MS)
		return;
	log_limited(LOG_LEVEL_INFO, "accept", "accept: no failure for %d ms; "
	    "%llu failed in the %llu ms before", SERVER_ACCEPT_CALM_MS,
	    server.refusals, (unsigned long long)(server.last_refusal -
	    server.refusing_since));
	server.refusing_since = 0;
}

static void
server_cron_cb(evutil_socket_t fd, short events, void *arg)
{
	health_cron();
	session_cron();
	view_cron();
	listen_cron();
	limit_cron();
	audit_cron();
	server_accept_cron();
	log_cron();
}

/* Shared logs: leases are renewed, and checked, more often than the cron. */
static void
server_lease_renew_cb(evutil_socket_t fd, short events, void *arg)
{
	session_renew_leases();
	limit_renew();
}

static void
server_lease_check_cb(evutil_socket_t fd, short events, void *arg)
{
	view_check_orphans();
}

static struct event *
server_every(struct event_base *base, uint64_t ms, event_callback_fn cb)
{
	struct timeval	 tv = { (time_t)(ms / 1000),
			     (suseconds_t)(ms % 1000) * 1000 };
	struct event	*ev;

	ev = event_new(base, -1, EV_PERSIST, cb, NULL);
	event_add(ev, &tv);
	return (ev);
}

/* The event log as start-up and the service manager's status say it. */
static const char *
server_log_state(void)
{
	if (!server.shared)
		return ("memory");
	return (eventlog_available(server.eventlog) ? "redis (connected)" :
	    "redis (not connected yet: not ready until it is)");
}

/* Raises the descriptor limit as far as allowed, as long-lived streams
 * hold one descriptor each. */
static void
server_raise_nofile(void)
{
	struct rlimit	rl;

	unsigned long long	before;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	before = (unsigned long long)rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	server.nofile = (unsigned long long)rl.rlim_cur;
	if (server.nofile > before)
		log_info("open file limit raised from %llu to %llu (the hard "
		    "limit)", before, server.nofile);
	else
		log_info("open file limit %llu (the hard limit)",
		    server.nofile);
}

/*
 * The reason a listening socket could not be made, in the operator's
 * words first (what to fix), then the system's.
 */
static const char *
server_bind_hint(int err)
{
	switch (err) {
	case EADDRINUSE:
		return ("the port is in use (another process listens on it)");
	case EADDRNOTAVAIL:
		return ("the address is not available (no interface of this "
		    "host has it)");
	case EACCES:
	case EPERM:
		return ("permission denied (ports below 1024 need "
		    "privilege)");
	default:
		return (NULL);
	}
}

/*
 * The listening socket, made here rather than by evhttp_bind_socket,
 * which logs nothing of why bind() failed and leaves the caller to guess
 * from errno. -1 with cause set on failure. reply_listener sets
 * TCP_NODELAY here, on the listener: on Linux every accepted connection
 * inherits it, so an SSE response (reply_sse_start, which needs it) costs
 * no setsockopt of its own, one system call fewer per call.
 */
static evutil_socket_t
server_bind(const char *host, int port, char **cause)
{
	struct evutil_addrinfo	 hints, *ai = NULL;
	evutil_socket_t		 fd;
	const char		*hint;
	char			 service[16];
	int			 rc, err, on = 1;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG;
	snprintf(service, sizeof service, "%d", port);
	if ((rc = evutil_getaddrinfo(host, service, &hints, &ai)) != 0) {
		xasprintf(cause, "the host cannot be resolved (%s)",
		    evutil_gai_strerror(rc));
		return (-1);
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, ai->ai_protocol);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
	    reply_listener(fd) != 0 ||
	    bind(fd, ai->ai_addr, (socklen_t)ai->ai_addrlen) != 0 ||
	    listen(fd, SERVER_BACKLOG) != 0) {
		err = errno;
		if ((hint = server_bind_hint(err)) != NULL)
			xasprintf(cause, "%s: %s", hint, strerror(err));
		else
			xasprintf(cause, "%s", strerror(err));
		if (fd != -1)
			close(fd);
		evutil_freeaddrinfo(ai);
		return (-1);
	}
	evutil_freeaddrinfo(ai);
	return (fd);
}

static struct evhttp_bound_socket *
server_listen(struct evhttp *http, const struct conf *conf)
{
	struct evhttp_bound_socket	*bound;
	struct sockaddr_storage		 ss;
	socklen_t			 sslen = sizeof ss;
	evutil_socket_t			 fd;
	char				 addr[INET6_ADDRSTRLEN];
	char				*cause = NULL;
	int				 port = 0;

	if ((fd = server_bind(conf->listen_host, conf->listen_port,
	    &cause)) == -1) {
		log_error("cannot listen on %s:%d: %s", conf->listen_host,
		    conf->listen_port, cause);
		free(cause);
		return (NULL);
	}
	if ((bound = evhttp_accept_socket_with_handle(http, fd)) == NULL) {
		log_error("cannot listen on %s:%d: the HTTP server refused "
		    "the socket", conf->listen_host, conf->listen_port);
		close(fd);
		return (NULL);
	}
	server.lev = evhttp_bound_socket_get_listener(bound);
	evconnlistener_set_error_cb(server.lev, server_accept_error_cb);
	getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss,
	    &sslen);
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
		    addr, sizeof addr);
		port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		server.port = port;
		log_info("listening on [%s]:%d endpoint %s", addr, port,
		    conf->endpoint);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr,
		    addr, sizeof addr);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		server.port = port;
		log_info("listening on %s:%d endpoint %s", addr, port,
		    conf->endpoint);
	}
	return (bound);
}

/* What evhttp refuses by itself; set again by a reload. */
void
server_http_limits(struct evhttp *http, const struct conf *conf)
{
	evhttp_set_max_headers_size(http, conf->max_header_size);
	/*
	 * evhttp answers bodies over its limit itself, with an HTML page and
	 * before any callback. Its limit is set at twice max_body so that
	 * most oversized bodies reach transport.c, which answers them 413
	 * with a JSON-RPC body; memory per request stays bounded all the
	 * same.
	 */
	evhttp_set_max_body_size(http, conf->max_body * 2);
}

/*
 * The HTTP server with its limits and the transport's handlers, not yet
 * listening (the fuzz harness feeds it connections of its own).
 */
struct evhttp *
server_http_new(struct event_base *base, const struct conf *conf)
{
	struct evhttp	*http;

	if ((http = evhttp_new(base)) == NULL)
		fatalx("evhttp_new failed");
	server_http_limits(http, conf);
	evhttp_set_timeout(http, SERVER_REQUEST_TIMEOUT);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_HEAD);
	transport_init(http, conf->endpoint);
	return (http);
}

static void
server_drain_timeout_cb(evutil_socket_t fd, short events, void *arg)
{
	*(int *)arg = 1;
}

/*
 * Lets the log commit what shutdown produced (the error responses of
 * interrupted calls) and the last bytes reach the clients: the loop runs
 * until every session is freed, or SERVER_DRAIN_TIMEOUT at most (a log
 * that is down gets no say in how long a stop takes).
 */
static void
server_drain(struct event_base *base)
{
	struct timeval	 tv = { SERVER_DRAIN_TIMEOUT, 0 };
	struct event	*timer;
	int		 expired = 0;

	timer = evtimer_new(base, server_drain_timeout_cb, &expired);
	evtimer_add(timer, &tv);
	event_base_loop(base, EVLOOP_NONBLOCK);
	while (session_allocated() > 0 && !expired)
		event_base_loop(base, EVLOOP_ONCE);
	event_base_loop(base, EVLOOP_NONBLOCK);
	if (session_allocated() > 0)
		log_warn("stopping with %zu sessions' log operations "
		    "unfinished", session_allocated());
	event_free(timer);
}

/*
 * Test hook, for tests/e2e/test_drain.py only: MCPD_TEST_EXIT_HOLD_MS
 * holds the exit this long right before the log is freed, as a slow
 * machine may, so that a test can make the cron come due and send signals
 * there. Nothing else reads it; unset, it costs one getenv at exit.
 */
static void
server_test_exit_hold(void)
{
	const char	*v = getenv("MCPD_TEST_EXIT_HOLD_MS");
	struct timespec	 ts;
	long		 ms;

	if (v == NULL || (ms = strtol(v, NULL, 10)) <= 0)
		return;
	log_info("test hook: exit held %ld ms before the event log is freed",
	    ms);
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) != 0)
		continue;
}

/*
 * Signals during the exit do nothing: a SIGHUP would reload providers
 * already stopped, a second SIGTERM has nothing left to hurry, and
 * freeing a signal's event restores its default action, which for
 * SIGTERM (a supervisor's second one, a test harness's) would kill a
 * process that is already exiting, with 143 instead of its status. The
 * signals are blocked while their events go, so none falls in between.
 */
static void
server_signals_ignore(void)
{
	sigset_t	set, old;
	size_t		i;

	sigemptyset(&set);
	for (i = 0; i < SERVER_NSIGNALS; i++)
		sigaddset(&set, server_signals[i].sig);
	sigprocmask(SIG_BLOCK, &set, &old);
	for (i = 0; i < SERVER_NSIGNALS; i++) {
		if (server_ev.signals[i] != NULL)
			event_free(server_ev.signals[i]);
		server_ev.signals[i] = NULL;
		signal(server_signals[i].sig, SIG_IGN);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The timers server_run added: they read sessions, views and the log. */
static void
server_timers_free(void)
{
	struct event	**evp[] = { &server_ev.cron, &server_ev.watchdog,
			    &server_ev.renew, &server_ev.check,
			    &server.resume_ev };
	size_t		  i;

	for (i = 0; i < sizeof evp / sizeof evp[0]; i++) {
		if (*evp[i] != NULL)
			event_free(*evp[i]);
		*evp[i] = NULL;
	}
}

/* The service manager's watchdog, if it asked for one: twice per period. */
static void
server_watchdog_start(struct event_base *base)
{
	struct timeval	tv;

	if (notify_watchdog_usec() == 0)
		return;
	tv.tv_sec = (time_t)(notify_watchdog_usec() / 2000000);
	tv.tv_usec = (suseconds_t)(notify_watchdog_usec() / 2 % 1000000);
	server_ev.watchdog = event_new(base, -1, EV_PERSIST,
	    server_watchdog_cb, NULL);
	event_add(server_ev.watchdog, &tv);
	notify_send("WATCHDOG=1");
}

/* Start-up waiting for its log (server_await_log). */
struct server_wait {
	const struct conf	*conf;
	uint64_t		 since;
	int			 told;		/* the wait was logged */
};

/*
 * The wait is said (a log line, the service manager's STATUS) only once
 * it lasts: a Redis that answers at once makes no noise at every start.
 */
static void
server_wait_tell(struct server_wait *w)
{
	const struct conf	*conf = w->conf;

	if (w->told || clock_now_ms() - w->since < SERVER_WAIT_QUIET_MS)
		return;
	w->told = 1;
	log_info("waiting up to %llds (eventlog_wait) for the event log "
	    "%s before listening", conf->eventlog_wait, conf->redis_name);
	notify_send("STATUS=waiting for the event log (eventlog_wait %llds)",
	    conf->eventlog_wait);
}

static void
server_wait_poll_cb(evutil_socket_t fd, short events, void *arg)
{
	if (eventlog_available(server.eventlog) || drain_active())
		event_base_loopbreak(server.base);
	else
		server_wait_tell(arg);
}

/* eventlog_wait has passed. */
static void
server_wait_expired_cb(evutil_socket_t fd, short events, void *arg)
{
	event_base_loopbreak(server.base);
}

/*
 * An instance that listened before its log was reachable could only
 * answer 503 "Event log unavailable", and a balancer that does not read
 * /readyz (nginx) would send it requests all the same: during a rolling
 * restart, clients would get those 503s. So start-up waits for the log,
 * eventlog_wait at most, with the loop running (the log connects, signals
 * are heard) and no listening socket: connections are refused and the
 * balancer tries another instance. 1 if the log is reachable, 0 if not
 * (the wait ran out, or a signal asked for a drain or a stop).
 */
static int
server_await_log(struct event_base *base, const struct conf *conf)
{
	struct timeval		 poll = { 0, SERVER_WAIT_POLL_MS * 1000 };
	struct timeval		 bound = { (time_t)conf->eventlog_wait, 0 };
	struct event		*poll_ev, *bound_ev;
	struct server_wait	 w = { conf, clock_now_ms(), 0 };

	if (eventlog_available(server.eventlog))
		return (1);
	if (conf->eventlog_wait == 0)
		return (0);
	poll_ev = event_new(base, -1, EV_PERSIST, server_wait_poll_cb, &w);
	bound_ev = evtimer_new(base, server_wait_expired_cb, NULL);
	event_add(poll_ev, &poll);
	evtimer_add(bound_ev, &bound);
	event_base_dispatch(base);
	event_free(poll_ev);
	event_free(bound_ev);
	return (eventlog_available(server.eventlog));
}

/* Runs until stopped; owns conf (a reload replaces it) and frees it. */
int
server_run(struct conf *conf)
{
	struct event_config	*cfg;
	struct event_base	*base;
	struct evhttp		*http = NULL;
	struct eventlog		*el;
	struct timeval		 second = { 1, 0 };
	char			*cause = NULL;
	size_t			 i;
	int			 rc = 1;

	signal(SIGPIPE, SIG_IGN);
	server.start_time = (long long)time(NULL);
	log_info("mcpd %s starting: pid %ld, configuration %s", MCPD_VERSION,
	    (long)getpid(), conf->path);
	notify_init();
	server_raise_nofile();
	/*
	 * epoll changes batched per loop turn: evhttp turns a connection's
	 * read and write events on and off several times per request (each
	 * an epoll_ctl, and a system call costs), and most of that cancels
	 * out within a turn. The flag's one caveat, a watched fd dup()ed,
	 * does not arise: exec.c's children get fresh pipe ends and close
	 * every other fd.
	 */
	if ((cfg = event_config_new()) == NULL ||
	    event_config_set_flag(cfg,
	    EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST) != 0 ||
	    (base = event_base_new_with_config(cfg)) == NULL)
		fatalx("event_base_new failed");
	event_config_free(cfg);
	if ((el = eventlog_create(base, conf, &cause)) == NULL) {
		log_error("event log: %s", cause);
		free(cause);
		goto out;
	}
	server_init(base, conf, el);
	statekey_start(base, el);	/* reads the log's keyring once it can */
	session_init();
	announce_init();	/* with a shared log: other instances' changes */
	listen_init();
	task_init();
	limit_init();
	exec_init(base);
	http_client_init(base);	/* before the providers: HTTP upstreams */
	telemetry_configure(base, conf);	/* spans from here on */
	provider_init(conf);
	if (auth_init(base, conf, &cause) != 0) {
		log_error("auth: %s", cause);
		free(cause);
		goto out;
	}
	if (audit_init(conf, &cause) != 0) {
		log_error("audit_log %s", cause);
		free(cause);
		goto out;
	}
	if (conf_warning(conf) != NULL)
		log_warn("%s: %s", conf->path, conf_warning(conf));

	drain_init(server_stop_listening, server_stop);
	http = server_http_new(base, conf);
	server.http = http;
	health_init();

	for (i = 0; i < SERVER_NSIGNALS; i++) {
		server_ev.signals[i] = evsignal_new(base,
		    server_signals[i].sig, server_signals[i].cb, NULL);
		/*
		 * Not for memory alone: sigaction can refuse, and a daemon
		 * deaf to SIGTERM or SIGHUP must not start.
		 */
		if (evsignal_add(server_ev.signals[i], NULL) != 0)
			fatalx("cannot handle signal %s",
			    strsignal(server_signals[i].sig));
	}
	server_ev.cron = event_new(base, -1, EV_PERSIST, server_cron_cb, NULL);
	event_add(server_ev.cron, &second);
	if (server.shared) {
		server_ev.renew = server_every(base, lease_renew_ms(),
		    server_lease_renew_cb);
		server_ev.check = server_every(base, LEASE_CHECK_MS,
		    server_lease_check_cb);
	}
	server.resume_ev = evtimer_new(base, server_accept_resume_cb, NULL);

	if (!server_await_log(base, conf)) {
		if (event_base_got_exit(base) || drain_active()) {
			/* Stopped, or drained, before it ever listened. */
			if (!event_base_got_exit(base))
				event_base_dispatch(base);
			rc = 0;
			goto out;
		}
		log_warn("the event log %s is not reachable after %llds "
		    "(eventlog_wait; why is logged above): listening, not "
		    "ready (/readyz 503) until it is", conf->redis_name,
		    conf->eventlog_wait);
	}
	if ((server.bound = server_listen(http, conf)) == NULL)
		goto out;
	log_info("mcpd %s ready: event log %s, builtin tools %s, %zu exec "
	    "tools, drain_delay %llds, drain_timeout %llds", MCPD_VERSION,
	    server_log_state(), conf->builtin_tools ? "on" : "off",
	    conf->ntools, conf->drain_delay, conf->drain_timeout);
	notify_send("READY=1\nSTATUS=listening on %s:%d, event log %s",
	    conf->listen_host, server.port, server_log_state());
	server_watchdog_start(base);
	if (server_reload_owed)
		server_reload_cb(SIGHUP, 0, NULL);
	event_base_dispatch(base);
	rc = 0;

out:
	/*
	 * No new work while the old finishes. After a drain (drain.c) no
	 * call runs and no response is open any more. Otherwise (a second
	 * SIGTERM) streams are cut first: to their clients the end of this
	 * process is no end of a stream. The cron and the lease timers run
	 * on while server_drain lets the log commit what this produced;
	 * every event of this file is gone before the HTTP server and the
	 * log are freed, as they read both.
	 */
	server_signals_ignore();
	server_stop_listening();
	drain_free();
	if (el != NULL) {
		auth_shutdown();	/* requests waiting for a check: 503 */
		limit_shutdown();	/* and those waiting for limits: 429 */
		telemetry_settle(base, server.conf);	/* an export sent */
		http_client_shutdown();
		view_shutdown();
		stateless_shutdown();
		listen_shutdown();
		announce_shutdown();
		session_shutdown();
		task_shutdown();
		provider_shutdown();	/* upstreams stopped */
		exec_shutdown();	/* cancelled calls: programs reaped */
		server_drain(base);
		telemetry_flush(base, server.conf);	/* the last spans */
	}
	server_timers_free();
	statekey_stop();
	/*
	 * The log first: what still waits for it (a request whose answer
	 * waited out an outage) is answered CANCELLED while its connection
	 * is there; evhttp_free frees the connections under requests it
	 * does not own any more.
	 */
	server_test_exit_hold();
	eventlog_free(el);
	server.eventlog = NULL;
	if (http != NULL)
		evhttp_free(http);
	server.http = NULL;
	/*
	 * What freeing the log set off (callbacks answered CANCELLED, and
	 * the frees they defer to a later turn, each one turn after the
	 * last) runs before the base goes; the bound only guards against a
	 * callback that re-arms itself forever.
	 */
	for (i = 0; i < SERVER_EXIT_TURNS && event_base_get_num_events(base,
	    EVENT_BASE_COUNT_ACTIVE | EVENT_BASE_COUNT_ADDED) > 0; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_free(base);
	server.base = NULL;
	audit_shutdown();	/* the lines of the calls that ended above */
	log_limit_end();
	log_info("stopped: exit status %d", rc);
	notify_close();
	/* The last configuration read (maybe by a reload), or conf. */
	if (server.conf != NULL)
		conf_release(server.conf);
	else
		conf_free(conf);
	server.conf = NULL;
	return (rc);
}
