/* What the agent's own files share. */
#ifndef ECPD_AGENT_INTERNAL_H
#define ECPD_AGENT_INTERNAL_H

#include "interface.h"

#include "buf.h"
#include "event.h"
#include "llm.h"
#include "map.h"

typedef enum agent_role { ROLE_USER, ROLE_ASSISTANT, ROLE_TOOL } agent_role;

typedef struct agent_call {
    char *id, *name, *arguments;
} agent_call;

typedef struct agent_message {
    agent_role role;
    char *text;            /* may be NULL */
    /* When set, text's bytes belong to it and are shared, never copied: a
     * model's answer (tens of megabytes) and its write to the store. The
     * references are taken and dropped on the loop only. */
    struct ecp_shared *text_owner;
    agent_call *calls;     /* assistant */
    size_t call_count;
    char *tool_call_id;    /* tool */
    char *tool_name;       /* tool */
    bool error;            /* tool */
} agent_message;

typedef struct tool_run tool_run;
typedef struct key_wait key_wait;
typedef struct chat chat;
typedef struct query_op query_op;
typedef struct mcp_server mcp_server;
typedef struct mcp_call mcp_call;

struct agent_service {
    uv_loop_t *loop;
    ecp_logger *log;
    struct store *store;
    struct document_service *documents;
    struct file_service *files;
    struct session_service *session;
    struct lsp_service *lsp;
    struct gitsvc *git;
    ecp_job_set *jobs;
    char *workspace;
    llm_client *llm; /* NULL until the first request to a model or an MCP server over HTTP */
    ecp_listeners listeners;
    chat *chats;      /* newest first */
    bool streams_paused; /* agent_pause_streams */
    ecp_map *chat_ids; /* the same chats by id */
    key_wait *key_waits; /* prompts waiting for the secret store */
    query_op *queries;   /* file searches whose walk has not called back */
    mcp_server *mcp_servers;
    bool mcp_following; /* agent.mcpServers is followed: something has needed MCP servers */
    const agent_tool_host *host;
    void *host_ctx;
};

/* ----- tools (tools.c) --------------------------------------------------------------- */

/* The checked call, before anything runs. */
typedef struct tool_plan {
    const char *name;       /* the tool's static name */
    bool needs_approval;
    bool mcp;               /* a tool of an MCP server: runs there */
    char *path;             /* resolved, inside the workspace; NULL for tools without one */
} tool_plan;

/* Checks a call: a known tool, arguments that are a JSON object with the
 * required fields, a path inside the workspace. On failure returns a
 * negative status with err saying why (the call's result then). */
int tool_check(agent_service *svc, const char *name, const char *arguments, tool_plan *plan, ecp_error *err);
void tool_plan_free(tool_plan *plan);

/* update_plan's entries, checked; with out, written there as a JSON array
 * (priority "medium" when the model gave none). */
struct json_doc;
int plan_entries(const struct json_doc *d, buf *out, ecp_error *err);

/* Runs a checked call; done runs once, later, on the loop, with the output
 * (an error output starts with "Error: "). */
typedef void (*tool_done_fn)(void *ctx, bool error, const char *output);
tool_run *tool_start(agent_service *svc, const tool_plan *plan, const char *arguments, tool_done_fn done, void *ctx);
/* Stops a run: done is not called. */
void tool_cancel(tool_run *run);

/* ----- MCP servers (mcp.c) ---------------------------------------------------------- */

/* Makes the servers agent.mcpServers started match its value (JSON text; NULL: none): a server it no
 * longer names stops, a new one starts, a changed one restarts. Servers a client started are left alone. */
void mcp_follow_setting(agent_service *svc, const char *value_json);
/* Something needs MCP servers now: from the first call on, the servers agent.mcpServers names run and follow
 * it. */
void mcp_need(agent_service *svc);
/* Whether a server the setting named is still starting (its tools are not offered yet). */
bool mcp_starting(agent_service *svc);
/* A server stopped starting (local.c): prompts waiting for the setting's servers go on once none starts. */
void agent__mcp_settled(agent_service *svc);

/* The HTTP client of models and MCP servers, made at its first use: libcurl
 * is opened then (llm_curl.h), and starting it loads TLS and reads the CA
 * store, which a server that never talks to a model should not pay for at
 * start. NULL, with err naming libcurl, when it cannot be loaded. */
llm_client *agent__llm(agent_service *svc, ecp_error *err);

/* A new random id in the form of a version 4 UUID (a chat's, an ACP
 * session's); the caller frees it. */
char *agent__new_id(void);
/* Stops every server (at the service's end; nobody is told). */
void mcp_stop_all(agent_service *svc);
/* The running servers' tools, named mcp__<server>__<tool>. */
void mcp_each_tool(agent_service *svc,
                   void (*fn)(void *ctx, const char *full_name, const char *description, const char *schema), void *ctx);
bool mcp_tool_known(agent_service *svc, const char *full_name, bool *read_only);
/* Sends tools/call; done runs once, later (an error result when the server
 * fails first), unless mcp_call_cancel came first. NULL with err when the
 * tool is no longer offered. */
mcp_call *mcp_call_start(agent_service *svc, const char *full_name, const char *arguments, tool_done_fn done,
                         void *ctx, ecp_error *err);
void mcp_call_cancel(mcp_call *call);

/* Resolves path (relative to the workspace, or absolute) to an absolute path
 * inside it, following symlinks of the parts that exist. */
int agent_confine(const char *workspace, const char *path, char **out, ecp_error *err);

/* ----- the ACP front end (acp.c) without stdio ------------------------------------------------ */

/* An ACP front end that reads no stdin and appends every line it would write
 * to *sink (newline included), for driving it one line at a time in-process.
 * Close it with acp_frontend_close (closed at once) and free it as usual. */
struct acp_frontend;
struct acp_frontend *acp__frontend_detached(uv_loop_t *loop, agent_service *agent, ecp_logger *log,
                                            const char *version, buf *sink);
/* Handles one line as if it had arrived on stdin (without its newline). */
void acp__frontend_take_line(struct acp_frontend *self, const char *line, size_t len);

#endif
