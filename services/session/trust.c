/* trust: the folders the user trusts, kept in the store.
 *
 * A workspace's own files must not decide what runs on the user's machine:
 * what a cloned repository's .ecpd/settings.json says about programs and
 * permissions applies only once the user trusts the folder. The list lives
 * in the store (the user's data directory), never in a workspace, so a
 * repository cannot trust itself; the store's transactions and locks let
 * several servers on one data directory share it. Paths are compared as real
 * paths, so a link to a folder is that folder and "/a/b" is not beneath
 * "/a/bc".
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* ----- paths ---------------------------------------------------------------------------------- */

/* The real path of the folder at path (malloc'd), or a status with err saying why not. */
static int real_folder(const char *path, char **out, ecp_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return ecp_error_set(err, ECP_ENOTFOUND, "No such folder: %s", path);
        return ecp_error_set(err, ECP_EACCES, "Cannot look at %s: %s", path, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return ecp_error_set(err, ECP_ENOTDIR, "Not a folder: %s", path);
    char *real = realpath(path, NULL);
    if (!real)
        return ecp_error_set(err, ECP_EACCES, "Cannot resolve %s: %s", path, strerror(errno));
    *out = real;
    return 0;
}

/* Whether folder is ancestor itself or lies beneath it (both real paths). */
static bool covers(const char *ancestor, const char *folder)
{
    size_t n = strlen(ancestor);
    if (strncmp(ancestor, folder, n) != 0)
        return false;
    return folder[n] == '\0' || folder[n] == '/' || (n > 0 && ancestor[n - 1] == '/');
}

static bool real_path_trusted(const session_service *self, const char *real)
{
    if (self->flag_trusted && covers(self->flag_trusted, real))
        return true;
    for (size_t i = 0; i < self->trusted_count; i++)
        if (covers(self->trusted_folders[i], real))
            return true;
    return false;
}

bool session__path_trusted(session_service *self, const char *path)
{
    if (!path)
        return false;
    char *real = realpath(path, NULL);
    bool trusted = real && real_path_trusted(self, real);
    free(real);
    return trusted;
}

/* ----- the store ---------------------------------------------------------------------------------- */

typedef struct trust_load_op {
    session_service *svc;
} trust_load_op;

static void add_folder(session_service *self, const char *real)
{
    self->trusted_folders = xrealloc(self->trusted_folders, (self->trusted_count + 1) * sizeof *self->trusted_folders);
    self->trusted_folders[self->trusted_count++] = xstrdup(real);
}

static int load_work(sqlite3 *db, void *data, ecp_error *err)
{
    trust_load_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db, "SELECT path FROM trusted_folders", &st, err);
    if (status < 0)
        return status;
    int rc;
    /* The service is not serving yet: its list is ours to fill. */
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *path = (const char *)sqlite3_column_text(st, 0);
        if (path && path[0] == '/')
            add_folder(op->svc, path);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "reading the trusted folders");
}

static const store_op_type load_type = {.name = "trust.load", .work = load_work};

typedef struct trust_put_op {
    char *path;
    bool trusted; /* false: the row goes */
    int64_t at;
} trust_put_op;

static int put_work(sqlite3 *db, void *data, ecp_error *err)
{
    trust_put_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db,
                               op->trusted ? "INSERT OR REPLACE INTO trusted_folders (path, trusted_at) VALUES (?1, ?2)"
                                           : "DELETE FROM trusted_folders WHERE path = ?1",
                               &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->path, -1, SQLITE_STATIC);
    if (op->trusted)
        sqlite3_bind_int64(st, 2, op->at);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "saving a folder's trust");
}

static void put_free(void *data)
{
    trust_put_op *op = data;
    free(op->path);
    free(op);
}

static const store_op_type put_type = {
    .name = "trust.put", .transaction = true, .work = put_work, .free_data = put_free,
};

static void persist(session_service *self, const char *real, bool trusted)
{
    trust_put_op *op = xcalloc(1, sizeof *op);
    op->path = xstrdup(real);
    op->trusted = trusted;
    op->at = session__now_ms();
    store_submit(self->store, &put_type, op);
}

/* ----- the interface ------------------------------------------------------------------------------- */

int session_trust_query(session_service *self, const char *path, bool *trusted, ecp_error *err)
{
    char *real;
    int status = real_folder(path, &real, err);
    if (status < 0)
        return status;
    *trusted = real_path_trusted(self, real);
    free(real);
    return 0;
}

bool session_workspace_trusted(session_service *self) { return session__path_trusted(self, self->workspace); }

int session_trust_set(session_service *self, const char *path, bool trust, bool *trusted, ecp_error *err)
{
    char *real;
    int status = real_folder(path, &real, err);
    if (status < 0)
        return status;
    bool changed = false;
    if (trust) {
        bool listed = false;
        for (size_t i = 0; i < self->trusted_count && !listed; i++)
            listed = strcmp(self->trusted_folders[i], real) == 0;
        if (!listed) {
            add_folder(self, real);
            persist(self, real, true);
            changed = true;
        }
    } else {
        /* the folder's own trust and that of the folders beneath it; an ancestor's stays */
        size_t kept = 0;
        for (size_t i = 0; i < self->trusted_count; i++) {
            if (covers(real, self->trusted_folders[i])) {
                persist(self, self->trusted_folders[i], false);
                free(self->trusted_folders[i]);
                changed = true;
            } else {
                self->trusted_folders[kept++] = self->trusted_folders[i];
            }
        }
        self->trusted_count = kept;
    }
    bool now = real_path_trusted(self, real);
    if (trusted)
        *trusted = now;
    if (changed) {
        session__settings_trust_changed(self);
        session__emit_trust(self, real, now);
    }
    free(real);
    return 0;
}

/* ----- lifetime ------------------------------------------------------------------------------------- */

int session__trust_init(session_service *self, ecp_error *err)
{
    (void)err;
    trust_load_op *op = xcalloc(1, sizeof *op);
    op->svc = self;
    store_submit(self->store, &load_type, op);
    store_flush(self->store);
    return 0;
}

void session__trust_free(session_service *self)
{
    for (size_t i = 0; i < self->trusted_count; i++)
        free(self->trusted_folders[i]);
    free(self->trusted_folders);
    self->trusted_folders = NULL;
    self->trusted_count = 0;
    free_each(self->layer_workspace, self->noticed_workspace, self->flag_trusted);
    self->flag_trusted = NULL;
    self->layer_workspace = self->noticed_workspace = NULL;
}
