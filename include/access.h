/*
 * The access log (conf access_log on): one line per HTTP request, with its
 * method, path, status, session, stream, bytes and duration, written when
 * the response ends. Requests are keyed by their evhttp request pointer,
 * from arrival (access_begin) to the start of their response
 * (access_take); nothing here touches HTTP.
 */
#ifndef MCPD_ACCESS_H
#define MCPD_ACCESS_H

#include <stddef.h>
#include <stdint.h>

/* The longest path kept for a line; longer ones are cut. */
#define ACCESS_PATH_MAX	256

int		 access_enabled(void);
void		 access_begin(const void *);
uint64_t	 access_take(const void *);
void		 access_path(char *, const char *);
void		 access_line(const char *, const char *, int, const char *,
		     uint64_t, size_t, uint64_t);
size_t		 access_pending(void);

#endif
