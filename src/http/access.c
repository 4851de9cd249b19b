/*
 * The access log. A request's arrival time waits in a table keyed by its
 * request pointer until its response starts (every request the transport
 * takes gets exactly one response); the line is written when the response
 * ends: at once for a whole reply, when the stream ends for SSE. The table
 * holds only requests being answered, and at most ACCESS_MAX of them: past
 * that a request's line says "-" for its duration.
 *
 * Lines go through the log (log_file, log_format) whatever log_level says:
 * an operator who turned the access log on wants every line.
 */
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "clock.h"
#include "conf.h"
#include "log.h"
#include "server.h"
#include "xmalloc.h"

#define ACCESS_MAX	65536

struct access {
	const void		*req;
	uint64_t		 start_us;
	RB_ENTRY(access)	 entry;
};
RB_HEAD(access_tree, access);

static struct access_tree	access_requests =
    RB_INITIALIZER(&access_requests);
static size_t			access_n;

static int
access_cmp(struct access *a, struct access *b)
{
	return (a->req < b->req ? -1 : a->req > b->req);
}
RB_GENERATE_STATIC(access_tree, access, entry, access_cmp);

int
access_enabled(void)
{
	return (server.conf != NULL && server.conf->access_log);
}

/* A request arrived. */
void
access_begin(const void *req)
{
	struct access	 find, *a;

	if (!access_enabled())
		return;
	find.req = req;
	/* A freed request's address may come back: it is a new request. */
	if ((a = RB_FIND(access_tree, &access_requests, &find)) == NULL) {
		if (access_n >= ACCESS_MAX)
			return;
		a = xcalloc(1, sizeof *a);
		a->req = req;
		RB_INSERT(access_tree, &access_requests, a);
		access_n++;
	}
	a->start_us = clock_now_us();
}

/* Its response starts: when it arrived (0: not known), forgotten here. */
uint64_t
access_take(const void *req)
{
	struct access	 find, *a;
	uint64_t	 start;

	find.req = req;
	if ((a = RB_FIND(access_tree, &access_requests, &find)) == NULL)
		return (0);
	start = a->start_us;
	RB_REMOVE(access_tree, &access_requests, a);
	access_n--;
	free(a);
	return (start);
}

size_t
access_pending(void)
{
	return (access_n);
}

static void
access_put(char *out, size_t *i, char c)
{
	if (*i < ACCESS_PATH_MAX)
		out[(*i)++] = (c > 0x20 && c < 0x7f) ? c : '?';
}

/*
 * The request's path as a line shows it (ACCESS_PATH_MAX + 1 bytes): what
 * the client sent, cut, with every byte that is not printable ASCII or is
 * a space shown as "?", so a line always splits into its fields. Query
 * values are shown as "-" (a parameter without "=" as "-" whole): a
 * client may send a bearer token as ?access_token= (RFC 6750, 2.3), and
 * whoever reads the log must not be able to use it.
 */
void
access_path(char *out, const char *uri)
{
	const char	*p, *end, *eq;
	size_t		 i = 0;

	if (uri == NULL)
		uri = "";
	for (p = uri; *p != '\0' && *p != '?'; p++)
		access_put(out, &i, *p);
	if (*p == '?') {
		access_put(out, &i, '?');
		for (p++;; p = end + 1) {
			end = p + strcspn(p, "&");
			eq = memchr(p, '=', (size_t)(end - p));
			for (; eq != NULL && p < eq; p++)
				access_put(out, &i, *p);
			if (eq != NULL)
				access_put(out, &i, '=');
			if (end > p || eq != NULL)
				access_put(out, &i, '-');
			if (*end == '\0')
				break;
			access_put(out, &i, '&');
		}
	}
	if (i == 0)
		out[i++] = '-';
	out[i] = '\0';
}

/* One line: method, path (from access_path), status, session or NULL,
 * stream K or 0, body bytes, arrival time or 0. */
void
access_line(const char *method, const char *path, int status,
    const char *session, uint64_t k, size_t bytes, uint64_t start_us)
{
	char	stream[24], ms[32];

	if (k != 0)
		snprintf(stream, sizeof stream, "%llu", (unsigned long long)k);
	else
		strlcpy(stream, "-", sizeof stream);
	if (start_us != 0)
		snprintf(ms, sizeof ms, "%.3f",
		    (double)(clock_now_us() - start_us) / 1000.0);
	else
		strlcpy(ms, "-", sizeof ms);
	log_write(LOG_LEVEL_INFO, "access method=%s path=%s status=%d "
	    "session=%s stream=%s bytes=%zu ms=%s", method, path, status,
	    session != NULL ? session : "-", stream, bytes, ms);
}
