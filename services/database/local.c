/* local: the service, its settings, the saved configs and the connections (their jobs are in ops.c). */
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
#include "uri.h"

int64_t db_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const db_engine *db_engine_of(database_engine_type type)
{
    return type == DATABASE_SQLITE ? &db_sqlite_engine : &db_postgres_engine;
}


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
    int status = ok ? buf_read_fd(text, fd, CONFIG_FILE_MAX) : 0;
    if (status == ECP_ETOOBIG) /* it grew while read */
        ecp_log(svc->log, ECP_LOG_WARN, "database: %s grew past %u bytes; not read", path, CONFIG_FILE_MAX);
    close(fd);
    return ok && status == 0;
}

static void conn_add(database_service *svc, db_conn *c)
{
    if (svc->conn_count == svc->conn_cap) {
        svc->conn_cap = svc->conn_cap ? svc->conn_cap * 2 : 8;
        svc->conns = xrealloc(svc->conns, svc->conn_cap * sizeof *svc->conns);
    }
    svc->conns[svc->conn_count++] = c;
    ecp_map_set(svc->live, c->config.id, c, NULL);
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
    database_config *list;
    size_t count = db_configs_parse(text.data ? text.data : "", text.len, project, &list);
    if (count == 0 && text.len > 0)
        ecp_log(svc->log, ECP_LOG_WARN, "database: %s holds no connection that could be read", path);
    for (size_t i = 0; i < count; i++) {
        if (db_conn_find(svc, list[i].id)) {
            database_config_clear(&list[i]);
            continue;
        }
        db_conn *c = xcalloc(1, sizeof *c);
        c->svc = svc;
        c->config = list[i];
        c->engine = db_engine_of(c->config.type);
        conn_add(svc, c);
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
    ecp_logger *log;
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

static int save_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    save_job *j = payload;
    /* Saves may run in parallel: the lock orders them, and an older one that
     * comes late writes nothing over a newer one. */
    uv_mutex_lock(&j->svc->save_lock);
    if (j->generation < j->svc->saved_generation[j->project]) {
        uv_mutex_unlock(&j->svc->save_lock);
        return 0;
    }
    j->svc->saved_generation[j->project] = j->generation;
    int errnum = write_config_file(j->path, j->text, j->project);
    uv_mutex_unlock(&j->svc->save_lock);
    return errnum ? ecp_error_set(err, ECP_EIO, "%s", strerror(errnum)) : 0;
}

static void save_done(void *payload, int status, const ecp_error *err)
{
    save_job *j = payload;
    if (status)
        ecp_log(j->log, ECP_LOG_ERROR, "database: could not save %s: %s", j->path, err->message);
}

static void save_release(void *payload)
{
    save_job *j = payload;
    free(j->path);
    free(j->text);
}

static const ecp_job_kind save_kind =
    ECP_JOB_KIND("database.saveConnections", ECP_LANE_SHORT, true, save_work, save_done, save_release);

void db_configs_save(database_service *svc, bool project)
{
    if (project && !svc->workspace)
        return;
    database_config **list = xcalloc(svc->conn_count + 1, sizeof *list);
    size_t n = 0;
    for (size_t i = 0; i < svc->conn_count; i++)
        if (!svc->conns[i]->deleted && svc->conns[i]->config.project == project)
            list[n++] = &svc->conns[i]->config;
    save_job j = {.svc = svc, .project = project, .generation = ++svc->save_generation,
                  .path = config_file(svc, project), .text = db_configs_render(list, n),
                  .log = ecp_pool_log(ecp_job_set_pool(svc->jobs))};
    free(list);
    ecp_job_run(svc->jobs, &save_kind, &j, sizeof j, NULL);
}

/* ----- settings ----------------------------------------------------------------------------- */

/* A size setting's value: a positive number below 1e12, else the default. */
static size_t size_value(const char *value_json, size_t fallback)
{
    if (!value_json)
        return fallback;
    char *end;
    double v = strtod(value_json, &end);
    return end != value_json && v >= 1 && v < 1e12 ? (size_t)v : fallback;
}

static void setting_changed(void *ctx, const char *key, const char *value_json)
{
    database_service *svc = ctx;
    if (!strcmp(key, "database.pageSize"))
        svc->page_size = size_value(value_json, DB_DEFAULT_PAGE_SIZE);
    else if (!strcmp(key, "database.maxResultBytes"))
        svc->max_bytes = size_value(value_json, DB_DEFAULT_MAX_RESULT_BYTES);
}

static const session_listener settings_listener = {.on_setting = setting_changed};

static void follow_settings(database_service *svc)
{
    svc->page_size = DB_DEFAULT_PAGE_SIZE;
    svc->max_bytes = DB_DEFAULT_MAX_RESULT_BYTES;
    if (!svc->session)
        return;
    double v = session_setting_number(svc->session, "database.pageSize", DB_DEFAULT_PAGE_SIZE);
    svc->page_size = v >= 1 && v < 1e12 ? (size_t)v : DB_DEFAULT_PAGE_SIZE;
    v = session_setting_number(svc->session, "database.maxResultBytes", DB_DEFAULT_MAX_RESULT_BYTES);
    svc->max_bytes = v >= 1 && v < 1e12 ? (size_t)v : DB_DEFAULT_MAX_RESULT_BYTES;
    session_subscribe(svc->session, &settings_listener, svc);
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
    svc->live = ecp_map_new();
    uv_mutex_init(&svc->save_lock);
    svc->store = o->store;
    svc->session = o->session;
    svc->data_dir = xstrdup(o->data_dir);
    svc->workspace = o->workspace ? xstrdup(o->workspace) : NULL;
    db_history_init(svc->store);
    follow_settings(svc);
    load_configs(svc, false);
    load_configs(svc, true);
    return svc;
}

static void conn_free(db_conn *c)
{
    free(c->queue);
    free(c->error);
    database_config_clear(&c->config);
    free(c);
}

void database_service_free(database_service *svc)
{
    if (!svc)
        return;
    /* Closing the set withdraws queued jobs and waits for running ones; their
     * data (ops) is freed without done, so the handles are closed below. */
    if (svc->session)
        session_unsubscribe(svc->session, &settings_listener, svc);
    ecp_job_set_close(svc->jobs);
    db_ops_detach(svc);
    for (size_t i = 0; i < svc->conn_count; i++) {
        db_conn *c = svc->conns[i];
        if (c->handle)
            c->engine->close(c->handle);
        conn_free(c);
    }
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++) {
        free(svc->recent[i].sql);
        database_values_free(svc->recent[i].params, svc->recent[i].param_count);
    }
    uv_mutex_destroy(&svc->save_lock);
    ecp_map_free(svc->live);
    free_each(svc->conns, svc->data_dir, svc->workspace, svc);
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
    return ecp_map_get(svc->live, id);
}

static void info_of(const db_conn *c, database_connection_info *out)
{
    out->config = &c->config;
    out->status = c->status;
    out->error = c->error;
    out->connected_at = c->connected_at;
}

bool database_connection_get(database_service *svc, const char *id, database_connection_info *out)
{
    db_conn *c = db_conn_find(svc, id);
    if (c)
        info_of(c, out);
    return c != NULL;
}

size_t database_connection_list(database_service *svc, int scope, database_connection_info *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < svc->conn_count; i++) {
        db_conn *c = svc->conns[i];
        if (c->deleted || (scope >= 0 && c->config.project != (scope == 1)))
            continue;
        if (n < cap)
            info_of(c, &out[n]);
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
int db_config_confine_path(const char *workspace, database_config *config, ecp_error *err)
{
    if (config->type != DATABASE_SQLITE || !config->path || !config->path[0] || !strcmp(config->path, ":memory:"))
        return 0;
    char cwd[4096];
    const char *base = workspace ? workspace : getcwd(cwd, sizeof cwd);
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
    if (relative && !uri_path_within(path, root)) {
        status = ecp_error_set(err, ECP_EINVAL, "config.path: %s leads outside the workspace %s", config->path, root);
    } else if (uri_path_within(path, root)) {
        char *real_root = resolve_existing(root), *real_path = resolve_existing(path);
        if (!uri_path_within(real_path, real_root))
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

static int check_config(database_service *svc, const database_config *config, ecp_error *err)
{
    if (config->project && !svc->workspace)
        return ecp_error_set(err, ECP_EINVAL, "scope: \"project\" needs a workspace");
    return 0;
}

/* ----- saving a config: its path is confined on the pool (realpath may block), then applied on the loop ----- */

typedef struct config_job {
    database_service *svc; /* done only */
    bool update;
    char id[DATABASE_ID_MAX]; /* update: the connection */
    char *workspace;          /* the service's at the start, for the pool */
    database_config config;
    ecp_error err; /* done's own failure */
    database_config_cb cb;
    void *ctx;
} config_job;

static int config_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    config_job *j = payload;
    return db_config_confine_path(j->workspace, &j->config, err);
}

static int config_create(database_service *svc, config_job *j, const char **id_out)
{
    if (j->config.id && db_conn_find(svc, j->config.id)) /* taken while the path was checked */
        return ecp_error_set(&j->err, ECP_EEXIST, "id: a connection %s exists already", j->config.id);
    db_conn *c = xcalloc(1, sizeof *c);
    c->svc = svc;
    c->config = j->config;
    memset(&j->config, 0, sizeof j->config);
    if (!c->config.id) {
        char id[DATABASE_ID_MAX];
        snprintf(id, sizeof id, "conn-%llx-%llu", (unsigned long long)db_wall_ms(),
                 (unsigned long long)++svc->next_id);
        c->config.id = xstrdup(id);
    }
    c->engine = db_engine_of(c->config.type);
    conn_add(svc, c);
    db_configs_save(svc, c->config.project);
    *id_out = c->config.id;
    return 0;
}

static int config_update(database_service *svc, config_job *j, const char **id_out)
{
    db_conn *c = db_conn_find(svc, j->id);
    if (!c) /* deleted while the path was checked */
        return ecp_error_set(&j->err, ECP_EINVAL, "connectionId: no connection %s", j->id);
    if (j->config.type != c->config.type) {
        if (c->handle || c->running || c->queue_len)
            return ecp_error_set(&j->err, ECP_EINVAL, "config.type: disconnect before changing the engine");
        c->engine = db_engine_of(j->config.type);
    }
    bool was_project = c->config.project;
    free(j->config.id);
    j->config.id = c->config.id;
    c->config.id = NULL;
    database_config_clear(&c->config);
    c->config = j->config;
    memset(&j->config, 0, sizeof j->config);
    db_configs_save(svc, c->config.project);
    if (was_project != c->config.project)
        db_configs_save(svc, was_project);
    *id_out = c->config.id;
    return 0;
}

static void config_done(void *payload, int status, const ecp_error *err)
{
    config_job *j = payload;
    const char *id = NULL;
    if (status == 0 && (status = j->update ? config_update(j->svc, j, &id) : config_create(j->svc, j, &id)))
        err = &j->err;
    if (j->cb)
        j->cb(j->ctx, status, status < 0 ? err : NULL, id);
}

static void config_release(void *payload)
{
    config_job *j = payload;
    free(j->workspace);
    database_config_clear(&j->config);
}

static const ecp_job_kind config_kind =
    ECP_JOB_KIND("database.config", ECP_LANE_SHORT, false, config_work, config_done, config_release);

static ecp_job *config_start(database_service *svc, const database_config_args *args, bool update,
                             database_config_cb cb, void *ctx, ecp_error *err)
{
    if (check_config(svc, args->config, err) < 0)
        return NULL;
    if (update && !db_conn_find(svc, args->connection_id ? args->connection_id : "")) {
        ecp_error_set(err, ECP_EINVAL, "connectionId: no connection %s",
                      args->connection_id ? args->connection_id : "(none)");
        return NULL;
    }
    if (!update && args->config->id && db_conn_find(svc, args->config->id)) {
        ecp_error_set(err, ECP_EEXIST, "id: a connection %s exists already", args->config->id);
        return NULL;
    }
    config_job j = {.svc = svc, .update = update, .workspace = svc->workspace ? xstrdup(svc->workspace) : NULL,
                    .cb = cb, .ctx = ctx};
    if (update)
        snprintf(j.id, sizeof j.id, "%s", args->connection_id);
    database_config_copy(&j.config, args->config);
    return ecp_job_run(svc->jobs, &config_kind, &j, sizeof j, args->serve);
}

ecp_job *database_connection_create_start(database_service *svc, const database_config_args *args,
                                          database_config_cb cb, void *ctx, ecp_error *err)
{
    return config_start(svc, args, false, cb, ctx, err);
}

ecp_job *database_connection_update_start(database_service *svc, const database_config_args *args,
                                          database_config_cb cb, void *ctx, ecp_error *err)
{
    return config_start(svc, args, true, cb, ctx, err);
}

void db_conn_release(database_service *svc, db_conn *c)
{
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
