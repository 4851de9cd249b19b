/*
 * Views: one HTTP response showing one stream. A view pulls committed
 * entries from the event log after its cursor (or takes the entry this
 * process just committed, when that is the one it owes) and writes them as
 * SSE frames while its connection's unsent output is under the watermark.
 * Its stream reaches it only through the hooks it watches with (stream.h).
 */
#ifndef MCPD_VIEW_H
#define MCPD_VIEW_H

#include <stddef.h>
#include <stdint.h>

struct cursor;
struct evhttp_request;
struct session;
struct view;

/*
 * Show stream K from entry `from`; prime with `prime` (or -1) first. Sole:
 * this process is the stream's only writer (a request stream it runs), and
 * nothing after from - 1 is committed yet.
 */
struct view	*view_open(struct evhttp_request *, struct session *,
		     uint64_t, uint64_t, int64_t, int);
/* Validate the cursor K-N first; answer 410/404/503 or show from N + 1. */
void		 view_resume(struct evhttp_request *, struct session *,
		     const struct cursor *);
void		 view_cron(void);
void		 view_check_orphans(void);
/* A drain (drain.c): responses end with retry: for a resume elsewhere. */
size_t		 view_drain_step(void);
size_t		 view_drain_end(void);
void		 view_shutdown(void);
size_t		 view_count(void);

#endif
