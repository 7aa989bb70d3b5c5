/* store: the server's own database, one SQLite file in the data directory.
 *
 * Everything the server keeps between runs (settings set by clients, key
 * bindings, saved sessions, secrets, the journal of unsaved text) lives in
 * one SQLite database, `<data-dir>/state.db`, opened once by the composition
 * root and lent to the services that persist anything.
 *
 * What it promises:
 * - Crash safety: the database runs in WAL mode with foreign keys on; every
 *   operation a service submits runs in its own transaction when it asks for
 *   one, so a kill at any moment leaves either the old or the new state.
 * - The schema is versioned with `PRAGMA user_version`; numbered migrations
 *   run at open, each in its own transaction, so a server never sees a
 *   half-migrated database, and two servers opening one file at once migrate
 *   it once.
 * - Nothing blocks the loop: submitted operations run on one thread of the
 *   store's own, strictly in the order they were submitted (a read submitted
 *   after a write sees it), and their completions come back on the loop in the
 *   same order.
 * - Several servers may share one data directory: SQLite's locks and a busy
 *   timeout serialise them; none corrupts the file.
 * - A database that cannot be used (corrupt, locked past the timeout, on a
 *   read-only or full disk) is reported once in the log and replaced by an
 *   empty database in memory with the same schema: the server keeps working,
 *   store_persistent() answers false, and the file is left untouched for a
 *   person to look at. When the file can still be read, its contents are
 *   copied into the memory database first, so nothing saved before is lost
 *   from view.
 * - Damage is looked for before anything is written: a header that is not
 *   SQLite's, a failing PRAGMA quick_check, or a WAL that SQLite would
 *   silently cut short (it stops reading at the first frame whose checksum
 *   fails). A damaged file and its WAL are also copied beside it as
 *   state.db.damaged-<UTC time> and ...-wal.
 *
 * Threads: store_open, store_close, store_submit, store_flush and the
 * accessors run on the loop thread; an operation's `work` runs on the store's
 * thread and may touch only its own data and the sqlite3 handle it is given.
 */
#ifndef ECPD_STORE_INTERFACE_H
#define ECPD_STORE_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>
#include <uv.h>

#include "error.h"
#include "log.h"

typedef struct store store;

/* How long a statement waits for another process's lock before it fails. */
#define STORE_BUSY_TIMEOUT_MS 5000

typedef struct store_options {
    const char *data_dir;  /* required: the database is <data_dir>/state.db */
    int busy_timeout_ms;   /* 0: STORE_BUSY_TIMEOUT_MS */
    bool memory_only;      /* do not touch the disk at all (tests, embedders) */
} store_options;

/* Opens (creating and migrating) the database on `loop`. log is borrowed and
 * must outlive the store. Never fails for a bad database (see above); returns
 * NULL only when not even a memory database can be made, with err filled. */
store *store_open(uv_loop_t *loop, ecp_logger *log, const store_options *options, ecp_error *err);

/* Runs every submitted operation to its end (completions included), stops the
 * store's thread and closes the database. Handles it closes are released by
 * the loop's close callbacks, so the loop should run once more afterwards. */
void store_close(store *self);

/* False when the database lives in memory only (see above). */
bool store_persistent(const store *self);

/* The database file's path (even when it could not be used). */
const char *store_path(const store *self);

/* The schema version the database is at after the migrations. */
int store_schema_version(const store *self);

/* Closes SQLite's dangerous corners on a connection the server opens, before
 * any SQL runs on it: defensive mode (no writes to the schema tables or
 * shadow tables, no corrupting PRAGMAs), no two-argument fts3_tokenizer
 * (which takes a function pointer as a blob), no trust in functions named by
 * a schema, and no extension loading. Every connection gets it: user
 * databases, the store, and the connections it reads or copies through.
 * Returns SQLITE_OK or the first failure. Any thread. */
int store_harden_connection(sqlite3 *db);

/* ----- operations ------------------------------------------------------------------ */

/* What one submitted operation does. Usually a static const per kind. */
typedef struct store_op_type {
    const char *name; /* for logs: "settings.put" */
    /* Wrap work in BEGIN IMMEDIATE ... COMMIT (ROLLBACK when it fails). */
    bool transaction;
    /* On the store's thread: returns 0 or a negative ECP status with err set.
     * Never logs values it carries: messages name what failed, not the data. */
    int (*work)(sqlite3 *db, void *data, ecp_error *err);
    /* On the loop, after work, in submission order. May be NULL. A failure
     * has already been logged by the store when done is NULL. */
    void (*done)(void *data, int status, const ecp_error *err);
    /* Releases data on the loop, last (NULL: free()). */
    void (*free_data)(void *data);
} store_op_type;

/* Queues an operation owning `data`. It runs after every operation submitted
 * before it. */
void store_submit(store *self, const store_op_type *type, void *data);

/* Waits (on the loop thread) until every operation submitted so far has run,
 * then runs their completions. For teardown, and for start-up reads that the
 * server needs before it serves anyone. */
void store_flush(store *self);

/* Operations submitted and not yet completed. */
size_t store_pending(const store *self);

/* ----- helpers for work functions (store thread) ------------------------------------ */

/* Maps a SQLite result code to a status and a message "<what>: <sqlite's
 * reason>" (ECP_EIO, ECP_ETOOBIG for a full disk, ECP_EREADONLY, ...). */
int store_error(sqlite3 *db, int rc, ecp_error *err, const char *what);

/* Runs one or more statements without results. */
int store_exec(sqlite3 *db, const char *sql, ecp_error *err);

/* Prepares sql; on failure fills err and returns the status. */
int store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, ecp_error *err);

#endif
