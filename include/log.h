/* One logger: levels checked before formatting, lines to stderr (journald). */
#ifndef MCPD_LOG_H
#define MCPD_LOG_H

enum log_level {
	LOG_LEVEL_DEBUG,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_MAX
};

extern enum log_level log_level;

void	 log_init(enum log_level);
int	 log_level_parse(const char *, enum log_level *);
const char *log_level_name(enum log_level);
void	 log_write(enum log_level, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
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
