/* agent: chats with a language model that acts on the workspace through the
 * editor's own services.
 *
 * A chat is a list of messages (the user's prompts, the model's answers with
 * the tool calls it asked for, and each call's result), a model and a status.
 * A prompt starts a turn: the chat's messages and the tools' JSON Schemas go
 * to the model (OpenAI-compatible chat completions or Anthropic messages,
 * streamed), its text streams out as content events, and every tool call it
 * makes runs and answers it, until the model stops asking or the turn limit is
 * reached.
 *
 * What it promises:
 * - Chats are persisted in the store as they change, and listed and reopened
 *   after a restart.
 * - Tools act through the services (an open document's unsaved text is what
 *   read_file sees; writes and edits to an open document go through the
 *   document service, undoable; other writes are atomic), and only inside the
 *   workspace: a path that leaves it (absolute, through `..` or a symlink) is
 *   refused without asking anyone, and the refusal is the call's result.
 * - write_file, edit_file and shell_command wait for approval unless the
 *   `agent.approval` setting is "allow"; nothing changes before approval, and
 *   a rejection is a result too ("Error: ...").
 * - No provider configured: agent_prompt fails at once with a message naming
 *   the variables to set, and no request is made.
 * - Stopping a turn aborts the transfer, withdraws a pending approval and
 *   stops a running command at once.
 *
 * Everything runs on the loop thread. Strings handed in are copied.
 */
#ifndef ECPD_AGENT_INTERFACE_H
#define ECPD_AGENT_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "error.h"
#include "job.h"
#include "log.h"

struct store;
struct document_service;
struct file_service;
struct session_service;
struct lsp_service;

typedef struct agent_service agent_service;

typedef struct agent_service_options {
    uv_loop_t *loop;                     /* borrowed; outlives the service */
    ecp_logger *log;                     /* borrowed */
    ecp_pool *pool;                      /* borrowed */
    struct store *store;                 /* required; borrowed */
    struct document_service *documents;  /* required; borrowed */
    struct file_service *files;          /* required; borrowed */
    struct session_service *session;     /* may be NULL (no settings: the defaults) */
    struct lsp_service *lsp;             /* may be NULL (the diagnostics tool then says so) */
    struct gitsvc *git;                  /* may be NULL (the git tool then says so) */
    const char *workspace;               /* may be NULL: then every tool with a path refuses */
} agent_service_options;

/* Loads the chats from the store. */
agent_service *agent_service_new(const agent_service_options *options, ecp_error *err);
/* Stops every turn and releases everything. */
void agent_service_free(agent_service *self);
void agent_service_set_workspace(agent_service *self, const char *workspace);

/* ----- events ------------------------------------------------------------------------ */

typedef enum agent_content_type {
    AGENT_CONTENT_TEXT,             /* text (role says whose) */
    AGENT_CONTENT_PROGRESS,         /* finished, text */
    AGENT_CONTENT_USAGE,            /* session_tokens */
    AGENT_CONTENT_TOOL_PREPARE,     /* tool_id, tool_name, text: a fragment of the arguments */
    AGENT_CONTENT_TOOL_RUN,         /* tool_id, tool_name, arguments, manual_approval */
    AGENT_CONTENT_TOOL_RUNNING,     /* tool_id, tool_name, arguments */
    AGENT_CONTENT_TOOL_CALLED,      /* tool_id, tool_name, arguments, error, text: the output, total_ms */
    AGENT_CONTENT_TOOL_REJECTED,    /* tool_id, tool_name, arguments, reason */
    AGENT_CONTENT_REASON_STARTED,   /* tool_id: the reasoning's id */
    AGENT_CONTENT_REASON_TEXT,      /* tool_id, text: a piece of the model's reasoning */
    AGENT_CONTENT_REASON_FINISHED,  /* tool_id, total_ms */
    AGENT_CONTENT_PLAN,             /* tool_id, arguments: the plan, [{content, priority, status}] */
} agent_content_type;

/* Why a turn ended (the finished progress event says). */
typedef enum agent_stop {
    AGENT_STOP_END,        /* the model stopped asking for tools */
    AGENT_STOP_CANCELLED,  /* agent_prompt_stop */
    AGENT_STOP_TURN_LIMIT, /* the agent.maxTurns model requests were made */
    AGENT_STOP_ERROR,      /* the model's request failed: error says why */
    AGENT_STOP_MAX_TOKENS, /* the model's answer stopped at its output limit */
    AGENT_STOP_REFUSAL,    /* the model refused to go on */
} agent_stop;

/* One piece of a chat's content. Pointers live during the callback only. */
typedef struct agent_content {
    agent_content_type type;
    const char *chat_id;
    const char *role;      /* "user", "assistant" or "system" */
    const char *text;
    size_t text_len;
    bool finished;
    long session_tokens;
    const char *tool_id;
    const char *tool_name;
    const char *arguments; /* JSON text of an object ("{}" when the model's did not parse) */
    bool manual_approval;
    bool error;
    const char *reason;    /* "userChoiceDeny", "userPromptStop" */
    double total_ms;
    agent_stop stop;       /* finished progress */
    const char *error_message; /* finished progress with AGENT_STOP_ERROR */
} agent_content;

/* An MCP server's state. Pointers live during the call only. */
typedef struct agent_mcp_info {
    const char *name;
    const char *command;      /* stdio; NULL for HTTP */
    const char *url;          /* HTTP; NULL for stdio */
    const char *const *args;  /* NULL-terminated, without the command */
    const char *status;       /* "starting", "running", "failed" or "stopped" */
    const char *error;        /* why it failed; NULL otherwise */
    size_t tool_count;        /* offered to the model (running only) */
    const char *const *tool_names, *const *tool_descriptions, *const *tool_schemas; /* schemas: JSON text */
} agent_mcp_info;

typedef struct agent_listener {
    void (*on_content)(void *ctx, const agent_content *content);
    /* "running" or "idle" */
    void (*on_status)(void *ctx, const char *chat_id, const char *status);
    void (*on_deleted)(void *ctx, const char *chat_id);
    /* An MCP server started, became ready, failed or stopped. */
    void (*on_mcp)(void *ctx, const agent_mcp_info *info);
} agent_listener;

void agent_subscribe(agent_service *self, const agent_listener *listener, void *ctx);
void agent_unsubscribe(agent_service *self, const agent_listener *listener, void *ctx);
/* While paused, no chat reads its model's answer: the stream waits at the
 * provider, for clients that do not keep up with the content. */
void agent_pause_streams(agent_service *self, bool paused);

/* ----- MCP servers ------------------------------------------------------------------------
 *
 * Model Context Protocol servers (the stdio transport: a command started as
 * a child process; or streamable HTTP: a url each message is posted to) whose tools are offered to the model as mcp__<server>__<tool>
 * once the server has answered initialize and tools/list. Calls of tools that
 * are not marked read-only wait for approval like writes. A server that fails
 * to start or exits has its tools withdrawn and its waiting calls answered
 * with errors; it stays listed as "failed" until stopped. Events: on_mcp.
 *
 * The servers the `agent.mcpServers` setting names start when something first
 * needs them (a prompt, whose first request then waits for them to be running
 * or failed, or agent_mcp_start / agent_mcp_list), never with the service:
 * a settings file must not run a program before anyone asks. From then on they
 * follow the setting: one it adds starts, one it drops stops, one whose
 * configuration changes restarts. Servers a client started (agent_mcp_start)
 * are not the setting's: it leaves them alone, even under the same name, and
 * a client starting one of the setting's servers takes it over. */
typedef struct agent_mcp_config {
    const char *name;                 /* letters, digits, '-' and single '_' */
    const char *command;              /* found on PATH */
    const char *const *args;
    size_t arg_count;
    const char *const *env;           /* "NAME=value", added to ours */
    size_t env_count;
    /* Or the streamable HTTP transport: url (then command is ignored) and
     * more "Name: value" headers for every request. */
    const char *url;
    const char *const *headers;
    size_t header_count;
} agent_mcp_config;

/* Starts the server, replacing one of the same name, unless that one is
 * starting or running with the same configuration (it then goes on). A failure to spawn is
 * told as a "failed" event, not by the return: ECP_EINVAL only for a bad
 * name or no command. */
int agent_mcp_start(agent_service *self, const agent_mcp_config *config, ecp_error *err);
/* Stops it and forgets it. ECP_ENOTFOUND. */
int agent_mcp_stop(agent_service *self, const char *name, ecp_error *err);
void agent_mcp_list(agent_service *self, void (*fn)(void *ctx, const agent_mcp_info *info), void *ctx);

/* ----- tools run elsewhere -------------------------------------------------------------
 *
 * A front end whose client edits files or runs commands itself (ACP's fs and
 * terminal methods) takes those calls over: after the checks (a known tool,
 * a path confined to the workspace) and after approval, run() is offered the
 * call; it returns false to leave it to the service, or true and then calls
 * agent_host_call_done(token, ...) exactly once, later, unless cancel(token)
 * came first. */
typedef struct agent_host_call {
    const char *chat_id, *tool_id, *tool_name;
    const char *path;      /* resolved, inside the workspace; NULL for tools without one */
    const char *arguments; /* JSON object text */
} agent_host_call;

typedef struct agent_tool_host {
    bool (*run)(void *ctx, const agent_host_call *call, void *token);
    void (*cancel)(void *ctx, void *token);
} agent_tool_host;

/* One host at a time; NULL removes it. host is borrowed until removed. */
void agent_set_tool_host(agent_service *self, const agent_tool_host *host, void *ctx);
/* The output of a call a host took (an error's starts with "Error: "). */
void agent_host_call_done(void *token, bool error, const char *output);

/* The "provider/model" a prompt without a model would use; NULL with no
 * provider configured. The caller frees it. */
char *agent_default_model(agent_service *self);

/* ----- chats ------------------------------------------------------------------------- */

/* Starts a turn in chat_id (NULL: a new chat). A key missing from the
 * environment is looked for in the secret store under the variable's name
 * (OPENAI_API_KEY, ANTHROPIC_API_KEY). done runs exactly once when this
 * returns 0: with status 0, the chat and the "provider/model" used, before
 * any content event of the turn; or with a failure (the strings are then
 * NULL). It may run before this returns. A negative return is a failure told
 * only by the return (done is not called): ECP_ENOTSUP (no provider: the
 * message names the variables), ECP_EINVAL (a model string that names no
 * provider) or ECP_ESTATE (a turn runs in that chat). */
typedef void (*agent_prompt_cb)(void *ctx, int status, const ecp_error *err, const char *chat_id,
                                const char *model);
int agent_prompt(agent_service *self, const char *chat_id, const char *message, const char *model,
                 agent_prompt_cb done, void *ctx, ecp_error *err);

/* Answers a pending approval. ECP_ENOTFOUND when no such call waits. */
int agent_tool_answer(agent_service *self, const char *chat_id, const char *tool_call_id, bool approve,
                      ecp_error *err);

/* Stops the chat's turn (nothing running: nothing happens). ECP_ENOTFOUND for an unknown chat. */
int agent_prompt_stop(agent_service *self, const char *chat_id, ecp_error *err);

int agent_chat_delete(agent_service *self, const char *chat_id, ecp_error *err);

typedef struct agent_chat_info {
    const char *id;
    const char *title;  /* the first prompt's first line, cut; may be NULL */
    const char *model;  /* may be NULL */
    const char *status; /* "running" or "idle" */
    int64_t created_at, updated_at; /* ms since the epoch */
    size_t message_count;
} agent_chat_info;

/* Most recently updated first. */
void agent_chat_list(agent_service *self, void (*fn)(void *ctx, const agent_chat_info *info), void *ctx);

/* One message of a chat as stored: role "user", "assistant" or "tool". */
typedef struct agent_message_info {
    const char *role;
    const char *text;          /* may be NULL */
    const char *tool_call_id;  /* tool results */
    const char *tool_name;     /* tool results */
    bool error;                /* tool results */
    size_t call_count;         /* assistant: the tool calls it made */
    const char *const *call_ids, *const *call_names, *const *call_arguments;
} agent_message_info;

int agent_chat_open(agent_service *self, const char *chat_id, agent_chat_info *info,
                    void (*message_fn)(void *ctx, const agent_message_info *message), void *ctx, ecp_error *err);

/* Files of the workspace a prompt may name as context: those whose name
 * holds the query's characters in order (the file service's fuzzy search),
 * best first, at most max. Prepares the walk (*walk, a job of the file
 * service, not started: the caller may make it serve a call, then starts it
 * with agent_query_start); done runs once on the loop with absolute paths.
 * ECP_EACCES without a workspace. */
typedef void (*agent_query_cb)(void *ctx, int status, const ecp_error *err, const char *const *paths,
                               size_t count);
int agent_query_files(agent_service *self, const char *query, size_t max, agent_query_cb done, void *ctx,
                      ecp_job **walk, ecp_error *err);
void agent_query_start(ecp_job *walk);

/* The commands a prompt may be instead of a message ("/tools"): the prompt
 * then runs the command without the model, its output a system text of the
 * turn, and the chat's messages stay as they were. */
typedef struct agent_command_info {
    const char *name, *description;
} agent_command_info;

const agent_command_info *agent_commands(size_t *count);

/* The tools the model is offered. */
typedef struct agent_tool_info {
    const char *name;
    const char *description;
    const char *parameters; /* JSON Schema text */
} agent_tool_info;

const agent_tool_info *agent_tools(size_t *count);

#endif
