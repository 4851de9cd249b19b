/*
 * Spans and W3C trace contexts (trace.h). A span keeps its attributes and
 * links already encoded in the OTLP/JSON mapping (opentelemetry-proto,
 * "JSON Protobuf Encoding": lowerCamelCase keys, ids as lowercase hex,
 * 64-bit integers and times as decimal strings, enums as numbers), so its
 * end is one pass of formatting into a buffer reused by every span, and
 * the exporter (otlp.c) copies the result into its batch.
 *
 * Bounds: a name of TRACE_NAME_MAX bytes, TRACE_ATTRS_MAX bytes of
 * attributes (one value at most TRACE_VALUE_MAX), TRACE_LINKS_MAX links,
 * a tracestate of TRACE_STATE_MAX: what does not fit is counted in the
 * span's dropped counts, as OTLP has them. So an encoded span is at most
 * TRACE_SPAN_MAX bytes, whatever a client sends.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "otlp.h"
#include "random.h"
#include "trace.h"
#include "utf8.h"
#include "xmalloc.h"

#define TRACE_NAME_MAX		128
#define TRACE_ATTRS_MAX		4096
#define TRACE_VALUE_MAX		512
#define TRACE_LINKS_MAX		8
#define TRACE_MESSAGE_MAX	256

/* 2^56: roots are sampled by the low 56 bits of their trace id. */
#define TRACE_RANDOM_SPAN	72057594037927936.0

/*
 * A growing buffer. One that starts in storage of its owner's (inline)
 * moves to the heap only when it outgrows it.
 */
struct trace_buf {
	char		*p;
	size_t		 len;
	size_t		 size;
	char		*inline_p;	/* the owner's storage, or NULL */
};

/* Attributes that fit here cost a span no allocation of their own. */
#define TRACE_ATTRS_INLINE	640

struct trace_span {
	struct trace_ctx ctx;
	uint8_t		 parent_id[8];
	uint8_t		 has_parent;
	uint8_t		 parent_remote;
	uint8_t		 recording;
	uint8_t		 kind;
	uint8_t		 error;
	uint32_t	 nlinks;
	uint32_t	 dropped_attrs;
	uint32_t	 dropped_links;
	uint64_t	 start_ns;
	char		*state;		/* tracestate, or NULL */
	char		*message;	/* the ERROR status's, or NULL */
	struct trace_buf attrs;		/* encoded, comma-separated */
	struct trace_buf links;
	char		 name[TRACE_NAME_MAX];
	char		 attrs_inline[TRACE_ATTRS_INLINE];
};

int			 trace_enabled;
static int		 trace_never;	/* ratio 0 */
static uint64_t		 trace_threshold;
/*
 * The spans entered, innermost last: a span that ends while entered (a
 * response sent from inside its own request's scope) is taken out of
 * every level, so no level leaves a freed span current.
 */
#define TRACE_DEPTH		32
static struct trace_span *trace_stack[TRACE_DEPTH];
static int		 trace_depth;
static size_t		 trace_nlive;
static struct trace_buf	 trace_out;	/* one span, encoded */

/* The root that is not sampled: its children are not either. */
static struct trace_span trace_dropped = {
	.ctx = { .state = TRACE_CTX_DROPPED }
};

static const char trace_hexdigits[] = "0123456789abcdef";

static int	trace_log_ids(char *, char *);

/* ---------------------------------------------------------------------
 * Buffers and JSON.
 */

static void
trace_buf_grow(struct trace_buf *b, size_t more)
{
	char	*p;

	if (b->len + more <= b->size)
		return;
	b->size = b->size * 2 > b->len + more ? b->size * 2 :
	    b->len + more + 256;
	if (b->p != NULL && b->p == b->inline_p) {
		p = xmalloc(b->size);
		memcpy(p, b->p, b->len);
		b->p = p;
	} else
		b->p = xrealloc(b->p, b->size);
}

static void
trace_buf_free(struct trace_buf *b)
{
	if (b->p != b->inline_p)
		free(b->p);
}

static void
trace_buf_add(struct trace_buf *b, const char *s, size_t len)
{
	if (len == 0)
		return;
	trace_buf_grow(b, len);
	memcpy(b->p + b->len, s, len);
	b->len += len;
}

static void
trace_buf_cat(struct trace_buf *b, const char *s)
{
	trace_buf_add(b, s, strlen(s));
}

/* v in decimal, without printf (a span has several numbers). */
static void
trace_buf_u64(struct trace_buf *b, uint64_t v)
{
	char	num[24], *p = num + sizeof num;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	trace_buf_add(b, p, (size_t)(num + sizeof num - p));
}

static void
trace_buf_hex(struct trace_buf *b, const uint8_t *id, size_t n)
{
	size_t	i;

	trace_buf_grow(b, 2 * n);
	for (i = 0; i < n; i++) {
		b->p[b->len++] = trace_hexdigits[id[i] >> 4];
		b->p[b->len++] = trace_hexdigits[id[i] & 0xf];
	}
}

/*
 * s as a JSON string: quotes, backslashes and control characters escaped,
 * and a byte that is not UTF-8 replaced by U+FFFD (OTLP's strings are
 * UTF-8, and a receiver refuses a request with one that is not).
 */
static void
trace_buf_str(struct trace_buf *b, const char *s, size_t len)
{
	unsigned char	c;
	size_t		i, n;

	trace_buf_grow(b, len + 2);
	b->p[b->len++] = '"';
	for (i = 0; i < len; i += n) {
		/* A run of plain ASCII goes as it is, in one copy. */
		for (n = 0; i + n < len; n++) {
			c = (unsigned char)s[i + n];
			if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
				break;
		}
		if (n > 0) {
			trace_buf_add(b, s + i, n);
			continue;
		}
		c = (unsigned char)s[i];
		n = 1;
		if (c == '"' || c == '\\') {
			trace_buf_grow(b, 2);
			b->p[b->len++] = '\\';
			b->p[b->len++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			trace_buf_grow(b, 6);
			memcpy(b->p + b->len, "\\u00", 4);
			b->p[b->len + 4] = trace_hexdigits[c >> 4];
			b->p[b->len + 5] = trace_hexdigits[c & 0xf];
			b->len += 6;
		} else if ((n = utf8_sequence(s + i, len - i, 0)) == 0) {
			n = 1;
			trace_buf_add(b, "\\ufffd", 6);
		} else
			trace_buf_add(b, s + i, n);
	}
	trace_buf_grow(b, 1);
	b->p[b->len++] = '"';
}

/* ---------------------------------------------------------------------
 * Contexts.
 */

void
trace_configure(int on, double ratio)
{
	trace_enabled = on;
	/* Log lines name the current span (log.c's hook). */
	log_trace_ids = on ? trace_log_ids : NULL;
	trace_never = ratio <= 0;
	if (ratio >= 1)
		trace_threshold = 0;
	else if (ratio > 0)
		trace_threshold = (uint64_t)((1.0 - ratio) *
		    TRACE_RANDOM_SPAN);
}

int
trace_sampling(void)
{
	return (trace_enabled && !trace_never);
}

static int
trace_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	return (-1);	/* uppercase is not W3C's HEXDIGLC */
}

/* n bytes from 2n lowercase hex digits; -1 if not, or all zero. */
static int
trace_unhex(const char *s, uint8_t *out, size_t n)
{
	size_t	i;
	int	hi, lo, nonzero = 0;

	for (i = 0; i < n; i++) {
		if ((hi = trace_hexval(s[2 * i])) < 0 ||
		    (lo = trace_hexval(s[2 * i + 1])) < 0)
			return (-1);
		out[i] = (uint8_t)(hi << 4 | lo);
		nonzero |= out[i];
	}
	return (nonzero ? 0 : -1);
}

/*
 * W3C trace-context, 3.2: version-traceid-parentid-flags. Version ff is
 * invalid; version 00 is exactly 55 characters; a later version is read
 * at the same places if what follows the flags is the end or a "-".
 */
int
trace_parse(const char *s, struct trace_ctx *ctx)
{
	size_t	len;
	int	version;

	if (s == NULL || (len = strlen(s)) < TRACE_PARENT_LEN ||
	    trace_hexval(s[0]) < 0 || trace_hexval(s[1]) < 0)
		return (-1);
	version = trace_hexval(s[0]) << 4 | trace_hexval(s[1]);
	if (version == 0xff || (version == 0 && len != TRACE_PARENT_LEN) ||
	    (len > TRACE_PARENT_LEN && s[TRACE_PARENT_LEN] != '-'))
		return (-1);
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return (-1);
	if (trace_unhex(s + 3, ctx->trace_id, 16) != 0 ||
	    trace_unhex(s + 36, ctx->span_id, 8) != 0)
		return (-1);
	if (trace_hexval(s[53]) < 0 || trace_hexval(s[54]) < 0)
		return (-1);
	ctx->flags = (uint8_t)(trace_hexval(s[53]) << 4 | trace_hexval(s[54]));
	ctx->state = TRACE_CTX_IDS;
	ctx->remote = 1;
	return (0);
}

static int
trace_key_char(char c)
{
	return ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '_' || c == '-' || c == '*' || c == '/' || c == '@');
}

/*
 * W3C trace-context, 3.3: list-members key=value separated by commas
 * (and optional spaces), at most 32 of them; keys of [a-z0-9_-*\/@],
 * values of printable ASCII without "," or "=". Longer than we pass on,
 * or anything else: not passed on.
 */
int
trace_state_ok(const char *s)
{
	const char	*p = s;
	int		 members = 0;

	if (s == NULL || strlen(s) > TRACE_STATE_MAX)
		return (0);
	while (*p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == ',') {
			p++;
			continue;	/* an empty member is allowed */
		}
		if (*p == '\0')
			break;
		if (++members > 32 || !trace_key_char(*p))
			return (0);
		while (trace_key_char(*p))
			p++;
		if (*p++ != '=' || *p == '\0' || *p == ',')
			return (0);
		while (*p != '\0' && *p != ',') {
			if (*p < 0x20 || *p > 0x7e || *p == '=')
				return (0);
			p++;
		}
	}
	return (1);
}

static void
trace_hex_into(char *out, const uint8_t *id, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		out[2 * i] = trace_hexdigits[id[i] >> 4];
		out[2 * i + 1] = trace_hexdigits[id[i] & 0xf];
	}
	out[2 * n] = '\0';
}

int
trace_format(const struct trace_ctx *ctx, char *out)
{
	if (ctx == NULL || ctx->state != TRACE_CTX_IDS)
		return (-1);
	memcpy(out, "00-", 3);
	trace_hex_into(out + 3, ctx->trace_id, 16);
	out[35] = '-';
	trace_hex_into(out + 36, ctx->span_id, 8);
	out[52] = '-';
	out[53] = trace_hexdigits[ctx->flags >> 4];
	out[54] = trace_hexdigits[ctx->flags & 0xf];
	out[55] = '\0';
	return (0);
}

void
trace_hex(const struct trace_ctx *ctx, char *trace_id, char *span_id)
{
	trace_hex_into(trace_id, ctx->trace_id, 16);
	trace_hex_into(span_id, ctx->span_id, 8);
}

/* ---------------------------------------------------------------------
 * Spans.
 */

static void
trace_new_span_id(uint8_t *id)
{
	uint64_t	v;

	while ((v = random_fast_u64()) == 0)
		;
	memcpy(id, &v, 8);
}

/* A root's trace id, and whether it is sampled. */
static int
trace_new_root(struct trace_ctx *ctx)
{
	uint64_t	hi, lo, low56 = 0;
	int		i;

	hi = random_fast_u64();
	while ((lo = random_fast_u64()) == 0)
		;
	memcpy(ctx->trace_id, &hi, 8);
	memcpy(ctx->trace_id + 8, &lo, 8);
	for (i = 9; i < 16; i++)
		low56 = low56 << 8 | ctx->trace_id[i];
	return (low56 >= trace_threshold);
}

static int
trace_log_ids(char *trace_id, char *span_id)
{
	struct trace_span	*sp = trace_current();

	if (sp == NULL || sp->ctx.state != TRACE_CTX_IDS)
		return (0);
	trace_hex(&sp->ctx, trace_id, span_id);
	return (1);
}

struct trace_span *
trace_start(const char *name, enum trace_kind kind,
    const struct trace_ctx *parent, const char *state)
{
	struct trace_span	*sp;
	struct trace_ctx	 root;
	int			 sampled;

	if (!trace_enabled)
		return (NULL);
	if (parent != NULL && parent->state == TRACE_CTX_DROPPED)
		return (&trace_dropped);
	if (parent == NULL || parent->state != TRACE_CTX_IDS) {
		if (trace_never || !trace_new_root(&root))
			return (&trace_dropped);
		sampled = 1;
	} else
		sampled = parent->flags & TRACE_FLAG_SAMPLED;

	/* All but the inline storage is cleared: a span is made often. */
	sp = xmalloc(sizeof *sp);
	memset(sp, 0, offsetof(struct trace_span, attrs_inline));
	trace_nlive++;
	if (parent == NULL || parent->state != TRACE_CTX_IDS) {
		memcpy(sp->ctx.trace_id, root.trace_id, 16);
		sp->ctx.flags = TRACE_FLAG_SAMPLED | TRACE_FLAG_RANDOM;
	} else {
		memcpy(sp->ctx.trace_id, parent->trace_id, 16);
		memcpy(sp->parent_id, parent->span_id, 8);
		sp->has_parent = 1;
		sp->parent_remote = parent->remote;
		sp->ctx.flags = parent->flags;
		if (state != NULL && *state != '\0' && trace_state_ok(state))
			sp->state = xstrdup(state);
	}
	trace_new_span_id(sp->ctx.span_id);
	sp->ctx.state = TRACE_CTX_IDS;
	sp->recording = sampled != 0;
	sp->kind = (uint8_t)kind;
	sp->attrs.p = sp->attrs.inline_p = sp->attrs_inline;
	sp->attrs.size = sizeof sp->attrs_inline;
	if (sp->recording) {
		sp->start_ns = clock_wall_ns();
		strlcpy(sp->name, name, sizeof sp->name);
	}
	return (sp);
}

struct trace_span *
trace_child(const char *name, enum trace_kind kind,
    const struct trace_span *parent)
{
	if (parent == NULL)
		return (trace_start(name, kind, NULL, NULL));
	return (trace_start(name, kind, &parent->ctx, parent->state));
}

int
trace_recording(const struct trace_span *sp)
{
	return (sp != NULL && sp->recording);
}

const struct trace_ctx *
trace_span_ctx(const struct trace_span *sp)
{
	return (sp != NULL ? &sp->ctx : NULL);
}

const char *
trace_span_state(const struct trace_span *sp)
{
	return (sp != NULL ? sp->state : NULL);
}

int
trace_traceparent(const struct trace_span *sp, char *out)
{
	return (sp != NULL ? trace_format(&sp->ctx, out) : -1);
}

void
trace_rename(struct trace_span *sp, const char *name)
{
	if (sp != NULL && sp->recording)
		strlcpy(sp->name, name, sizeof sp->name);
}

/* Opens attribute key's object up to its value; 0 if there is no room. */
static int
trace_attr_open(struct trace_span *sp, const char *key, size_t vlen)
{
	if (sp == NULL || !sp->recording)
		return (0);
	if (sp->attrs.len + strlen(key) + vlen + 64 > TRACE_ATTRS_MAX) {
		sp->dropped_attrs++;
		return (0);
	}
	if (sp->attrs.len > 0)
		trace_buf_add(&sp->attrs, ",", 1);
	trace_buf_cat(&sp->attrs, "{\"key\":");
	trace_buf_str(&sp->attrs, key, strlen(key));
	trace_buf_cat(&sp->attrs, ",\"value\":{");
	return (1);
}

void
trace_attr_strn(struct trace_span *sp, const char *key, const char *value,
    size_t len)
{
	if (value == NULL)
		return;
	if (len > TRACE_VALUE_MAX)
		len = TRACE_VALUE_MAX;
	/* Escaped, a byte takes 6 at most. */
	if (!trace_attr_open(sp, key, 6 * len))
		return;
	trace_buf_cat(&sp->attrs, "\"stringValue\":");
	trace_buf_str(&sp->attrs, value, len);
	trace_buf_cat(&sp->attrs, "}}");
}

void
trace_attr_str(struct trace_span *sp, const char *key, const char *value)
{
	if (value != NULL && sp != NULL && sp->recording)
		trace_attr_strn(sp, key, value, strlen(value));
}

void
trace_attr_int(struct trace_span *sp, const char *key, int64_t value)
{
	if (!trace_attr_open(sp, key, 24))
		return;
	trace_buf_cat(&sp->attrs, "\"intValue\":\"");
	if (value < 0) {
		trace_buf_add(&sp->attrs, "-", 1);
		trace_buf_u64(&sp->attrs, (uint64_t)0 - (uint64_t)value);
	} else
		trace_buf_u64(&sp->attrs, (uint64_t)value);
	trace_buf_cat(&sp->attrs, "\"}}");
}

void
trace_attr_bool(struct trace_span *sp, const char *key, int value)
{
	if (!trace_attr_open(sp, key, 8))
		return;
	trace_buf_cat(&sp->attrs, value ? "\"boolValue\":true}}" :
	    "\"boolValue\":false}}");
}

void
trace_error(struct trace_span *sp, const char *type, const char *message)
{
	if (sp == NULL || !sp->recording || sp->error)
		return;
	sp->error = 1;
	trace_attr_str(sp, "error.type", type);
	if (message != NULL)
		sp->message = xstrndup(message, TRACE_MESSAGE_MAX);
}

/* OTLP's span flags: the W3C flags, and whether the parent is remote. */
static uint32_t
trace_otlp_flags(uint8_t w3c, int remote)
{
	return ((uint32_t)w3c | 0x100 | (remote ? 0x200 : 0));
}

void
trace_link(struct trace_span *sp, const struct trace_ctx *ctx)
{
	struct trace_buf	*b;

	if (sp == NULL || !sp->recording || ctx == NULL ||
	    ctx->state != TRACE_CTX_IDS)
		return;
	if (sp->nlinks >= TRACE_LINKS_MAX) {
		sp->dropped_links++;
		return;
	}
	b = &sp->links;
	if (sp->nlinks++ > 0)
		trace_buf_add(b, ",", 1);
	trace_buf_cat(b, "{\"traceId\":\"");
	trace_buf_hex(b, ctx->trace_id, 16);
	trace_buf_cat(b, "\",\"spanId\":\"");
	trace_buf_hex(b, ctx->span_id, 8);
	trace_buf_cat(b, "\",\"flags\":");
	trace_buf_u64(b, trace_otlp_flags(ctx->flags, ctx->remote));
	trace_buf_cat(b, "}");
}

/* The span in the OTLP/JSON mapping, into trace_out. */
static void
trace_encode(const struct trace_span *sp, uint64_t end_ns)
{
	struct trace_buf	*b = &trace_out;

	b->len = 0;
	trace_buf_cat(b, "{\"traceId\":\"");
	trace_buf_hex(b, sp->ctx.trace_id, 16);
	trace_buf_cat(b, "\",\"spanId\":\"");
	trace_buf_hex(b, sp->ctx.span_id, 8);
	trace_buf_cat(b, "\"");
	if (sp->has_parent) {
		trace_buf_cat(b, ",\"parentSpanId\":\"");
		trace_buf_hex(b, sp->parent_id, 8);
		trace_buf_cat(b, "\"");
	}
	if (sp->state != NULL) {
		trace_buf_cat(b, ",\"traceState\":");
		trace_buf_str(b, sp->state, strlen(sp->state));
	}
	trace_buf_cat(b, ",\"flags\":");
	trace_buf_u64(b, trace_otlp_flags(sp->ctx.flags, sp->parent_remote));
	trace_buf_cat(b, ",\"name\":");
	trace_buf_str(b, sp->name, strlen(sp->name));
	trace_buf_cat(b, ",\"kind\":");
	trace_buf_u64(b, sp->kind);
	trace_buf_cat(b, ",\"startTimeUnixNano\":\"");
	trace_buf_u64(b, sp->start_ns);
	trace_buf_cat(b, "\",\"endTimeUnixNano\":\"");
	trace_buf_u64(b, end_ns);
	trace_buf_cat(b, "\",\"attributes\":[");
	trace_buf_add(b, sp->attrs.p, sp->attrs.len);
	trace_buf_cat(b, "]");
	if (sp->dropped_attrs > 0) {
		trace_buf_cat(b, ",\"droppedAttributesCount\":");
		trace_buf_u64(b, sp->dropped_attrs);
	}
	if (sp->nlinks > 0) {
		trace_buf_cat(b, ",\"links\":[");
		trace_buf_add(b, sp->links.p, sp->links.len);
		trace_buf_cat(b, "]");
	}
	if (sp->dropped_links > 0) {
		trace_buf_cat(b, ",\"droppedLinksCount\":");
		trace_buf_u64(b, sp->dropped_links);
	}
	if (sp->error) {
		trace_buf_cat(b, ",\"status\":{\"code\":2");
		if (sp->message != NULL) {
			trace_buf_cat(b, ",\"message\":");
			trace_buf_str(b, sp->message, strlen(sp->message));
		}
		trace_buf_cat(b, "}");
	}
	trace_buf_cat(b, "}");
}

void
trace_end(struct trace_span *sp)
{
	uint64_t	end_ns;
	int		i;

	if (sp == NULL || sp == &trace_dropped)
		return;
	for (i = 0; i < trace_depth; i++) {
		if (trace_stack[i] == sp)
			trace_stack[i] = NULL;
	}
	if (sp->recording) {
		end_ns = clock_wall_ns();
		trace_encode(sp, end_ns < sp->start_ns ? sp->start_ns :
		    end_ns);
		otlp_push(trace_out.p, trace_out.len);
	}
	trace_nlive--;
	trace_buf_free(&sp->attrs);
	trace_buf_free(&sp->links);
	free(sp->state);
	free(sp->message);
	free(sp);
}

struct trace_span *
trace_current(void)
{
	return (trace_depth > 0 ? trace_stack[trace_depth - 1] : NULL);
}

/*
 * sp is current until the matching trace_leave, given what this returns;
 * NULL is a level too (nothing is current in it). Levels past
 * TRACE_DEPTH are not entered: the outer span stays current.
 */
int
trace_enter(struct trace_span *sp)
{
	int	depth = trace_depth;

	if (trace_depth < TRACE_DEPTH)
		trace_stack[trace_depth++] = sp;
	return (depth);
}

void
trace_leave(int depth)
{
	if (depth >= 0 && depth <= trace_depth)
		trace_depth = depth;
}

size_t
trace_live(void)
{
	return (trace_nlive);
}
