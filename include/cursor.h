/*
 * Event ids ("cursors"): "K-N", K the stream number, N the entry's position
 * in that stream, both canonical decimals. The same text is the SSE id and
 * the event-log id, so parsing is strict: a cursor names one event forever.
 */
#ifndef MCPD_CURSOR_H
#define MCPD_CURSOR_H

#include <stddef.h>
#include <stdint.h>

/* Longest cursor text: two 20-digit numbers, '-', NUL. */
#define CURSOR_BUFSIZE	42

struct cursor {
	uint64_t	stream;
	uint64_t	seq;
};

/* "K-N": a NUL-terminated string, or exactly len bytes; 0 or -1. */
int	cursor_parse(const char *, struct cursor *);
int	cursor_parse_len(const char *, size_t, struct cursor *);
/* One number, "N", exactly len bytes. */
int	cursor_parse_seq(const char *, size_t, uint64_t *);

/*
 * Write "K-N" or "N" into buf (truncated to fit, NUL-terminated, as
 * snprintf would); return the length of the whole text.
 */
size_t	cursor_format(char *, size_t, uint64_t, uint64_t);
size_t	cursor_format_seq(char *, size_t, uint64_t);

#endif
