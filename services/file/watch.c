/* watch: directory watches over raw inotify.
 *
 * Why raw inotify on one uv_poll_t rather than one uv_fs_event_t per
 * directory: libuv folds IN_CREATE, IN_DELETE and both halves of a move into
 * one UV_RENAME, so telling a creation from a deletion would take a stat per
 * event, racing the next change; it also hides IN_Q_OVERFLOW (after which
 * only a rescan tells the truth) and needs one handle, with its own
 * asynchronous close, per directory of a recursive watch. One inotify
 * descriptor gives the exact event kinds, the overflow signal and a single
 * handle for every watch of the service.
 *
 * Each watch keeps, per directory it covers, the names it knows to exist
 * there. An event updates that set, which tells whether the path existed
 * before (a move onto an existing file is a change, not a creation). Events
 * for a path are gathered for WINDOW_MS from the first one; at the end of the
 * window, "existed before" and "exists now" decide what is reported: created,
 * changed, deleted, or nothing (created and deleted inside the window).
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_MS 50

/* A recursive watch does not descend into directories of this name: a
 * package tree holds tens of thousands of directories nobody edits, each an
 * inotify watch of the user's limited supply. Its own creation and deletion
 * are still reported, and it can be watched by naming it. */
#define SKIPPED_DIR "node_modules"

#define WATCH_MASK                                                                                              \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | \
     IN_EXCL_UNLINK | IN_ONLYDIR)

/* ----- a small string map ---------------------------------------------------------- */

typedef struct sslot {
    char *key; /* owned; NULL when empty */
    uint64_t hash;
    void *val;
} sslot;

typedef struct smap {
    sslot *slots;
    size_t cap, n;
} smap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

static sslot *smap_find(const smap *m, const char *key, uint64_t h)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        sslot *s = &m->slots[i];
        if (!s->key)
            return s;
        if (s->hash == h && !strcmp(s->key, key))
            return s;
    }
}

static void *smap_get(const smap *m, const char *key)
{
    sslot *s = smap_find(m, key, hash_str(key));
    return s && s->key ? s->val : NULL;
}

static void smap_put(smap *m, const char *key, void *val)
{
    if ((m->n + 1) * 4 > m->cap * 3) {
        smap old = *m;
        m->cap = old.cap ? old.cap * 2 : 16;
        m->slots = xcalloc(m->cap, sizeof *m->slots);
        m->n = 0;
        for (size_t i = 0; i < old.cap; i++) {
            if (old.slots[i].key) {
                *smap_find(m, old.slots[i].key, old.slots[i].hash) = old.slots[i];
                m->n++;
            }
        }
        free(old.slots);
    }
    uint64_t h = hash_str(key);
    sslot *s = smap_find(m, key, h);
    if (!s->key) {
        s->key = xstrdup(key);
        s->hash = h;
        m->n++;
    }
    s->val = val;
}

/* Removes key; returns its value (NULL when absent). Backward-shift deletion
 * keeps probe chains intact without tombstones. */
static void *smap_del(smap *m, const char *key)
{
    sslot *s = smap_find(m, key, hash_str(key));
    if (!s || !s->key)
        return NULL;
    void *val = s->val;
    free(s->key);
    s->key = NULL;
    m->n--;
    size_t mask = m->cap - 1, i = (size_t)(s - m->slots);
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = m->slots[j].hash & mask;
        /* move j back to i when i lies cyclically in [home, j) */
        bool movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            m->slots[i] = m->slots[j];
            m->slots[j].key = NULL;
            i = j;
        }
    }
    return val;
}

static void smap_free(smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* ----- the watcher's objects ------------------------------------------------------------ */

typedef struct watch watch;

/* One directory covered by one watch. */
typedef struct wnode {
    watch *w;
    char *path;
    int wd;
    smap names; /* entry name -> NAME_FILE / NAME_DIR */
} wnode;

#define NAME_FILE ((void *)1)
#define NAME_DIR ((void *)2)

/* One inotify watch descriptor, shared by every watch that covers its directory. */
typedef struct wdir {
    int wd;
    wnode **users;
    size_t n, cap;
} wdir;

/* Pending events for one path of one watch. */
typedef struct pend {
    watch *w;
    char *path;
    bool before, now, is_dir;
    double first;      /* wall clock, ms */
    uint64_t deadline; /* loop clock, ms */
    struct pend *prev, *next;
} pend;

struct watch {
    uint64_t id;
    char *root;  /* the watched directory (a file watch: its parent) */
    char *only;  /* a file watch: the one name in root it reports */
    bool recursive;
    file_watch_cb cb;
    void *ctx;
    smap nodes;   /* directory path -> wnode */
    smap pending; /* path -> pend */
    watch *next;
};

/* The loop's handles outlive the watcher until their close callbacks run. */
typedef struct handles {
    uv_poll_t poll;
    uv_timer_t timer;
    int fd;
    int open;
} handles;

struct file__watcher {
    file_service *svc;
    handles *h;
    int fd;
    smap wds; /* "wd" -> wdir */
    watch *watches;
    pend *head, *tail;
    uint64_t next_id;
};

static double wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)(ts.tv_nsec / 1000000);
}

static void wd_key(char out[16], int wd)
{
    snprintf(out, 16, "%d", wd);
}

static void on_timer(uv_timer_t *timer);

/* ----- pending events ---------------------------------------------------------------------- */

static void arm_timer(file__watcher *self)
{
    if (!self->head)
        return;
    uint64_t now = uv_now(self->svc->loop);
    uint64_t due = self->head->deadline > now ? self->head->deadline - now : 0;
    uv_timer_start(&self->h->timer, on_timer, due, 0);
}

static void pend_unlink(file__watcher *self, pend *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        self->head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        self->tail = p->prev;
    p->prev = p->next = NULL;
}

static void record(file__watcher *self, watch *w, const char *path, bool before, bool now, bool is_dir)
{
    pend *p = smap_get(&w->pending, path);
    if (!p) {
        p = xcalloc(1, sizeof *p);
        p->w = w;
        p->path = xstrdup(path);
        p->before = before;
        p->first = wall_ms();
        p->deadline = uv_now(self->svc->loop) + WINDOW_MS;
        smap_put(&w->pending, path, p);
        p->prev = self->tail;
        if (self->tail)
            self->tail->next = p;
        else
            self->head = p;
        self->tail = p;
        if (p == self->head)
            arm_timer(self);
    }
    p->now = now;
    p->is_dir = is_dir;
}

static void on_timer(uv_timer_t *timer)
{
    file__watcher *self = timer->data;
    uint64_t now = uv_now(self->svc->loop);
    while (self->head && self->head->deadline <= now) {
        pend *p = self->head;
        pend_unlink(self, p);
        watch *w = p->w;
        smap_del(&w->pending, p->path);
        file_change ch = {p->path, FILE_CHANGE_CHANGED, p->is_dir, p->first};
        bool report = true;
        if (!p->before && p->now)
            ch.type = FILE_CHANGE_CREATED;
        else if (p->before && !p->now)
            ch.type = FILE_CHANGE_DELETED;
        else if (!p->before && !p->now)
            report = false;
        /* the callback may remove any watch, this one included: p is already
         * detached, and the listeners hear of the change through p alone */
        if (report) {
            w->cb(w->ctx, &ch);
            ECP_EMIT(&self->svc->listeners, file_listener, on_change, &ch);
        }
        free(p->path);
        free(p);
    }
    arm_timer(self);
}

/* ----- directories ------------------------------------------------------------------------- */

static void wdir_remove_user(file__watcher *self, int wd, wnode *node, bool rm)
{
    char key[16];
    wd_key(key, wd);
    wdir *d = smap_get(&self->wds, key);
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        if (d->users[i] == node) {
            d->users[i] = d->users[--d->n];
            break;
        }
    }
    if (d->n == 0) {
        if (rm)
            inotify_rm_watch(self->fd, wd);
        smap_del(&self->wds, key);
        free(d->users);
        free(d);
    }
}

static void drop_node(file__watcher *self, wnode *node, bool rm)
{
    smap_del(&node->w->nodes, node->path);
    wdir_remove_user(self, node->wd, node, rm);
    smap_free(&node->names);
    free(node->path);
    free(node);
}

/* Starts covering directory path in w. With emit, every entry found is
 * reported as created (the directory appeared after the watch began). */
static int add_dir(file__watcher *self, watch *w, const char *path, bool emit, bool is_root, ecp_error *err)
{
    if (smap_get(&w->nodes, path))
        return 0;
    uint32_t mask = WATCH_MASK | (is_root ? 0 : IN_DONT_FOLLOW);
    int wd = inotify_add_watch(self->fd, path, mask);
    if (wd < 0) {
        if (errno == ENOSPC)
            return ecp_error_set(err, ECP_EIO, "Cannot watch %s: the system's limit of inotify watches is reached",
                                 path);
        return file__errno(err, errno, path);
    }
    wnode *node = xcalloc(1, sizeof *node);
    node->w = w;
    node->path = xstrdup(path);
    node->wd = wd;
    smap_put(&w->nodes, path, node);
    char key[16];
    wd_key(key, wd);
    wdir *d = smap_get(&self->wds, key);
    if (!d) {
        d = xcalloc(1, sizeof *d);
        d->wd = wd;
        smap_put(&self->wds, key, d);
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 2;
        d->users = xrealloc(d->users, d->cap * sizeof *d->users);
    }
    d->users[d->n++] = node;

    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    buf child = BUF_INIT;
    struct dirent *e;
    /* collect first: add_dir below recurses and must not hold this DIR open */
    smap subdirs = {0};
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            file__join(&child, path, e->d_name);
            is_dir = lstat(child.data, &st) == 0 && S_ISDIR(st.st_mode);
        }
        smap_put(&node->names, e->d_name, is_dir ? NAME_DIR : NAME_FILE);
        if (w->only && strcmp(e->d_name, w->only))
            continue;
        file__join(&child, path, e->d_name);
        if (emit)
            record(self, w, child.data, false, true, is_dir);
        if (is_dir && w->recursive && !w->only && strcmp(e->d_name, SKIPPED_DIR) != 0)
            smap_put(&subdirs, child.data, NAME_DIR);
    }
    closedir(dir);
    for (size_t i = 0; i < subdirs.cap; i++) {
        if (subdirs.slots[i].key) {
            ecp_error ignored;
            if (add_dir(self, w, subdirs.slots[i].key, emit, false, &ignored) != 0)
                ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: %s", ignored.message);
        }
    }
    smap_free(&subdirs);
    buf_free(&child);
    return 0;
}

static int cmp_len_desc(const void *a, const void *b)
{
    size_t la = strlen((*(wnode *const *)a)->path), lb = strlen((*(wnode *const *)b)->path);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

/* The directory at path left w's tree: report what was still known below it
 * as deleted (deepest first) and stop watching it. */
static void remove_subtree(file__watcher *self, watch *w, const char *path)
{
    size_t len = strlen(path), n = 0;
    wnode **list = xmalloc((w->nodes.n + 1) * sizeof *list);
    for (size_t i = 0; i < w->nodes.cap; i++) {
        wnode *node = w->nodes.slots[i].key ? w->nodes.slots[i].val : NULL;
        if (node && !strncmp(node->path, path, len) && (node->path[len] == '\0' || node->path[len] == '/'))
            list[n++] = node;
    }
    if (n > 1)
        qsort(list, n, sizeof *list, cmp_len_desc);
    buf child = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        wnode *node = list[i];
        for (size_t j = 0; j < node->names.cap; j++) {
            sslot *s = &node->names.slots[j];
            if (!s->key)
                continue;
            file__join(&child, node->path, s->key);
            record(self, w, child.data, true, false, s->val == NAME_DIR);
        }
        drop_node(self, node, true);
    }
    buf_free(&child);
    free(list);
}

/* ----- events ------------------------------------------------------------------------------- */

static void handle_event(file__watcher *self, wnode *node, uint32_t mask, const char *name)
{
    watch *w = node->w;
    bool is_root = !strcmp(node->path, w->root);
    if (mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (!is_root) {
            if (mask & IN_IGNORED)
                drop_node(self, node, false);
            return;
        }
        /* The watched directory itself is gone (or moved away, which leaves
         * every path we know wrong): report it, then watch nothing more. */
        if (w->only) {
            if (smap_get(&node->names, w->only)) {
                buf p = BUF_INIT;
                file__join(&p, w->root, w->only);
                smap_del(&node->names, w->only);
                record(self, w, p.data, true, false, false);
                buf_free(&p);
            }
        } else {
            remove_subtree(self, w, w->root);
            record(self, w, w->root, true, false, true);
        }
        if ((node = smap_get(&w->nodes, w->root)))
            drop_node(self, node, !(mask & IN_IGNORED));
        return;
    }
    if (!name || !name[0])
        return;
    if (w->only && strcmp(name, w->only))
        return;
    bool is_dir = (mask & IN_ISDIR) != 0;
    buf full = BUF_INIT;
    file__join(&full, node->path, name);
    bool before = smap_get(&node->names, name) != NULL;
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
        smap_put(&node->names, name, is_dir ? NAME_DIR : NAME_FILE);
        record(self, w, full.data, before, true, is_dir);
        if (is_dir && w->recursive && !w->only && strcmp(name, SKIPPED_DIR) != 0) {
            ecp_error err;
            if (add_dir(self, w, full.data, true, false, &err) != 0)
                ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: %s", err.message);
        }
    } else if (mask & (IN_DELETE | IN_MOVED_FROM)) {
        smap_del(&node->names, name);
        if (is_dir)
            remove_subtree(self, w, full.data);
        record(self, w, full.data, before, false, is_dir);
    } else if (mask & (IN_MODIFY | IN_ATTRIB)) {
        if (!before)
            smap_put(&node->names, name, is_dir ? NAME_DIR : NAME_FILE);
        record(self, w, full.data, before, true, is_dir);
    }
    buf_free(&full);
}

/* After an overflow the kernel dropped events: compare what each directory
 * holds now with what we knew, and report the difference. */
static void resync(file__watcher *self)
{
    ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: inotify queue overflowed; rescanning");
    for (watch *w = self->watches; w; w = w->next) {
        size_t n = 0;
        wnode **list = xmalloc((w->nodes.n + 1) * sizeof *list);
        for (size_t i = 0; i < w->nodes.cap; i++)
            if (w->nodes.slots[i].key)
                list[n++] = w->nodes.slots[i].val;
        char **paths = xmalloc((n + 1) * sizeof *paths);
        for (size_t i = 0; i < n; i++)
            paths[i] = xstrdup(list[i]->path);
        for (size_t i = 0; i < n; i++) {
            wnode *node = smap_get(&w->nodes, paths[i]);
            if (!node)
                continue;
            smap now = {0};
            DIR *d = opendir(node->path);
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    smap_put(&now, e->d_name, e->d_type == DT_DIR ? NAME_DIR : NAME_FILE);
            }
            if (d)
                closedir(d);
            for (size_t j = 0; j < node->names.cap; j++) {
                sslot *s = &node->names.slots[j];
                if (s->key && !smap_get(&now, s->key)) {
                    char *name = xstrdup(s->key);
                    handle_event(self, node, IN_DELETE | (s->val == NAME_DIR ? IN_ISDIR : 0), name);
                    free(name);
                    j = (size_t)-1; /* the table changed: start over */
                }
            }
            for (size_t j = 0; j < now.cap; j++) {
                sslot *s = &now.slots[j];
                if (s->key && !smap_get(&node->names, s->key))
                    handle_event(self, node, IN_CREATE | (s->val == NAME_DIR ? IN_ISDIR : 0), s->key);
            }
            smap_free(&now);
        }
        for (size_t i = 0; i < n; i++)
            free(paths[i]);
        free(paths);
        free(list);
    }
}

static void on_readable(uv_poll_t *poll, int status, int events)
{
    file__watcher *self = poll->data;
    if (status < 0)
        return;
    char data[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(self->fd, data, sizeof data);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (char *p = data; p < data + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                resync(self);
                continue;
            }
            char key[16];
            wd_key(key, ev->wd);
            wdir *d = smap_get(&self->wds, key);
            if (!d)
                continue;
            /* handling may drop users of this very descriptor: work on a copy */
            size_t count = d->n;
            wnode **users = xmalloc((count + 1) * sizeof *users);
            memcpy(users, d->users, count * sizeof *users);
            for (size_t i = 0; i < count; i++) {
                d = smap_get(&self->wds, key);
                bool alive = false;
                for (size_t j = 0; d && j < d->n && !alive; j++)
                    alive = d->users[j] == users[i];
                if (alive)
                    handle_event(self, users[i], ev->mask, ev->len ? ev->name : NULL);
            }
            free(users);
        }
    }
}

/* ----- lifecycle ---------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *handle)
{
    handles *h = handle->data;
    if (--h->open == 0) {
        close(h->fd);
        free(h);
    }
}

static file__watcher *watcher_get(file_service *svc, ecp_error *err)
{
    if (svc->watcher)
        return svc->watcher;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
        ecp_error_set(err, ECP_EIO, "Cannot start watching files: inotify_init1: %s", strerror(errno));
        return NULL;
    }
    file__watcher *self = xcalloc(1, sizeof *self);
    self->svc = svc;
    self->fd = fd;
    self->h = xcalloc(1, sizeof *self->h);
    self->h->fd = fd;
    uv_poll_init(svc->loop, &self->h->poll, fd);
    uv_timer_init(svc->loop, &self->h->timer);
    self->h->open = 2;
    self->h->poll.data = self;
    self->h->timer.data = self;
    uv_poll_start(&self->h->poll, UV_READABLE, on_readable);
    self->next_id = 1;
    svc->watcher = self;
    return self;
}

/* Ends a watch in one pass over its directories: the whole table goes at
 * once, so no node is taken out of it one by one (each removal shifts the
 * table, and starting over after each one made ending a big tree quadratic). */
static void watch_free(file__watcher *self, watch *w)
{
    for (size_t i = 0; i < w->nodes.cap; i++) {
        wnode *node = w->nodes.slots[i].key ? w->nodes.slots[i].val : NULL;
        if (!node)
            continue;
        wdir_remove_user(self, node->wd, node, true);
        smap_free(&node->names);
        free(node->path);
        free(node);
    }
    for (size_t i = 0; i < w->pending.cap; i++) {
        pend *p = w->pending.slots[i].key ? w->pending.slots[i].val : NULL;
        if (p) {
            pend_unlink(self, p);
            free(p->path);
            free(p);
        }
    }
    smap_free(&w->nodes);
    smap_free(&w->pending);
    free(w->root);
    free(w->only);
    free(w);
}

int file_watch_add(file_service *svc, const char *path, bool recursive, file_watch_cb cb, void *ctx, uint64_t *id,
                   ecp_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return file__errno(err, errno, path);
    file__watcher *self = watcher_get(svc, err);
    if (!self)
        return ECP_EIO;
    watch *w = xcalloc(1, sizeof *w);
    w->recursive = recursive;
    w->cb = cb;
    w->ctx = ctx;
    if (S_ISDIR(st.st_mode)) {
        w->root = xstrdup(path);
    } else {
        const char *slash = strrchr(path, '/');
        w->root = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
        w->only = xstrdup(slash + 1);
        w->recursive = false;
    }
    int rc = add_dir(self, w, w->root, false, true, err);
    if (rc) {
        watch_free(self, w);
        return rc;
    }
    w->id = self->next_id++;
    w->next = self->watches;
    self->watches = w;
    *id = w->id;
    return 0;
}

int file_watch_remove(file_service *svc, uint64_t id)
{
    file__watcher *self = svc->watcher;
    if (!self)
        return ECP_ENOTFOUND;
    for (watch **pp = &self->watches; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == id) {
            watch *w = *pp;
            *pp = w->next;
            watch_free(self, w);
            if (!self->head)
                uv_timer_stop(&self->h->timer);
            return 0;
        }
    }
    return ECP_ENOTFOUND;
}

void file__watcher_free(file__watcher *self)
{
    if (!self)
        return;
    while (self->watches) {
        watch *w = self->watches;
        self->watches = w->next;
        watch_free(self, w);
    }
    for (size_t i = 0; i < self->wds.cap; i++) {
        if (self->wds.slots[i].key) {
            wdir *d = self->wds.slots[i].val;
            free(d->users);
            free(d);
        }
    }
    smap_free(&self->wds);
    uv_close((uv_handle_t *)&self->h->poll, on_handle_closed);
    uv_close((uv_handle_t *)&self->h->timer, on_handle_closed);
    self->h->poll.data = self->h;
    self->h->timer.data = self->h;
    free(self);
}
