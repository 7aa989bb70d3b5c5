/* local: configs, connections, their queues of jobs, and the recent queries. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session/interface.h"
#include "store/interface.h"

struct db_conn {
    database_service *svc;
    db_config config;
    db_status status;
    char *error;
    int64_t connected_at;
    bool deleted;
    bool lost;                   /* the server ended the connection (SQLSTATE 08xxx, 57Pxx) */
    db_handle *handle;           /* touched only by the connection's running job */
    const db_engine *engine;
    ecp_job *running;
    ecp_job **queue;
    size_t queue_len, queue_cap;
    /* The open cursor's query and how many of its rows were served (job threads only). */
    char cursor_query[DB_ID_MAX];
    size_t cursor_pos;
};

typedef struct db_recent {
    char id[DB_ID_MAX];
    db_conn *conn;
    char *sql;
    db_value *params;
    size_t param_count;
    ecp_job *job; /* while queued or running */
} db_recent;

struct database_service {
    ecp_pool *pool;
    ecp_logger *log;
    ecp_job_set *jobs;
    store *store;
    session_service *session;
    char *data_dir, *workspace;
    db_conn **conns;
    size_t conn_count, conn_cap;
    db_recent recent[DB_RECENT_QUERIES];
    size_t recent_next;
    uint64_t next_id;
    struct secret_wait *secret_waits; /* connects waiting for their password */
    uv_mutex_t save_lock;
    uint64_t save_generation, saved_generation[2];
};

typedef struct secret_wait {
    ecp_job *job;
    db_op *op;
    database_service *svc; /* NULL once the service is gone: the answer is dropped */
    struct secret_wait *next;
} secret_wait;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const db_engine *engine_of(db_type type) { return type == DB_SQLITE ? &db_sqlite_engine : &db_postgres_engine; }

struct store *db_service_store(database_service *svc) { return svc->store; }

/* ----- configs on disk ------------------------------------------------------------------- */

static char *config_file(const database_service *svc, bool project)
{
    buf p = BUF_INIT;
    if (project)
        buf_appendf(&p, "%s/.ecpd/connections.json", svc->workspace);
    else
        buf_appendf(&p, "%s/connections.json", svc->data_dir);
    return buf_detach(&p);
}

/* A workspace's file is the repository's: it may be a symbolic link to
 * /dev/zero or to the server's own stdin, or a FIFO, and reading any of them
 * to its end would never end (or never begin). So only a regular file is
 * read, without waiting to open it, and only up to a size no list of
 * connections needs. */
#define CONFIG_FILE_MAX (4u << 20)

static bool read_config_text(database_service *svc, const char *path, buf *text)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= CONFIG_FILE_MAX;
    if (!ok)
        ecp_log(svc->log, ECP_LOG_WARN, "database: %s is not a regular file of at most %u bytes; not read", path,
                CONFIG_FILE_MAX);
    char chunk[8192];
    while (ok) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        if (text->len + (size_t)n > CONFIG_FILE_MAX) { /* it grew while read */
            ecp_log(svc->log, ECP_LOG_WARN, "database: %s grew past %u bytes; not read", path, CONFIG_FILE_MAX);
            ok = false;
            break;
        }
        buf_append(text, chunk, (size_t)n);
    }
    close(fd);
    return ok;
}

static void load_configs(database_service *svc, bool project)
{
    if (project && !svc->workspace)
        return;
    char *path = config_file(svc, project);
    buf text = BUF_INIT;
    if (!read_config_text(svc, path, &text)) {
        buf_free(&text);
        free(path);
        return;
    }
    db_config *list;
    size_t count = db_configs_parse(text.data ? text.data : "", text.len, project, &list);
    if (count == 0 && text.len > 0)
        ecp_log(svc->log, ECP_LOG_WARN, "database: %s holds no connection that could be read", path);
    for (size_t i = 0; i < count; i++) {
        if (db_conn_find(svc, list[i].id)) {
            db_config_clear(&list[i]);
            continue;
        }
        db_conn *c = xcalloc(1, sizeof *c);
        c->svc = svc;
        c->config = list[i];
        c->engine = engine_of(c->config.type);
        if (svc->conn_count == svc->conn_cap) {
            svc->conn_cap = svc->conn_cap ? svc->conn_cap * 2 : 8;
            svc->conns = xrealloc(svc->conns, svc->conn_cap * sizeof *svc->conns);
        }
        svc->conns[svc->conn_count++] = c;
    }
    free(list);
    buf_free(&text);
    free(path);
}

typedef struct save_job {
    database_service *svc; /* for the lock and the generations only */
    bool project;
    uint64_t generation;
    char *path, *text;
    int status;
    char message[256];
} save_job;

/* Writes text as the file at path through "<path>.tmp" and a rename, both
 * in the directory's descriptor; 0 or an errno. The project file's folder
 * (.ecpd) and the temporary name are the repository's to fill: a symbolic
 * link or a FIFO at the temporary name is removed, never written through or
 * waited on, and a .ecpd that is a symbolic link is not written into (it may
 * lead anywhere on the user's disk). The data directory is the user's own and
 * may be a link. */
static int write_config_file(const char *path, const char *text, bool project)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return EINVAL;
    char *dir = xstrndup(path, (size_t)(slash - path));
    const char *name = slash + 1;
    mkdir(dir, 0700);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (project ? O_NOFOLLOW : 0));
    int errnum = dfd < 0 ? (errno == ELOOP ? ENOTDIR : errno) : 0;
    free(dir);
    if (errnum)
        return errnum;
    buf tmp = BUF_INIT;
    buf_appendf(&tmp, "%s.tmp", name);
    if (unlinkat(dfd, tmp.data, 0) != 0 && errno != ENOENT)
        errnum = errno;
    int fd = errnum ? -1 : openat(dfd, tmp.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (!errnum && fd < 0)
        errnum = errno;
    size_t len = strlen(text);
    if (fd >= 0) {
        ssize_t w = write(fd, text, len);
        if (w != (ssize_t)len)
            errnum = w < 0 ? errno : EIO;
        else if (fsync(fd) != 0)
            errnum = errno;
        close(fd);
        if (!errnum && renameat(dfd, tmp.data, dfd, name) != 0)
            errnum = errno;
        if (errnum)
            unlinkat(dfd, tmp.data, 0);
    }
    buf_free(&tmp);
    close(dfd);
    return errnum;
}

static void save_work(ecp_job *job, unsigned item)
{
    (void)item;
    save_job *j = ecp_job_data(job);
    /* Saves may run in parallel: the lock orders them, and an older one that
     * comes late writes nothing over a newer one. */
    uv_mutex_lock(&j->svc->save_lock);
    if (j->generation < j->svc->saved_generation[j->project]) {
        uv_mutex_unlock(&j->svc->save_lock);
        return;
    }
    j->svc->saved_generation[j->project] = j->generation;
    int errnum = write_config_file(j->path, j->text, j->project);
    if (errnum) {
        j->status = -1;
        snprintf(j->message, sizeof j->message, "%s", strerror(errnum));
    }
    uv_mutex_unlock(&j->svc->save_lock);
}

static void save_done(ecp_job *job)
{
    save_job *j = ecp_job_data(job);
    if (j->status)
        ecp_log(ecp_pool_log(ecp_job_set_pool(ecp_job_owner(job))), ECP_LOG_ERROR,
                "database: could not save %s: %s", j->path, j->message);
}

static void save_free(void *data)
{
    save_job *j = data;
    free(j->path);
    free(j->text);
    free(j);
}

static const ecp_job_type save_type = {"database.saveConnections", ECP_LANE_SHORT, true, save_work, save_done,
                                       save_free};

static void save_configs(database_service *svc, bool project)
{
    if (project && !svc->workspace)
        return;
    db_config **list = xcalloc(svc->conn_count + 1, sizeof *list);
    size_t n = 0;
    for (size_t i = 0; i < svc->conn_count; i++)
        if (!svc->conns[i]->deleted && svc->conns[i]->config.project == project)
            list[n++] = &svc->conns[i]->config;
    save_job *j = xcalloc(1, sizeof *j);
    j->svc = svc;
    j->project = project;
    j->generation = ++svc->save_generation;
    j->path = config_file(svc, project);
    j->text = db_configs_render(list, n);
    free(list);
    ecp_job_start(ecp_job_new(svc->jobs, &save_type, j), 1);
}

/* ----- the service ------------------------------------------------------------------------ */

database_service *database_service_new(const database_service_options *o, ecp_error *err)
{
    if (!o || !o->pool || !o->store || !o->data_dir) {
        ecp_error_set(err, ECP_EINVAL, "the database service needs a pool, a store and a data directory");
        return NULL;
    }
    database_service *svc = xcalloc(1, sizeof *svc);
    svc->pool = o->pool;
    svc->log = o->log;
    svc->jobs = ecp_job_set_new(o->pool);
    uv_mutex_init(&svc->save_lock);
    svc->store = o->store;
    svc->session = o->session;
    svc->data_dir = xstrdup(o->data_dir);
    svc->workspace = o->workspace ? xstrdup(o->workspace) : NULL;
    db_history_init(svc->store);
    load_configs(svc, false);
    load_configs(svc, true);
    return svc;
}

static void conn_free(db_conn *c)
{
    free(c->queue);
    free(c->error);
    db_config_clear(&c->config);
    free(c);
}

void database_service_free(database_service *svc)
{
    if (!svc)
        return;
    /* Closing the set withdraws queued jobs and waits for running ones; their
     * data (ops) is freed without done, so the handles are closed below. */
    ecp_job_set_close(svc->jobs);
    for (struct secret_wait *w = svc->secret_waits; w; w = w->next)
        w->svc = NULL;
    for (size_t i = 0; i < svc->conn_count; i++) {
        db_conn *c = svc->conns[i];
        if (c->handle)
            c->engine->close(c->handle);
        conn_free(c);
    }
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++) {
        free(svc->recent[i].sql);
        db_values_free(svc->recent[i].params, svc->recent[i].param_count);
    }
    uv_mutex_destroy(&svc->save_lock);
    free(svc->conns);
    free(svc->data_dir);
    free(svc->workspace);
    free(svc);
}

void database_service_set_workspace(database_service *svc, const char *workspace)
{
    if ((workspace && svc->workspace && !strcmp(workspace, svc->workspace)) || (!workspace && !svc->workspace))
        return;
    free(svc->workspace);
    svc->workspace = workspace ? xstrdup(workspace) : NULL;
    load_configs(svc, true);
}

/* ----- connections ------------------------------------------------------------------------- */

db_conn *db_conn_find(database_service *svc, const char *id)
{
    for (size_t i = 0; i < svc->conn_count; i++)
        if (!svc->conns[i]->deleted && !strcmp(svc->conns[i]->config.id, id))
            return svc->conns[i];
    return NULL;
}

void db_conn_info_get(db_conn *c, db_conn_info *out)
{
    out->config = &c->config;
    out->status = c->status;
    out->error = c->error;
    out->connected_at = c->connected_at;
}

size_t db_conn_list(database_service *svc, int scope, db_conn **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < svc->conn_count; i++) {
        db_conn *c = svc->conns[i];
        if (c->deleted || (scope >= 0 && c->config.project != (scope == 1)))
            continue;
        if (n < cap)
            out[n] = c;
        n++;
    }
    return n;
}

/* Collapses ".", ".." and repeated slashes of an absolute path, without
 * looking at the file system. */
static char *normalize_path(const char *path)
{
    size_t n = strlen(path);
    char *out = xmalloc(n + 2);
    size_t len = 0;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        const char *end = strchr(p, '/');
        size_t part = end ? (size_t)(end - p) : strlen(p);
        bool dot = part == 1 && p[0] == '.', dot_dot = part == 2 && p[0] == '.' && p[1] == '.';
        if (dot_dot) {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the slash before the dropped part */
        } else if (part > 0 && !dot) {
            out[len++] = '/';
            memcpy(out + len, p, part);
            len += part;
        }
        p += part;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return out;
}

static bool path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The path with every symbolic link of its existing part resolved; the part
 * that does not exist yet (a file SQLite will create) is kept as written. */
static char *resolve_existing(const char *path)
{
    char *head = xstrdup(path);
    for (;;) {
        char *real = realpath(head, NULL);
        if (real) {
            buf out = BUF_INIT;
            buf_append_str(&out, real);
            if (strcmp(real, "/") == 0)
                buf_clear(&out);
            buf_append_str(&out, path + strlen(head));
            free(real);
            free(head);
            return buf_detach(&out);
        }
        char *slash = strrchr(head, '/');
        if (!slash || slash == head) {
            free(head);
            return xstrdup(path);
        }
        *slash = '\0';
    }
}

/* A relative SQLite path names a file of the workspace (of the server's
 * directory without one), and may not leave it, by ".." or through a
 * symbolic link: a project's connection must not read or create files
 * elsewhere. It is stored absolute, so that it means one file. An absolute
 * path is the user's explicit choice; one inside the workspace is still
 * checked for a symbolic link out of it, which may have appeared since. */
int db_config_confine_path(database_service *svc, db_config *config, ecp_error *err)
{
    if (config->type != DB_SQLITE || !config->path || !config->path[0] || !strcmp(config->path, ":memory:"))
        return 0;
    char cwd[4096];
    const char *base = svc->workspace ? svc->workspace : getcwd(cwd, sizeof cwd);
    if (!base)
        return ecp_error_set(err, ECP_EINVAL, "config.path: %s is relative and the server has no directory",
                             config->path);
    bool relative = config->path[0] != '/';
    buf joined = BUF_INIT;
    if (relative)
        buf_appendf(&joined, "%s/%s", base, config->path);
    else
        buf_append_str(&joined, config->path);
    char *path = normalize_path(joined.data), *root = normalize_path(base);
    buf_free(&joined);
    int status = 0;
    if (relative && !path_within(path, root)) {
        status = ecp_error_set(err, ECP_EINVAL, "config.path: %s leads outside the workspace %s", config->path, root);
    } else if (path_within(path, root)) {
        char *real_root = resolve_existing(root), *real_path = resolve_existing(path);
        if (!path_within(real_path, real_root))
            status = ecp_error_set(err, ECP_EINVAL,
                                   "config.path: %s leads outside the workspace %s through a symbolic link (to %s)",
                                   config->path, root, real_path);
        free(real_root);
        free(real_path);
    }
    if (status == 0 && relative) {
        free(config->path);
        config->path = path;
        path = NULL;
    }
    free(path);
    free(root);
    return status;
}

static int check_config(database_service *svc, const db_config *config, ecp_error *err)
{
    if (config->project && !svc->workspace)
        return ecp_error_set(err, ECP_EINVAL, "scope: \"project\" needs a workspace");
    return 0;
}

int db_conn_create(database_service *svc, const db_config *config, const char **id_out, ecp_error *err)
{
    int status = check_config(svc, config, err);
    if (status < 0)
        return status;
    if (config->id && db_conn_find(svc, config->id))
        return ecp_error_set(err, ECP_EEXIST, "id: a connection %s exists already", config->id);
    db_config confined;
    db_config_copy(&confined, config);
    if ((status = db_config_confine_path(svc, &confined, err)) < 0) {
        db_config_clear(&confined);
        return status;
    }
    db_conn *c = xcalloc(1, sizeof *c);
    c->svc = svc;
    c->config = confined;
    if (!c->config.id) {
        char id[DB_ID_MAX];
        snprintf(id, sizeof id, "conn-%llx-%llu", (unsigned long long)wall_ms(),
                 (unsigned long long)++svc->next_id);
        c->config.id = xstrdup(id);
    }
    c->engine = engine_of(c->config.type);
    if (svc->conn_count == svc->conn_cap) {
        svc->conn_cap = svc->conn_cap ? svc->conn_cap * 2 : 8;
        svc->conns = xrealloc(svc->conns, svc->conn_cap * sizeof *svc->conns);
    }
    svc->conns[svc->conn_count++] = c;
    save_configs(svc, c->config.project);
    *id_out = c->config.id;
    return 0;
}

int db_conn_update(database_service *svc, db_conn *c, const db_config *config, ecp_error *err)
{
    int status = check_config(svc, config, err);
    if (status < 0)
        return status;
    db_config copy;
    db_config_copy(&copy, config);
    if ((status = db_config_confine_path(svc, &copy, err)) < 0) {
        db_config_clear(&copy);
        return status;
    }
    if (config->type != c->config.type) {
        if (c->handle || c->running || c->queue_len) {
            db_config_clear(&copy);
            return ecp_error_set(err, ECP_EINVAL, "config.type: disconnect before changing the engine");
        }
        c->engine = engine_of(config->type);
    }
    bool was_project = c->config.project;
    free(copy.id);
    copy.id = c->config.id;
    c->config.id = NULL;
    db_config_clear(&c->config);
    c->config = copy;
    save_configs(svc, c->config.project);
    if (was_project != c->config.project)
        save_configs(svc, was_project);
    return 0;
}

/* ----- operations --------------------------------------------------------------------------- */

static void op_free(void *data);
static void op_work(ecp_job *job, unsigned item);
static void op_done(ecp_job *job);

static const ecp_job_type op_type = {"database.op", ECP_LANE_LONG, false, op_work, op_done, op_free};

db_op *db_op_new(database_service *svc, db_op_kind kind, db_conn *conn)
{
    db_op *op = xcalloc(1, sizeof *op);
    op->kind = kind;
    op->svc = svc;
    op->conn = conn;
    for (size_t i = 0; i < 5; i++)
        db_result_free(&op->parts[i]);
    return op;
}

void db_op_discard(db_op *op) { op_free(op); }

static void op_free(void *data)
{
    db_op *op = data;
    db_config_clear(&op->config);
    if (op->password) {
        memset(op->password, 0, strlen(op->password));
        free(op->password);
    }
    for (size_t i = 0; i < op->statement_count; i++) {
        db_statement *s = &op->statements[i];
        free(s->sql);
        free(s->label);
        db_values_free(s->params, s->param_count);
        db_result_free(&s->result);
    }
    free(op->statements);
    for (size_t i = 0; i < 5; i++)
        db_result_free(&op->parts[i]);
    free(op->schema);
    free(op->table);
    free(op->server_version);
    free(op);
}

static size_t setting_size(database_service *svc, const char *key, size_t fallback)
{
    if (!svc->session)
        return fallback;
    double v = session_setting_number(svc->session, key, (double)fallback);
    return v >= 1 && v < 1e12 ? (size_t)v : fallback;
}

static db_run make_run(ecp_job *job, const db_op *op)
{
    db_run run = {.job = job};
    if (op->query_timeout_ms > 0)
        run.deadline_ms = db_now_ms() + op->query_timeout_ms;
    run.page_size = op->page_size;
    run.max_bytes = op->max_bytes;
    return run;
}

static int run_statement(db_conn *c, db_statement *s, const db_run *run, bool keep_cursor)
{
    s->started_at = wall_ms();
    int64_t t0 = (int64_t)uv_hrtime();
    db_result_free(&s->result);
    s->status = c->engine->execute(c->handle, s->sql, s->params, s->param_count, 0, keep_cursor, run, &s->result,
                                   &s->fail);
    s->completed_at = wall_ms();
    s->duration_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
    if (s->status == 0 && keep_cursor && !s->result.done) {
        snprintf(c->cursor_query, sizeof c->cursor_query, "%s", s->query_id);
        c->cursor_pos = s->result.row_count;
    } else {
        c->cursor_query[0] = '\0';
    }
    return s->status;
}

static int schema_read(db_conn *c, db_op *op, const db_run *base)
{
    const db_schema_sql *q = c->engine->schema;
    db_run run = *base;
    run.keep_values = true;
    run.page_size = 100000;
    db_value args[2] = {{.kind = DB_TEXT}, {.kind = DB_TEXT}};
    args[0].s = op->schema ? op->schema : (char *)"";
    args[0].len = strlen(args[0].s);
    args[1].s = op->table ? op->table : (char *)"";
    args[1].len = strlen(args[1].s);
    const char *sqls[5] = {0};
    size_t nargs = 2;
    db_value flag = {.kind = DB_BOOL, .i = op->include_system};
    switch (op->kind) {
    case DB_OP_SCHEMAS: sqls[0] = q->schemas; nargs = 1; break;
    case DB_OP_TABLES: sqls[0] = q->tables; nargs = 1; break;
    case DB_OP_DESCRIBE:
        sqls[0] = q->table_info;
        sqls[1] = q->columns;
        sqls[2] = q->foreign_keys;
        sqls[3] = q->indexes;
        break;
    default: sqls[0] = q->table_info; sqls[1] = q->ddl; break;
    }
    for (size_t i = 0; i < 5 && sqls[i]; i++) {
        const db_value *p = op->kind == DB_OP_SCHEMAS ? &flag : args;
        int status = c->engine->execute(c->handle, sqls[i], p, nargs, 0, false, &run, &op->parts[i], &op->fail);
        if (status < 0)
            return status;
    }
    if (op->kind != DB_OP_SCHEMAS && op->kind != DB_OP_TABLES && op->parts[0].row_count == 0)
        return db_fail(&op->fail, ECP_ENOTFOUND, "table: no table %s.%s", op->schema, op->table);
    return 0;
}

static void op_work(ecp_job *job, unsigned item)
{
    (void)item;
    db_op *op = ecp_job_data(job);
    db_conn *c = op->conn;
    db_run run = make_run(job, op);
    if (op->status < 0) /* refused before it started (a missing secret) */
        return;
    if (ecp_job_cancelled(job)) {
        op->status = db_fail(&op->fail, ECP_ECANCELED, "cancelled");
        return;
    }
    switch (op->kind) {
    case DB_OP_TEST: {
        const db_engine *e = engine_of(op->config.type);
        db_handle *h = NULL;
        int64_t t0 = (int64_t)uv_hrtime();
        op->status = e->open(&op->config, op->password, &h, &op->fail);
        if (op->status == 0) {
            db_result r = {0};
            db_result_free(&r);
            op->status = e->execute(h, "SELECT 1", NULL, 0, 0, false, &run, &r, &op->fail);
            db_result_free(&r);
            op->latency_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
            op->server_version = xstrdup(e->server_version(h));
            e->close(h);
        }
        return;
    }
    case DB_OP_CONNECT:
        if (c->handle && !c->lost)
            return;
        if (c->handle) { /* reconnect: the old connection is gone */
            c->engine->close(c->handle);
            c->handle = NULL;
            c->cursor_query[0] = '\0';
        }
        op->status = c->engine->open(&op->config, op->password, &c->handle, &op->fail);
        if (op->status == 0)
            op->server_version = xstrdup(c->engine->server_version(c->handle));
        return;
    case DB_OP_DISCONNECT:
        if (c->handle)
            c->engine->close(c->handle);
        c->handle = NULL;
        c->cursor_query[0] = '\0';
        return;
    default: break;
    }
    if (!c->handle) {
        op->status = db_fail(&op->fail, ECP_ESTATE, "connectionId: %s is not connected", op->conn_id);
        return;
    }
    switch (op->kind) {
    case DB_OP_QUERY:
        op->status = run_statement(c, &op->statements[0], &run, true);
        if (op->status < 0)
            op->fail = op->statements[0].fail;
        break;
    case DB_OP_FETCH: {
        db_statement *s = &op->statements[0];
        run.page_size = op->limit;
        s->started_at = wall_ms();
        int64_t t0 = (int64_t)uv_hrtime();
        if (c->cursor_query[0] && !strcmp(c->cursor_query, op->fetch_query) && op->offset == c->cursor_pos) {
            s->status = c->engine->next_page(c->handle, &run, &s->result, &s->fail);
        } else {
            c->cursor_query[0] = '\0';
            s->status = c->engine->execute(c->handle, s->sql, s->params, s->param_count, op->offset, true, &run,
                                           &s->result, &s->fail);
        }
        if (s->status == 0 && !s->result.done) {
            snprintf(c->cursor_query, sizeof c->cursor_query, "%s", op->fetch_query);
            c->cursor_pos = op->offset + s->result.row_count;
        } else {
            c->cursor_query[0] = '\0';
        }
        if (s->status == 0 && s->result.done)
            s->result.total_rows = (int64_t)(op->offset + s->result.row_count);
        s->completed_at = wall_ms();
        s->duration_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
        op->status = s->status;
        if (s->status < 0)
            op->fail = s->fail;
        break;
    }
    case DB_OP_TRANSACTION:
        c->cursor_query[0] = '\0';
        op->status = c->engine->exec_simple(c->handle, "BEGIN", &run, &op->fail);
        if (op->status < 0)
            break;
        for (size_t i = 0; i < op->statement_count; i++) {
            if (run_statement(c, &op->statements[i], &run, false) < 0) {
                op->status = op->statements[i].status;
                op->fail = op->statements[i].fail;
                op->failed_index = i;
                db_run plain = {.page_size = 1, .max_bytes = 1};
                db_failure ignored;
                c->engine->exec_simple(c->handle, "ROLLBACK", &plain, &ignored);
                return;
            }
        }
        op->status = c->engine->exec_simple(c->handle, "COMMIT", &run, &op->fail);
        if (op->status < 0) {
            db_run plain = {.page_size = 1, .max_bytes = 1};
            db_failure ignored;
            c->engine->exec_simple(c->handle, "ROLLBACK", &plain, &ignored);
            op->failed_index = op->statement_count;
        } else {
            op->committed = true;
        }
        break;
    default:
        c->cursor_query[0] = '\0';
        op->status = schema_read(c, op, &run);
        break;
    }
}

static void start_next(db_conn *c);

static void recent_forget_job(database_service *svc, ecp_job *job)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
        if (svc->recent[i].job == job)
            svc->recent[i].job = NULL;
}

static void op_done(ecp_job *job)
{
    db_op *op = ecp_job_data(job);
    db_conn *c = op->conn;
    database_service *svc = op->svc;
    recent_forget_job(svc, job);
    if (c) {
        c->running = NULL;
        if (op->kind == DB_OP_CONNECT) {
            free(c->error);
            c->error = NULL;
            if (op->status == 0) {
                c->status = DB_CONNECTED;
                c->lost = false;
                c->connected_at = wall_ms();
            } else {
                c->status = DB_ERROR;
                c->error = xstrdup(op->fail.message);
            }
        } else if (op->kind == DB_OP_DISCONNECT) {
            c->status = DB_DISCONNECTED;
            c->lost = false;
            c->connected_at = 0;
        } else if (op->status < 0 &&
                   (!strncmp(op->fail.engine_code, "08", 2) || !strncmp(op->fail.engine_code, "57P", 3))) {
            /* The server went away: say so, and let connect open a new one. */
            c->lost = true;
            c->status = DB_ERROR;
            free(c->error);
            c->error = xstrdup(op->fail.message);
        }
    }
    if (op->kind == DB_OP_QUERY || op->kind == DB_OP_TRANSACTION)
        for (size_t i = 0; i < op->statement_count; i++)
            db_history_end(svc->store, &op->statements[i]);
    ecp_call *call = ecp_job_call(job);
    if (call && op->answer)
        op->answer(op, call);
    if (c)
        start_next(c);
}

static void start_next(db_conn *c)
{
    if (c->running)
        return;
    if (c->queue_len == 0) {
        if (c->deleted) {
            database_service *svc = c->svc;
            if (c->handle)
                c->engine->close(c->handle); /* no job can touch it any more */
            for (size_t i = 0; i < svc->conn_count; i++)
                if (svc->conns[i] == c) {
                    memmove(&svc->conns[i], &svc->conns[i + 1], (svc->conn_count - i - 1) * sizeof *svc->conns);
                    svc->conn_count--;
                    break;
                }
            for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
                if (svc->recent[i].conn == c)
                    svc->recent[i].conn = NULL;
            conn_free(c);
        }
        return;
    }
    c->running = c->queue[0];
    memmove(c->queue, c->queue + 1, --c->queue_len * sizeof *c->queue);
    ecp_job_start(c->running, 1);
}

static void enqueue(db_conn *c, ecp_job *job)
{
    if (c->queue_len == c->queue_cap) {
        c->queue_cap = c->queue_cap ? c->queue_cap * 2 : 4;
        c->queue = xrealloc(c->queue, c->queue_cap * sizeof *c->queue);
    }
    c->queue[c->queue_len++] = job;
    start_next(c);
}

static void remember_query(database_service *svc, db_op *op, db_statement *s, ecp_job *job)
{
    snprintf(s->query_id, sizeof s->query_id, "q-%llx-%llu", (unsigned long long)wall_ms(),
             (unsigned long long)++svc->next_id);
    s->started_at = wall_ms();
    db_recent *r = &svc->recent[svc->recent_next++ % DB_RECENT_QUERIES];
    free(r->sql);
    db_values_free(r->params, r->param_count);
    snprintf(r->id, sizeof r->id, "%s", s->query_id);
    r->conn = op->conn;
    r->sql = xstrdup(s->sql);
    r->params = db_values_copy(s->params, s->param_count);
    r->param_count = s->param_count;
    r->job = job;
    db_history_begin(svc->store, s, op->conn->config.id);
}


static void wait_unlink(database_service *svc, secret_wait *w)
{
    for (secret_wait **p = &svc->secret_waits; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void got_secret(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                       const session_secret_info *info)
{
    (void)err;
    (void)info;
    secret_wait *w = ctx;
    if (!w->svc) { /* the service was freed while the secret was read; its set freed the job */
        free(w);
        return;
    }
    wait_unlink(w->svc, w);
    db_op *op = w->op;
    if (status == 0 && value)
        op->password = xstrndup(value, len);
    else
        /* Refused before it reaches the engine: the job sees the failure and says it. */
        op->status = db_fail(&op->fail, ECP_ENOTFOUND, "passwordSecret: no secret named %s",
                             op->config.password_secret);
    if (op->conn)
        enqueue(op->conn, w->job);
    else
        ecp_job_start(w->job, 1);
    free(w);
}

void db_op_submit(db_op *op, ecp_call *call, db_answer_fn answer, void *answer_ctx)
{
    database_service *svc = op->svc;
    op->answer = answer;
    op->answer_ctx = answer_ctx;
    /* Settings live on the loop: the job gets their values, never the service. */
    op->page_size = setting_size(svc, "database.pageSize", DB_DEFAULT_PAGE_SIZE);
    op->max_bytes = setting_size(svc, "database.maxResultBytes", DB_DEFAULT_MAX_RESULT_BYTES);
    const db_config *cfg = op->conn ? &op->conn->config : &op->config;
    op->query_timeout_ms = cfg->query_timeout_ms;
    snprintf(op->conn_id, sizeof op->conn_id, "%s", cfg->id ? cfg->id : "");
    ecp_job *job = ecp_job_new(svc->jobs, &op_type, op);
    ecp_job_serve(job, call);
    if (op->kind == DB_OP_QUERY || op->kind == DB_OP_TRANSACTION)
        for (size_t i = 0; i < op->statement_count; i++)
            remember_query(svc, op, &op->statements[i], i == 0 ? job : NULL);
    if (op->kind == DB_OP_FETCH)
        for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
            if (!strcmp(svc->recent[i].id, op->fetch_query))
                svc->recent[i].job = job;
    if (op->kind == DB_OP_CONNECT) {
        db_config_clear(&op->config);
        db_config_copy(&op->config, &op->conn->config);
        op->conn->status = DB_CONNECTING;
    }
    if (op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) {
        /* Again at connect: a config read from a file, or a symbolic link made since it was saved. */
        ecp_error err = {0};
        if (db_config_confine_path(svc, &op->config, &err) < 0)
            op->status = db_fail(&op->fail, err.status, "%s", err.message);
    }
    if ((op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) && op->status == 0 && op->config.project &&
        op->config.password_secret && svc->session && !session_workspace_trusted(svc->session))
        /* The workspace's file names the host as well as the secret: an untrusted repository would be handed
         * the user's password by the first connect. */
        op->status = db_fail(&op->fail, ECP_EACCES,
                             "passwordSecret: a project connection gets no secret until the workspace is trusted "
                             "(workspace/trust)");
    if (op->status == 0 && (op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) && op->config.password_secret &&
        svc->session) {
        secret_wait *w = xcalloc(1, sizeof *w);
        w->job = job;
        w->op = op;
        w->svc = svc;
        w->next = svc->secret_waits;
        svc->secret_waits = w;
        session_secret_get(svc->session, op->config.password_secret, got_secret, w);
        return;
    }
    if (op->conn)
        enqueue(op->conn, job);
    else
        ecp_job_start(job, 1);
}

bool db_query_cancel(database_service *svc, const char *query_id, bool *running)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++) {
        db_recent *r = &svc->recent[i];
        if (!r->id[0] || strcmp(r->id, query_id))
            continue;
        *running = r->job != NULL;
        if (r->job) {
            ecp_job_cancel(r->job);
            /* The handle is alive while the connection's job runs: close is queued behind it. */
            if (r->conn && r->conn->running == r->job && r->conn->handle)
                r->conn->engine->interrupt(r->conn->handle);
        }
        return true;
    }
    return false;
}

db_conn *db_query_conn(database_service *svc, const char *query_id)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
        if (svc->recent[i].id[0] && !strcmp(svc->recent[i].id, query_id))
            return svc->recent[i].conn;
    return NULL;
}

/* A fetch re-runs its query's statement when the cursor moved on: it needs the sql and params. */
bool db_query_copy(database_service *svc, const char *query_id, db_statement *out)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++) {
        db_recent *r = &svc->recent[i];
        if (r->id[0] && !strcmp(r->id, query_id) && r->conn) {
            out->sql = xstrdup(r->sql);
            out->params = db_values_copy(r->params, r->param_count);
            out->param_count = r->param_count;
            snprintf(out->query_id, sizeof out->query_id, "%s", r->id);
            return true;
        }
    }
    return false;
}

void db_conn_delete(database_service *svc, db_conn *c)
{
    bool project = c->config.project;
    c->deleted = true;
    save_configs(svc, project);
    start_next(c);
}
