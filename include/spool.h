/*
 * A spool (spool.c): lines handed over by the event loop and written by a
 * thread of its own to a file or to syslog, so that a slow, full or gone
 * destination never stalls the loop. What waits is bounded in bytes; a
 * line past the bound is dropped, and every line dropped or not written
 * is counted, never retried.
 */
#ifndef MCPD_SPOOL_H
#define MCPD_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool_stats {
	uint64_t	written;	/* lines written */
	uint64_t	dropped;	/* refused: the queue was full */
	uint64_t	failed;		/* the write (or the open) failed */
	uint64_t	queued;		/* bytes waiting now */
	int		error;		/* errno of the last failure, or 0 */
};

/*
 * target is "syslog" or a path (appended to, created 0640). -1 with the
 * reason when the file cannot be opened now.
 */
struct spool	*spool_open(const char *, size_t, char **);
const char	*spool_target(const struct spool *);
/* The bound on queued bytes, changed for lines to come. */
void		 spool_set_max(struct spool *, size_t);
/* Queues a line (copied; "\n" added): 0, or -1 when it was dropped. */
int		 spool_put(struct spool *, const char *, size_t);
/* The file is opened again before the next write (rotation). */
void		 spool_reopen(struct spool *);
void		 spool_stats(struct spool *, struct spool_stats *);
/* Writes what is queued, for wait_ms at most, then stops and frees. */
void		 spool_close(struct spool *, uint64_t);
/* The same without waiting: the writer frees it once all is written. */
void		 spool_retire(struct spool *);

#endif
