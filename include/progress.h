/*
 * Delivery progress shared between processes. Under the block policy the
 * process writing a stream waits for its client to receive enough; the
 * client's view may be on another process behind the load balancer. That
 * process tells (progress_tell): a message on the session ("d K N",
 * peer.h) for the writer to apply at once, and a note "p:K" with the
 * highest N, for a writer that missed messages (progress_read).
 */
#ifndef MCPD_PROGRESS_H
#define MCPD_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

void	progress_tell(const char *, uint64_t, uint64_t);
/* (sid, k, seq, arg): seq 0 when nothing is known (or the log failed). */
typedef void (*progress_read_fn)(const char *, uint64_t, uint64_t, void *);
void	progress_read(const char *, uint64_t, progress_read_fn, void *);
size_t	progress_pending(void);

#endif
