/* local: the session service's lifetime, its listeners and small shared
 * things (time stamps). The parts live beside it: settings.c, themes.c,
 * keybindings.c, sessions.c, secrets.c and journal.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ----- time ---------------------------------------------------------------------------------- */

int64_t session__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void session_time_iso(char out[32], int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    /* the fields are in range (gmtime), the compiler cannot know it */
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100,
             tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100, (int)(ms % 1000) % 1000);
}

bool session_time_parse_iso(const char *s, int64_t *ms)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
        return false;
    const char *p = s + n;
    int frac_ms = 0;
    if (*p == 'T' || *p == ' ') {
        int m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &h, &mi, &m) != 2 || m != 5)
            return false;
        p += 1 + m;
        if (*p == ':') {
            if (sscanf(p + 1, "%2d%n", &sec, &m) != 1 || m != 2)
                return false;
            p += 1 + m;
            if (*p == '.') {
                int digits = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                    if (digits < 3)
                        frac_ms = frac_ms * 10 + (*p - '0');
                for (; digits < 3 && digits > 0; digits++)
                    frac_ms *= 10;
            }
        }
    }
    long offset_s = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, m = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5)
            return false;
        offset_s = (oh * 3600L + om * 60L) * (*p == '+' ? 1 : -1);
        p += 1 + m;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec};
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - offset_s) * 1000 + frac_ms;
    return true;
}

/* ----- listeners ------------------------------------------------------------------------------ */

void session_subscribe(session_service *self, const session_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

void session_unsubscribe(session_service *self, const session_listener *listener, void *ctx)
{
    ecp_listeners_remove(&self->listeners, listener, ctx);
}

void session__emit_setting(session_service *self, const char *key, const char *value_json)
{
    ECP_EMIT(&self->listeners, session_listener, on_setting, key, value_json);
}

void session__emit_theme(session_service *self, const char *theme_id)
{
    ECP_EMIT(&self->listeners, session_listener, on_theme, theme_id);
}

void session__emit_trust(session_service *self, const char *path, bool trusted)
{
    ECP_EMIT(&self->listeners, session_listener, on_trust, path, trusted);
}

void session__emit_message(session_service *self, session_message_type type, const char *fmt, ...)
{
    buf text = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vappendf(&text, fmt, ap);
    va_end(ap);
    ECP_EMIT(&self->listeners, session_listener, on_message, type, text.data ? text.data : "");
    buf_free(&text);
}

/* A path as given on the command line, made absolute against the working
 * directory: the file is watched, and watches take absolute paths. */
static char *absolute(const char *path)
{
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[4096];
    buf out = BUF_INIT;
    buf_appendf(&out, "%s/%s", getcwd(cwd, sizeof cwd) ? cwd : "", path);
    return buf_detach(&out);
}

/* ----- lifetime ----------------------------------------------------------------------------------- */

session_service *session_service_new(const session_service_options *o, ecp_error *err)
{
    session_service *self = xmalloc(sizeof *self);
    *self = (session_service){
        .pool = o->pool, .log = o->log, .store = o->store, .docs = o->documents, .files = o->files,
        .workspace = o->workspace ? xstrdup(o->workspace) : NULL,
        .config_path = o->config_path ? absolute(o->config_path) : NULL, .data_dir = xstrdup(o->data_dir),
        .jobs = ecp_job_set_new(o->pool), .instance_lock_fd = -1,
    };
    self->flag_trusted = o->trust_workspace && self->workspace ? realpath(self->workspace, NULL) : NULL;
    if (session__trust_init(self, err) < 0 || session__settings_init(self, err) < 0 || session__keybindings_init(self, err) < 0 ||
        session__secrets_init(self, err) < 0 || session__journal_init(self, err) < 0)
        goto fail;
    session__settings_watch(self);
    return self;

fail:
    session_service_free(self);
    return NULL;
}

void session_service_free(session_service *self)
{
    if (!self)
        return;
    self->freeing = true;
    session__journal_free(self);
    store_flush(self->store);
    ecp_job_set_close(self->jobs);
    session__settings_free(self);
    session__keybindings_free(self);
    session__sessions_free(self);
    session__secrets_free(self);
    session__trust_free(self);
    ecp_listeners_free(&self->listeners);
    free_each(self->workspace, self->config_path, self->data_dir, self);
}

void session_service_set_workspace(session_service *self, const char *workspace)
{
    if ((!workspace && !self->workspace) || (workspace && self->workspace && strcmp(workspace, self->workspace) == 0))
        return;
    free(self->workspace);
    self->workspace = workspace ? xstrdup(workspace) : NULL;
    session__settings_workspace_changed(self);
}

const char *session_service_workspace(const session_service *self) { return self->workspace; }
