/* test_client: an in-process client of a real ecpd server.
 *
 * A test_server is the same server object `ecpd` runs (same router, same
 * services, same notification bus) with no process and no socket; each
 * test_client is one connection to it, so a test can open several and watch
 * one client's edits reach another. Requests run the server's event loop until
 * their response arrives, so deferred work (thread pool, child processes)
 * completes as it would in production. Notifications are captured in arrival
 * order per client.
 *
 * Results and errors come back as JSON text; test_json_* reads fields from that
 * text by path ("info.lineCount", "lines[2].text", "error.data.uri").
 * Strings returned by a `char *` function are the caller's to free(); strings
 * returned as `const char *` belong to the client and live until the next
 * clear or the client's end.
 */
#ifndef ECPD_TEST_CLIENT_H
#define ECPD_TEST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct test_server test_server;
typedef struct test_client test_client;

typedef struct test_server_options {
    const char *workspace; /* --workspace; NULL for none */
    const char *data_dir;  /* --data-dir; NULL makes a fresh temporary one, removed at the end */
    const char *config;    /* --config; NULL for none */
    FILE *log;             /* where the server logs (at debug level); NULL: stderr at error level */
} test_server_options;

/* options may be NULL. Aborts the test on failure. */
test_server *test_server_new(const test_server_options *options);
/* Disconnects every client and destroys the server. */
void test_server_free(test_server *server);

/* Adds an adapter of the test's own (a slow method to cancel, say). */
struct ecp_adapter;
void test_server_register(test_server *server, const struct ecp_adapter *adapter);
/* The server's notification bus, for such an adapter to emit on. */
struct ecp_bus *test_server_bus(test_server *server);

/* The server's libuv loop, for tests that need to run it themselves. */
struct uv_loop_s *test_server_loop(test_server *server);

test_client *test_client_connect(test_server *server);
/* Disconnects (as a client that goes away would): its pending requests are
 * cancelled and its watches dropped. */
void test_client_disconnect(test_client *client);

/* Sends a request and waits (running the loop, up to 30 s) for its response.
 * params_json may be NULL (no params member).
 * Returns 0 with *out the result JSON, or the error's code (non-zero) with
 * *out the whole error object JSON ({"code":..,"message":..,"data":..}).
 * out may be NULL. A timeout returns INT32_MIN with *out NULL. */
int test_client_request(test_client *client, const char *method, const char *params_json, char **out);

/* Like test_client_request but formats params with printf. */
int test_client_requestf(test_client *client, const char *method, char **out, const char *params_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sends `message` as given (any bytes, a batch, a notification; a newline
 * is added for newline framing unless it starts with a Content-Length
 * header) and returns the next response written to this client, or NULL if
 * none arrives within timeout_ms (a notification gets none).
 * Note that the server frames nothing for a client before its first message
 * has shown which framing it speaks. */
char *test_client_request_raw(test_client *client, const char *message, int timeout_ms);

/* Sends a notification (no id). */
void test_client_notify(test_client *client, const char *method, const char *params_json);

/* Starts a request without waiting; returns its id. test_client_wait_response
 * then waits for that id's response (same return convention as request). */
int64_t test_client_send(test_client *client, const char *method, const char *params_json);
int test_client_wait_response(test_client *client, int64_t id, int timeout_ms, char **out);

/* ----- captured notifications ------------------------------------------------
 * A filter is an exact method name, or a prefix ending in '/' or '*'
 * ("document/", "file*"), or NULL or "*" for every notification. */

size_t test_client_notification_count(test_client *client, const char *filter);
/* The params JSON of the index-th notification that matches filter, or NULL. */
const char *test_client_notification(test_client *client, const char *filter, size_t index);
/* Runs the loop until at least `count` notifications match filter. Returns
 * true if they arrived within timeout_ms. */
bool test_client_wait_notifications(test_client *client, const char *filter, size_t count, int timeout_ms);
/* The methods of every captured notification, in order, joined with ',':
 * "document/didOpen,document/didChange". For asserting order. */
const char *test_client_notification_log(test_client *client);
/* Notifications and responses together, in the order they arrived: methods
 * for notifications, "#<id>" for the response to request <id>. Shows that a
 * request's notifications came before its response. Cleared with the
 * notifications. */
const char *test_client_event_log(test_client *client);
void test_client_clear_notifications(test_client *client);

/* True once the server asked to end the process (`exit`), with its code. */
bool test_server_exit_requested(test_server *server, int *code);

/* Runs the server loop for about ms milliseconds (to let time pass). */
void test_server_run_for(test_server *server, int ms);

/* ----- reading JSON text by path -------------------------------------------- */

/* The raw JSON of the value at path, malloc'd; NULL if absent. "" is the root.
 * A key holding a dot is written with "\\." ("settings.editor\\.fontSize"). */
char *test_json_raw(const char *json, const char *path);
/* Decoded string at path, malloc'd; NULL if absent or not a string. */
char *test_json_string(const char *json, const char *path);
bool test_json_int(const char *json, const char *path, int64_t *out);
bool test_json_bool(const char *json, const char *path, bool *out);
/* Array length or object member count at path; -1 if absent. */
long test_json_length(const char *json, const char *path);
/* True when the value at path exists (null counts as existing). */
bool test_json_has(const char *json, const char *path);

/* ----- method tables -------------------------------------------------------- */

/* A method as the catalogue names it, with its params in order: "name"
 * required, "name?" optional; none for a method that takes nothing. */
typedef struct test_method_signature {
    const char *name;
    const char *params[8];
} test_method_signature;

/* Checks an ecp/methods result: it lists exactly these methods, each with a
 * params signature that carries every one of its params ("{}" for none).
 * NULL when it does, else what is wrong (malloc'd). */
char *test_methods_mismatch(const char *methods_json, const test_method_signature *want, size_t count);

#endif
