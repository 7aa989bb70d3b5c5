/* database: SQL databases a person works with from the editor.
 *
 * A connection is a saved config (a name, an engine, where the database is)
 * and, once connected, one open engine connection. Two engines serve the same
 * operations: SQLite, embedded (`type:"sqlite"`, `path` a file created on
 * demand or `:memory:`), and PostgreSQL through libpq (`type:"postgres"`).
 *
 * What it promises:
 * - Nothing blocks the loop. Every operation on an engine connection (opening
 *   it, a query, a page of rows, a schema read, closing it) runs as a job on
 *   the long lane, and the jobs of one connection run one at a time in the
 *   order they were asked for: an engine connection is never used by two
 *   threads at once.
 * - Parameters are always bound by the engine, never spliced into SQL.
 * - A query answers its first page (`database.pageSize` rows, 1,000 unless a
 *   setting says otherwise) and keeps its cursor open on the connection, so the
 *   next page is the next rows; a page asked for out of order, or after
 *   another query used the connection, re-runs the statement and skips to the
 *   offset. No page holds more than `database.maxResultBytes` of rendered rows
 *   (16 MiB unless the setting says otherwise): the server never holds more
 *   than one page per connection.
 * - A query stops when asked (database_query_cancel or the call's
 *   $/cancelRequest), when its queryTimeout passes, or when the service shuts
 *   down: SQLite is interrupted from its progress handler (and
 *   sqlite3_interrupt), PostgreSQL through PQcancel.
 * - readOnly is the engine's: SQLITE_OPEN_READONLY, PostgreSQL's
 *   default_transaction_read_only. No SQL is parsed to guess what it does.
 * - A password is never stored, logged or returned: a config names a secret
 *   (`passwordSecret`) of the session service, read when connecting.
 * - Configs persist as JSON: global ones in `<data-dir>/connections.json`,
 *   project ones in `<workspace>/.ecpd/connections.json`. History and
 *   favourites live in the server's store (table `database_history`).
 *
 * PostgreSQL runs libpq's asynchronous calls inside the job (PQconnectStart /
 * PQconnectPoll, PQsendQueryParams in single-row mode), waiting on PQsocket
 * with poll() in slices of 50 ms, so the job notices a cancel or a deadline
 * within one slice and sends PQcancel itself. This keeps both engines on one
 * model (a connection's work is a job) instead of a second one driven by
 * uv_poll_t on the loop.
 *
 * Threads: every function here runs on the loop thread.
 */
#ifndef ECPD_DATABASE_INTERFACE_H
#define ECPD_DATABASE_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "job.h"
#include "log.h"

struct store;
struct session_service;

typedef struct database_service database_service;

typedef struct database_service_options {
    ecp_pool *pool;                   /* required; borrowed */
    ecp_logger *log;                  /* may be NULL; borrowed */
    struct store *store;              /* required (history, favourites); borrowed */
    struct session_service *session;  /* may be NULL (no secrets, default settings); borrowed */
    const char *data_dir;             /* required (global configs); copied */
    const char *workspace;            /* may be NULL (no project configs); copied */
} database_service_options;

/* Loads the saved configs (a file that does not parse is logged and left
 * alone). NULL with err filled when data_dir is missing. */
database_service *database_service_new(const database_service_options *options, ecp_error *err);

/* Cancels every query, closes every engine connection, releases everything. */
void database_service_free(database_service *self);

/* The workspace changed: project configs are read from the new one. */
void database_service_set_workspace(database_service *self, const char *workspace);

#endif
