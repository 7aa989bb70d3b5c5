/* acp: what the files of the Agent Client Protocol front end share.
 *
 * The front end serves one client on stdio through a core peer: frontend.c
 * owns the transport and the front end's life, session.c the sessions and the
 * methods the client calls, updates.c the agent's events as session/update
 * notifications (and permission requests), host.c the tools run on the
 * client's side (its file system and terminals). */
#ifndef ECPD_AGENT_ACP_H
#define ECPD_AGENT_ACP_H

#include "adapter.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "buf.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "peer.h"

#define ACP_MAX_LINE ((size_t)64 << 20)
#define READ_TEXT_MAX ((size_t)8 << 20)

enum {
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
};

typedef struct acp_session acp_session;
typedef struct outgoing outgoing;

/* A tool name answered "always" for the session. */
typedef struct standing_answer {
    char *tool;
    bool allow;
} standing_answer;

struct acp_session {
    acp_session *next;
    char *id;
    bool allow_all;          /* mode "allow": no permission requests */
    char *model;             /* "provider/model"; NULL: the agent's default */
    standing_answer *answers;
    size_t answer_count;
    /* the prompt in progress */
    ecp_peer_request *prompt; /* its session/prompt, to answer at its end; NULL when none runs */
    bool cancelled;
    buf system_text;         /* the turn's own messages (a command's output), sent at its end */
    char **announced;        /* tool call ids already sent as tool_call */
    size_t announced_count;
    /* the diff of the write or edit awaiting approval or running */
    char *diff_tool_id, *diff_path, *diff_old, *diff_new;
    bool diff_new_file;
};

typedef enum outgoing_kind {
    OUT_PERMISSION, OUT_READ, OUT_WRITE, OUT_EDIT_READ,
    OUT_TERMINAL_CREATE, OUT_TERMINAL_WAIT, OUT_TERMINAL_OUTPUT, OUT_TERMINAL_OTHER,
} outgoing_kind;

typedef struct terminal_run terminal_run;

/* A request we sent the client, waiting for its answer. */
struct outgoing {
    outgoing *next;
    acp_frontend *acp;
    int64_t id;
    outgoing_kind kind;
    const char *method;
    acp_session *session;
    char *tool_id, *tool_name;
    void *token;             /* a hosted call's */
    char *path;
    char *old_string, *new_string;
    bool all_occurrences;
    terminal_run *terminal;  /* the terminal requests of a command */
};

/* A shell command run in a terminal of the client's: create, wait for its
 * exit (or the timeout: kill), read the output, release. */
struct terminal_run {
    terminal_run *next;
    acp_frontend *acp;
    acp_session *session;
    void *token;             /* NULL once the call is cancelled or answered */
    char *terminal_id;
    uv_timer_t timer;
    bool timed_out;
    bool exited;
    int64_t exit_code, signal;
};

/* A session/new or session/load answered once its MCP servers are ready. */
typedef struct waiting_answer {
    struct waiting_answer *next;
    ecp_peer_request *request;
    acp_session *session;
    bool with_id;
    char **servers;
    size_t server_count;
} waiting_answer;

typedef struct accept_ctx accept_ctx;

struct acp_frontend {
    uv_loop_t *loop;
    agent_service *agent;
    ecp_logger *log;
    uv_pipe_t in;
    uv_pipe_t out;
    bool out_is_pipe;
    int open_handles;
    bool closing;
    ecp_peer *peer;
    void (*on_eof)(void *ctx);
    void *ctx;
    const char *version;
    bool client_reads, client_writes, client_terminals;
    terminal_run *terminals;
    acp_session *sessions;
    outgoing *outgoing;      /* requests to the client, until the peer completes them */
    waiting_answer *waiting;
    accept_ctx *accepting;   /* prompts the agent has not accepted or refused yet */
    buf *sink;               /* detached: lines go here, not to stdout */
};

/* Answers an incoming request with an error, once. */
#define reply_error ecp_peer_respond_error

/* session.c: a prompt the agent has not answered yet, when the front end is freed */
void acp__accepting_orphan(acp_frontend *acp);

/* The agent's events, and the tools run on the client's side. */
extern const agent_listener acp__listener;
extern const agent_tool_host acp__host;

/* frontend.c: writing to the client */
void acp__result_begin(json_writer *w, buf *out);
void acp__result_send(ecp_peer_request *request, buf *out);
void acp__reply_empty(ecp_peer_request *request);
void acp__update_begin(json_writer *w, buf *out, const acp_session *s, const char *kind);
void acp__update_send(acp_frontend *acp, json_writer *w, buf *out);
void acp__send_text_chunk(acp_frontend *acp, const acp_session *s, const char *kind, const char *text, size_t len);
outgoing *acp__request_begin(acp_frontend *acp, json_writer *w, buf *out, const char *method, outgoing_kind kind,
                             acp_session *s);
void acp__request_send(acp_frontend *acp, outgoing *o, buf *out);
void acp__outgoing_free(outgoing *o);
void acp__outgoing_remove(acp_frontend *acp, outgoing *o);
void acp__withdraw(acp_frontend *acp, outgoing *o);

/* session.c: sessions and the methods the client calls */
acp_session *acp__find_session(acp_frontend *acp, const char *id);
void acp__clear_diff(acp_session *s);
void acp__clear_turn(acp_session *s);
void acp__session_free(acp_session *s);
const standing_answer *acp__standing(const acp_session *s, const char *tool);
void acp__remember(acp_session *s, const char *tool, bool allow);
void acp__reply_session_state(acp_frontend *acp, ecp_peer_request *request, const acp_session *s, bool with_id);
void acp__on_request(void *ctx, ecp_peer_request *request, const char *name, const json_doc *d, json_ref params);
void acp__on_notification(void *ctx, const char *name, const json_doc *d, json_ref params);

/* updates.c: the agent's events */
const char *acp__argument(const json_doc *d, const char *key, arena *a);
void acp__write_call_fields(json_writer *w, const acp_session *s, const char *tool_id, const char *name,
                            const char *arguments, const char *workspace);
size_t acp__apply_edit(const char *text, const char *old, const char *new_text, bool all, buf *out);
void acp__send_call_update(acp_frontend *acp, acp_session *s, const char *tool_id, const char *status,
                           const char *text, size_t text_len, bool with_diff);
void acp__waiting_free(waiting_answer *w);
void acp__answer_ready(acp_frontend *acp);

/* host.c: tools on the client's side, and the client's answers to our requests */
void acp__terminal_finish(terminal_run *t);
void acp__answered(void *ctx, int64_t id, const ecp_peer_answer *answer);

#endif
