/*
 * The HTTP request path in process: the input is the bytes a client sends
 * on one connection to mcpd's evhttp server (the one server_run uses, on
 * the memory event log), over a Unix socket on the harness's own loop.
 *
 * Sessions cannot be guessed, so the input may name two that the harness
 * creates first: "@S1@" becomes the id of a 2025-11-25 session and "@S0@"
 * that of a 2025-03-26 one (batches), "@K1@" the number K of S1's
 * standalone stream.
 *
 * Each input runs on fresh state and a bounded number of loop turns: the
 * loop runs without blocking until nothing moved for IDLE_TURNS turns, so
 * timers that are not yet due (tool intervals, keep-alives, timeouts) never
 * fire and a run does not depend on the clock. Then the client closes, the
 * harness shuts everything down as server_run does, and checks that every
 * session was freed. Oracles:
 * - no crash, no undefined behaviour, no leak (the sanitizers);
 * - the daemon answers with valid HTTP (a status line 100-599, a complete
 *   head, chunks that decode) or closes;
 * - a JSON body is strict JSON, and an mcpd error (4xx/5xx in JSON) is a
 *   JSON-RPC error object with a code and a message;
 * - an SSE body is whole events whose data is empty or strict JSON, whose
 *   ids are cursors of one stream numbered without holes;
 * - one GET with Last-Event-ID K-N answered 200 sends only ids K-M with
 *   M > N, and N is not beyond the head of stream K (for S1's standalone
 *   stream, whose head the harness can read);
 * - one POST whose method, tool name or echo text holds a NUL is refused,
 *   or the text comes back whole.
 */
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "conf.h"
#include "cursor.h"
#include "eventlog.h"
#include "fuzz.h"
#include "log.h"
#include "provider.h"
#include "refjson.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "view.h"
#include "xmalloc.h"

#define MAX_INPUT	65536
#define MAX_RESPONSE	(1024 * 1024)
#define MAX_TURNS	8192
#define IDLE_TURNS	64

static struct {
	struct event_base	*base;
	struct conf		*conf;
	int			 listen_fd;
	struct sockaddr_un	 sa;
	socklen_t		 salen;
	int			 verbose;	/* FUZZ_HTTP_VERBOSE set */
} fz;

/* One input's run. */
struct run {
	char		*in;		/* the input, with the sessions */
	size_t		 inlen;
	struct session	*s1;
	struct session	*s0;
	uint64_t	 k1;		/* S1's standalone stream */
	uint64_t	 k1_head;	/* its head once the run is over */

	char		*out;		/* what the client received */
	size_t		 outlen;
	int		 eof;
	int		 truncated;
};

static struct run	*cur;

static void
fail_dump(void)
{
	fuzz_print_bytes("request", cur->in, cur->inlen);
	fuzz_print_bytes("response", cur->out, cur->outlen);
}

#define CHECK(cond, ...) do {						\
	if (!(cond))							\
		fail_dump();						\
	FUZZ_CHECK(cond, __VA_ARGS__);					\
} while (0)

/* ---------------------------------------------------------------------
 * Setting up and running.
 */

static void
stored_cb(struct session *s, int status, void *arg)
{
	*(int *)arg = status == EVENTLOG_OK ? 1 : -1;
}

static struct session *
make_session(const char *version)
{
	struct session	*s;
	int		 done = 0, turns;

	if ((s = session_create(version, NULL, NULL, NULL, stored_cb,
	    &done)) == NULL)
		fatalx("session_create refused");
	for (turns = 0; done == 0 && turns < MAX_TURNS; turns++)
		event_base_loop(fz.base, EVLOOP_NONBLOCK);
	if (done != 1)
		fatalx("session %s not stored", session_id(s));
	return (s);
}

/* The input with "@S1@", "@S0@" and "@K1@" replaced. */
static void
substitute(struct run *r, const uint8_t *data, size_t size)
{
	static const char	*names[] = { "@S1@", "@S0@", "@K1@" };
	char			 k1[32];
	const char		*values[3];
	size_t			 i, j, n, len;

	if (memmem(data, size, "@S1@", 4) != NULL ||
	    memmem(data, size, "@K1@", 4) != NULL) {
		r->s1 = make_session("2025-11-25");
		r->k1 = stream_id(session_standalone(r->s1));
		session_ref(r->s1);	/* r reads it after the run */
	}
	if (memmem(data, size, "@S0@", 4) != NULL) {
		r->s0 = make_session("2025-03-26");
		session_ref(r->s0);
	}
	snprintf(k1, sizeof k1, "%llu", (unsigned long long)r->k1);
	values[0] = r->s1 != NULL ? session_id(r->s1) : "";
	values[1] = r->s0 != NULL ? session_id(r->s0) : "";
	values[2] = k1;

	r->in = xmalloc(size * 8 + 1);	/* "@S1@" becomes 32 bytes */
	for (i = 0, n = 0; i < size; ) {
		for (j = 0; j < 3; j++) {
			if (size - i >= 4 && memcmp(data + i, names[j], 4) == 0)
				break;
		}
		if (j == 3) {
			r->in[n++] = (char)data[i++];
			continue;
		}
		len = strlen(values[j]);
		memcpy(r->in + n, values[j], len);
		n += len;
		i += 4;
	}
	r->inlen = n;
}

static void
client_read(struct run *r, int fd, int *moved)
{
	char	buf[16384];
	ssize_t	n;

	for (;;) {
		n = read(fd, buf, sizeof buf);
		if (n == 0) {
			r->eof = 1;
			return;
		}
		if (n < 0) {
			if (errno == ECONNRESET)
				r->eof = 1;
			return;
		}
		*moved = 1;
		if (r->outlen + (size_t)n > MAX_RESPONSE) {
			r->truncated = 1;
			continue;
		}
		memcpy(r->out + r->outlen, buf, (size_t)n);
		r->outlen += (size_t)n;
	}
}

/* Turns of the loop until nothing moves (or the server closes). */
static void
run_loop(struct run *r, int fd, size_t *sent)
{
	ssize_t	n;
	int	turns, idle = 0, moved, unsent, last_unsent = -1;

	for (turns = 0; turns < MAX_TURNS && idle < IDLE_TURNS; turns++) {
		event_base_loop(fz.base, EVLOOP_NONBLOCK);
		moved = 0;
		if (fd != -1 && *sent < r->inlen) {
			n = send(fd, r->in + *sent, r->inlen - *sent,
			    MSG_NOSIGNAL);
			if (n > 0) {
				*sent += (size_t)n;
				moved = 1;
			}
		}
		if (fd != -1 && !r->eof)
			client_read(r, fd, &moved);
		if (fd != -1 && r->eof)
			break;
		/* The server reading what was sent is movement too. */
		if (fd != -1 && ioctl(fd, SIOCOUTQ, &unsent) == 0) {
			if (unsent != last_unsent)
				moved = 1;
			last_unsent = unsent;
		}
		idle = moved ? 0 : idle + 1;
	}
}

static void
drain(void)
{
	int	turns;

	for (turns = 0; turns < MAX_TURNS && session_allocated() > 0;
	    turns++)
		event_base_loop(fz.base, EVLOOP_NONBLOCK);
}

/* ---------------------------------------------------------------------
 * Reading what came back.
 */

struct head {
	int		 status;
	size_t		 len;		/* of the head, blank line too */
	const char	*ctype;		/* Content-Type, or NULL */
	size_t		 ctype_len;
	long long	 clen;		/* Content-Length, -1 if none */
	int		 chunked;
	int		 framed;	/* HTTP/1.0 or 1.1: body delimited */
};

static int
header_is(const char *line, size_t len, const char *name, const char **value,
    size_t *vlen)
{
	size_t	n = strlen(name);

	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return (0);
	*value = line + n + 1;
	*vlen = len - n - 1;
	while (*vlen > 0 && **value == ' ') {
		(*value)++;
		(*vlen)--;
	}
	return (1);
}

/* 1 with h filled, 0 if the head is not all there yet. */
static int
read_head(const char *p, size_t len, int eof, struct head *h)
{
	const char	*end, *line, *eol, *v, *sp;
	size_t		 vlen;

	memset(h, 0, sizeof *h);
	h->clen = -1;
	if ((end = memmem(p, len, "\r\n\r\n", 4)) == NULL) {
		CHECK(!eof && len < 16384, "a response head without its end");
		return (0);
	}
	h->len = (size_t)(end - p) + 4;
	/*
	 * evhttp answers in the version the request named, whatever it was
	 * ("HTTP/0.1", "HTTP/-1.1"), and delimits the body only for 1.0 and
	 * 1.1: for other versions only the status is checked.
	 */
	CHECK(h->len > 13 && memcmp(p, "HTTP/", 5) == 0,
	    "not an HTTP status line");
	sp = memchr(p, ' ', h->len);
	CHECK(sp != NULL && sp[1] >= '1' && sp[1] <= '5' && sp[2] >= '0' &&
	    sp[2] <= '9' && sp[3] >= '0' && sp[3] <= '9' && sp[4] == ' ',
	    "no status in the status line");
	h->status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
	h->framed = memcmp(p, "HTTP/1.0 ", 9) == 0 ||
	    memcmp(p, "HTTP/1.1 ", 9) == 0;
	line = memmem(p, h->len, "\r\n", 2) + 2;
	while (line < end) {
		eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		CHECK(eol != NULL && memchr(line, ':', (size_t)(eol - line)) !=
		    NULL, "a header line without a colon");
		if (header_is(line, (size_t)(eol - line), "Content-Type", &v,
		    &vlen)) {
			h->ctype = v;
			h->ctype_len = vlen;
		} else if (header_is(line, (size_t)(eol - line),
		    "Content-Length", &v, &vlen)) {
			h->clen = strtoll(v, NULL, 10);
			CHECK(h->clen >= 0, "a negative Content-Length");
		} else if (header_is(line, (size_t)(eol - line),
		    "Transfer-Encoding", &v, &vlen))
			h->chunked = vlen == 7 &&
			    strncasecmp(v, "chunked", 7) == 0;
		line = eol + 2;
	}
	return (1);
}

static int
ctype_is(const struct head *h, const char *type)
{
	size_t	n = strlen(type);

	return (h->ctype != NULL && h->ctype_len >= n &&
	    strncasecmp(h->ctype, type, n) == 0);
}

/*
 * Decodes the chunks at p into body; returns the bytes read, with *done
 * set when the last chunk was seen.
 */
static size_t
dechunk(const char *p, size_t len, char **body, size_t *blen, int *done)
{
	size_t		 off = 0, size;
	const char	*eol;
	char		*end;

	*done = 0;
	while (off < len) {
		if ((eol = memmem(p + off, len - off, "\r\n", 2)) == NULL)
			break;
		size = strtoul(p + off, &end, 16);
		CHECK(end > p + off && end <= eol, "a bad chunk size line");
		if (len - (size_t)(eol + 2 - p) < size + 2)
			break;		/* not all there */
		CHECK(memcmp(eol + 2 + size, "\r\n", 2) == 0,
		    "a chunk not followed by CRLF");
		*body = xrealloc(*body, *blen + size + 1);
		memcpy(*body + *blen, eol + 2, size);
		*blen += size;
		off = (size_t)(eol + 2 - p) + size + 2;
		if (size == 0) {
			*done = 1;
			break;
		}
	}
	return (off);
}

/* The JSON documents that came back (bodies, SSE data), in order. */
struct replies {
	struct refjson	**docs;
	size_t		  n;
	int		  ended;	/* the POST's response is complete */
};

static void
replies_add(struct replies *rp, struct refjson *json)
{
	rp->docs = xreallocarray(rp->docs, rp->n + 1, sizeof *rp->docs);
	rp->docs[rp->n++] = json;
}

static void
replies_free(struct replies *rp)
{
	while (rp->n > 0)
		refjson_free(rp->docs[--rp->n]);
	free(rp->docs);
}

/* The i-th JSON-RPC response among them (a message with an id and a
 * result or an error), or NULL. */
static const struct refjson *
replies_get(const struct replies *rp, size_t i)
{
	const struct refjson	*m;
	size_t			 d;

	for (d = 0; d < rp->n; d++) {
		m = rp->docs[d]->type == REFJSON_ARRAY ? rp->docs[d]->child :
		    rp->docs[d];
		for (; m != NULL; m = rp->docs[d]->type == REFJSON_ARRAY ?
		    m->next : NULL) {
			if (refjson_member(m, "id") == NULL ||
			    (refjson_member(m, "result") == NULL &&
			    refjson_member(m, "error") == NULL))
				continue;
			if (i-- == 0)
				return (m);
		}
	}
	return (NULL);
}

static void
check_json_body(const struct head *h, const char *body, size_t len,
    struct replies *rp)
{
	struct refjson		*json;
	const struct refjson	*error, *code, *message;

	json = refjson_parse(body, len, 1024);
	CHECK(json != NULL, "a %d JSON body that is not JSON", h->status);
	if (h->status >= 400 && json->type == REFJSON_OBJECT) {
		error = refjson_member(json, "error");
		code = refjson_member(error, "code");
		message = refjson_member(error, "message");
		CHECK(refjson_member(json, "id") != NULL && code != NULL &&
		    code->type == REFJSON_NUMBER && message != NULL &&
		    message->type == REFJSON_STRING && message->len > 0,
		    "a %d answer that is not a JSON-RPC error", h->status);
	}
	replies_add(rp, json);
}

struct resume {
	int		 on;		/* the run is one GET, a cursor */
	struct cursor	 c;
};

/* SSE events: whole, JSON data, ids of one stream without holes. */
static void
check_sse_body(const struct head *h, const char *body, size_t len,
    const struct resume *rs, struct replies *rp)
{
	const char	*line, *eol, *end = body + len, *v;
	struct cursor	 c, prev;
	struct refjson	*json;
	char		*data = NULL, *idtext;
	size_t		 dlen = 0, vlen;
	int		 nids = 0, ndata = 0;

	for (line = body; line < end; line = eol + 1) {
		if ((eol = memchr(line, '\n', (size_t)(end - line))) == NULL)
			break;		/* an event still coming */
		if (eol == line) {
			/* The end of an event. */
			if (ndata > 0 && dlen > 1) {
				json = refjson_parse(data, dlen - 1, 1024);
				CHECK(json != NULL,
				    "SSE data that is not JSON");
				replies_add(rp, json);
			}
			dlen = 0;
			ndata = 0;
			continue;
		}
		CHECK(memchr(line, '\r', (size_t)(eol - line)) == NULL,
		    "a CR inside an SSE line");
		if (*line == ':')
			continue;
		v = memchr(line, ':', (size_t)(eol - line));
		CHECK(v != NULL, "an SSE line without a field");
		v++;
		if (v < eol && *v == ' ')
			v++;
		vlen = (size_t)(eol - v);
		if (v - line >= 5 && memcmp(line, "data:", 5) == 0) {
			data = xrealloc(data, dlen + vlen + 2);
			memcpy(data + dlen, v, vlen);
			dlen += vlen;
			data[dlen++] = '\n';
			ndata++;
		} else if (v - line >= 3 && memcmp(line, "id:", 3) == 0) {
			idtext = xstrndup(v, vlen);
			CHECK(cursor_parse(idtext, &c) == 0,
			    "an SSE id that is no cursor: %s", idtext);
			free(idtext);
			CHECK(nids == 0 || (c.stream == prev.stream &&
			    c.seq == prev.seq + 1), "SSE ids %llu-%llu then "
			    "%llu-%llu", (unsigned long long)prev.stream,
			    (unsigned long long)prev.seq,
			    (unsigned long long)c.stream,
			    (unsigned long long)c.seq);
			if (rs->on)
				CHECK(c.stream == rs->c.stream &&
				    c.seq > rs->c.seq, "resumed after "
				    "%llu-%llu, sent %llu-%llu",
				    (unsigned long long)rs->c.stream,
				    (unsigned long long)rs->c.seq,
				    (unsigned long long)c.stream,
				    (unsigned long long)c.seq);
			prev = c;
			nids++;
		} else
			CHECK((v - line >= 6 && memcmp(line, "event:", 6) ==
			    0) || (v - line >= 6 && memcmp(line, "retry:", 6) ==
			    0), "an SSE field mcpd does not send");
	}
	free(data);
}

/* The cursor of a run that is one GET with Last-Event-ID, and only that. */
static void
find_resume(const struct run *r, struct resume *rs)
{
	const char	*p = r->in, *end, *line, *eol, *v;
	char		*text;
	size_t		 vlen;

	memset(rs, 0, sizeof *rs);
	if (r->inlen < 4 || memcmp(p, "GET ", 4) != 0 ||
	    (end = memmem(p, r->inlen, "\r\n\r\n", 4)) == NULL ||
	    (size_t)(end - p) + 4 != r->inlen)
		return;
	for (line = p; line < end; line = eol + 2) {
		eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
		if (header_is(line, (size_t)(eol - line), "Last-Event-ID", &v,
		    &vlen)) {
			text = xstrndup(v, vlen);
			rs->on = cursor_parse(text, &rs->c) == 0;
			free(text);
			return;
		}
	}
}

/* What one POST of a JSON body asks for, as the reference reader sees it. */
struct asked {
	struct refjson	*body;
	int		 nul_name;	/* method or tool name: a NUL */
	const struct refjson *echo_text; /* echo's text, when it holds one */
};

static void
find_asked_one(const struct refjson *msg, struct asked *a)
{
	const struct refjson	*method, *params, *name, *args, *text;

	if ((method = refjson_member(msg, "method")) == NULL ||
	    method->type != REFJSON_STRING)
		return;
	if (memchr(method->str, '\0', method->len) != NULL)
		a->nul_name = 1;
	params = refjson_member(msg, "params");
	name = refjson_member(params, "name");
	args = refjson_member(params, "arguments");
	if (!refjson_string_is(method, "tools/call", 10) || name == NULL ||
	    name->type != REFJSON_STRING)
		return;
	if (memchr(name->str, '\0', name->len) != NULL)
		a->nul_name = 1;
	text = refjson_member(args, "text");
	if (refjson_string_is(name, "echo", 4) && text != NULL &&
	    text->type == REFJSON_STRING &&
	    memchr(text->str, '\0', text->len) != NULL)
		a->echo_text = text;
}

/* The run is one POST with a Content-Length body: what it asks. */
static void
find_asked(const struct run *r, struct asked *a)
{
	const struct refjson	*m;
	const char		*p = r->in, *end;

	memset(a, 0, sizeof *a);
	if (r->inlen < 5 || memcmp(p, "POST ", 5) != 0 ||
	    (end = memmem(p, r->inlen, "\r\n\r\n", 4)) == NULL ||
	    memmem(p, (size_t)(end - p), "chunked", 7) != NULL)
		return;
	end += 4;
	a->body = refjson_parse(end, r->inlen - (size_t)(end - p), 1024);
	if (a->body == NULL)
		return;
	if (a->body->type != REFJSON_ARRAY)
		find_asked_one(a->body, a);
	else {
		for (m = a->body->child; m != NULL; m = m->next)
			find_asked_one(m, a);
	}
}

static int
same_id(const struct refjson *a, const struct refjson *b)
{
	if (a->type != b->type)
		return (0);
	if (a->type == REFJSON_STRING)
		return (a->len == b->len &&
		    memcmp(a->str, b->str, a->len) == 0);
	return (a->type == REFJSON_NUMBER && a->number == b->number);
}

/* A request of a finished 200 POST was answered. */
static void
check_answered(const struct refjson *req, const struct replies *rp)
{
	const struct refjson	*id, *m;
	size_t			 i;
	int			 answered = 0;

	if ((id = refjson_member(req, "id")) == NULL ||
	    refjson_member(req, "method") == NULL ||
	    (id->type != REFJSON_STRING && id->type != REFJSON_NUMBER))
		return;
	for (i = 0; !answered && (m = replies_get(rp, i)) != NULL; i++)
		answered = same_id(refjson_member(m, "id"), id);
	CHECK(answered, "a request (id %s %.*s) was not answered",
	    id->type == REFJSON_STRING ? "string" : "number",
	    id->type == REFJSON_STRING ? (int)id->len : 0,
	    id->type == REFJSON_STRING ? id->str : "");
}

/*
 * A NUL in a name is refused; echo's text comes back whole or not at all;
 * a POST answered 200 in full answers every request it carried.
 */
static void
check_asked(const struct asked *a, const struct replies *rp, int status)
{
	const struct refjson	*m, *result, *content, *text;
	size_t			 i;

	if (a->body == NULL)
		return;
	if (rp->ended && status == 200) {
		if (a->body->type != REFJSON_ARRAY)
			check_answered(a->body, rp);
		else {
			for (m = a->body->child; m != NULL; m = m->next)
				check_answered(m, rp);
		}
	}
	for (i = 0; (m = replies_get(rp, i)) != NULL; i++) {
		result = refjson_member(m, "result");
		CHECK(!a->nul_name || result == NULL,
		    "a name with a NUL in it was served");
		if (a->echo_text == NULL || result == NULL)
			continue;
		content = refjson_member(result, "content");
		text = content != NULL ? refjson_member(content->child,
		    "text") : NULL;
		CHECK(refjson_member(result, "isError") != NULL ||
		    (text != NULL && text->len == a->echo_text->len &&
		    memcmp(text->str, a->echo_text->str, text->len) == 0),
		    "echo cut its text at a NUL");
	}
}

static void
check_output(struct run *r)
{
	struct head	 h;
	struct resume	 rs;
	struct asked	 asked;
	struct replies	 rp;
	const char	*p = r->out;
	size_t		 left = r->outlen, n, blen;
	char		*body;
	int		 done, first = 1, status = 0;
	int		 has_head;

	/* A HEAD request anywhere: its response has no body to frame. */
	has_head = (r->inlen >= 5 && memcmp(r->in, "HEAD ", 5) == 0) ||
	    memmem(r->in, r->inlen, "\nHEAD ", 6) != NULL;

	find_resume(r, &rs);
	find_asked(r, &asked);
	memset(&rp, 0, sizeof rp);
	while (left > 0 && !r->truncated && read_head(p, left, r->eof, &h)) {
		p += h.len;
		left -= h.len;
		if (!h.framed)
			break;
		body = NULL;
		blen = 0;
		done = 0;
		if (h.status < 200 || h.status == 204 || h.status == 304 ||
		    (has_head && first)) {
			done = 1;
		} else if (h.chunked) {
			n = dechunk(p, left, &body, &blen, &done);
			p += n;
			left -= n;
		} else if (h.clen >= 0) {
			if ((size_t)h.clen <= left) {
				body = xstrndup(p, (size_t)h.clen);
				blen = (size_t)h.clen;
				p += h.clen;
				left -= (size_t)h.clen;
				done = 1;
			}
		} else {
			/* Until the connection closes. */
			body = xstrndup(p, left);
			blen = left;
			left = 0;
			done = r->eof;
		}
		if (ctype_is(&h, "application/json") && done && body != NULL)
			check_json_body(&h, body, blen, &rp);
		if (ctype_is(&h, "text/event-stream") && !has_head)
			check_sse_body(&h, body != NULL ? body : "", blen, &rs,
			    &rp);
		if (rs.on && h.status == 200 && rs.c.stream == r->k1 &&
		    r->s1 != NULL)
			CHECK(rs.c.seq <= r->k1_head, "resumed with 200 after "
			    "%llu-%llu, beyond the head %llu",
			    (unsigned long long)rs.c.stream,
			    (unsigned long long)rs.c.seq,
			    (unsigned long long)r->k1_head);
		free(body);
		if (h.status >= 200 && first) {
			status = h.status;
			rp.ended = done && !has_head;
			first = 0;
		}
		/* After a HEAD the framing of what follows is unknown. */
		if (!done || has_head)
			break;
	}
	check_asked(&asked, &rp, status);
	refjson_free(asked.body);
	replies_free(&rp);
}

/* ---------------------------------------------------------------------
 * The harness.
 */

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	*cause = NULL;

	signal(SIGPIPE, SIG_IGN);
	fz.verbose = getenv("FUZZ_HTTP_VERBOSE") != NULL;
	event_set_mem_functions(xmalloc, xrealloc, free);	/* as main() */
	xmalloc_init_cjson();
	log_init(LOG_LEVEL_ERROR);
	fz.conf = conf_parse_string("builtin_tools on\n"
	    "fixtures conformance\n"
	    "max_body 64k\n", "fuzz", &cause);
	if (fz.conf == NULL)
		fatalx("%s", cause);
	if ((fz.base = event_base_new()) == NULL)
		fatalx("event_base_new");

	/* An abstract Unix socket: nothing on disk, one per process. */
	memset(&fz.sa, 0, sizeof fz.sa);
	fz.sa.sun_family = AF_UNIX;
	snprintf(fz.sa.sun_path + 1, sizeof fz.sa.sun_path - 1,
	    "mcpd-fuzz-http-%ld", (long)getpid());
	fz.salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(fz.sa.sun_path + 1));
	fz.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fz.listen_fd == -1 ||
	    bind(fz.listen_fd, (struct sockaddr *)&fz.sa, fz.salen) != 0 ||
	    listen(fz.listen_fd, 16) != 0)
		fatalx("listening socket: %s", strerror(errno));
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evconnlistener	*listener;
	struct eventlog		*el;
	struct evhttp		*http;
	struct run		 r;
	char			*cause = NULL;
	size_t			 sent = 0;
	int			 fd;

	if (size > MAX_INPUT)
		return (0);
	memset(&r, 0, sizeof r);
	cur = &r;
	r.out = xmalloc(MAX_RESPONSE);

	/* What server_run sets up, but on the harness's socket. */
	if ((el = eventlog_create(fz.base, fz.conf, &cause)) == NULL)
		fatalx("%s", cause);
	server_init(fz.base, fz.conf, el);
	session_init();
	provider_init(fz.conf);
	http = server_http_new(fz.base, fz.conf);
	listener = evconnlistener_new(fz.base, NULL, NULL, 0, 0, fz.listen_fd);
	if (listener == NULL || evhttp_bind_listener(http, listener) == NULL)
		fatalx("evhttp_bind_listener");

	substitute(&r, data, size);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&fz.sa, fz.salen) != 0)
		fatalx("connect: %s", strerror(errno));
	run_loop(&r, fd, &sent);
	if (r.s1 != NULL && !session_closed(r.s1))
		r.k1_head = stream_head(session_standalone(r.s1));
	else
		r.k1 = 0;	/* gone: no head to hold a resume against */
	if (fz.verbose)
		fail_dump();
	check_output(&r);

	/* The client goes; then the shutdown server_run does. */
	close(fd);
	run_loop(&r, -1, &sent);
	session_shutdown();
	view_shutdown();
	if (r.s1 != NULL)
		session_unref(r.s1);
	if (r.s0 != NULL)
		session_unref(r.s0);
	drain();
	FUZZ_CHECK(session_allocated() == 0,
	    "%zu sessions not freed after shutdown", session_allocated());
	evhttp_free(http);
	eventlog_free(el);
	run_loop(&r, -1, &sent);

	free(r.in);
	free(r.out);
	cur = NULL;
	return (0);
}
