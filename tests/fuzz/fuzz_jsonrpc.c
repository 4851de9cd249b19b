/*
 * JSON-RPC bodies (src/mcp/jsonrpc.c): parse, classify, print. The input is a
 * POST body. Oracles:
 * - a refused body gets a JSON-RPC error code and a reason;
 * - an accepted body holds what the reference reader (refjson.c) reads in
 *   it, value for value (a C string cannot hold an escaped NUL: there it
 *   may be cut or hold another byte, anywhere but in a method or an id,
 *   see below);
 * - printing an accepted message without an escaped NUL gives strict JSON
 *   that parses back to an equal message (numbers within cJSON's epsilon);
 * - classification is consistent: a request or notification has a method
 *   string, read whole (a method with a NUL in it is no method the client
 *   meant); a request has an id, and that id, put in a result and in an
 *   error and printed, reads back equal to the id in the body (the same
 *   string byte for byte, the same number); a response has exactly one of
 *   result and error. Batches: each member alike.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "jsonrpc.h"
#include "refjson.h"
#include "xmalloc.h"

static const char	*body_text;
static size_t		 body_len;

static void
fail_dump(void)
{
	fuzz_print_bytes("body", body_text, body_len);
}

/*
 * cJSON's view of a string is the reference one, but for an escaped NUL,
 * which a C string cannot hold: there it may be cut short, or hold another
 * byte in the NUL's place (jsonrpc_parse may mark it so it can be found).
 */
static int
same_string(const char *cs, const char *rs, size_t rlen)
{
	size_t	clen = strlen(cs), i;

	if (memchr(rs, '\0', rlen) == NULL)
		return (clen == rlen && memcmp(cs, rs, rlen) == 0);
	if (clen < rlen && rs[clen] == '\0' && memcmp(cs, rs, clen) == 0)
		return (1);
	if (clen != rlen)
		return (0);
	for (i = 0; i < rlen; i++) {
		if (rs[i] != '\0' && cs[i] != rs[i])
			return (0);
	}
	return (1);
}

static void
check_same(const cJSON *c, const struct refjson *r, const char *where)
{
	const cJSON		*ci;
	const struct refjson	*ri;

	switch (r->type) {
	case REFJSON_NULL:
		FUZZ_CHECK(cJSON_IsNull(c), "%s: not null", where);
		break;
	case REFJSON_FALSE:
		FUZZ_CHECK(cJSON_IsFalse(c), "%s: not false", where);
		break;
	case REFJSON_TRUE:
		FUZZ_CHECK(cJSON_IsTrue(c), "%s: not true", where);
		break;
	case REFJSON_NUMBER:
		FUZZ_CHECK(cJSON_IsNumber(c) && c->valuedouble == r->number,
		    "%s: number %.17g read as %.17g", where, r->number,
		    cJSON_IsNumber(c) ? c->valuedouble : 0.0);
		break;
	case REFJSON_STRING:
		FUZZ_CHECK(cJSON_IsString(c) &&
		    same_string(c->valuestring, r->str, r->len),
		    "%s: string not read as written", where);
		break;
	case REFJSON_ARRAY:
	case REFJSON_OBJECT:
		FUZZ_CHECK(r->type == REFJSON_ARRAY ? cJSON_IsArray(c) :
		    cJSON_IsObject(c), "%s: container type differs", where);
		ci = c->child;
		for (ri = r->child; ri != NULL; ri = ri->next) {
			FUZZ_CHECK(ci != NULL, "%s: members missing", where);
			if (r->type == REFJSON_OBJECT)
				FUZZ_CHECK(ci->string != NULL &&
				    same_string(ci->string, ri->key,
				    ri->keylen), "%s: a member name differs",
				    where);
			check_same(ci, ri, where);
			ci = ci->next;
		}
		FUZZ_CHECK(ci == NULL, "%s: members added", where);
		break;
	}
}

/* The id member of a printed message, read by the reference reader. */
static void
check_id_printed(cJSON *msg, const struct refjson *want, const char *what)
{
	struct refjson		*out;
	const struct refjson	*id;
	char			*text;

	text = jsonrpc_print(msg);
	out = refjson_parse(text, strlen(text), 512);
	if (out == NULL)
		fail_dump();
	FUZZ_CHECK(out != NULL, "the printed %s is not JSON: %s", what, text);
	id = refjson_member(out, "id");
	FUZZ_CHECK(id != NULL, "the printed %s has no id: %s", what, text);
	if (want->type == REFJSON_STRING) {
		if (!refjson_string_is(id, want->str, want->len)) {
			fail_dump();
			fuzz_print_bytes("body id", want->str, want->len);
		}
		FUZZ_CHECK(refjson_string_is(id, want->str, want->len),
		    "the %s's id does not print back: %s", what, text);
	} else {
		FUZZ_CHECK(want->type == REFJSON_NUMBER &&
		    id->type == REFJSON_NUMBER && id->number == want->number,
		    "the %s's id does not print back: %s", what, text);
	}
	refjson_free(out);
	free(text);
	cJSON_Delete(msg);
}

static void
check_message(const cJSON *m, const struct refjson *r)
{
	const struct refjson	*rmethod, *rid;
	const cJSON		*method, *id;
	enum jsonrpc_kind	 kind;
	const char		*cause = NULL;
	cJSON			*copy;

	kind = jsonrpc_classify(m, &cause);
	method = cJSON_GetObjectItemCaseSensitive(m, "method");
	id = cJSON_GetObjectItemCaseSensitive(m, "id");
	rmethod = refjson_member(r, "method");
	rid = refjson_member(r, "id");
	switch (kind) {
	case JSONRPC_INVALID:
		FUZZ_CHECK(cause != NULL && *cause != '\0',
		    "invalid without a reason");
		return;
	case JSONRPC_RESPONSE:
		FUZZ_CHECK(method == NULL && id != NULL,
		    "a response with a method or no id");
		FUZZ_CHECK(cJSON_HasObjectItem(m, "result") !=
		    cJSON_HasObjectItem(m, "error"),
		    "a response needs exactly one of result and error");
		return;
	case JSONRPC_NOTIFICATION:
		FUZZ_CHECK(id == NULL, "a notification with an id");
		/* FALLTHROUGH */
	case JSONRPC_REQUEST:
		FUZZ_CHECK(cJSON_IsString(method), "no method string");
		break;
	}
	if (r != NULL) {
		if (!refjson_string_is(rmethod, method->valuestring,
		    strlen(method->valuestring))) {
			fail_dump();
			if (rmethod != NULL && rmethod->type == REFJSON_STRING)
				fuzz_print_bytes("body method", rmethod->str,
				    rmethod->len);
		}
		FUZZ_CHECK(refjson_string_is(rmethod, method->valuestring,
		    strlen(method->valuestring)),
		    "method \"%s\" is not the method the body names",
		    method->valuestring);
	}
	if (kind != JSONRPC_REQUEST)
		return;
	FUZZ_CHECK(cJSON_IsString(id) || cJSON_IsNumber(id),
	    "a request whose id is neither string nor number");
	copy = jsonrpc_id_dup(id);
	FUZZ_CHECK(jsonrpc_id_equal(id, copy), "an id unequal to its copy");
	cJSON_Delete(copy);
	if (r == NULL)
		return;
	FUZZ_CHECK(rid != NULL, "the body has no id");
	check_id_printed(jsonrpc_result(id, NULL), rid, "result");
	check_id_printed(jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "x", NULL),
	    rid, "error");
}

/*
 * Equal in order, member for member: cJSON_Compare looks members up by
 * name, and so pairs the wrong ones when a name is repeated. Numbers as
 * cJSON prints them: 15 significant digits when they read back within an
 * epsilon (ids are integers, printed exactly, and checked exactly).
 */
static int
same_tree(const cJSON *a, const cJSON *b)
{
	if ((a->type & 0xff) != (b->type & 0xff))
		return (0);
	if ((a->string == NULL) != (b->string == NULL) ||
	    (a->string != NULL && strcmp(a->string, b->string) != 0))
		return (0);
	if (cJSON_IsNumber(a))
		return (a->valuedouble == b->valuedouble ||
		    fabs(a->valuedouble - b->valuedouble) <=
		    fmax(fabs(a->valuedouble), fabs(b->valuedouble)) *
		    DBL_EPSILON);
	if (cJSON_IsString(a))
		return (strcmp(a->valuestring, b->valuestring) == 0);
	if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
		for (a = a->child, b = b->child; a != NULL && b != NULL;
		    a = a->next, b = b->next) {
			if (!same_tree(a, b))
				return (0);
		}
		return (a == NULL && b == NULL);
	}
	return (1);
}

/* Printing gives strict JSON that parses back to the same message. */
static void
check_round_trip(const cJSON *msg)
{
	struct refjson	*strict;
	cJSON		*copy, *again;
	char		*text;
	const char	*cause = NULL;
	int		 code;

	copy = cJSON_Duplicate(msg, 1);
	text = jsonrpc_print(copy);
	FUZZ_CHECK(text != NULL, "jsonrpc_print failed");
	strict = refjson_parse(text, strlen(text), JSONRPC_MAX_DEPTH + 1);
	if (strict == NULL) {
		fail_dump();
		fuzz_print_bytes("printed", text, strlen(text));
	}
	FUZZ_CHECK(strict != NULL, "the printed message is not strict JSON");
	again = jsonrpc_parse(text, strlen(text), &code, &cause);
	if (again == NULL || !same_tree(again, msg)) {
		fail_dump();
		fuzz_print_bytes("printed", text, strlen(text));
	}
	FUZZ_CHECK(again != NULL, "the printed message does not parse: %s",
	    cause);
	FUZZ_CHECK(same_tree(again, msg),
	    "the printed message parses to a different one");
	refjson_free(strict);
	cJSON_Delete(again);
	cJSON_Delete(copy);
	free(text);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	xmalloc_init_cjson();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct refjson		*ref, *ri;
	const cJSON		*m;
	cJSON			*msg;
	const char		*cause = NULL;
	int			 code = 0;

	body_text = (const char *)data;
	body_len = size;
	msg = jsonrpc_parse((const char *)data, size, &code, &cause);
	if (msg == NULL) {
		FUZZ_CHECK(code == JSONRPC_PARSE_ERROR ||
		    code == JSONRPC_INVALID_REQUEST,
		    "refused with code %d", code);
		FUZZ_CHECK(cause != NULL && *cause != '\0',
		    "refused without a reason");
		return (0);
	}
	/* Deeper than the reader's limit means jsonrpc_parse let it by. */
	ref = refjson_parse((const char *)data, size, JSONRPC_MAX_DEPTH + 1);
	if (ref != NULL)
		check_same(msg, ref, "body");
	/* A string with a NUL is refused before mcpd prints anything of it. */
	if (memmem(data, size, "\\u0000", 6) == NULL)
		check_round_trip(msg);
	if (cJSON_IsArray(msg)) {
		ri = ref != NULL ? ref->child : NULL;
		cJSON_ArrayForEach(m, msg) {
			check_message(m, ri);
			if (ri != NULL)
				ri = ri->next;
		}
	} else
		check_message(msg, ref);
	refjson_free(ref);
	cJSON_Delete(msg);
	return (0);
}
