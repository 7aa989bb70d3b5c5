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
 *
 * A recursive watch started by file_watch_start (every client's) is set up in
 * two halves, so a big tree keeps nobody waiting. A job in the long
 * lane walks the tree and lists its directories, parents before children, so
 * that the reads of a cold disk happen off the loop. The loop then watches
 * them a bounded slice per turn: inotify_add_watch, then a readdir (now from
 * the cache) to learn the names. Watching and listing stay on the loop, next
 * to the events, because a directory is only right when its watch exists
 * before its listing and no event of it is handled before that listing: a
 * pool thread adding watches on the shared descriptor would make the loop
 * meet events of descriptors it does not know yet, and race the loop's
 * inotify_rm_watch of a descriptor two watches share. A directory the walk
 * never saw (created after the walk listed its parent) shows up in the loop's
 * own listing of the parent, or as an event once the parent is watched, and
 * is watched too.
 *
 * Each watched directory knows its parent and children, so a deleted subtree
 * is dropped in time proportional to its size.
 */
#include "internal.h"

#include "glob.h"
#include "json.h"

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

/* The loop spends at most this long per turn watching the directories a
 * walk found, so other clients wait no more than about this for their turn. */
#define SETUP_SLICE_NS (4 * 1000 * 1000)

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

/* Returns the map's own copy of key, stable until key is deleted. */
static const char *smap_put(smap *m, const char *key, void *val)
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
    return s->key;
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
typedef struct wnode wnode;
struct wnode {
    watch *w;
    char *path;
    int wd;
    smap names; /* entry name -> NAME_FILE / NAME_DIR */
    /* the watched directories right above and below it (NULL parent: the
     * watch's root, or a directory whose parent stopped being watched) */
    wnode *parent, *first_child, *prev_sibling, *next_sibling;
};

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
    file_watch_ready_cb ready;
    void *ctx;
    file__glob **exclude; /* directories a recursive watch does not descend into */
    size_t exclude_count;
    smap nodes;   /* directory path -> wnode */
    smap pending; /* path -> pend */
    /* Setting up: while `walk` runs, the job lists the tree; then the loop
     * watches queue[queue_at..] a slice per turn. `queued` holds every path
     * ever queued (the walk's and those the loop found itself), so the loop
     * can tell a directory the walk never saw. */
    bool setting_up;
    bool warned; /* a directory could not be watched: said once */
    ecp_job *walk;
    smap queued;
    const char **queue; /* keys of queued */
    size_t queue_at, queue_n, queue_cap;
    watch *next;
};

/* The loop's handles outlive the watcher until their close callbacks run. */
typedef struct handles {
    uv_poll_t poll;
    uv_timer_t timer;
    uv_idle_t setup; /* runs while some watch has directories left to watch */
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

static void unlink_child(wnode *node)
{
    if (node->prev_sibling)
        node->prev_sibling->next_sibling = node->next_sibling;
    else if (node->parent)
        node->parent->first_child = node->next_sibling;
    if (node->next_sibling)
        node->next_sibling->prev_sibling = node->prev_sibling;
    node->parent = node->prev_sibling = node->next_sibling = NULL;
}

static void drop_node(file__watcher *self, wnode *node, bool rm)
{
    unlink_child(node);
    /* children left behind (their parent's watch ended first, as on an
     * unmount) end with their own IN_IGNORED */
    for (wnode *c = node->first_child, *next; c; c = next) {
        next = c->next_sibling;
        c->parent = c->prev_sibling = c->next_sibling = NULL;
    }
    smap_del(&node->w->nodes, node->path);
    wdir_remove_user(self, node->wd, node, rm);
    smap_free(&node->names);
    free(node->path);
    free(node);
}

/* Whether a recursive watch stays out of directory `name` at `path`. */
static bool skips_dir(file__glob *const *exclude, size_t count, const char *root, const char *path,
                      const char *name)
{
    if (!strcmp(name, SKIPPED_DIR))
        return true;
    if (!count)
        return false;
    size_t root_len = strlen(root);
    const char *rel = path + root_len;
    if (*rel == '/')
        rel++;
    return file__globs_match(exclude, count, rel, strlen(rel));
}

/* The node of path's parent directory in w, or NULL. */
static wnode *parent_node(watch *w, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return NULL;
    char *parent = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
    wnode *node = smap_get(&w->nodes, parent);
    free(parent);
    return node;
}

/* Starts covering the one directory at path in w: its watch first, then its
 * listing, so nothing created in between goes unseen. With emit, every entry
 * found is reported as created (the directory appeared after the watch
 * began). The subdirectories a recursive watch should descend into are put
 * in subdirs (may be NULL). Returns 1 when path was already covered. */
static int add_one_dir(file__watcher *self, watch *w, const char *path, bool emit, bool is_root, smap *subdirs,
                       ecp_error *err)
{
    if (smap_get(&w->nodes, path))
        return 1;
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
    if (!is_root && (node->parent = parent_node(w, path))) {
        node->next_sibling = node->parent->first_child;
        if (node->next_sibling)
            node->next_sibling->prev_sibling = node;
        node->parent->first_child = node;
    }
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
        if (subdirs && is_dir && w->recursive && !w->only &&
            !skips_dir(w->exclude, w->exclude_count, w->root, child.data, e->d_name))
            smap_put(subdirs, child.data, NAME_DIR);
    }
    closedir(dir);
    buf_free(&child);
    return 0;
}

/* The subdirectories of node's directory that w descends into, from what its
 * listing found. */
static void node_subdirs(watch *w, wnode *node, smap *subdirs)
{
    buf child = BUF_INIT;
    for (size_t i = 0; node && i < node->names.cap; i++) {
        sslot *s = &node->names.slots[i];
        if (!s->key || s->val != NAME_DIR)
            continue;
        file__join(&child, node->path, s->key);
        if (!skips_dir(w->exclude, w->exclude_count, w->root, child.data, s->key))
            smap_put(subdirs, child.data, NAME_DIR);
    }
    buf_free(&child);
}

/* Covers path and, for a recursive watch, everything below it, at once: for
 * a directory that appears while the watch runs (usually nearly empty when
 * its creation is seen). */
static int add_dir(file__watcher *self, watch *w, const char *path, bool emit, ecp_error *err)
{
    smap subdirs = {0};
    int rc = add_one_dir(self, w, path, emit, false, &subdirs, err);
    for (size_t i = 0; i < subdirs.cap; i++) {
        if (subdirs.slots[i].key) {
            ecp_error ignored;
            if (add_dir(self, w, subdirs.slots[i].key, emit, &ignored) < 0)
                ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: %s", ignored.message);
        }
    }
    smap_free(&subdirs);
    return rc < 0 ? rc : 0;
}

static void report_gone(file__watcher *self, wnode *node, buf *child)
{
    for (size_t j = 0; j < node->names.cap; j++) {
        sslot *s = &node->names.slots[j];
        if (!s->key)
            continue;
        file__join(child, node->path, s->key);
        record(self, node->w, child->data, true, false, s->val == NAME_DIR);
    }
}

/* The directory at path left w's tree: report what was still known below it
 * as deleted (each directory's entries before the directory) and stop
 * watching it. Walks the subtree's own nodes, children before parents. */
static void remove_subtree(file__watcher *self, watch *w, const char *path)
{
    wnode *top = smap_get(&w->nodes, path);
    if (!top)
        return;
    buf child = BUF_INIT;
    wnode *n = top;
    while (n->first_child)
        n = n->first_child;
    for (;;) {
        bool last = n == top;
        wnode *sibling = n->next_sibling, *parent = n->parent;
        report_gone(self, n, &child);
        drop_node(self, n, true);
        if (last)
            break;
        if (sibling) {
            n = sibling;
            while (n->first_child)
                n = n->first_child;
        } else {
            n = parent;
        }
    }
    buf_free(&child);
}

/* ----- events ------------------------------------------------------------------------------- */

/* The server's own temporary files, made next to a file it writes and
 * renamed onto it (file/write: ".<name>.<12 hex digits>.tmp"; a document's
 * save: ".<name>.ecpd-<kind><hex>", see the document service's fileio.c).
 * What a client is told is the change of the file itself: the temporary's
 * creation and disappearance would otherwise be reported whenever the write
 * outlasts the window (a slow fsync), and not otherwise. */
static bool own_temporary(const char *name)
{
    if (name[0] != '.')
        return false;
    if (strstr(name + 1, ".ecpd-"))
        return true;
    size_t n = strlen(name);
    if (n < 2 + 1 + 12 + 4 || strcmp(name + n - 4, ".tmp") != 0 || name[n - 4 - 12 - 1] != '.')
        return false;
    for (const char *h = name + n - 4 - 12; h < name + n - 4; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
            return false;
    return true;
}

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
    if (!(mask & IN_ISDIR) && own_temporary(name))
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
        if (is_dir && w->recursive && !w->only && !skips_dir(w->exclude, w->exclude_count, w->root, full.data, name)) {
            ecp_error err;
            if (add_dir(self, w, full.data, true, &err) != 0)
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
            /* gather first: handling a deletion changes the table */
            size_t gone_n = 0;
            char **gone = xmalloc((node->names.n + 1) * sizeof *gone);
            bool *gone_dir = xmalloc((node->names.n + 1) * sizeof *gone_dir);
            for (size_t j = 0; j < node->names.cap; j++) {
                sslot *s = &node->names.slots[j];
                if (s->key && !smap_get(&now, s->key)) {
                    gone_dir[gone_n] = s->val == NAME_DIR;
                    gone[gone_n++] = xstrdup(s->key);
                }
            }
            for (size_t j = 0; j < gone_n; j++) {
                handle_event(self, node, IN_DELETE | (gone_dir[j] ? IN_ISDIR : 0), gone[j]);
                free(gone[j]);
            }
            free(gone);
            free(gone_dir);
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

/* ----- setting up a recursive watch ---------------------------------------------------------- */

/* The walk's job: lists every directory below root that the watch will
 * descend into, parents before children (breadth first: each one's
 * subdirectories join the end of the list it works through). */
typedef struct tree_walk {
    file__watcher *watcher; /* read only in done, on the loop */
    uint64_t watch_id;
    char *root;
    file__glob **exclude; /* the job's own copy: the watch may end while it runs */
    size_t exclude_count;
    smap found;          /* path -> NAME_DIR */
    const char **order;  /* keys of found, in the order found */
    size_t n, cap;
} tree_walk;

static void push_path(const char ***list, size_t *n, size_t *cap, const char *path)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *list = xrealloc(*list, *cap * sizeof **list);
    }
    (*list)[(*n)++] = path;
}

static void list_subdirs(tree_walk *t, const char *path, buf *child)
{
    DIR *dir = opendir(path);
    if (!dir)
        return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
            continue;
        file__join(child, path, e->d_name);
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            if (lstat(child->data, &st) != 0 || !S_ISDIR(st.st_mode))
                continue;
        }
        if (skips_dir(t->exclude, t->exclude_count, t->root, child->data, e->d_name) ||
            smap_get(&t->found, child->data))
            continue;
        push_path(&t->order, &t->n, &t->cap, smap_put(&t->found, child->data, NAME_DIR));
    }
    closedir(dir);
}

static void tree_walk_work(ecp_job *job, unsigned item)
{
    (void)item;
    tree_walk *t = ecp_job_data(job);
    buf child = BUF_INIT;
    list_subdirs(t, t->root, &child);
    for (size_t i = 0; i < t->n && !ecp_job_cancelled(job); i++)
        list_subdirs(t, t->order[i], &child);
    buf_free(&child);
}

static void setup_turn(uv_idle_t *idle);

static void tree_walk_done(ecp_job *job)
{
    tree_walk *t = ecp_job_data(job);
    file__watcher *self = t->watcher;
    watch *w = self->watches;
    while (w && w->id != t->watch_id)
        w = w->next;
    if (!w || w->walk != job)
        return;
    w->walk = NULL;
    w->queued = t->found;
    w->queue = t->order;
    w->queue_n = t->n;
    w->queue_cap = t->cap;
    memset(&t->found, 0, sizeof t->found);
    t->order = NULL;
    uv_idle_start(&self->h->setup, setup_turn);
}

static void tree_walk_free(void *data)
{
    tree_walk *t = data;
    smap_free(&t->found);
    free(t->order);
    file__globs_free(t->exclude, t->exclude_count);
    free(t->root);
    free(t);
}

static const ecp_job_type tree_walk_type = {"file.watch_walk", ECP_LANE_LONG, false, tree_walk_work,
                                            tree_walk_done, tree_walk_free};

static void end_setup(watch *w)
{
    w->setting_up = false;
    smap_free(&w->queued);
    free(w->queue);
    w->queue = NULL;
    w->queue_at = w->queue_n = w->queue_cap = 0;
}

/* Watches one directory the walk found (or the loop found below one). */
static void watch_queued(file__watcher *self, watch *w, const char *path)
{
    if (smap_get(&w->nodes, path) || !parent_node(w, path))
        return; /* covered already, or its parent is gone from the watch */
    smap subdirs = {0};
    ecp_error err;
    int rc = add_one_dir(self, w, path, false, false, &subdirs, &err);
    if (rc < 0 && rc != ECP_ENOTFOUND && rc != ECP_ENOTDIR && !w->warned) {
        w->warned = true;
        ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: %s", err.message);
    }
    /* a subdirectory made after the walk listed this one */
    for (size_t i = 0; i < subdirs.cap; i++) {
        const char *sub = subdirs.slots[i].key;
        if (sub && !smap_get(&w->queued, sub) && !smap_get(&w->nodes, sub))
            push_path(&w->queue, &w->queue_n, &w->queue_cap, smap_put(&w->queued, sub, NAME_DIR));
    }
    smap_free(&subdirs);
}

/* One turn of the loop's share of the setup: a slice of directories, then
 * the loop goes back to its clients. */
static void setup_turn(uv_idle_t *idle)
{
    file__watcher *self = idle->data;
    uint64_t start = uv_hrtime();
    unsigned count = 0;
    for (watch *w = self->watches; w; w = w->next) {
        if (!w->setting_up || w->walk)
            continue;
        while (w->queue_at < w->queue_n) {
            if ((++count & 15) == 0 && uv_hrtime() - start > SETUP_SLICE_NS)
                return;
            watch_queued(self, w, w->queue[w->queue_at++]);
        }
        end_setup(w);
        if (w->ready) {
            /* the callback may end any watch: the next turn goes on */
            w->ready(w->ctx, w->id);
            return;
        }
    }
    uv_idle_stop(idle);
}

int file_service_set_watch_exclude(file_service *svc, const char *files_exclude_json, ecp_error *err)
{
    for (size_t i = 0; i < svc->watch_exclude_count; i++)
        free(svc->watch_exclude[i]);
    free(svc->watch_exclude);
    svc->watch_exclude = NULL;
    svc->watch_exclude_count = 0;
    if (!files_exclude_json)
        return 0;
    json_doc doc;
    int rc = json_doc_parse(&doc, files_exclude_json, strlen(files_exclude_json), err);
    if (rc) {
        json_doc_free(&doc);
        return rc;
    }
    json_ref root = json_root(&doc);
    if (json_type_of(&doc, root) != JSON_OBJECT) {
        json_doc_free(&doc);
        return ecp_error_set(err, ECP_EINVAL, "files.exclude must be an object of glob patterns");
    }
    size_t n = json_length(&doc, root);
    svc->watch_exclude = xcalloc(n + 1, sizeof *svc->watch_exclude);
    arena a;
    arena_init(&a);
    for (json_ref key = json_first(&doc, root); key != JSON_NO_REF; key = json_next(&doc, key)) {
        json_ref value = key + 1;
        bool on = false;
        const char *pattern;
        size_t len;
        if (!json_bool(&doc, value, &on) || !on || !json_string(&doc, key, &a, &pattern, &len))
            continue;
        file__glob *probe;
        ecp_error e;
        if (file__glob_compile(pattern, FILE__GLOB_BASENAME | FILE__GLOB_DOT, &probe, &e) != 0) {
            ecp_log(svc->log, ECP_LOG_WARN, "files.exclude: invalid glob '%.40s%s' left out: %s", pattern,
                    len > 40 ? "..." : "", e.message);
            if (rc == 0)
                rc = ecp_error_set(err, ECP_EINVAL, "files.exclude: invalid glob '%.40s%s': %s", pattern,
                                   len > 40 ? "..." : "", e.message);
            continue;
        }
        file__glob_free(probe);
        svc->watch_exclude[svc->watch_exclude_count++] = xstrndup(pattern, len);
    }
    arena_free(&a);
    json_doc_free(&doc);
    return rc;
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
    uv_idle_init(svc->loop, &self->h->setup);
    self->h->open = 3;
    self->h->poll.data = self;
    self->h->timer.data = self;
    self->h->setup.data = self;
    uv_poll_start(&self->h->poll, UV_READABLE, on_readable);
    self->next_id = 1;
    svc->watcher = self;
    return self;
}

/* Ends a watch in one pass over its directories: the whole table goes at
 * once, so no node is taken out of it one by one (each removal shifts the
 * table, and starting over after each one made ending a big tree quadratic).
 * cancel_walk is false at the service's teardown, when the job set has
 * already ended (and freed) the walk. */
static void watch_free(file__watcher *self, watch *w, bool cancel_walk)
{
    if (w->walk && cancel_walk)
        ecp_job_cancel(w->walk); /* its done finds the watch gone */
    end_setup(w);
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
    file__globs_free(w->exclude, w->exclude_count);
    free_each(w->root, w->only, w);
}

/* The watch of path with its root directory covered (or the error why it
 * cannot be): the rest is the caller's. */
static watch *watch_begin(file__watcher *self, const char *path, bool recursive, file_watch_cb cb, void *ctx,
                          ecp_error *err, int *rc)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *rc = file__errno(err, errno, path);
        return NULL;
    }
    watch *w = xcalloc(1, sizeof *w);
    w->recursive = recursive;
    w->cb = cb;
    w->ctx = ctx;
    if (S_ISDIR(st.st_mode)) {
        /* without a trailing '/', so that each child's parent is found by its path */
        size_t len = strlen(path);
        while (len > 1 && path[len - 1] == '/')
            len--;
        w->root = xstrndup(path, len);
    } else {
        const char *slash = strrchr(path, '/');
        w->root = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
        w->only = xstrdup(slash + 1);
        w->recursive = false;
    }
    *rc = add_one_dir(self, w, w->root, false, true, NULL, err);
    if (*rc < 0) {
        watch_free(self, w, true);
        return NULL;
    }
    *rc = 0;
    w->id = self->next_id++;
    w->next = self->watches;
    self->watches = w;
    return w;
}

int file_watch_add(file_service *svc, const char *path, bool recursive, file_watch_cb cb, void *ctx, uint64_t *id,
                   ecp_error *err)
{
    file__watcher *self = watcher_get(svc, err);
    if (!self)
        return ECP_EIO;
    int rc;
    watch *w = watch_begin(self, path, recursive, cb, ctx, err, &rc);
    if (!w)
        return rc;
    if (w->recursive) {
        /* complete on return, as this function promises: the whole tree now */
        smap subdirs = {0};
        node_subdirs(w, smap_get(&w->nodes, w->root), &subdirs);
        for (size_t i = 0; i < subdirs.cap; i++) {
            ecp_error ignored;
            if (subdirs.slots[i].key && add_dir(self, w, subdirs.slots[i].key, false, &ignored) < 0)
                ecp_log(self->svc->log, ECP_LOG_WARN, "file watch: %s", ignored.message);
        }
        smap_free(&subdirs);
    }
    *id = w->id;
    return 0;
}

int file_watch_start(file_service *svc, const char *path, const file_watch_options *options, file_watch_cb cb,
                     void *ctx, uint64_t *id, ecp_error *err)
{
    file__watcher *self = watcher_get(svc, err);
    if (!self)
        return ECP_EIO;
    file__glob **exclude = NULL;
    size_t exclude_count = 0;
    if (options->exclude && svc->watch_exclude_count) {
        int rc = file__globs_compile((const char *const *)svc->watch_exclude, svc->watch_exclude_count,
                                     FILE__GLOB_BASENAME | FILE__GLOB_DOT, &exclude, err);
        if (rc)
            return rc; /* not reached: the setter kept only patterns that compile */
        exclude_count = svc->watch_exclude_count;
    }
    int rc;
    watch *w = watch_begin(self, path, options->recursive, cb, ctx, err, &rc);
    if (!w) {
        file__globs_free(exclude, exclude_count);
        return rc;
    }
    w->exclude = exclude;
    w->exclude_count = exclude_count;
    w->ready = options->ready;
    w->setting_up = true;
    if (w->recursive) {
        tree_walk *t = xcalloc(1, sizeof *t);
        t->watcher = self;
        t->watch_id = w->id;
        t->root = xstrdup(w->root);
        if (exclude_count)
            file__globs_compile((const char *const *)svc->watch_exclude, exclude_count,
                                FILE__GLOB_BASENAME | FILE__GLOB_DOT, &t->exclude, NULL);
        t->exclude_count = t->exclude ? exclude_count : 0;
        w->walk = ecp_job_new(svc->jobs, &tree_walk_type, t);
        ecp_job_start(w->walk, 1);
    } else {
        uv_idle_start(&self->h->setup, setup_turn);
    }
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
            watch_free(self, w, true);
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
        watch_free(self, w, false);
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
    uv_close((uv_handle_t *)&self->h->setup, on_handle_closed);
    self->h->poll.data = self->h;
    self->h->timer.data = self->h;
    self->h->setup.data = self->h;
    free(self);
}
