/*
 * The conformance fixtures (conf: `fixtures conformance`): the tools,
 * resources, prompts and completions that the official MCP conformance
 * suite (@modelcontextprotocol/conformance, server scenarios) calls by
 * name, answering with the exact contents its scenarios describe.
 *
 * Most answer at once. The paced tools (logging, progress) send their next
 * message only when the previous one is committed and a short pause has
 * passed; the asking tools (sampling, elicitation) send one request to the
 * client and answer from its reply; test_reconnection ends the client's
 * connection for the request (SEP-1699 polling) and answers afterwards, on
 * the stream the client resumes with GET and Last-Event-ID.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "announce.h"
#include "call.h"
#include "conf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mcp.h"
#include "provider.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

/* Pause between the messages of the paced tools. */
#define FIXTURES_PACE_MS	50
/* Messages each paced tool sends. */
#define FIXTURES_PACE_STEPS	3
/* test_reconnection answers this long after it closed the connection. */
#define FIXTURES_RECONNECT_MS	100
/* The MCP log level (RFC 5424 order) of test_tool_with_logging. */
#define FIXTURES_LEVEL_INFO	1
/* Longest {id} of test://template/{id}/data. */
#define FIXTURES_MAX_ID		64

/* A 1x1 red RGB PNG. */
static const char fixtures_png[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3"
    "A0FDAAAAAElFTkSuQmCC";
/* 16 samples of a 440 Hz tone: 8 kHz, 8-bit mono PCM WAV. */
static const char fixtures_wav[] =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YRAAAACAob/W4uLXwqSD"
    "YUIrHhwm";

#define FIXTURES_NO_ARGS	"{\"type\":\"object\",\"properties\":{}}"
#define FIXTURES_TEMPLATE	"test://template/{id}/data"
#define FIXTURES_WATCHED	"test://watched-resource"

enum fixtures_kind {
	FIXTURES_LOGGING,
	FIXTURES_PROGRESS,
	FIXTURES_SAMPLING,
	FIXTURES_ELICITATION,
	FIXTURES_ELICITATION_DEFAULTS,
	FIXTURES_ELICITATION_ENUMS,
	FIXTURES_RECONNECTION
};

/* A call that outlives its hook: paced, asking, or reconnecting. */
struct fixtures_job {
	enum fixtures_kind	 kind;
	struct call		*call;
	int			 step;
	int			 busy;		/* a commit or answer owed */
	int			 cancelled;
	struct event		*timer;
};

struct fixtures_tool {
	const char	*name;
	const char	*description;
	const char	*schema;
	void		 (*run)(struct call *, const struct fixtures_tool *,
			    const cJSON *);
	enum fixtures_kind kind;	/* for run == fixtures_start */
};

/* test://watched-resource's revision: test_update_watched_resource bumps it. */
static long	fixtures_watched_revision = 1;

static int
fixtures_enabled(const struct conf *conf)
{
	return (conf->fixtures_conformance);
}

/*
 * The triggers change the tools and prompts, for the 2026-07-28 suite's
 * listen scenarios, which look for listChanged in server/discover first.
 * Sessions hear the triggers too (announce.h), but no 2025 scenario
 * calls one: to 2025 clients the fixtures' lists stay declared fixed.
 */
static int
fixtures_lists_change(int rev, int list)
{
	return (rev == MCP_REV_2026 && (list == PROVIDER_TOOLS ||
	    list == PROVIDER_PROMPTS));
}

/* Parses JSON written in this file; NULL would be a bug here. */
static cJSON *
fixtures_json(const char *text)
{
	cJSON	*json;

	if ((json = cJSON_Parse(text)) == NULL)
		fatalx("fixtures: bad built-in JSON: %.40s", text);
	return (json);
}

/* --- content items ------------------------------------------------------ */

static cJSON *
fixtures_text(const char *text)
{
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", "text");
	cJSON_AddStringToObject(item, "text", text);
	return (item);
}

/* An image or audio item. */
static cJSON *
fixtures_media(const char *type, const char *data, const char *mime_type)
{
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", type);
	cJSON_AddStringToObject(item, "data", data);
	cJSON_AddStringToObject(item, "mimeType", mime_type);
	return (item);
}

/* A text resource: a resources/read entry, or embedded as content. */
static cJSON *
fixtures_text_resource(const char *uri, const char *mime_type,
    const char *text)
{
	cJSON	*resource = cJSON_CreateObject();

	cJSON_AddStringToObject(resource, "uri", uri);
	cJSON_AddStringToObject(resource, "mimeType", mime_type);
	cJSON_AddStringToObject(resource, "text", text);
	return (resource);
}

static cJSON *
fixtures_embedded(cJSON *resource)
{
	cJSON	*item = cJSON_CreateObject();

	cJSON_AddStringToObject(item, "type", "resource");
	cJSON_AddItemToObject(item, "resource", resource);
	return (item);
}

/* A tool result holding `item` (and more, added by the caller). */
static cJSON *
fixtures_result(cJSON *item)
{
	cJSON	*result = cJSON_CreateObject();

	cJSON_AddItemToArray(cJSON_AddArrayToObject(result, "content"), item);
	return (result);
}

static void
fixtures_answer(struct call *c, cJSON *result)
{
	call_respond(c, result);
	call_release(c);
}

static void
fixtures_answer_text(struct call *c, const char *text, int is_error)
{
	call_respond_text(c, text, is_error);
	call_release(c);
}

/* --- tools answered at once ---------------------------------------------- */

static void
fixtures_simple_text(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	fixtures_answer(c, fixtures_result(fixtures_text(
	    "This is a simple text response for testing.")));
}

static void
fixtures_image(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	fixtures_answer(c, fixtures_result(fixtures_media("image", fixtures_png,
	    "image/png")));
}

static void
fixtures_audio(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	fixtures_answer(c, fixtures_result(fixtures_media("audio", fixtures_wav,
	    "audio/wav")));
}

static void
fixtures_embedded_resource(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	fixtures_answer(c, fixtures_result(fixtures_embedded(
	    fixtures_text_resource("test://embedded-resource", "text/plain",
	    "This is an embedded resource content."))));
}

static void
fixtures_multiple(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	cJSON	*result, *content;

	result = fixtures_result(fixtures_text("Multiple content types test:"));
	content = cJSON_GetObjectItemCaseSensitive(result, "content");
	cJSON_AddItemToArray(content, fixtures_media("image", fixtures_png,
	    "image/png"));
	cJSON_AddItemToArray(content, fixtures_embedded(fixtures_text_resource(
	    "test://mixed-content-resource", "application/json",
	    "{\"test\":\"data\",\"value\":123}")));
	fixtures_answer(c, result);
}

static void
fixtures_error(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	fixtures_answer_text(c,
	    "This tool intentionally returns an error for testing", 1);
}

/* json_schema_2020_12_tool: the point is its listing; a call echoes. */
static void
fixtures_schema_tool(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	char	*json, *text;

	json = args != NULL ? cJSON_PrintUnformatted(args) : xstrdup("{}");
	xasprintf(&text, "%s received: %s", t->name, json);
	fixtures_answer_text(c, text, 0);
	free(text);
	free(json);
}

static char *
fixtures_watched_text(void)
{
	char	*text;

	xasprintf(&text, "This is a watched resource, revision %ld.",
	    fixtures_watched_revision);
	return (text);
}

/* Changes test://watched-resource; subscribed sessions hear of it. */
static void
fixtures_update_watched(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	char	*text;

	fixtures_watched_revision++;
	announce_change(ANNOUNCE_RESOURCE_UPDATED, FIXTURES_WATCHED);
	xasprintf(&text, "Updated %s to revision %ld", FIXTURES_WATCHED,
	    fixtures_watched_revision);
	fixtures_answer_text(c, text, 0);
	free(text);
}

/* --- jobs: paced, asking, reconnecting ------------------------------------ */

static void
fixtures_job_free(struct fixtures_job *job)
{
	event_free(job->timer);
	call_release(job->call);
	free(job);
}

static void
fixtures_job_answer(struct fixtures_job *job, const char *text, int is_error)
{
	call_respond_text(job->call, text, is_error);
	fixtures_job_free(job);
}

static void
fixtures_wait(struct fixtures_job *job, long ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(job->timer, &tv);
}

static void
fixtures_cancel_cb(void *arg)
{
	struct fixtures_job	*job = arg;

	job->cancelled = 1;
	evtimer_del(job->timer);
	if (!job->busy)
		fixtures_job_free(job);
}

/* Paced tools: "started", "processing", "completed", FIXTURES_PACE_MS apart. */
static cJSON *
fixtures_pace_message(struct fixtures_job *job)
{
	static const char	*texts[FIXTURES_PACE_STEPS] = {
		"Tool execution started",
		"Tool processing data",
		"Tool execution completed"
	};
	const cJSON		*token = call_progress_token(job->call);
	cJSON			*params;

	params = cJSON_CreateObject();
	if (job->kind == FIXTURES_LOGGING) {
		if (!call_log_enabled(job->call, FIXTURES_LEVEL_INFO)) {
			cJSON_Delete(params);
			return (NULL);
		}
		cJSON_AddStringToObject(params, "level", "info");
		cJSON_AddStringToObject(params, "logger",
		    "test_tool_with_logging");
		cJSON_AddStringToObject(params, "data", texts[job->step]);
		return (jsonrpc_notification("notifications/message", params));
	}
	if (token == NULL) {
		cJSON_Delete(params);
		return (NULL);
	}
	cJSON_AddItemToObject(params, "progressToken",
	    cJSON_Duplicate(token, 1));
	cJSON_AddNumberToObject(params, "progress",
	    100.0 * job->step / (FIXTURES_PACE_STEPS - 1));
	cJSON_AddNumberToObject(params, "total", 100);
	cJSON_AddStringToObject(params, "message", texts[job->step]);
	return (jsonrpc_notification("notifications/progress", params));
}

/* One step is committed (or had nothing to send): pause, or answer. */
static void
fixtures_paced(struct fixtures_job *job)
{
	if (job->step < FIXTURES_PACE_STEPS) {
		fixtures_wait(job, FIXTURES_PACE_MS);
		return;
	}
	fixtures_job_answer(job, job->kind == FIXTURES_LOGGING ?
	    "Tool with logging executed successfully" :
	    "Tool with progress executed successfully", 0);
}

static void
fixtures_sent_cb(int ok, void *arg)
{
	struct fixtures_job	*job = arg;

	job->busy = 0;
	if (job->cancelled) {
		fixtures_job_free(job);
		return;
	}
	if (!ok) {
		call_respond_error(job->call, JSONRPC_INTERNAL_ERROR,
		    "The event log refused a message of this call");
		fixtures_job_free(job);
		return;
	}
	fixtures_paced(job);
}

static void
fixtures_pace(struct fixtures_job *job)
{
	cJSON	*msg = fixtures_pace_message(job);

	job->step++;
	if (msg == NULL) {
		/* Below the client's level, or no token: only the pauses. */
		fixtures_paced(job);
		return;
	}
	job->busy = 1;
	call_send(job->call, msg, fixtures_sent_cb, job);
}

/* The elicitation forms: message and requestedSchema. */
static const struct {
	enum fixtures_kind	 kind;
	const char		*message;
	const char		*schema;
	const char		*answer;	/* prefix of the tool's text */
} fixtures_forms[] = {
	{ FIXTURES_ELICITATION, NULL,
	  "{\"type\":\"object\",\"properties\":{"
	  "\"username\":{\"type\":\"string\","
	  "\"description\":\"User's response\"},"
	  "\"email\":{\"type\":\"string\","
	  "\"description\":\"User's email address\"}},"
	  "\"required\":[\"username\",\"email\"]}",
	  "User response" },
	{ FIXTURES_ELICITATION_DEFAULTS,
	  "Please review and update the form fields with defaults",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"User name\","
	  "\"default\":\"John Doe\"},"
	  "\"age\":{\"type\":\"integer\",\"description\":\"User age\","
	  "\"default\":30},"
	  "\"score\":{\"type\":\"number\",\"description\":\"User score\","
	  "\"default\":95.5},"
	  "\"status\":{\"type\":\"string\",\"description\":\"User status\","
	  "\"enum\":[\"active\",\"inactive\",\"pending\"],"
	  "\"default\":\"active\"},"
	  "\"verified\":{\"type\":\"boolean\","
	  "\"description\":\"Verification status\",\"default\":true}}}",
	  "Elicitation completed" },
	{ FIXTURES_ELICITATION_ENUMS,
	  "Please select options from the enum fields",
	  "{\"type\":\"object\",\"properties\":{"
	  "\"untitledSingle\":{\"type\":\"string\","
	  "\"description\":\"Select one option\","
	  "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
	  "\"titledSingle\":{\"type\":\"string\","
	  "\"description\":\"Select one option with titles\",\"oneOf\":["
	  "{\"const\":\"value1\",\"title\":\"First Option\"},"
	  "{\"const\":\"value2\",\"title\":\"Second Option\"},"
	  "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
	  "\"legacyEnum\":{\"type\":\"string\","
	  "\"description\":\"Select one option (legacy)\","
	  "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
	  "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
	  "\"untitledMulti\":{\"type\":\"array\","
	  "\"description\":\"Select multiple options\","
	  "\"items\":{\"type\":\"string\","
	  "\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
	  "\"titledMulti\":{\"type\":\"array\","
	  "\"description\":\"Select multiple options with titles\","
	  "\"items\":{\"anyOf\":["
	  "{\"const\":\"value1\",\"title\":\"First Choice\"},"
	  "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
	  "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}}}",
	  "Elicitation completed" },
};
#define FIXTURES_NFORMS	(sizeof fixtures_forms / sizeof fixtures_forms[0])

static size_t
fixtures_form(enum fixtures_kind kind)
{
	size_t	i;

	for (i = 0; i < FIXTURES_NFORMS; i++) {
		if (fixtures_forms[i].kind == kind)
			return (i);
	}
	fatalx("fixtures: no form for kind %d", (int)kind);
}

/* Answers "LLM response: <the client's text>", or why there is none. */
static void
fixtures_sampled(struct fixtures_job *job, const cJSON *result)
{
	const cJSON	*content, *item, *text;
	char		*s, *json;

	content = cJSON_GetObjectItemCaseSensitive(result, "content");
	item = cJSON_IsArray(content) ? cJSON_GetArrayItem(content, 0) :
	    content;
	if (!cJSON_IsObject(item)) {
		fixtures_job_answer(job, "Sampling failed: the client's "
		    "result has no content", 1);
		return;
	}
	text = cJSON_GetObjectItemCaseSensitive(item, "text");
	if (cJSON_IsString(text))
		xasprintf(&s, "LLM response: %s", text->valuestring);
	else {
		json = cJSON_PrintUnformatted(content);
		xasprintf(&s, "LLM response: %s", json);
		free(json);
	}
	fixtures_job_answer(job, s, 0);
	free(s);
}

/* Answers "<prefix>: action=accept, content={...}", or why there is none. */
static void
fixtures_elicited(struct fixtures_job *job, const cJSON *result)
{
	const cJSON	*action, *content;
	const char	*prefix;
	char		*s, *json;

	prefix = fixtures_forms[fixtures_form(job->kind)].answer;
	action = cJSON_GetObjectItemCaseSensitive(result, "action");
	content = cJSON_GetObjectItemCaseSensitive(result, "content");
	if (!cJSON_IsString(action)) {
		fixtures_job_answer(job, "Elicitation failed: the client's "
		    "result has no action", 1);
		return;
	}
	if (content != NULL) {
		json = cJSON_PrintUnformatted(content);
		xasprintf(&s, "%s: action=%s, content=%s", prefix,
		    action->valuestring, json);
		free(json);
	} else
		xasprintf(&s, "%s: action=%s", prefix, action->valuestring);
	fixtures_job_answer(job, s, 0);
	free(s);
}

/*
 * The client's answer, its error, or a local one (timeout; the call ended,
 * in which case the cancel hook has run before).
 */
static void
fixtures_answered_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct fixtures_job	*job = arg;
	const cJSON		*message;
	char			*text;

	job->busy = 0;
	if (job->cancelled) {
		fixtures_job_free(job);
		return;
	}
	if (error != NULL || !cJSON_IsObject(result)) {
		message = cJSON_GetObjectItemCaseSensitive(error, "message");
		xasprintf(&text, "%s failed: %s", job->kind ==
		    FIXTURES_SAMPLING ? "Sampling" : "Elicitation",
		    cJSON_IsString(message) ? message->valuestring :
		    "the client answered without a result");
		fixtures_job_answer(job, text, 1);
		free(text);
		return;
	}
	if (job->kind == FIXTURES_SAMPLING)
		fixtures_sampled(job, result);
	else
		fixtures_elicited(job, result);
}

static void
fixtures_ask(struct fixtures_job *job, const cJSON *args)
{
	const cJSON	*arg;
	const char	*version;
	cJSON		*params, *msg, *content;
	size_t		 form;

	params = cJSON_CreateObject();
	if (job->kind == FIXTURES_SAMPLING) {
		arg = cJSON_GetObjectItemCaseSensitive(args, "prompt");
		msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "role", "user");
		content = cJSON_AddObjectToObject(msg, "content");
		cJSON_AddStringToObject(content, "type", "text");
		cJSON_AddStringToObject(content, "text", arg->valuestring);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(params, "messages"),
		    msg);
		cJSON_AddNumberToObject(params, "maxTokens", 100);
		job->busy = 1;
		call_request(job->call, "sampling/createMessage", params,
		    fixtures_answered_cb, job);
		return;
	}
	form = fixtures_form(job->kind);
	version = call_version(job->call);
	if (mcp_version_at_least(version, "2025-11-25"))
		cJSON_AddStringToObject(params, "mode", "form");
	if (fixtures_forms[form].message != NULL)
		cJSON_AddStringToObject(params, "message",
		    fixtures_forms[form].message);
	else {
		arg = cJSON_GetObjectItemCaseSensitive(args, "message");
		cJSON_AddStringToObject(params, "message", arg->valuestring);
	}
	cJSON_AddItemToObject(params, "requestedSchema",
	    fixtures_json(fixtures_forms[form].schema));
	job->busy = 1;
	call_request(job->call, "elicitation/create", params,
	    fixtures_answered_cb, job);
}

static void
fixtures_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct fixtures_job	*job = arg;

	if (job->kind == FIXTURES_RECONNECTION)
		fixtures_job_answer(job, "Reconnection test completed", 0);
	else
		fixtures_pace(job);
}

/*
 * test_reconnection: the client's connection ends after the priming event
 * (see call_close_view); the answer follows on the stream a little later.
 * A client that cannot resume gets it on the same connection.
 */
static void
fixtures_reconnect(struct fixtures_job *job)
{
	if (call_close_view(job->call) != 0)
		log_debug("session=%s test_reconnection: connection kept "
		    "(the client cannot resume)",
		    call_owner(job->call));
	fixtures_wait(job, FIXTURES_RECONNECT_MS);
}

static void
fixtures_start(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	struct fixtures_job	*job;
	const char		*need = NULL;
	char			*text;

	if (t->kind == FIXTURES_SAMPLING)
		need = "prompt";
	else if (t->kind == FIXTURES_ELICITATION)
		need = "message";
	if (need != NULL &&
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(args, need))) {
		/* A tool execution error: an isError result. */
		xasprintf(&text, "invalid arguments: argument '%s' must be a "
		    "string", need);
		fixtures_answer_text(c, text, 1);
		free(text);
		return;
	}
	job = xcalloc(1, sizeof *job);
	job->kind = t->kind;
	job->call = c;
	job->timer = evtimer_new(server.base, fixtures_timer_cb, job);
	call_set_cancel(c, fixtures_cancel_cb, job);
	switch (t->kind) {
	case FIXTURES_LOGGING:
	case FIXTURES_PROGRESS:
		fixtures_pace(job);
		break;
	case FIXTURES_RECONNECTION:
		fixtures_reconnect(job);
		break;
	default:
		fixtures_ask(job, args);
		break;
	}
}

/* --- MRTR (2026-07-28 input_required) ------------------------------------ */

/* One question: its key in inputRequests, method and params. */
struct fixtures_question {
	const char	*key;
	const char	*method;
	const char	*params;
};

#define FIXTURES_NAME_FORM(message, field)				\
	"{\"message\":\"" message "\",\"requestedSchema\":{\"type\":"	\
	"\"object\",\"properties\":{\"" field "\":{\"type\":\"string\"}},"	\
	"\"required\":[\"" field "\"]}}"
#define FIXTURES_SAMPLE(text, n)					\
	"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":"	\
	"\"text\",\"text\":\"" text "\"}}],\"maxTokens\":" #n "}"

static const struct fixtures_question fixtures_q_name[] = {
	{ "user_name", "elicitation/create",
	  FIXTURES_NAME_FORM("What is your name?", "name") }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_capital[] = {
	{ "capital_question", "sampling/createMessage",
	  FIXTURES_SAMPLE("What is the capital of France?", 100) }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_roots[] = {
	{ "client_roots", "roots/list", "{}" }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_confirm[] = {
	{ "confirm", "elicitation/create",
	  "{\"message\":\"Please confirm\",\"requestedSchema\":{\"type\":"
	  "\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},"
	  "\"required\":[\"ok\"]}}" }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_multiple[] = {
	{ "user_name", "elicitation/create",
	  FIXTURES_NAME_FORM("What is your name?", "name") },
	{ "greeting", "sampling/createMessage",
	  FIXTURES_SAMPLE("Generate a greeting", 50) },
	{ "client_roots", "roots/list", "{}" }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_step1[] = {
	{ "step1", "elicitation/create",
	  FIXTURES_NAME_FORM("Step 1: What is your name?", "name") },
	{ NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_step2[] = {
	{ "step2", "elicitation/create",
	  FIXTURES_NAME_FORM("Step 2: What is your favorite color?",
	  "color") }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_caps[] = {
	{ "sampling_input", "sampling/createMessage",
	  FIXTURES_SAMPLE("Say hello", 20) },
	{ "elicitation_input", "elicitation/create",
	  FIXTURES_NAME_FORM("What is your name?", "name") },
	{ "roots_input", "roots/list", "{}" }, { NULL, NULL, NULL } };
static const struct fixtures_question fixtures_q_context[] = {
	{ "user_context", "elicitation/create",
	  FIXTURES_NAME_FORM("What context should the prompt use?",
	  "context") }, { NULL, NULL, NULL } };

/*
 * A tool (or prompt) that asks its questions round by round (all of one
 * round at once) and answers from what the client said. On the stateless
 * path each question not yet answered becomes part of an input_required
 * result; on a session each is a real request to the client.
 */
struct fixtures_mrtr {
	const char			*name;
	const struct fixtures_question	*rounds[2];
	int				 only_declared;	/* skip undeclared */
	int				 prompt;
};

static const struct fixtures_mrtr fixtures_mrtrs[] = {
	{ "test_input_required_result_elicitation", { fixtures_q_name }, 0, 0 },
	{ "test_input_required_result_sampling", { fixtures_q_capital }, 0, 0 },
	{ "test_input_required_result_list_roots", { fixtures_q_roots }, 0, 0 },
	{ "test_input_required_result_request_state", { fixtures_q_confirm },
	  0, 0 },
	{ "test_input_required_result_multiple_inputs",
	  { fixtures_q_multiple }, 0, 0 },
	{ "test_input_required_result_multi_round",
	  { fixtures_q_step1, fixtures_q_step2 }, 0, 0 },
	{ "test_input_required_result_tampered_state", { fixtures_q_confirm },
	  0, 0 },
	{ "test_input_required_result_capabilities", { fixtures_q_caps }, 1,
	  0 },
	{ "test_input_required_result_prompt", { fixtures_q_context }, 0, 1 },
};
#define FIXTURES_NMRTRS	(sizeof fixtures_mrtrs / sizeof fixtures_mrtrs[0])

struct fixtures_asking {
	const struct fixtures_mrtr	*t;
	struct call			*call;
	int				 round;
	int				 outstanding;
	int				 failed;
	cJSON				*answers;
};

static void	fixtures_mrtr_round(struct fixtures_asking *);
static void	fixtures_add_message(cJSON *, cJSON *);

/* The client capability a question's method needs. */
static const char *
fixtures_mrtr_capability(const char *method)
{
	if (method[0] == 's')
		return ("sampling");
	if (method[0] == 'e')
		return ("elicitation");
	return ("roots");
}


/* A short text of what the answers say. */
static char *
fixtures_mrtr_text(struct fixtures_asking *a)
{
	const cJSON	*content, *v, *r;
	char		*s, *json;

	if (strcmp(a->t->name, "test_input_required_result_elicitation") ==
	    0) {
		content = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(a->answers, "user_name"),
		    "content");
		v = cJSON_GetObjectItemCaseSensitive(content, "name");
		xasprintf(&s, "Hello, %s!", cJSON_IsString(v) ?
		    v->valuestring : "stranger");
		return (s);
	}
	r = cJSON_GetObjectItemCaseSensitive(a->answers, "capital_question");
	if (r != NULL) {
		content = cJSON_GetObjectItemCaseSensitive(r, "content");
		v = cJSON_GetObjectItemCaseSensitive(content, "text");
		xasprintf(&s, "LLM response: %s", cJSON_IsString(v) ?
		    v->valuestring : "(no text)");
		return (s);
	}
	json = cJSON_PrintUnformatted(a->answers);
	if (strcmp(a->t->name, "test_input_required_result_request_state") ==
	    0 || strcmp(a->t->name,
	    "test_input_required_result_tampered_state") == 0)
		xasprintf(&s, "%s: %s", call_resumed(a->call) ||
		    !call_stateless(a->call) ? "state-ok" : "state-missing",
		    json);
	else
		xasprintf(&s, "Input received: %s", json);
	free(json);
	return (s);
}

static void
fixtures_mrtr_done(struct fixtures_asking *a)
{
	cJSON	*result, *messages;
	char	*text;

	if (a->failed || call_finished(a->call)) {
		/* An input_required result (or the call ended): next round. */
		if (!call_finished(a->call))
			call_respond_text(a->call, "The client did not answer",
			    1);
		call_release(a->call);
	} else if (a->t->prompt) {
		text = fixtures_mrtr_text(a);
		result = cJSON_CreateObject();
		cJSON_AddStringToObject(result, "description",
		    "A prompt built from the client's answer");
		messages = cJSON_AddArrayToObject(result, "messages");
		fixtures_add_message(messages, fixtures_text(text));
		free(text);
		fixtures_answer(a->call, result);
	} else {
		text = fixtures_mrtr_text(a);
		fixtures_answer_text(a->call, text, 0);
		free(text);
	}
	cJSON_Delete(a->answers);
	free(a);
}

static void
fixtures_mrtr_answered_cb(const cJSON *result, const cJSON *error, void *arg)
{
	struct fixtures_asking		*a = arg;
	const struct fixtures_question	*q;

	q = &a->t->rounds[a->round][0];
	if (error != NULL || !cJSON_IsObject(result))
		a->failed = 1;
	else {
		/* The key of the answer: the first question still unanswered. */
		for (; q->key != NULL; q++) {
			if (!cJSON_HasObjectItem(a->answers, q->key) &&
			    (!a->t->only_declared || call_client_capable(a->call,
			    fixtures_mrtr_capability(q->method))))
				break;
		}
		if (q->key != NULL)
			cJSON_AddItemToObject(a->answers, q->key,
			    cJSON_Duplicate(result, 1));
	}
	if (--a->outstanding > 0)
		return;
	if (!a->failed && a->round == 0 && a->t->rounds[1] != NULL) {
		a->round = 1;
		fixtures_mrtr_round(a);
		return;
	}
	fixtures_mrtr_done(a);
}

static void
fixtures_mrtr_round(struct fixtures_asking *a)
{
	const struct fixtures_question	*q;
	int				 asked = 0;

	for (q = a->t->rounds[a->round]; q->key != NULL; q++) {
		if (a->t->only_declared && !call_client_capable(a->call,
		    fixtures_mrtr_capability(q->method)))
			continue;
		asked++;
	}
	if (asked == 0) {
		fixtures_mrtr_done(a);
		return;
	}
	a->outstanding = asked;
	for (q = a->t->rounds[a->round]; q->key != NULL; q++) {
		if (a->t->only_declared && !call_client_capable(a->call,
		    fixtures_mrtr_capability(q->method)))
			continue;
		call_request_keyed(a->call, q->key, q->method,
		    fixtures_json(q->params), fixtures_mrtr_answered_cb, a);
	}
}

static const struct fixtures_mrtr *
fixtures_mrtr_find(const char *name, int prompt)
{
	size_t	i;

	for (i = 0; i < FIXTURES_NMRTRS; i++) {
		if (fixtures_mrtrs[i].prompt == prompt &&
		    strcmp(fixtures_mrtrs[i].name, name) == 0)
			return (&fixtures_mrtrs[i]);
	}
	return (NULL);
}

static void
fixtures_mrtr_start(struct call *c, const struct fixtures_mrtr *t)
{
	struct fixtures_asking	*a;

	a = xcalloc(1, sizeof *a);
	a->t = t;
	a->call = c;
	a->answers = cJSON_CreateObject();
	fixtures_mrtr_round(a);
}

static void
fixtures_mrtr_tool(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	const struct fixtures_mrtr	*m = fixtures_mrtr_find(t->name, 0);

	if (m == NULL)	/* test_streaming_elicitation */
		m = fixtures_mrtr_find(
		    "test_input_required_result_elicitation", 0);
	fixtures_mrtr_start(c, m);
}

/*
 * test_missing_capability needs sampling: a client that did not declare
 * it is refused with -32021 by the stateless path's MRTR.
 */
static void
fixtures_missing_capability(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	if (!call_client_capable(c, "sampling")) {
		fixtures_mrtr_start(c, fixtures_mrtr_find(
		    "test_input_required_result_sampling", 0));
		return;
	}
	fixtures_answer_text(c, "sampling declared", 0);
}

/* Lists change (as far as clients hear): the triggers. */
static void
fixtures_trigger(struct call *c, const struct fixtures_tool *t,
    const cJSON *args)
{
	announce_change(strstr(t->name, "prompt") != NULL ?
	    ANNOUNCE_PROMPTS : ANNOUNCE_TOOLS, NULL);
	fixtures_answer_text(c, "list change announced", 0);
}

static const struct fixtures_tool fixtures_tools[] = {
	{ "test_simple_text", "Returns a simple text response.",
	  FIXTURES_NO_ARGS, fixtures_simple_text, 0 },
	{ "test_image_content", "Returns a small PNG image.",
	  FIXTURES_NO_ARGS, fixtures_image, 0 },
	{ "test_audio_content", "Returns a short WAV sound.",
	  FIXTURES_NO_ARGS, fixtures_audio, 0 },
	{ "test_embedded_resource", "Returns an embedded text resource.",
	  FIXTURES_NO_ARGS, fixtures_embedded_resource, 0 },
	{ "test_multiple_content_types",
	  "Returns text, an image and an embedded resource.",
	  FIXTURES_NO_ARGS, fixtures_multiple, 0 },
	{ "test_tool_with_logging",
	  "Sends three info log messages 50 ms apart, then answers.",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_LOGGING },
	{ "test_tool_with_progress",
	  "Reports progress 0, 50 and 100 of 100, 50 ms apart, then answers.",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_PROGRESS },
	{ "test_error_handling", "Always fails with an isError result.",
	  FIXTURES_NO_ARGS, fixtures_error, 0 },
	{ "test_sampling",
	  "Asks the client's LLM (sampling/createMessage) and returns its "
	  "answer.",
	  "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":"
	  "\"string\",\"description\":\"The prompt to send to the LLM\"}},"
	  "\"required\":[\"prompt\"]}", fixtures_start, FIXTURES_SAMPLING },
	{ "test_elicitation",
	  "Asks the user for a username and an email (elicitation/create).",
	  "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":"
	  "\"string\",\"description\":\"The message to show the user\"}},"
	  "\"required\":[\"message\"]}", fixtures_start,
	  FIXTURES_ELICITATION },
	{ "test_elicitation_sep1034_defaults",
	  "Elicits a form whose fields have defaults (SEP-1034).",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_ELICITATION_DEFAULTS },
	{ "test_elicitation_sep1330_enums",
	  "Elicits a form with every kind of enum field (SEP-1330).",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_ELICITATION_ENUMS },
	{ "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
	  "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	  "\"type\":\"object\",\"$defs\":{\"address\":{"
	  "\"$anchor\":\"addressDef\",\"type\":\"object\","
	  "\"properties\":{\"street\":{\"type\":\"string\"},"
	  "\"city\":{\"type\":\"string\"}}}},"
	  "\"properties\":{\"name\":{\"type\":\"string\"},"
	  "\"address\":{\"$ref\":\"#/$defs/address\"},"
	  "\"contactMethod\":{\"type\":\"string\","
	  "\"enum\":[\"phone\",\"email\"]},"
	  "\"phone\":{\"type\":\"string\"},"
	  "\"email\":{\"type\":\"string\"}},"
	  "\"allOf\":[{\"anyOf\":[{\"required\":[\"phone\"]},"
	  "{\"required\":[\"email\"]}]}],"
	  "\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"
	  "\"required\":[\"contactMethod\"]},"
	  "\"then\":{\"required\":[\"phone\"]},"
	  "\"else\":{\"required\":[\"email\"]},"
	  "\"additionalProperties\":false}", fixtures_schema_tool, 0 },
	{ "test_reconnection",
	  "Closes the request's SSE connection after the priming event and "
	  "answers on the resumed stream (SEP-1699).",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_RECONNECTION },
	{ "test_update_watched_resource",
	  "Changes test://watched-resource; subscribers get "
	  "notifications/resources/updated.",
	  FIXTURES_NO_ARGS, fixtures_update_watched, 0 },
	{ "test_input_required_result_elicitation",
	  "Asks the user's name through an input_required result.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_sampling",
	  "Asks the client's LLM through an input_required result.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_list_roots",
	  "Asks the client's roots through an input_required result.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_request_state",
	  "Asks a confirmation; answers state-ok once requestState is back.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_multiple_inputs",
	  "Asks an elicitation, a sampling and the roots at once.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_multi_round",
	  "Asks in two rounds (name, then colour).",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_tampered_state",
	  "Asks a confirmation; a changed requestState is refused.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_input_required_result_capabilities",
	  "Asks only what the client declared capabilities for.",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_missing_capability",
	  "Needs the client's sampling capability (-32021 without it).",
	  FIXTURES_NO_ARGS, fixtures_missing_capability, 0 },
	{ "test_streaming_elicitation",
	  "Asks the user's name (input_required on the stateless path).",
	  FIXTURES_NO_ARGS, fixtures_mrtr_tool, 0 },
	{ "test_logging_tool",
	  "Sends three info log messages, then answers.",
	  FIXTURES_NO_ARGS, fixtures_start, FIXTURES_LOGGING },
	{ "test_mcp_header_param",
	  "Echoes its arguments; region is mirrored in Mcp-Param-Region "
	  "(x-mcp-header).",
	  "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":"
	  "\"string\",\"description\":\"Where to run\","
	  "\"x-mcp-header\":\"Region\"},\"query\":{\"type\":\"string\"}},"
	  "\"required\":[\"region\"]}", fixtures_schema_tool, 0 },
	{ "test_trigger_tool_change",
	  "Announces a tools list change to listen streams.",
	  FIXTURES_NO_ARGS, fixtures_trigger, 0 },
	{ "test_trigger_prompt_change",
	  "Announces a prompts list change to listen streams.",
	  FIXTURES_NO_ARGS, fixtures_trigger, 0 },
};
#define FIXTURES_NTOOLS	(sizeof fixtures_tools / sizeof fixtures_tools[0])

static void
fixtures_list_tools(cJSON *tools)
{
	const struct fixtures_tool	*t;
	cJSON				*tool;
	size_t				 i;

	for (i = 0; i < FIXTURES_NTOOLS; i++) {
		t = &fixtures_tools[i];
		tool = cJSON_CreateObject();
		cJSON_AddStringToObject(tool, "name", t->name);
		cJSON_AddStringToObject(tool, "description", t->description);
		cJSON_AddItemToObject(tool, "inputSchema",
		    fixtures_json(t->schema));
		cJSON_AddItemToArray(tools, tool);
	}
}

static int
fixtures_call_tool(struct call *c, const char *name, const cJSON *args)
{
	size_t	i;

	for (i = 0; i < FIXTURES_NTOOLS; i++) {
		if (strcmp(fixtures_tools[i].name, name) == 0) {
			fixtures_tools[i].run(c, &fixtures_tools[i], args);
			return (0);
		}
	}
	return (-1);
}

/* --- resources ---------------------------------------------------------- */

static void
fixtures_add_resource(cJSON *list, const char *key, const char *uri,
    const char *name, const char *description, const char *mime_type)
{
	cJSON	*r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, key, uri);
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddStringToObject(r, "description", description);
	cJSON_AddStringToObject(r, "mimeType", mime_type);
	cJSON_AddItemToArray(list, r);
}

static void
fixtures_list_resources(cJSON *resources)
{
	fixtures_add_resource(resources, "uri", "test://static-text",
	    "static-text", "A static text resource.", "text/plain");
	fixtures_add_resource(resources, "uri", "test://static-binary",
	    "static-binary", "A static binary resource (a PNG image).",
	    "image/png");
	fixtures_add_resource(resources, "uri", FIXTURES_WATCHED,
	    "watched-resource", "A resource to subscribe to; "
	    "test_update_watched_resource changes it.", "text/plain");
}

static void
fixtures_list_resource_templates(cJSON *templates)
{
	fixtures_add_resource(templates, "uriTemplate", FIXTURES_TEMPLATE,
	    "template-data", "JSON data for the given id.",
	    "application/json");
}

/* The {id} of test://template/{id}/data into id; -1 if not of that form. */
static int
fixtures_template_id(const char *uri, char *id, size_t size)
{
	static const char	 prefix[] = "test://template/";
	static const char	 suffix[] = "/data";
	const char		*p, *end;
	size_t			 len;

	if (strncmp(uri, prefix, sizeof prefix - 1) != 0)
		return (-1);
	p = uri + sizeof prefix - 1;
	if ((end = strchr(p, '/')) == NULL || strcmp(end, suffix) != 0)
		return (-1);
	len = (size_t)(end - p);
	if (len == 0 || len >= size)
		return (-1);
	memcpy(id, p, len);
	id[len] = '\0';
	return (0);
}

static cJSON *
fixtures_template_data(const char *id)
{
	cJSON	*data = cJSON_CreateObject();
	char	*text;

	cJSON_AddStringToObject(data, "id", id);
	cJSON_AddBoolToObject(data, "templateTest", 1);
	xasprintf(&text, "Data for ID: %s", id);
	cJSON_AddStringToObject(data, "data", text);
	free(text);
	return (data);
}

/* The resources/read entry for uri, or NULL if it is not a fixture. */
static cJSON *
fixtures_resource(const char *uri)
{
	cJSON	*r, *data;
	char	 id[FIXTURES_MAX_ID + 1], *text;

	if (strcmp(uri, "test://static-text") == 0)
		return (fixtures_text_resource(uri, "text/plain",
		    "This is the content of the static text resource."));
	if (strcmp(uri, "test://static-binary") == 0) {
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "uri", uri);
		cJSON_AddStringToObject(r, "mimeType", "image/png");
		cJSON_AddStringToObject(r, "blob", fixtures_png);
		return (r);
	}
	if (strcmp(uri, FIXTURES_WATCHED) == 0) {
		text = fixtures_watched_text();
		r = fixtures_text_resource(uri, "text/plain", text);
		free(text);
		return (r);
	}
	if (fixtures_template_id(uri, id, sizeof id) == 0) {
		data = fixtures_template_data(id);
		text = cJSON_PrintUnformatted(data);
		cJSON_Delete(data);
		r = fixtures_text_resource(uri, "application/json", text);
		free(text);
		return (r);
	}
	return (NULL);
}

static int
fixtures_read_resource(struct call *c, const char *uri)
{
	cJSON	*resource, *result;

	if ((resource = fixtures_resource(uri)) == NULL)
		return (-1);
	result = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(result, "contents"),
	    resource);
	fixtures_answer(c, result);
	return (0);
}

/* Any fixture resource may be watched; only the watched one changes. */
static int
fixtures_subscribe(struct session *s, const char *uri)
{
	cJSON	*resource;

	if ((resource = fixtures_resource(uri)) == NULL)
		return (-1);
	cJSON_Delete(resource);
	return (0);
}

/* --- prompts ------------------------------------------------------------ */

static const struct {
	const char	*name;
	const char	*description;
	const char	*arguments;	/* JSON, or NULL */
} fixtures_prompts[] = {
	{ "test_simple_prompt", "A simple prompt without arguments.", NULL },
	{ "test_prompt_with_arguments", "A prompt with two arguments.",
	  "[{\"name\":\"arg1\",\"description\":\"First test argument\","
	  "\"required\":true},{\"name\":\"arg2\","
	  "\"description\":\"Second test argument\",\"required\":true}]" },
	{ "test_prompt_with_embedded_resource",
	  "A prompt that embeds a resource.",
	  "[{\"name\":\"resourceUri\","
	  "\"description\":\"URI of the resource to embed\","
	  "\"required\":true}]" },
	{ "test_prompt_with_image", "A prompt that includes an image.", NULL },
	{ "test_input_required_result_prompt",
	  "A prompt built from an elicited context (input_required).", NULL },
};
#define FIXTURES_NPROMPTS (sizeof fixtures_prompts / sizeof fixtures_prompts[0])

static void
fixtures_list_prompts(cJSON *prompts)
{
	cJSON	*p;
	size_t	 i;

	for (i = 0; i < FIXTURES_NPROMPTS; i++) {
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "name", fixtures_prompts[i].name);
		cJSON_AddStringToObject(p, "description",
		    fixtures_prompts[i].description);
		if (fixtures_prompts[i].arguments != NULL)
			cJSON_AddItemToObject(p, "arguments",
			    fixtures_json(fixtures_prompts[i].arguments));
		cJSON_AddItemToArray(prompts, p);
	}
}

static void
fixtures_add_message(cJSON *messages, cJSON *content)
{
	cJSON	*m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "role", "user");
	cJSON_AddItemToObject(m, "content", content);
	cJSON_AddItemToArray(messages, m);
}

/* A required prompt argument (prompt arguments are strings), or NULL. */
static const char *
fixtures_prompt_arg(struct call *c, const cJSON *args, const char *name)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(args, name);
	char		*message;

	if (cJSON_IsString(v))
		return (v->valuestring);
	xasprintf(&message, "Invalid params: prompt argument '%s' is "
	    "required and must be a string", name);
	call_respond_error(c, JSONRPC_INVALID_PARAMS, message);
	call_release(c);
	free(message);
	return (NULL);
}

static int
fixtures_get_prompt(struct call *c, const char *name, const cJSON *args)
{
	const char	*arg1, *arg2, *uri;
	cJSON		*result, *messages;
	char		*text;

	result = cJSON_CreateObject();
	messages = cJSON_AddArrayToObject(result, "messages");
	if (strcmp(name, "test_simple_prompt") == 0)
		fixtures_add_message(messages, fixtures_text(
		    "This is a simple prompt for testing."));
	else if (strcmp(name, "test_prompt_with_arguments") == 0) {
		if ((arg1 = fixtures_prompt_arg(c, args, "arg1")) == NULL ||
		    (arg2 = fixtures_prompt_arg(c, args, "arg2")) == NULL) {
			cJSON_Delete(result);
			return (0);
		}
		xasprintf(&text, "Prompt with arguments: arg1='%s', "
		    "arg2='%s'", arg1, arg2);
		fixtures_add_message(messages, fixtures_text(text));
		free(text);
	} else if (strcmp(name, "test_prompt_with_embedded_resource") == 0) {
		if ((uri = fixtures_prompt_arg(c, args, "resourceUri")) ==
		    NULL) {
			cJSON_Delete(result);
			return (0);
		}
		fixtures_add_message(messages, fixtures_embedded(
		    fixtures_text_resource(uri, "text/plain",
		    "Embedded resource content for testing.")));
		fixtures_add_message(messages, fixtures_text(
		    "Please process the embedded resource above."));
	} else if (fixtures_mrtr_find(name, 1) != NULL) {
		cJSON_Delete(result);
		fixtures_mrtr_start(c, fixtures_mrtr_find(name, 1));
		return (0);
	} else if (strcmp(name, "test_prompt_with_image") == 0) {
		fixtures_add_message(messages, fixtures_media("image",
		    fixtures_png, "image/png"));
		fixtures_add_message(messages, fixtures_text(
		    "Please analyze the image above."));
	} else {
		cJSON_Delete(result);
		return (-1);
	}
	fixtures_answer(c, result);
	return (0);
}

/* --- completion --------------------------------------------------------- */

static const char *fixtures_words[] = {
	"hello", "test", "testValue1", "testValue2", "world", NULL
};
static const char *fixtures_ids[] = { "123", "456", "789", NULL };
static const char *fixtures_uris[] = {
	"test://static-binary", "test://static-text", FIXTURES_WATCHED, NULL
};

/* The candidates for one argument of one prompt or template, or NULL. */
static const char **
fixtures_candidates(const cJSON *ref, const char *arg)
{
	const cJSON	*type, *name;

	type = cJSON_GetObjectItemCaseSensitive(ref, "type");
	if (!cJSON_IsString(type))
		return (NULL);
	if (strcmp(type->valuestring, "ref/prompt") == 0) {
		name = cJSON_GetObjectItemCaseSensitive(ref, "name");
		if (!cJSON_IsString(name))
			return (NULL);
		if (strcmp(name->valuestring, "test_prompt_with_arguments") ==
		    0 && (strcmp(arg, "arg1") == 0 || strcmp(arg, "arg2") == 0))
			return (fixtures_words);
		if (strcmp(name->valuestring,
		    "test_prompt_with_embedded_resource") == 0 &&
		    strcmp(arg, "resourceUri") == 0)
			return (fixtures_uris);
		return (NULL);
	}
	if (strcmp(type->valuestring, "ref/resource") == 0) {
		name = cJSON_GetObjectItemCaseSensitive(ref, "uri");
		if (cJSON_IsString(name) &&
		    strcmp(name->valuestring, FIXTURES_TEMPLATE) == 0 &&
		    strcmp(arg, "id") == 0)
			return (fixtures_ids);
	}
	return (NULL);
}

/* The candidates that start with what the user typed so far. */
static int
fixtures_complete(struct call *c, const cJSON *ref, const cJSON *arg,
    const cJSON *context)
{
	const cJSON	*name, *value;
	const char	**words, *typed;
	cJSON		*result, *completion, *values;
	size_t		 i, len;

	name = cJSON_GetObjectItemCaseSensitive(arg, "name");
	value = cJSON_GetObjectItemCaseSensitive(arg, "value");
	if (!cJSON_IsString(name) ||
	    (words = fixtures_candidates(ref, name->valuestring)) == NULL)
		return (-1);
	typed = cJSON_IsString(value) ? value->valuestring : "";
	len = strlen(typed);
	result = cJSON_CreateObject();
	completion = cJSON_AddObjectToObject(result, "completion");
	values = cJSON_AddArrayToObject(completion, "values");
	for (i = 0; words[i] != NULL; i++) {
		if (strncmp(words[i], typed, len) == 0)
			cJSON_AddItemToArray(values,
			    cJSON_CreateString(words[i]));
	}
	cJSON_AddNumberToObject(completion, "total",
	    cJSON_GetArraySize(values));
	cJSON_AddBoolToObject(completion, "hasMore", 0);
	fixtures_answer(c, result);
	return (0);
}

const struct provider provider_fixtures = {
	.name = "fixtures",
	.enabled = fixtures_enabled,
	.list_tools = fixtures_list_tools,
	.call_tool = fixtures_call_tool,
	.list_resources = fixtures_list_resources,
	.list_resource_templates = fixtures_list_resource_templates,
	.read_resource = fixtures_read_resource,
	.subscribe = fixtures_subscribe,
	.list_prompts = fixtures_list_prompts,
	.get_prompt = fixtures_get_prompt,
	.complete = fixtures_complete,
	.lists_change = fixtures_lists_change,
};
