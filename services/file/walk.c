/* walk: file/glob and file/search, walks of one work item in the long lane. */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob.h"

/* ----- reading one directory ------------------------------------------------------ */

typedef struct dir_entry {
    char *name;
    bool is_dir;  /* a real directory, or a symlink to one */
    bool is_link;
    bool is_file; /* anything that is not a directory */
} dir_entry;

typedef struct dir_list {
    dir_entry *items;
    size_t n, cap;
} dir_list;

static void dir_list_free(dir_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i].name);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int entry_name_cmp(const void *a, const void *b)
{
    return strcmp(((const dir_entry *)a)->name, ((const dir_entry *)b)->name);
}

/* Lists path; returns false when it cannot be opened or was visited before
 * (a loop through a symlink or a bind mount). */
static bool list_dir(const char *path, file__idset *seen, bool sorted, dir_list *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || !file__idset_add(seen, st.st_dev, st.st_ino)) {
        close(fd);
        return false;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return false;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        dir_entry it = {0};
        unsigned char type = e->d_type;
        struct stat es;
        if (type == DT_UNKNOWN) {
            if (fstatat(fd, e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0)
                continue;
            type = S_ISDIR(es.st_mode) ? DT_DIR : S_ISLNK(es.st_mode) ? DT_LNK : DT_REG;
        }
        if (type == DT_LNK) {
            it.is_link = true;
            it.is_dir = fstatat(fd, e->d_name, &es, 0) == 0 && S_ISDIR(es.st_mode);
        } else {
            it.is_dir = type == DT_DIR;
        }
        it.is_file = !it.is_dir;
        it.name = xstrdup(e->d_name);
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 32;
            out->items = xrealloc(out->items, out->cap * sizeof *out->items);
        }
        out->items[out->n++] = it;
    }
    closedir(d);
    if (sorted && out->n > 1)
        qsort(out->items, out->n, sizeof *out->items, entry_name_cmp);
    return true;
}

static void rel_join(buf *out, const char *rel, size_t rel_len, const char *name)
{
    buf_clear(out);
    if (rel_len) {
        buf_append(out, rel, rel_len);
        buf_push(out, '/');
    }
    buf_append_str(out, name);
}

/* ----- glob ------------------------------------------------------------------------ */

typedef struct glob_job {
    file__walk walk; /* first: file_walk_start reads it */
    ecp_job *job;
    file__glob *glob;
    file__glob **exclude;
    size_t exclude_count;
    char *root;
    size_t max_results;
    bool include_dirs, follow;
    file_glob_cb cb;
    void *ctx;
    void (*format)(void *fctx, const file_glob_result *r, buf *out);
    void *fctx;
    bool formatted;
    buf rendered;
    ecp_shared *shared; /* rendered, handed to the loop */
    char **paths;
    size_t count, cap;
    file__idset seen;
} glob_job;

static void glob_add(glob_job *t, const char *abs)
{
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->paths = xrealloc(t->paths, t->cap * sizeof *t->paths);
    }
    t->paths[t->count++] = xstrdup(abs);
}

static bool glob_full(glob_job *t)
{
    return t->max_results && t->count >= t->max_results;
}

static void glob_walk(glob_job *t, const char *dir, const char *rel, size_t rel_len)
{
    dir_list list;
    if (!list_dir(dir, &t->seen, true, &list))
        return;
    buf abs = BUF_INIT, child = BUF_INIT;
    for (size_t i = 0; i < list.n && !glob_full(t) && !ecp_job_cancelled(t->job); i++) {
        dir_entry *e = &list.items[i];
        rel_join(&child, rel, rel_len, e->name);
        if (file__globs_match(t->exclude, t->exclude_count, child.data, child.len))
            continue;
        file__join(&abs, dir, e->name);
        bool matched = file__glob_match(t->glob, child.data, child.len);
        if (e->is_dir) {
            if (matched && t->include_dirs)
                glob_add(t, abs.data);
            if ((!e->is_link || t->follow) && file__glob_could_match_below(t->glob, child.data, child.len)) {
                glob_walk(t, abs.data, child.data, child.len);
            }
        } else if (matched) {
            glob_add(t, abs.data);
        }
    }
    buf_free(&abs);
    buf_free(&child);
    dir_list_free(&list);
}

/* A walk starts from an existing directory; otherwise it records why not
 * ("File not found: ...", "Not a directory: ..."). */
static bool root_is_directory(file__walk *walk, const char *root)
{
    struct stat st;
    if (stat(root, &st) != 0) {
        walk->status = file__errno(&walk->err, errno, root);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        walk->status = file__errno(&walk->err, ENOTDIR, root);
        return false;
    }
    return true;
}

static void glob_work(ecp_job *job, unsigned item)
{
    glob_job *t = ecp_job_data(job);
    if (!root_is_directory(&t->walk, t->root))
        return;
    glob_walk(t, t->root, "", 0);
    if (t->format && !ecp_job_cancelled(job)) {
        file_glob_result res = {t->paths, t->count, glob_full(t), NULL};
        t->format(t->fctx, &res, &t->rendered);
        t->formatted = true;
    }
}

static void glob_done(ecp_job *job)
{
    glob_job *t = ecp_job_data(job);
    if (file__walk_outcome(job, !t->format || t->formatted, t->format ? &t->rendered : NULL, &t->shared)) {
        t->cb(t->ctx, t->walk.status, &t->walk.err, NULL);
        return;
    }
    file_glob_result res = {t->paths, t->count, glob_full(t), t->shared};
    t->cb(t->ctx, 0, NULL, &res);
}

static void glob_free(void *data)
{
    glob_job *t = data;
    file__glob_free(t->glob);
    file__globs_free(t->exclude, t->exclude_count);
    free(t->root);
    for (size_t i = 0; i < t->count; i++)
        free(t->paths[i]);
    free(t->paths);
    buf_free(&t->rendered);
    ecp_shared_unref(t->shared);
    file__idset_free(&t->seen);
    free(t);
}

static bool segment_is_literal(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strchr("*?[{\\", s[i]))
            return false;
    return true;
}

static const ecp_job_type glob_type = {"file.glob", ECP_LANE_LONG, false, glob_work, glob_done, glob_free};

int file_glob_prepare(file_service *self, const file_glob_options *o, file_glob_cb cb, void *ctx, ecp_job **walk,
                      ecp_error *err)
{
    /* Leading literal segments ("../src/", "/abs/dir/") move into the root, so
     * absolute and parent-relative patterns work and the walk starts where the
     * pattern does. */
    buf root = BUF_INIT, raw = BUF_INIT;
    const char *p = o->pattern;
    if (p[0] == '/') {
        buf_append_str(&raw, "/");
        p++;
    } else {
        buf_append_str(&raw, o->base);
    }
    for (;;) {
        const char *slash = strchr(p, '/');
        if (!slash || !segment_is_literal(p, (size_t)(slash - p)))
            break;
        buf_push(&raw, '/');
        buf_append(&raw, p, (size_t)(slash - p));
        p = slash + 1;
    }
    file_path_normalize(&root, raw.data, raw.len);
    buf_free(&raw);

    glob_job *t = xcalloc(1, sizeof *t);
    /* compiling the whole pattern first makes error offsets point into what the client sent */
    int rc = file__glob_compile(o->pattern, 0, &t->glob, err);
    file__glob_free(t->glob);
    t->glob = NULL;
    if (rc == 0)
        rc = file__glob_compile(p, 0, &t->glob, err);
    if (rc == 0)
        rc = file__globs_compile(o->exclude, o->exclude_count, FILE__GLOB_BASENAME | FILE__GLOB_DOT, &t->exclude,
                                 err);
    if (rc) {
        t->exclude_count = 0;
        t->root = buf_detach(&root);
        glob_free(t);
        return rc;
    }
    t->exclude_count = o->exclude_count;
    t->root = buf_detach(&root);
    t->max_results = o->max_results;
    t->include_dirs = o->include_directories;
    t->follow = o->follow_symlinks;
    t->cb = cb;
    t->ctx = ctx;
    t->format = o->format;
    t->fctx = o->fctx;
    t->walk.items = 1;
    t->job = ecp_job_new(self->jobs, &glob_type, t);
    *walk = t->job;
    return 0;
}

/* ----- fuzzy scoring ---------------------------------------------------------------- */

static unsigned char fold(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static bool ci_equal(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fold((unsigned char)a[i]) != fold((unsigned char)b[i]))
            return false;
    return true;
}

int file_fuzzy_score(const char *pattern, size_t plen, const char *name, size_t nlen, file_search_range *ranges,
                     size_t max_ranges, size_t *range_count)
{
    *range_count = 0;
    if (plen <= nlen && ci_equal(name, pattern, plen)) {
        if (plen && max_ranges)
            ranges[(*range_count)++] = (file_search_range){0, plen};
        return 100;
    }
    for (size_t i = 1; plen <= nlen && i + plen <= nlen; i++) {
        if (ci_equal(name + i, pattern, plen)) {
            if (max_ranges)
                ranges[(*range_count)++] = (file_search_range){i, i + plen};
            return 50;
        }
    }
    /* every character of pattern, in order, leftmost first */
    size_t pi = 0, ni = 0, count = 0;
    bool in_run = false;
    while (pi < plen && ni < nlen) {
        uint32_t pc, nc;
        size_t pl = utf8_decode(pattern + pi, plen - pi, &pc);
        size_t nl = utf8_decode(name + ni, nlen - ni, &nc);
        if (pc < 128)
            pc = fold((unsigned char)pc);
        if (nc < 128)
            nc = fold((unsigned char)nc);
        if (pc == nc) {
            if (in_run && count) {
                ranges[count - 1].end = ni + nl;
            } else if (count < max_ranges) {
                ranges[count++] = (file_search_range){ni, ni + nl};
                in_run = true;
            }
            pi += pl;
        } else {
            in_run = false;
        }
        ni += nl;
    }
    if (pi < plen) {
        *range_count = 0;
        return 0;
    }
    *range_count = count;
    return 25;
}

/* ----- search ----------------------------------------------------------------------- */

typedef struct search_job {
    file__walk walk; /* first: file_walk_start reads it */
    ecp_job *job;
    char *pattern;
    char *root;
    size_t max_results;
    char **exclude_text;      /* plain substrings */
    file__glob **exclude_glob; /* the ones that are globs (NULL where plain) */
    size_t exclude_count;
    ecp_position_encoding enc;
    file_search_cb cb;
    void *ctx;
    void (*format)(void *fctx, const file_search_result *r, buf *out);
    void *fctx;
    bool formatted;
    buf rendered;
    ecp_shared *shared; /* rendered, handed to the loop */
    file_search_hit *hits;
    size_t count, cap, best; /* best: hits that scored 100 */
    file__idset seen;
} search_job;

static bool search_excluded(search_job *t, const char *rel, size_t len)
{
    for (size_t i = 0; i < t->exclude_count; i++) {
        bool hit = t->exclude_glob[i] ? file__glob_match(t->exclude_glob[i], rel, len)
                                      : strstr(rel, t->exclude_text[i]) != NULL;
        if (hit)
            return true;
    }
    return false;
}

static void search_consider(search_job *t, const char *abs, size_t name_off)
{
    const char *name = abs + name_off;
    size_t plen = strlen(t->pattern), nlen = strlen(name);
    file_search_range ranges[64];
    size_t nr;
    int score = file_fuzzy_score(t->pattern, plen, name, nlen, ranges, 64, &nr);
    if (score == 0)
        return;
    if (t->count == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->hits = xrealloc(t->hits, t->cap * sizeof *t->hits);
    }
    file_search_hit *h = &t->hits[t->count++];
    h->path = xstrdup(abs);
    h->name = h->path + name_off;
    h->score = score;
    h->range_count = nr;
    h->ranges = nr ? xmalloc(nr * sizeof *h->ranges) : NULL;
    for (size_t i = 0; i < nr; i++) {
        h->ranges[i].start = utf_column_count(name, ranges[i].start, t->enc);
        h->ranges[i].end = utf_column_count(name, ranges[i].end, t->enc);
    }
    if (score == 100)
        t->best++;
}

static bool search_should_stop(search_job *t)
{
    /* nothing can beat max_results perfect scores */
    return ecp_job_cancelled(t->job) || (t->max_results && t->best >= t->max_results);
}

static void search_walk(search_job *t, const char *dir, const char *rel, size_t rel_len)
{
    dir_list list;
    if (!list_dir(dir, &t->seen, false, &list))
        return;
    buf abs = BUF_INIT, child = BUF_INIT;
    for (size_t i = 0; i < list.n && !search_should_stop(t); i++) {
        dir_entry *e = &list.items[i];
        if (file__excluded_by_default(e->name))
            continue;
        rel_join(&child, rel, rel_len, e->name);
        if (search_excluded(t, child.data, child.len))
            continue;
        file__join(&abs, dir, e->name);
        if (e->is_dir) {
            if (!e->is_link)
                search_walk(t, abs.data, child.data, child.len);
        } else {
            search_consider(t, abs.data, abs.len - strlen(e->name));
        }
    }
    buf_free(&abs);
    buf_free(&child);
    dir_list_free(&list);
}

static int hit_compare(const void *pa, const void *pb)
{
    const file_search_hit *a = pa, *b = pb;
    if (a->score != b->score)
        return b->score - a->score;
    size_t la = strlen(a->name), lb = strlen(b->name);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a->path, b->path);
}

static file_search_result search_result(const search_job *t)
{
    size_t n = t->count;
    if (t->max_results && n > t->max_results)
        n = t->max_results;
    return (file_search_result){t->hits, n, NULL};
}

static void search_work(ecp_job *job, unsigned item)
{
    search_job *t = ecp_job_data(job);
    if (!root_is_directory(&t->walk, t->root))
        return;
    search_walk(t, t->root, "", 0);
    if (t->count > 1)
        qsort(t->hits, t->count, sizeof *t->hits, hit_compare);
    if (t->format && !ecp_job_cancelled(job)) {
        file_search_result res = search_result(t);
        t->format(t->fctx, &res, &t->rendered);
        t->formatted = true;
    }
}

static void search_done(ecp_job *job)
{
    search_job *t = ecp_job_data(job);
    if (file__walk_outcome(job, !t->format || t->formatted, t->format ? &t->rendered : NULL, &t->shared)) {
        t->cb(t->ctx, t->walk.status, &t->walk.err, NULL);
        return;
    }
    file_search_result res = search_result(t);
    res.rendered = t->shared;
    t->cb(t->ctx, 0, NULL, &res);
}

static void search_free(void *data)
{
    search_job *t = data;
    for (size_t i = 0; i < t->exclude_count; i++) {
        free(t->exclude_text[i]);
        file__glob_free(t->exclude_glob[i]);
    }
    for (size_t i = 0; i < t->count; i++)
        free_each(t->hits[i].path, t->hits[i].ranges);
    buf_free(&t->rendered);
    ecp_shared_unref(t->shared);
    file__idset_free(&t->seen);
    free_each(t->pattern, t->root, t->exclude_text, t->exclude_glob, t->hits, t);
}

static const ecp_job_type search_type = {"file.search", ECP_LANE_LONG, false, search_work, search_done,
                                         search_free};

int file_search_prepare(file_service *self, const file_search_options *o, file_search_cb cb, void *ctx,
                        ecp_job **walk, ecp_error *err)
{
    search_job *t = xcalloc(1, sizeof *t);
    t->exclude_text = xcalloc(o->exclude_count + 1, sizeof *t->exclude_text);
    t->exclude_glob = xcalloc(o->exclude_count + 1, sizeof *t->exclude_glob);
    for (size_t i = 0; i < o->exclude_count; i++) {
        t->exclude_text[i] = xstrdup(o->exclude[i]);
        t->exclude_count = i + 1;
        if (!file__glob_is_literal(o->exclude[i])) {
            ecp_error e;
            int rc = file__glob_compile(o->exclude[i], FILE__GLOB_BASENAME | FILE__GLOB_DOT, &t->exclude_glob[i], &e);
            if (rc) {
                ecp_error_set(err, rc, "invalid glob '%.40s%s': %s", o->exclude[i],
                              strlen(o->exclude[i]) > 40 ? "..." : "", e.message);
                search_free(t);
                return rc;
            }
        }
    }
    buf root = BUF_INIT;
    file_path_normalize(&root, o->base, strlen(o->base));
    t->root = buf_detach(&root);
    t->pattern = xstrdup(o->pattern);
    t->max_results = o->max_results;
    t->enc = o->encoding;
    t->cb = cb;
    t->ctx = ctx;
    t->format = o->format;
    t->fctx = o->fctx;
    t->walk.items = 1;
    t->job = ecp_job_new(self->jobs, &search_type, t);
    *walk = t->job;
    return 0;
}
