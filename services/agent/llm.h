/* llm: streaming chat requests to a model, over libcurl's multi interface
 * driven by the server's libuv loop (no thread per request).
 *
 * Two wire APIs: OpenAI-compatible chat completions and Anthropic messages,
 * both streamed as server-sent events. (The same machinery also posts MCP's
 * JSON-RPC messages to servers on the streamable HTTP transport: see
 * LLM_API_JSONRPC.) A request delivers text deltas and
 * tool-call fragments as they arrive, then finishes exactly once: with the
 * assembled answer, or with a message naming why it failed. Failures before
 * anything was delivered (a refused connection, HTTP 429 or 5xx) are retried
 * a bounded number of times with a growing delay; a stream that ends without
 * its end marker is a failure, not an answer. Everything runs on the loop.
 */
#ifndef ECPD_AGENT_LLM_H
#define ECPD_AGENT_LLM_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "buf.h"
#include "error.h"

/* LLM_API_JSONRPC is not a model: it is MCP's streamable HTTP transport, one
 * JSON-RPC message posted per request, whose answer is either one JSON body
 * or a stream of server-sent events, each event one message (on_message). No
 * retries (a call may not be repeated), no end marker, and 202 is a success. */
typedef enum llm_api { LLM_API_OPENAI, LLM_API_ANTHROPIC, LLM_API_JSONRPC } llm_api;

/* Where a request goes. Strings are copied by llm_request_start. */
typedef struct llm_endpoint {
    llm_api api;
    const char *url;     /* the full URL: .../chat/completions or .../v1/messages */
    const char *api_key; /* may be NULL (local servers) */
    const char *const *headers; /* more "Name: value" headers; NULL-terminated, may be NULL */
} llm_endpoint;

typedef struct llm_tool_call {
    char *id;
    char *name;
    buf arguments; /* the JSON text, as the model streamed it */
} llm_tool_call;

typedef struct llm_answer {
    buf text;
    llm_tool_call *calls;
    size_t call_count;
    long input_tokens, output_tokens;
    char *session_id; /* LLM_API_JSONRPC: the answer's Mcp-Session-Id header, or NULL */
    bool cut_short;  /* the model stopped at its output limit (finish_reason "length", stop_reason "max_tokens") */
    bool refused;    /* the model refused (finish_reason "content_filter", stop_reason "refusal") */
} llm_answer;

typedef struct llm_callbacks {
    void (*on_text)(void *ctx, const char *text, size_t len);
    /* A fragment of tool call number `index` (of this answer) arrived. */
    void (*on_tool_fragment)(void *ctx, size_t index, const llm_tool_call *call, const char *fragment, size_t len);
    /* A piece of the model's reasoning (OpenAI-compatible servers' reasoning_content or
     * reasoning, Anthropic's thinking_delta): shown, never part of the answer. May be NULL. */
    void (*on_reasoning)(void *ctx, const char *text, size_t len);
    /* LLM_API_JSONRPC: one message of the answer (its JSON text). */
    void (*on_message)(void *ctx, const char *json, size_t len);
    /* Once. error is NULL on success; answer is the request's, valid during the call, and
     * what the callee takes of it (buf_detach of its text) is the callee's. */
    void (*on_finish)(void *ctx, const char *error, llm_answer *answer);
} llm_callbacks;

typedef struct llm_client llm_client;
typedef struct llm_request llm_request;

/* Opens libcurl the first time (llm_curl.h): NULL, with err naming it, when
 * it cannot be loaded. */
llm_client *llm_client_new(uv_loop_t *loop, ecp_error *err);
/* Aborts every request without calling back; handles close on the loop's next turns. */
void llm_client_free(llm_client *self);

/* Starts a POST of body (JSON, copied). Callbacks run on the loop, never
 * before this returns. */
llm_request *llm_request_start(llm_client *self, const llm_endpoint *endpoint, const char *body,
                               const llm_callbacks *callbacks, void *ctx);
/* Aborts the transfer at once; no callback follows. */
void llm_request_cancel(llm_request *req);
/* Stops reading the answer (the provider's stream waits in its socket), or
 * goes on. Going on may call back before it returns. */
void llm_request_pause(llm_request *req, bool paused);

void llm_answer_free(llm_answer *answer);

#endif
