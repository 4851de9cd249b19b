/*
 * Tasks (the io.modelcontextprotocol/tasks extension): a tools/call that
 * answers at once with a task handle while the tool runs on, its state and
 * result kept in the event log where any instance reads them (tasks/get),
 * answers its input requests (tasks/update) or cancels it (tasks/cancel).
 *
 * Independent of the transport: the protocol layer (legacy dispatch, or
 * the stateless path) asks here and sends what it is answered. Every
 * answer comes through a task_answer_cb, exactly once, on a later loop
 * turn: a result (taken by the callback), or a JSON-RPC error code,
 * message and data (data taken, may be NULL).
 */
#ifndef MCPD_TASK_H
#define MCPD_TASK_H

#include <cjson/cJSON.h>

/* The extension's name, in capabilities and in requests' _meta. */
#define TASK_EXTENSION		"io.modelcontextprotocol/tasks"
/* Task ids: 128 random bits, in hex. */
#define TASK_ID_LEN		32

/* A task's status, and the transitions between them (task.c). */
enum task_state {
	TASK_WORKING,
	TASK_INPUT_REQUIRED,
	TASK_COMPLETED,
	TASK_FAILED,
	TASK_CANCELLED,
	TASK_STATE_MAX
};

const char	*task_state_name(enum task_state);
int		 task_state_parse(const char *);
int		 task_state_terminal(enum task_state);
int		 task_state_allowed(enum task_state, enum task_state);

typedef void (*task_answer_cb)(cJSON *, int, const char *, cJSON *, void *);
struct call;
/* A task_answer_cb for a call (arg): its response, then released. */
void		 task_answer_call(cJSON *, int, const char *, cJSON *, void *);

/* How a tools/call runs, from the tool's taskSupport and the request. */
enum task_mode {
	TASK_MODE_CALL,		/* a plain call */
	TASK_MODE_TASK,		/* a task: task_call_tool */
	TASK_MODE_REFUSE	/* -32021: the tool needs the extension */
};

void		 task_init(void);
void		 task_shutdown(void);
void		 task_interrupt(const char *);
size_t		 task_running(void);

/* Whether a request's params declare the extension in their _meta. */
int		 task_declared(const cJSON *);
enum task_mode	 task_mode(const char *, const cJSON *);
/* Adds capabilities.extensions[TASK_EXTENSION] to a capabilities object. */
void		 task_capabilities(cJSON *);

/*
 * Starts tool name as a task, with the arguments and the client's
 * capabilities of a tools/call's params, for the principal of the call
 * that asked (auth.c; NULL: none) at its endpoint's path (NULL: none):
 * answers the CreateTaskResult once the task is committed (a tasks/get
 * anywhere finds it), or an error.
 */
struct auth_principal;
void		 task_call_tool(const char *, const cJSON *,
		     struct auth_principal *, const char *, task_answer_cb,
		     void *);

/*
 * A tool that asked by MRTR first (provider task_self) goes on as a task:
 * call answers with the task once it is committed, then is released.
 */
void		 task_escalate(struct call *, const char *, cJSON *);

/*
 * tasks/get, tasks/update, tasks/cancel: whether method is one of them,
 * and running one for principal who (the caller has checked
 * task_declared). With auth, a task of another principal is answered as
 * an unknown id is.
 */
int		 task_method(const char *);
void		 task_run_method(const char *, const cJSON *,
		     struct auth_principal *, task_answer_cb, void *);

/*
 * Whether principal who (NULL without auth) may see a task bound to
 * principal (the JSON task_read gives; NULL: bound to none).
 */
int		 task_allowed(const cJSON *, const struct auth_principal *);
/*
 * Reads task tid for its listeners, whoever they are: cb runs once, on a
 * later turn, with its DetailedTask (what tasks/get answers, without
 * resultType) and the principal it is bound to, or NULL and NULL when it
 * is not found or cannot be read. Each listener hears it only if
 * task_allowed says so.
 */
typedef void (*task_read_cb)(const cJSON *, const cJSON *, void *);
void		 task_read(const char *, task_read_cb, void *);

#endif
