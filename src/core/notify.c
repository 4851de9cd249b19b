/*
 * The notify protocol spoken directly, as it is small and stable: each
 * message is newline-separated VAR=VALUE assignments in one datagram to
 * the AF_UNIX socket $NOTIFY_SOCKET names, a path or, after "@", a name in
 * the abstract namespace. libsystemd is not needed for that, and mcpd runs
 * the same in containers without it.
 *
 * The variables are read once and removed from the environment, so no
 * child (an exec tool) can speak for mcpd. The watchdog interval counts
 * only if WATCHDOG_PID, when set, is this process.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

/* A message is a few short assignments; STATUS is the longest. */
#define NOTIFY_MAX	1024

static struct {
	int			 fd;
	struct sockaddr_un	 sun;
	socklen_t		 sunlen;
	uint64_t		 watchdog_usec;
	int			 failed;	/* a send failed: said once */
} notify = { -1, { 0 }, 0, 0, 0 };

static void
notify_watchdog_init(void)
{
	const char		*usec, *pid;
	char			*end;
	unsigned long long	 v;

	usec = getenv("WATCHDOG_USEC");
	pid = getenv("WATCHDOG_PID");
	if (usec == NULL)
		return;
	if (pid != NULL && strtoll(pid, NULL, 10) != (long long)getpid())
		return;
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0) {
		log_warn("notify: WATCHDOG_USEC \"%s\" is not a number of "
		    "microseconds; no watchdog pings", usec);
		return;
	}
	notify.watchdog_usec = v;
}

void
notify_init(void)
{
	const char	*path = getenv("NOTIFY_SOCKET");
	size_t		 len;

	notify_watchdog_init();
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	if (path == NULL || *path == '\0') {
		unsetenv("NOTIFY_SOCKET");
		return;
	}
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') ||
	    len >= sizeof notify.sun.sun_path) {
		log_warn("notify: NOTIFY_SOCKET \"%s\" is neither an absolute "
		    "path nor @name (of at most %zu bytes); not notifying",
		    path, sizeof notify.sun.sun_path - 1);
		unsetenv("NOTIFY_SOCKET");
		return;
	}
	memset(&notify.sun, 0, sizeof notify.sun);
	notify.sun.sun_family = AF_UNIX;
	memcpy(notify.sun.sun_path, path, len);
	if (path[0] == '@')
		notify.sun.sun_path[0] = '\0';	/* abstract: no NUL after */
	notify.sunlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    len + (path[0] == '/'));
	unsetenv("NOTIFY_SOCKET");
	if ((notify.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		log_warn("notify: socket: %s; not notifying", strerror(errno));
}

void
notify_close(void)
{
	if (notify.fd != -1)
		close(notify.fd);
	notify.fd = -1;
}

int
notify_enabled(void)
{
	return (notify.fd != -1);
}

/* Zero when the service manager expects no pings. */
uint64_t
notify_watchdog_usec(void)
{
	return (notify.watchdog_usec);
}

/*
 * Sends one message, such as "READY=1\nSTATUS=...". The manager may be
 * gone or slow; a datagram that cannot be sent is dropped (said once), as
 * waiting for it would stop the loop.
 */
void
notify_send(const char *fmt, ...)
{
	char	msg[NOTIFY_MAX];
	va_list	ap;
	int	n;

	if (notify.fd == -1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof msg)
		n = sizeof msg - 1;
	if (sendto(notify.fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT,
	    (struct sockaddr *)&notify.sun, notify.sunlen) == -1) {
		if (!notify.failed)
			log_warn("notify: sending to the service manager: %s",
			    strerror(errno));
		notify.failed = 1;
	} else
		notify.failed = 0;
}
