/* One logger: levels checked before formatting; lines to stderr (journald,
 * containers) or a file, as text or JSON. */
#ifndef MCPD_LOG_H
#define MCPD_LOG_H

#include <stdint.h>

/*
 * Lines that the outside can cause at will (clients, a stalled log, a full
 * descriptor table) are rate-limited per cause: so many per interval, then
 * one line saying how many were suppressed.
 */
#define LOG_LIMIT_LINES		10
#define LOG_LIMIT_INTERVAL_MS	10000

enum log_level {
	LOG_LEVEL_DEBUG,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_MAX
};

extern enum log_level log_level;
/*
 * Set by trace.c while tracing is on: the current span's trace and span
 * ids in hex (33 and 17 bytes), 1 if there is one. JSON lines carry them
 * as trace_id and span_id, so logs and traces join.
 */
extern int (*log_trace_ids)(char *, char *);

void	 log_init(enum log_level);
int	 log_open(const char *, int, char **);
void	 log_reopen(void);
int	 log_level_parse(const char *, enum log_level *);
const char *log_level_name(enum log_level);
void	 log_write(enum log_level, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 log_limited(enum log_level, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	 log_limit_pass(const char *, enum log_level, uint64_t);
void	 log_limit_flush(uint64_t);
void	 log_cron(void);
void	 log_limit_end(void);
void	 fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#define log_debug(...) do {						\
	if (log_level <= LOG_LEVEL_DEBUG)				\
		log_write(LOG_LEVEL_DEBUG, __VA_ARGS__);		\
} while (0)
#define log_info(...) do {						\
	if (log_level <= LOG_LEVEL_INFO)				\
		log_write(LOG_LEVEL_INFO, __VA_ARGS__);			\
} while (0)
#define log_warn(...) do {						\
	if (log_level <= LOG_LEVEL_WARN)				\
		log_write(LOG_LEVEL_WARN, __VA_ARGS__);			\
} while (0)
#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
