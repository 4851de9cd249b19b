/*
 * Pagination of the list methods (tools/list, resources/list,
 * resources/templates/list, prompts/list) through dispatch_quick, with any
 * cursor value: the input is the cursor as JSON if it parses, else as a
 * string. The cursor is opaque to clients, so the oracles do not read it:
 * - a cursor is refused with -32602 or answered with a page;
 * - a page is a run of the full list in order; an empty page has no
 *   nextCursor, and a page without one reaches the end of the list;
 * - a nextCursor the server gave is accepted, and following the chain
 *   continues the run exactly and ends, every item seen once;
 * - from no cursor, the chain walks the whole list (checked at start-up,
 *   with more tools than fit on a page).
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "conf.h"
#include "dispatch.h"
#include "eventlog.h"
#include "fuzz.h"
#include "jsonrpc.h"
#include "log.h"
#include "provider.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

/* More exec tools than one page holds. */
#define EXTRA_TOOLS	250

struct list {
	const char	*method;
	const char	*key;
	cJSON		*(*all)(struct session *);
	char		**items;	/* printed, in order */
	int		 n;
};

static struct list lists[] = {
	{ "tools/list", "tools", provider_list_tools, NULL, 0 },
	{ "resources/list", "resources", provider_list_resources, NULL, 0 },
	{ "resources/templates/list", "resourceTemplates",
	    provider_list_resource_templates, NULL, 0 },
	{ "prompts/list", "prompts", provider_list_prompts, NULL, 0 },
};
#define NLISTS	(sizeof lists / sizeof lists[0])

static const char	*input_text;
static size_t		 input_len;

static void
fail_dump(void)
{
	fuzz_print_bytes("cursor", input_text, input_len);
}

/* Asks for one page; returns the response. */
static cJSON *
ask(const struct list *l, const cJSON *cursor)
{
	cJSON	*req, *params, *resp;

	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(req, "id", 7);
	cJSON_AddStringToObject(req, "method", l->method);
	params = cJSON_AddObjectToObject(req, "params");
	if (cursor != NULL)
		cJSON_AddItemToObject(params, "cursor",
		    cJSON_Duplicate(cursor, 1));
	resp = dispatch_quick(NULL, req);
	cJSON_Delete(req);
	FUZZ_CHECK(resp != NULL, "%s: no response", l->method);
	FUZZ_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(resp, "id")) == 7,
	    "%s: the response lost its id", l->method);
	return (resp);
}

static int
find(const struct list *l, const cJSON *item)
{
	char	*text = cJSON_PrintUnformatted(item);
	int	 i;

	for (i = 0; i < l->n; i++) {
		if (strcmp(l->items[i], text) == 0)
			break;
	}
	free(text);
	return (i < l->n ? i : -1);
}

/*
 * Checks one page: a run of the list from its first item. Returns where
 * the run starts (or -1 for an empty page), *next the page's nextCursor
 * (a copy, or NULL), *count its length.
 */
static int
check_page(const struct list *l, const cJSON *result, cJSON **next,
    int *count)
{
	const cJSON	*page, *item, *nc;
	int		 start = -1, i = 0;

	page = cJSON_GetObjectItemCaseSensitive(result, l->key);
	FUZZ_CHECK(cJSON_IsArray(page), "%s: no %s array", l->method, l->key);
	cJSON_ArrayForEach(item, page) {
		if (i == 0) {
			start = find(l, item);
			FUZZ_CHECK(start >= 0, "%s: an item not in the list",
			    l->method);
		} else
			FUZZ_CHECK(start + i < l->n && find(l, item) ==
			    start + i, "%s: item %d of the page is not item "
			    "%d of the list", l->method, i, start + i);
		i++;
	}
	nc = cJSON_GetObjectItemCaseSensitive(result, "nextCursor");
	FUZZ_CHECK(nc == NULL || cJSON_IsString(nc),
	    "%s: nextCursor is not a string", l->method);
	FUZZ_CHECK(i > 0 || nc == NULL, "%s: an empty page with nextCursor "
	    "\"%s\"", l->method, nc->valuestring);
	FUZZ_CHECK(i == 0 || nc != NULL || start + i == l->n,
	    "%s: the page ends at item %d of %d without a nextCursor",
	    l->method, start + i, l->n);
	FUZZ_CHECK(nc == NULL || start + i < l->n,
	    "%s: a nextCursor after the last item", l->method);
	*next = nc != NULL ? cJSON_Duplicate(nc, 1) : NULL;
	*count = i;
	return (start);
}

/* Follows nextCursor from a page to the end of the list. */
static void
follow(const struct list *l, cJSON *next, int pos)
{
	const cJSON	*result;
	cJSON		*resp, *cursor;
	int		 pages = 0, start, count;

	while ((cursor = next) != NULL) {
		FUZZ_CHECK(++pages <= l->n, "%s: the chain does not end",
		    l->method);
		resp = ask(l, cursor);
		result = cJSON_GetObjectItemCaseSensitive(resp, "result");
		if (result == NULL)
			fail_dump();
		FUZZ_CHECK(result != NULL, "%s: nextCursor \"%s\" is refused",
		    l->method, cursor->valuestring);
		start = check_page(l, result, &next, &count);
		FUZZ_CHECK(count > 0 && start == pos,
		    "%s: after nextCursor \"%s\" the page starts at %d, not "
		    "%d", l->method, cursor->valuestring, start, pos);
		pos += count;
		cJSON_Delete(cursor);
		cJSON_Delete(resp);
	}
	FUZZ_CHECK(pos == l->n, "%s: the chain stops at item %d of %d",
	    l->method, pos, l->n);
}

static void
check_cursor(const struct list *l, const cJSON *cursor)
{
	const cJSON	*result, *error;
	cJSON		*resp, *next;
	int		 start, count;

	resp = ask(l, cursor);
	result = cJSON_GetObjectItemCaseSensitive(resp, "result");
	error = cJSON_GetObjectItemCaseSensitive(resp, "error");
	FUZZ_CHECK((result == NULL) != (error == NULL),
	    "%s: not exactly one of result and error", l->method);
	if (error != NULL) {
		FUZZ_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(error,
		    "code")) == JSONRPC_INVALID_PARAMS,
		    "%s: a cursor refused with code %g", l->method,
		    cJSON_GetNumberValue(cJSON_GetObjectItem(error, "code")));
		cJSON_Delete(resp);
		return;
	}
	start = check_page(l, result, &next, &count);
	if (next != NULL)
		follow(l, next, start + count);
	cJSON_Delete(resp);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct event_base	*base;
	struct eventlog		*el;
	struct conf		*conf;
	struct list		*l;
	cJSON			*all, *item;
	char			*text, *cause = NULL;
	size_t			 i;

	event_set_mem_functions(xmalloc, xrealloc, free);	/* as main() */
	xmalloc_init_cjson();
	log_init(LOG_LEVEL_ERROR);
	text = xstrdup("builtin_tools on\nfixtures conformance\n");
	for (i = 0; i < EXTRA_TOOLS; i++) {
		char	*more;

		xasprintf(&more, "%stool t%zu {\n exec /bin/true\n}\n", text,
		    i);
		free(text);
		text = more;
	}
	if ((conf = conf_parse_string(text, "fuzz", &cause)) == NULL)
		fatalx("%s", cause);
	free(text);
	if ((base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if ((el = eventlog_create(base, conf, &cause)) == NULL)
		fatalx("%s", cause);
	server_init(base, conf, el);
	session_init();
	provider_init(conf);

	for (i = 0; i < NLISTS; i++) {
		l = &lists[i];
		all = l->all(NULL);
		l->items = xcalloc((size_t)cJSON_GetArraySize(all) + 1,
		    sizeof *l->items);
		cJSON_ArrayForEach(item, all)
			l->items[l->n++] = cJSON_PrintUnformatted(item);
		cJSON_Delete(all);
		FUZZ_CHECK(l->n > 0, "%s is empty", l->method);
		/* From the start, the chain walks the whole list. */
		check_cursor(l, NULL);
	}
	FUZZ_CHECK(lists[0].n > EXTRA_TOOLS, "the tools are missing");
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON	*cursor;
	char	*text;
	size_t	 i;

	input_text = (const char *)data;
	input_len = size;
	text = fuzz_strndup(data, size);
	if ((cursor = cJSON_ParseWithLength(text, size)) == NULL)
		cursor = cJSON_CreateString(text);
	for (i = 0; i < NLISTS; i++)
		check_cursor(&lists[i], cursor);
	cJSON_Delete(cursor);
	free(text);
	return (0);
}
