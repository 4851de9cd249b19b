/*
 * The spool: lines from the event loop, written by a thread of its own.
 *
 * mcpd is one thread around one event loop; a write(2) to a regular file
 * may still block (a slow or stalled disk, NFS), and one to a FIFO blocks
 * while its reader does not read, and syslog(3) blocks while the log
 * daemon does not. So what must be written without ever stalling the
 * loop (the audit trail, audit.c) goes through here, as Redis's bio.c
 * threads do its fsyncs and closes: the loop queues a copy of the line
 * (spool_put, under a mutex held for a list insertion) and goes on; the
 * writer thread takes everything queued at once and writes it, many
 * lines to one writev(2). The thread touches nothing but this file's
 * struct: it neither logs nor allocates through libevent; the loop reads
 * its counters (spool_stats) and logs for it.
 *
 * Memory is bounded by max bytes of queued lines: a line that would go
 * past it is dropped and counted at once. A write that fails (ENOSPC on a
 * full disk, EPIPE on a FIFO whose reader left) loses its lines, counted;
 * the file stays open unless it cannot be written at all any more (EPIPE,
 * EBADF, EIO...), in which case the thread opens it again before a later
 * write, at most once every SPOOL_REOPEN_MS. A FIFO is opened
 * without waiting for a reader (ENXIO until there is one).
 */
#include <sys/queue.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "spool.h"
#include "xmalloc.h"

#define SPOOL_REOPEN_MS		1000
#define SPOOL_IOV		64	/* lines in one writev */
#define SPOOL_JOIN_MS		100	/* a writer that stopped, to exit */

struct spool_line {
	STAILQ_ENTRY(spool_line) entry;
	size_t			 len;		/* with its "\n" */
	char			 data[];
};
STAILQ_HEAD(spool_lines, spool_line);

struct spool {
	char			*target;
	int			 syslog;
	int			 fd;		/* -1: closed */

	pthread_t		 thread;
	pthread_mutex_t		 lock;
	pthread_cond_t		 wake;		/* the writer: work, or stop */
	pthread_cond_t		 idle;		/* spool_close: all written */
	/* Under lock, the loop's and the writer's. */
	struct spool_lines	 lines;
	size_t			 max;
	size_t			 queued;
	int			 reopen;	/* asked for (SIGUSR1) */
	int			 stop;
	int			 retire;	/* the writer frees it */
	int			 busy;		/* the writer holds lines */
	struct spool_stats	 stats;
	/* The writer's own. */
	uint64_t		 broken_ms;	/* fd unusable since, or 0 */
	int			 open_error;	/* of the last open */
};

/* ms from now on the clock pthread's timed waits use. */
static void
spool_deadline(struct timespec *ts, uint64_t ms)
{
	uint64_t	ns;

	clock_gettime(CLOCK_REALTIME, ts);
	ns = (uint64_t)ts->tv_nsec + (ms % 1000) * 1000000;
	ts->tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

/* The writer's open: without waiting for a FIFO's reader. */
static int
spool_open_fd(const char *path, int *err)
{
	int	fd, flags;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK, 0640);
	if (fd == -1) {
		*err = errno;
		return (-1);
	}
	/* Blocking again: only the writer thread waits on it. */
	if ((flags = fcntl(fd, F_GETFL)) != -1)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return (fd);
}

/* Whether a failed write leaves the descriptor worth keeping. */
static int
spool_error_passes(int err)
{
	return (err == ENOSPC || err == EDQUOT || err == EFBIG ||
	    err == EINTR || err == EAGAIN);
}

static void
spool_count(struct spool *sp, uint64_t written, uint64_t failed, int err)
{
	pthread_mutex_lock(&sp->lock);
	sp->stats.written += written;
	sp->stats.failed += failed;
	if (failed > 0)
		sp->stats.error = err;
	pthread_mutex_unlock(&sp->lock);
}

static void
spool_reopen_fd(struct spool *sp)
{
	int	fd, err = 0;

	if ((fd = spool_open_fd(sp->target, &err)) == -1) {
		sp->open_error = err;
		sp->broken_ms = clock_now_ms();
		return;
	}
	if (sp->fd != -1)
		close(sp->fd);
	sp->fd = fd;
	sp->broken_ms = 0;
}

/*
 * Writes n lines (a batch of the queue) with one writev, going on after
 * a short write; returns how many were written whole, *err the failure.
 */
static size_t
spool_writev(struct spool *sp, struct spool_line **batch, size_t n, int *err)
{
	struct iovec	 iov[SPOOL_IOV];
	size_t		 i, done = 0, skip = 0, len;
	ssize_t		 w;

	while (done < n) {
		len = 0;
		for (i = 0; i + done < n && i < SPOOL_IOV; i++) {
			iov[i].iov_base = batch[done + i]->data;
			iov[i].iov_len = batch[done + i]->len;
		}
		/* A line a short write cut: what is left of it first. */
		iov[0].iov_base = (char *)iov[0].iov_base + skip;
		iov[0].iov_len -= skip;
		w = writev(sp->fd, iov, (int)i);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			return (done);
		}
		len = (size_t)w;
		for (i = 0; len > 0; i++) {
			if (len < iov[i].iov_len) {
				skip += len;
				break;
			}
			len -= iov[i].iov_len;
			skip = 0;
			done++;
		}
	}
	return (done);
}

static void
spool_write_batch(struct spool *sp, struct spool_line **batch, size_t n)
{
	size_t	i, done;
	int	err = 0;

	if (sp->syslog) {
		for (i = 0; i < n; i++)
			syslog(LOG_AUTHPRIV | LOG_INFO, "%.*s",
			    (int)batch[i]->len - 1, batch[i]->data);
		spool_count(sp, n, 0, 0);
		return;
	}
	if (sp->fd == -1 && (sp->broken_ms == 0 ||
	    clock_now_ms() - sp->broken_ms >= SPOOL_REOPEN_MS))
		spool_reopen_fd(sp);
	if (sp->fd == -1) {
		spool_count(sp, 0, n, sp->open_error != 0 ? sp->open_error :
		    EBADF);
		return;
	}
	done = spool_writev(sp, batch, n, &err);
	spool_count(sp, done, n - done, err);
	if (done < n && !spool_error_passes(err)) {
		close(sp->fd);
		sp->fd = -1;
		sp->broken_ms = clock_now_ms();
	}
}

static void
spool_free(struct spool *sp)
{
	if (sp->fd != -1)
		close(sp->fd);
	if (sp->syslog)
		closelog();
	pthread_mutex_destroy(&sp->lock);
	pthread_cond_destroy(&sp->wake);
	pthread_cond_destroy(&sp->idle);
	free(sp->target);
	free(sp);
}

static void *
spool_main(void *arg)
{
	struct spool		*sp = arg;
	struct spool_lines	 lines;
	struct spool_line	*l, *batch[SPOOL_IOV];
	size_t			 n, bytes;
	int			 reopen;

	pthread_mutex_lock(&sp->lock);
	for (;;) {
		while (STAILQ_EMPTY(&sp->lines) && !sp->reopen && !sp->stop &&
		    !sp->retire)
			pthread_cond_wait(&sp->wake, &sp->lock);
		if (STAILQ_EMPTY(&sp->lines) && !sp->reopen)
			break;		/* stopped, nothing left */
		STAILQ_INIT(&lines);
		STAILQ_CONCAT(&lines, &sp->lines);
		bytes = sp->queued;
		reopen = sp->reopen;
		sp->reopen = 0;
		sp->busy = 1;
		pthread_mutex_unlock(&sp->lock);

		if (reopen && !sp->syslog)
			spool_reopen_fd(sp);
		while (!STAILQ_EMPTY(&lines)) {
			for (n = 0; n < SPOOL_IOV &&
			    (l = STAILQ_FIRST(&lines)) != NULL; n++) {
				STAILQ_REMOVE_HEAD(&lines, entry);
				batch[n] = l;
			}
			spool_write_batch(sp, batch, n);
			while (n > 0)
				free(batch[--n]);
		}

		pthread_mutex_lock(&sp->lock);
		sp->queued -= bytes < sp->queued ? bytes : sp->queued;
		sp->busy = 0;
		if (STAILQ_EMPTY(&sp->lines))
			pthread_cond_broadcast(&sp->idle);
	}
	sp->busy = 0;
	pthread_cond_broadcast(&sp->idle);
	pthread_mutex_unlock(&sp->lock);
	if (sp->retire)
		spool_free(sp);
	return (NULL);
}

struct spool *
spool_open(const char *target, size_t max, char **cause)
{
	struct spool	*sp;
	sigset_t	 all, old;
	int		 err = 0, rc;

	sp = xcalloc(1, sizeof *sp);
	sp->target = xstrdup(target);
	sp->syslog = strcmp(target, "syslog") == 0;
	sp->fd = -1;
	sp->max = max;
	STAILQ_INIT(&sp->lines);
	if (sp->syslog)
		openlog("mcpd-audit", LOG_NDELAY | LOG_PID, LOG_AUTHPRIV);
	else if ((sp->fd = spool_open_fd(target, &err)) == -1) {
		xasprintf(cause, "%s: %s", target, strerror(err));
		free(sp->target);
		free(sp);
		return (NULL);
	}
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->wake, NULL);
	pthread_cond_init(&sp->idle, NULL);
	/* Signals are the loop's (libevent's handlers): never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&sp->thread, NULL, spool_main, sp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		fatalx("spool: pthread_create: %s", strerror(rc));
	return (sp);
}

const char *
spool_target(const struct spool *sp)
{
	return (sp->target);
}

void
spool_set_max(struct spool *sp, size_t max)
{
	pthread_mutex_lock(&sp->lock);
	sp->max = max;
	pthread_mutex_unlock(&sp->lock);
}

int
spool_put(struct spool *sp, const char *line, size_t len)
{
	struct spool_line	*l;

	pthread_mutex_lock(&sp->lock);
	if (sp->queued + len + 1 > sp->max) {
		sp->stats.dropped++;
		pthread_mutex_unlock(&sp->lock);
		return (-1);
	}
	sp->queued += len + 1;
	pthread_mutex_unlock(&sp->lock);

	/* Allocated outside the lock: the writer is not held up by it. */
	l = xmalloc(sizeof *l + len + 1);
	memcpy(l->data, line, len);
	l->data[len] = '\n';
	l->len = len + 1;

	pthread_mutex_lock(&sp->lock);
	STAILQ_INSERT_TAIL(&sp->lines, l, entry);
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
	return (0);
}

void
spool_reopen(struct spool *sp)
{
	pthread_mutex_lock(&sp->lock);
	sp->reopen = 1;
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
}

void
spool_stats(struct spool *sp, struct spool_stats *st)
{
	pthread_mutex_lock(&sp->lock);
	*st = sp->stats;
	st->queued = sp->queued;
	pthread_mutex_unlock(&sp->lock);
}

/*
 * The writer gets wait_ms to write what is queued; what is left then is
 * dropped (counted). A writer still stuck in a write a little later (a
 * FIFO nobody reads) is left to the process's exit: its spool is not
 * freed under it.
 */
void
spool_close(struct spool *sp, uint64_t wait_ms)
{
	struct spool_line	*l;
	struct timespec		 ts;
	int			 rc = 0;

	spool_deadline(&ts, wait_ms);
	pthread_mutex_lock(&sp->lock);
	while ((!STAILQ_EMPTY(&sp->lines) || sp->busy) && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&sp->idle, &sp->lock, &ts);
	sp->stop = 1;
	while ((l = STAILQ_FIRST(&sp->lines)) != NULL) {
		STAILQ_REMOVE_HEAD(&sp->lines, entry);
		sp->stats.dropped++;
		sp->queued -= l->len;
		free(l);
	}
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
	spool_deadline(&ts, SPOOL_JOIN_MS);
	if (pthread_timedjoin_np(sp->thread, NULL, &ts) != 0) {
		pthread_detach(sp->thread);
		return;
	}
	spool_free(sp);
}

/*
 * Another spool takes over (a reload): this one writes what is queued,
 * then its writer frees it; nobody waits for that.
 */
void
spool_retire(struct spool *sp)
{
	pthread_t	thread = sp->thread;

	pthread_mutex_lock(&sp->lock);
	sp->retire = 1;
	pthread_cond_signal(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
	pthread_detach(thread);		/* sp may be gone already */
}
