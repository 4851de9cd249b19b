/*
 * JSON-RPC 2.0. Bodies are checked before cJSON sees them: valid UTF-8
 * (cJSON would pass invalid bytes through into responses) and a nesting
 * bound (cJSON recurses, and a deep body must not cost a deep stack).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc.h"
#include "utf8.h"
#include "xmalloc.h"

int
jsonrpc_utf8_valid(const char *s, size_t len)
{
	size_t	i, n;

	for (i = 0; i < len; i += n) {
		if ((n = utf8_sequence(s + i, len - i, 0)) == 0)
			return (0);
	}
	return (1);
}

/*
 * A lexical pass cJSON does not make: nesting within max, and no control
 * byte but JSON's own whitespace (RFC 8259: none at all inside strings).
 */
int
jsonrpc_depth_ok(const char *s, size_t len, int max)
{
	size_t	i;
	int	depth = 0, instring = 0;

	for (i = 0; i < len; i++) {
		if (instring) {
			if ((unsigned char)s[i] < 0x20)
				return (0);
			if (s[i] == '\\')
				i++;
			else if (s[i] == '"')
				instring = 0;
			continue;
		}
		/* cJSON skips every byte up to space; JSON allows four. */
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t' &&
		    s[i] != '\n' && s[i] != '\r')
			return (0);
		switch (s[i]) {
		case '"':
			instring = 1;
			break;
		case '[':
		case '{':
			if (++depth > max)
				return (0);
			break;
		case ']':
		case '}':
			depth--;
			break;
		}
	}
	return (1);
}

/*
 * cJSON decodes \u0000 to a NUL, which ends its C string: every reader
 * after it would see the string cut ("ping\u0000x" served as ping), and a
 * member "text\u0000x" would be found as "text". So the escape is
 * rewritten to JSONRPC_NUL_MARK first, a byte that valid UTF-8 never
 * holds: the string keeps its length, and jsonrpc_has_nul() finds it.
 * Only escapes are rewritten (a backslash takes the byte after it along,
 * so "\\u0000" stays text); a backslash outside a string is malformed
 * either way. Returns NULL when the body has no such escape.
 */
#define JSONRPC_NUL_ESCAPE	"\\u0000"
#define JSONRPC_NUL_MARK	'\xff'

static char *
jsonrpc_mark_nuls(const char *body, size_t len, size_t *outlen)
{
	const size_t	 esclen = sizeof JSONRPC_NUL_ESCAPE - 1;
	const char	*p, *end;
	char		*out, *o;

	/* An empty body may come as a NULL pointer. */
	if (len == 0 || memmem(body, len, JSONRPC_NUL_ESCAPE, esclen) == NULL)
		return (NULL);
	p = body;
	end = body + len;
	o = out = xmalloc(len);
	while (p < end) {
		if (*p != '\\')
			*o++ = *p++;
		else if ((size_t)(end - p) >= esclen &&
		    memcmp(p, JSONRPC_NUL_ESCAPE, esclen) == 0) {
			*o++ = JSONRPC_NUL_MARK;
			p += esclen;
		} else {
			*o++ = *p++;
			if (p < end)
				*o++ = *p++;
		}
	}
	*outlen = (size_t)(o - out);
	return (out);
}

static int
jsonrpc_string_has_nul(const char *s)
{
	return (s != NULL && strchr(s, JSONRPC_NUL_MARK) != NULL);
}

/*
 * Whether a string of item (its value, a member name, anything nested)
 * held a NUL in the body it was parsed from. Such a string cannot be read
 * as a C string without being cut, nor printed back whole, so it is
 * refused wherever the message is checked, never passed on.
 */
int
jsonrpc_has_nul(const cJSON *item)
{
	const cJSON	*child;

	if (item == NULL)
		return (0);
	if (cJSON_IsString(item) && jsonrpc_string_has_nul(item->valuestring))
		return (1);
	for (child = item->child; child != NULL; child = child->next) {
		if (jsonrpc_string_has_nul(child->string) ||
		    jsonrpc_has_nul(child))
			return (1);
	}
	return (0);
}

/*
 * A whole number from 0 to max, checked on the double: converting one out
 * of range to an integer first is undefined behaviour, and a client (or a
 * shared log) can send any number. max must be at most 2^53, the largest
 * value below which a double holds every whole number.
 */
int
jsonrpc_whole_number(const cJSON *v, double max, uint64_t *out)
{
	double	d;

	if (!cJSON_IsNumber(v))
		return (-1);
	d = v->valuedouble;
	if (!(d >= 0 && d <= max) || d != floor(d))
		return (-1);
	*out = (uint64_t)d;
	return (0);
}

/*
 * cJSON reads a number past double range as infinity, and prints that as
 * null: a progress token of 1e400 would come back as null. Such a number
 * is refused like any other that cannot be carried.
 */
static int
jsonrpc_numbers_finite(const cJSON *item)
{
	for (; item != NULL; item = item->next) {
		if (cJSON_IsNumber(item) && !isfinite(item->valuedouble))
			return (0);
		if (item->child != NULL && !jsonrpc_numbers_finite(item->child))
			return (0);
	}
	return (1);
}

/*
 * Parses a body. On failure returns NULL with *code the JSON-RPC error code
 * and *cause a static message.
 */
cJSON *
jsonrpc_parse(const char *body, size_t len, int *code, const char **cause)
{
	cJSON		*json;
	const char	*end = NULL;
	char		*marked;
	size_t		 markedlen;

	*code = JSONRPC_PARSE_ERROR;
	if (!jsonrpc_utf8_valid(body, len)) {
		*cause = "Parse error: body is not valid UTF-8";
		return (NULL);
	}
	if (!jsonrpc_depth_ok(body, len, JSONRPC_MAX_DEPTH)) {
		*cause = "Parse error: JSON nested too deeply, or a NUL or "
		    "unescaped control character";
		return (NULL);
	}
	if ((marked = jsonrpc_mark_nuls(body, len, &markedlen)) != NULL) {
		body = marked;
		len = markedlen;
	}
	json = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (json == NULL)
		*cause = "Parse error: malformed JSON";
	for (; json != NULL && end != NULL && end < body + len; end++) {
		if (strchr(" \t\r\n", *end) == NULL) {
			cJSON_Delete(json);
			json = NULL;
			*cause = "Parse error: trailing data after JSON";
		}
	}
	free(marked);
	if (json != NULL && !jsonrpc_numbers_finite(json)) {
		cJSON_Delete(json);
		*cause = "Parse error: a number beyond the range of a double";
		return (NULL);
	}
	return (json);
}

/*
 * Integer ids only, and only as large as cJSON prints exactly (%1.15g): an
 * id must come back byte for byte, and the range test comes before the
 * cast, which would be undefined for huge values.
 */
#define JSONRPC_MAX_ID	999999999999999.0

static int
jsonrpc_id_valid(const cJSON *id)
{
	double	v;

	if (cJSON_IsString(id))
		return (!jsonrpc_string_has_nul(id->valuestring));
	if (!cJSON_IsNumber(id))
		return (0);
	v = id->valuedouble;
	if (!(v >= -JSONRPC_MAX_ID && v <= JSONRPC_MAX_ID))
		return (0);
	return (v == (double)(long long)v);
}

/*
 * The id to answer a message with, or NULL (null) when it has none that
 * can be echoed: JSON-RPC answers an id it could not read with null, and
 * an id printed back differently would name another request.
 */
const cJSON *
jsonrpc_reply_id(const cJSON *msg)
{
	const cJSON	*id = cJSON_GetObjectItemCaseSensitive(msg, "id");

	return (jsonrpc_id_valid(id) ? id : NULL);
}

/*
 * A NUL anywhere in a message is refused here (names and every string of
 * the envelope, a notification's params, a response's result or error),
 * except in a request's params: dispatch refuses those with -32602, in an
 * answer that carries the request's id.
 */
enum jsonrpc_kind
jsonrpc_classify(const cJSON *msg, const char **cause)
{
	const cJSON	*version, *method, *id, *params, *member, *skip;

	if (!cJSON_IsObject(msg)) {
		*cause = "Invalid Request: message is not an object";
		return (JSONRPC_INVALID);
	}
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	skip = method != NULL && id != NULL ? params : NULL;
	cJSON_ArrayForEach(member, msg) {
		if (jsonrpc_string_has_nul(member->string) ||
		    (member != skip && jsonrpc_has_nul(member))) {
			*cause = "Invalid Request: a name or string contains "
			    "NUL (\\u0000)";
			return (JSONRPC_INVALID);
		}
	}
	version = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0")) {
		*cause = "Invalid Request: jsonrpc must be \"2.0\"";
		return (JSONRPC_INVALID);
	}
	if (method == NULL) {
		if (id == NULL || (!jsonrpc_id_valid(id) && !cJSON_IsNull(id))) {
			*cause = "Invalid Request: no method and no valid id";
			return (JSONRPC_INVALID);
		}
		if (cJSON_HasObjectItem(msg, "result") ==
		    cJSON_HasObjectItem(msg, "error")) {
			*cause = "Invalid Request: a response has exactly one "
			    "of result and error";
			return (JSONRPC_INVALID);
		}
		return (JSONRPC_RESPONSE);
	}
	if (!cJSON_IsString(method)) {
		*cause = "Invalid Request: method must be a string";
		return (JSONRPC_INVALID);
	}
	if (params != NULL && !cJSON_IsObject(params) &&
	    !cJSON_IsArray(params)) {
		*cause = "Invalid Request: params must be an object";
		return (JSONRPC_INVALID);
	}
	if (id == NULL)
		return (JSONRPC_NOTIFICATION);
	if (!jsonrpc_id_valid(id)) {
		*cause = "Invalid Request: id must be a string or an integer "
		    "of at most 15 digits";
		return (JSONRPC_INVALID);
	}
	return (JSONRPC_REQUEST);
}

cJSON *
jsonrpc_id_dup(const cJSON *id)
{
	if (id == NULL)
		return (cJSON_CreateNull());
	return (cJSON_Duplicate(id, 1));
}

int
jsonrpc_id_equal(const cJSON *a, const cJSON *b)
{
	if (a == NULL || b == NULL)
		return (0);
	return (cJSON_Compare(a, b, 1));
}

/*
 * The envelope's names and "2.0" are constants the messages refer to,
 * not copies: a message is built, printed and freed for every event.
 */
static cJSON *
jsonrpc_envelope(void)
{
	cJSON	*msg = cJSON_CreateObject();

	cJSON_AddItemToObjectCS(msg, "jsonrpc",
	    cJSON_CreateStringReference("2.0"));
	return (msg);
}

cJSON *
jsonrpc_result(const cJSON *id, cJSON *result)
{
	cJSON	*msg = jsonrpc_envelope();

	cJSON_AddItemToObjectCS(msg, "id", jsonrpc_id_dup(id));
	cJSON_AddItemToObjectCS(msg, "result",
	    result != NULL ? result : cJSON_CreateObject());
	return (msg);
}

cJSON *
jsonrpc_error(const cJSON *id, int code, const char *message, cJSON *data)
{
	cJSON	*msg = jsonrpc_envelope();
	cJSON	*error = cJSON_CreateObject();

	cJSON_AddItemToObjectCS(msg, "id", jsonrpc_id_dup(id));
	cJSON_AddItemToObjectCS(error, "code", cJSON_CreateNumber(code));
	cJSON_AddItemToObjectCS(error, "message",
	    cJSON_CreateString(message));
	if (data != NULL)
		cJSON_AddItemToObjectCS(error, "data", data);
	cJSON_AddItemToObjectCS(msg, "error", error);
	return (msg);
}

cJSON *
jsonrpc_missing_capability(const cJSON *id, const char *capability,
    const char *extension)
{
	cJSON	*data = cJSON_CreateObject(), *required;
	char	*message;
	cJSON	*msg;

	required = cJSON_AddObjectToObject(data, "requiredCapabilities");
	if (extension != NULL) {
		cJSON_AddObjectToObject(cJSON_AddObjectToObject(required,
		    "extensions"), extension);
		return (jsonrpc_error(id, JSONRPC_MISSING_CAPABILITY,
		    "Missing required client capability", data));
	}
	cJSON_AddObjectToObject(required, capability);
	xasprintf(&message, "Missing required client capability: %s",
	    capability);
	msg = jsonrpc_error(id, JSONRPC_MISSING_CAPABILITY, message, data);
	free(message);
	return (msg);
}

cJSON *
jsonrpc_notification(const char *method, cJSON *params)
{
	cJSON	*msg = jsonrpc_envelope();

	cJSON_AddItemToObjectCS(msg, "method", cJSON_CreateString(method));
	if (params != NULL)
		cJSON_AddItemToObjectCS(msg, "params", params);
	return (msg);
}

/*
 * Moves item's value (a message, a batch) into a new node, leaving item an
 * empty null: the one who parsed it deletes item as usual, the taker keeps
 * the value, and nothing is copied. item must not be in a tree.
 */
cJSON *
jsonrpc_take(cJSON *item)
{
	cJSON	*taken = cJSON_CreateNull();

	*taken = *item;
	memset(item, 0, sizeof *item);
	item->type = cJSON_NULL;
	return (taken);
}

/*
 * Printing. Every message this process sends is printed here, so this is
 * a hot path: cJSON 1.7.15 prints each number with sprintf and reads it
 * back with sscanf, and grows its buffer by reallocation. The text is
 * byte for byte what cJSON_PrintUnformatted() writes (tests check that on
 * random trees); only the work differs: integers of up to 15 digits
 * (ids, progress, counts; what "%1.15g" prints exactly) are written
 * without printf, into one buffer.
 */
struct jsonrpc_out {
	char	*buf;
	size_t	 len;
	size_t	 cap;
};

static void
jsonrpc_out_grow(struct jsonrpc_out *o, size_t n)
{
	while (o->cap - o->len < n)
		o->cap *= 2;
	o->buf = xrealloc(o->buf, o->cap);
}

/* Room for n more bytes; the common case (there is) stays inline. */
static inline char *
jsonrpc_out_room(struct jsonrpc_out *o, size_t n)
{
	if (o->cap - o->len < n)
		jsonrpc_out_grow(o, n);
	return (o->buf + o->len);
}

static inline void
jsonrpc_out_add(struct jsonrpc_out *o, const char *p, size_t n)
{
	memcpy(jsonrpc_out_room(o, n), p, n);
	o->len += n;
}

/* One byte: the commas, colons and brackets of every message. */
static inline void
jsonrpc_out_byte(struct jsonrpc_out *o, char c)
{
	*jsonrpc_out_room(o, 1) = c;
	o->len++;
}

static void
jsonrpc_out_number(struct jsonrpc_out *o, const cJSON *item)
{
	double		 d = item->valuedouble, test;
	char		 tmp[32], *p;
	uint64_t	 u;
	int		 n;

	if (d >= -JSONRPC_MAX_ID && d <= JSONRPC_MAX_ID &&
	    d == (double)(long long)d && !(d == 0 && signbit(d))) {
		p = tmp + sizeof tmp;
		u = d < 0 ? (uint64_t)-(long long)d : (uint64_t)(long long)d;
		do {
			*--p = (char)('0' + u % 10);
			u /= 10;
		} while (u != 0);
		if (d < 0)
			*--p = '-';
		jsonrpc_out_add(o, p, (size_t)(tmp + sizeof tmp - p));
		return;
	}
	/* cJSON's print_number, for everything else. */
	if (isnan(d) || isinf(d))
		n = snprintf(tmp, sizeof tmp, "null");
	else {
		n = snprintf(tmp, sizeof tmp, "%1.15g", d);
		test = strtod(tmp, NULL);
		if (fabs(test - d) > DBL_EPSILON * fmax(fabs(test), fabs(d)))
			n = snprintf(tmp, sizeof tmp, "%1.17g", d);
	}
	jsonrpc_out_add(o, tmp, (size_t)n);
}

/* Whether none of 8 bytes needs an escape: none < 0x20, '"' or '\\'. */
static int
jsonrpc_plain8(const unsigned char *p)
{
	const uint64_t	ones = 0x0101010101010101ULL;
	const uint64_t	high = 0x8080808080808080ULL;
	uint64_t	x, q, b;

	memcpy(&x, p, sizeof x);
	q = x ^ (ones * '"');
	b = x ^ (ones * '\\');
	return ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) |
	    ((b - ones) & ~b)) & high) == 0;
}

/*
 * A string, escaped as cJSON escapes it: '"', '\\' and the controls, the
 * rest (UTF-8 included) as it is. Plain runs are found eight bytes at a
 * time and copied at once; room is made a piece at a time, so a long
 * string never needs six times its size. Most strings are a few bytes
 * (names, "2.0"): the quotes go in with them.
 */
#define JSONRPC_PIECE	4096

/* What follows the backslash of an escaped byte; 0: printed as it is. */
static const char jsonrpc_escapes[256] = {
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r',
	'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
	'u', 'u', 'u', 'u', 0, 0, '"', [92] = '\\'
};

/* Escapes bytes [i, end) of p to q; returns where q ends. */
static char *
jsonrpc_escape_piece(char *q, const unsigned char *p, size_t i, size_t end)
{
	static const char	 hex[] = "0123456789abcdef";
	size_t			 run;
	char			 e;

	for (run = i; i < end;) {
		if (i + 8 <= end && jsonrpc_plain8(p + i)) {
			i += 8;
			continue;
		}
		if ((e = jsonrpc_escapes[p[i]]) == 0) {
			i++;
			continue;
		}
		memcpy(q, p + run, i - run);
		q += i - run;
		*q++ = '\\';
		*q++ = e;
		if (e == 'u') {
			*q++ = '0';
			*q++ = '0';
			*q++ = hex[p[i] >> 4];
			*q++ = hex[p[i] & 0xf];
		}
		run = ++i;
	}
	memcpy(q, p + run, end - run);
	return (q + (end - run));
}

static void
jsonrpc_out_string(struct jsonrpc_out *o, const char *s)
{
	const unsigned char	*p = (const unsigned char *)(s != NULL ? s : "");
	size_t			 len = strlen((const char *)p), i, end;
	char			*q;

	if (len <= JSONRPC_PIECE) {
		q = jsonrpc_out_room(o, len * 6 + 2);
		*q++ = '"';
		q = jsonrpc_escape_piece(q, p, 0, len);
		*q++ = '"';
		o->len = (size_t)(q - o->buf);
		return;
	}
	jsonrpc_out_byte(o, '"');
	for (i = 0; i < len; i = end) {
		end = len - i > JSONRPC_PIECE ? i + JSONRPC_PIECE : len;
		q = jsonrpc_escape_piece(jsonrpc_out_room(o, (end - i) * 6), p,
		    i, end);
		o->len = (size_t)(q - o->buf);
	}
	jsonrpc_out_byte(o, '"');
}

static int
jsonrpc_out_value(struct jsonrpc_out *o, const cJSON *item)
{
	const cJSON	*c;

	switch (item->type & 0xff) {
	case cJSON_NULL:
		jsonrpc_out_add(o, "null", 4);
		return (0);
	case cJSON_False:
		jsonrpc_out_add(o, "false", 5);
		return (0);
	case cJSON_True:
		jsonrpc_out_add(o, "true", 4);
		return (0);
	case cJSON_Number:
		jsonrpc_out_number(o, item);
		return (0);
	case cJSON_Raw:
		if (item->valuestring == NULL)
			return (-1);
		jsonrpc_out_add(o, item->valuestring, strlen(item->valuestring));
		return (0);
	case cJSON_String:
		jsonrpc_out_string(o, item->valuestring);
		return (0);
	case cJSON_Array:
		jsonrpc_out_byte(o, '[');
		for (c = item->child; c != NULL; c = c->next) {
			if (c != item->child)
				jsonrpc_out_byte(o, ',');
			if (jsonrpc_out_value(o, c) != 0)
				return (-1);
		}
		jsonrpc_out_byte(o, ']');
		return (0);
	case cJSON_Object:
		jsonrpc_out_byte(o, '{');
		for (c = item->child; c != NULL; c = c->next) {
			if (c != item->child)
				jsonrpc_out_byte(o, ',');
			jsonrpc_out_string(o, c->string);
			jsonrpc_out_byte(o, ':');
			if (jsonrpc_out_value(o, c) != 0)
				return (-1);
		}
		jsonrpc_out_byte(o, '}');
		return (0);
	default:
		return (-1);
	}
}

/*
 * The compact JSON text of item, allocated (free it), as
 * cJSON_PrintUnformatted() would print it; NULL where cJSON fails too (an
 * invalid item, a raw one without text).
 */
char *
jsonrpc_print(const cJSON *item)
{
	struct jsonrpc_out	o;

	if (item == NULL)
		return (NULL);
	o.cap = 512;
	o.len = 0;
	o.buf = xmalloc(o.cap);
	if (jsonrpc_out_value(&o, item) != 0) {
		free(o.buf);
		return (NULL);
	}
	jsonrpc_out_room(&o, 1)[0] = '\0';
	return (o.buf);
}

/*
 * The same text in this module's buffer, valid until the next call, and
 * its length: for a message that is copied at once (an append copies what
 * it is given), one allocation less per event. A buffer a big message
 * grew is let go afterwards.
 */
#define JSONRPC_KEEP	(64 * 1024)

static struct jsonrpc_out	jsonrpc_shared;

const char *
jsonrpc_print_shared(const cJSON *item, size_t *len)
{
	struct jsonrpc_out	*o = &jsonrpc_shared;

	if (item == NULL)
		return (NULL);
	if (o->cap > JSONRPC_KEEP) {
		free(o->buf);
		o->buf = NULL;
	}
	if (o->buf == NULL) {
		o->cap = 512;
		o->buf = xmalloc(o->cap);
	}
	o->len = 0;
	if (jsonrpc_out_value(o, item) != 0)
		return (NULL);
	jsonrpc_out_room(o, 1)[0] = '\0';
	*len = o->len;
	return (o->buf);
}
