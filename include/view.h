/*
 * Views: one HTTP response showing one stream. A view pulls committed
 * entries from the event log after its cursor and writes them as SSE frames
 * while its connection's unsent output is under the watermark.
 */
#ifndef MCPD_VIEW_H
#define MCPD_VIEW_H

#include <stddef.h>
#include <stdint.h>

struct evhttp_request;
struct session;
struct view;

/* Show stream K from entry `from`; prime with `prime` (or -1) first. */
struct view	*view_open(struct evhttp_request *, struct session *,
		     uint64_t, uint64_t, int64_t);
/* Validate the cursor K-N first; answer 410/400 or show from N + 1. */
void		 view_resume(struct evhttp_request *, struct session *,
		     uint64_t, uint64_t, const char *);
void		 view_wakeup(struct view *, uint64_t);
void		 view_close(struct view *, const char *);
/* Polling: end the response once entry N is written; -1 if not possible. */
int		 view_close_after(struct view *, uint64_t);
void		 view_cron(void);
void		 view_shutdown(void);
size_t		 view_count(void);

#endif
