/* editorconfig: what a document's .editorconfig files say about it.
 *
 * The files are the workspace's, and libeditorconfig walks up from a file to
 * the filesystem's root reading every .editorconfig it meets, however large.
 * So it never sees the real directories: the .editorconfig files between the
 * workspace root and the document (regular files, not links, each bounded in
 * size and in sections) are read here and copied into a private temporary
 * directory laid out the same way, whose top one says `root = true`, and
 * the library parses the document's path inside that copy. Nothing above
 * the workspace root is read, and a document outside the workspace reads
 * nothing.
 */
#include <editorconfig/editorconfig.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "job.h"

/* The largest .editorconfig read, and the most sections in one: past either
 * the file is ignored. */
#define EDITORCONFIG_MAX_BYTES ((size_t)64 << 10)
#define EDITORCONFIG_MAX_SECTIONS 256
/* The most directories between the workspace root and a document. */
#define EDITORCONFIG_MAX_DEPTH 64

/* libeditorconfig loses memory on a file it cannot parse (and takes nothing
 * from it), so such a file is ignored before it sees it: a line over this
 * long (its line buffer splits it), or one that is neither blank, a comment,
 * a section nor a name and value. */
#define EDITORCONFIG_MAX_LINE 4096

static bool line_parses(const char *line, size_t len)
{
    if (len > EDITORCONFIG_MAX_LINE)
        return false;
    while (len && isspace((unsigned char)*line)) {
        line++;
        len--;
    }
    if (!len || *line == '#' || *line == ';')
        return true;
    if (*line == '[')
        return memchr(line, ']', len) != NULL;
    return memchr(line, '=', len) || memchr(line, ':', len);
}

/* A section glob with more wildcards than this is ignored, with its keys:
 * each `*` between literals multiplies the ways libeditorconfig's regular
 * expression can try a long name (250 sections of four took 20 s, of three
 * 3 s, of two 50 ms). A real glob has one or two (`**` counts once). */
#define EDITORCONFIG_MAX_WILDCARDS 3

static size_t wildcards(const char *glob, size_t len)
{
    size_t count = 0;
    for (size_t i = 0; i < len; i++) {
        if (glob[i] == '?' || (glob[i] == '*' && (i == 0 || glob[i - 1] != '*')))
            count++;
    }
    return count;
}

/* Drops, in place, every section whose glob has too many wildcards, and the
 * lines under it up to the next section. Returns the new length. */
static size_t drop_wild_sections(char *data, size_t len)
{
    size_t out = 0;
    bool dropping = false;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) + 1 : len;
        size_t j = i;
        while (j < end && (data[j] == ' ' || data[j] == '\t'))
            j++;
        if (j < end && data[j] == '[') {
            const char *close = memchr(data + j, ']', end - j);
            size_t glob_len = close ? (size_t)(close - data) - j - 1 : 0;
            dropping = wildcards(data + j + 1, glob_len) > EDITORCONFIG_MAX_WILDCARDS;
        }
        if (!dropping) {
            memmove(data + out, data + i, end - i);
            out += end - i;
        }
        i = end;
    }
    data[out] = '\0';
    return out;
}

/* Reads dir/.editorconfig when it is a regular file within the bounds.
 * Returns the bytes (malloc'd) or NULL. */
static char *read_config(const char *dir, size_t *len)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/.editorconfig", dir) >= sizeof path)
        return NULL;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *data = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > EDITORCONFIG_MAX_BYTES)
        goto done;
    data = xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    data[got] = '\0';
    size_t sections = 0;
    bool parses = true;
    size_t first = got >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0 ? 3 : 0; /* a byte order mark */
    for (size_t i = first; i < got; i++) {
        size_t j = i;
        while (j < got && (data[j] == ' ' || data[j] == '\t'))
            j++;
        if (j < got && data[j] == '[')
            sections++;
        const char *nl = memchr(data + i, '\n', got - i);
        size_t line_end = nl ? (size_t)(nl - data) : got;
        parses = parses && line_parses(data + i, line_end - i);
        i = line_end;
    }
    if (!parses || sections > EDITORCONFIG_MAX_SECTIONS || memchr(data, '\0', got)) {
        free(data);
        data = NULL;
        goto done;
    }
    *len = drop_wild_sections(data, got);
done:
    close(fd);
    return data;
}

static bool write_all(const char *path, const char *a, size_t alen, const char *b, size_t blen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    bool ok = (alen == 0 || write(fd, a, alen) == (ssize_t)alen) && (blen == 0 || write(fd, b, blen) == (ssize_t)blen);
    close(fd);
    return ok;
}

static void copy_value(char *dst, size_t cap, const char *value)
{
    size_t n = strlen(value);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, value, n);
    dst[n] = '\0';
}

static int flag_of(const char *value)
{
    if (strcmp(value, "true") == 0)
        return 1;
    if (strcmp(value, "false") == 0)
        return 0;
    return -1;
}

static void take_values(editorconfig_handle h, document_format *out)
{
    const char *style = NULL, *size = NULL, *tab_width = NULL;
    int count = editorconfig_handle_get_name_value_count(h);
    for (int i = 0; i < count; i++) {
        const char *name, *value;
        editorconfig_handle_get_name_value(h, i, &name, &value);
        if (strcmp(name, "indent_style") == 0)
            style = value;
        else if (strcmp(name, "indent_size") == 0)
            size = value;
        else if (strcmp(name, "tab_width") == 0)
            tab_width = value;
        else if (strcmp(name, "end_of_line") == 0 &&
                 (strcmp(value, "lf") == 0 || strcmp(value, "crlf") == 0 || strcmp(value, "cr") == 0))
            copy_value(out->end_of_line, sizeof out->end_of_line, value);
        else if (strcmp(name, "charset") == 0)
            copy_value(out->charset, sizeof out->charset, value);
        else if (strcmp(name, "insert_final_newline") == 0)
            out->insert_final_newline = flag_of(value);
        else if (strcmp(name, "trim_trailing_whitespace") == 0)
            out->trim_trailing_whitespace = flag_of(value);
    }
    long n = 0;
    const char *digits = size && strcmp(size, "tab") != 0 ? size : tab_width;
    if (digits) {
        char *end;
        n = strtol(digits, &end, 10);
        if (*end || n < 1 || n > 16)
            n = 0;
    }
    if (style && (strcmp(style, "tab") == 0 || strcmp(style, "space") == 0)) {
        out->has_indent = true;
        out->indent.tabs = strcmp(style, "tab") == 0;
        out->indent.size = n ? (size_t)n : 4;
    } else if (n) {
        out->has_indent = true;
        out->indent.tabs = false;
        out->indent.size = (size_t)n;
    }
}

/* Removes the copy: the files, then the directories, deepest first. */
static void remove_copy(const char *top, char dirs[][PATH_MAX], size_t count)
{
    char path[PATH_MAX + 16];
    for (size_t i = count; i-- > 0;) {
        snprintf(path, sizeof path, "%s/.editorconfig", dirs[i]);
        unlink(path);
        if (strcmp(dirs[i], top) != 0)
            rmdir(dirs[i]);
    }
    rmdir(top);
}

void document__editorconfig(const char *workspace, const char *file, document_format *out)
{
    memset(out, 0, sizeof *out);
    out->insert_final_newline = -1;
    out->trim_trailing_whitespace = -1;
    if (!workspace || !file)
        return;
    size_t wlen = strlen(workspace);
    while (wlen > 1 && workspace[wlen - 1] == '/')
        wlen--;
    /* the file's directory, resolved, must lie inside the workspace */
    char dir[PATH_MAX];
    const char *slash = strrchr(file, '/');
    if (!slash || (size_t)(slash - file) >= sizeof dir)
        return;
    memcpy(dir, file, (size_t)(slash - file));
    dir[slash - file] = '\0';
    char real_dir[PATH_MAX];
    if (!realpath(dir[0] ? dir : "/", real_dir))
        return;
    bool inside = strncmp(real_dir, workspace, wlen) == 0 &&
                  (real_dir[wlen] == '\0' || real_dir[wlen] == '/' || wlen == 1);
    if (!inside)
        return;
    const char *rel = real_dir + wlen; /* "" or "/a/b" */
    const char *base = slash + 1;

    char tmp_base[] = "/tmp/ecpd-editorconfig-XXXXXX";
    const char *tmpdir = getenv("TMPDIR");
    char top[PATH_MAX];
    if (tmpdir && *tmpdir && strlen(tmpdir) + sizeof "/ecpd-editorconfig-XXXXXX" < sizeof top)
        snprintf(top, sizeof top, "%s/ecpd-editorconfig-XXXXXX", tmpdir);
    else
        memcpy(top, tmp_base, sizeof tmp_base);
    if (!mkdtemp(top))
        return;

    char (*copies)[PATH_MAX] = xmalloc(EDITORCONFIG_MAX_DEPTH * sizeof *copies);
    size_t copy_count = 0;
    bool ok = true;
    /* each level: the real directory and its place in the copy */
    char real_level[PATH_MAX], copy_level[PATH_MAX];
    snprintf(real_level, sizeof real_level, "%.*s", (int)wlen, workspace);
    snprintf(copy_level, sizeof copy_level, "%s", top);
    const char *p = rel;
    for (size_t depth = 0; ok; depth++) {
        if (depth >= EDITORCONFIG_MAX_DEPTH) {
            ok = false;
            break;
        }
        if (depth > 0 && mkdir(copy_level, 0700) != 0) {
            ok = false;
            break;
        }
        snprintf(copies[copy_count++], PATH_MAX, "%s", copy_level);
        size_t len = 0;
        char *data = read_config(real_level, &len);
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/.editorconfig", copy_level);
        /* the top one is the root whatever it says: nothing above is read */
        static const char root_line[] = "root = true\n";
        const char *head = depth == 0 ? root_line : "";
        size_t head_len = depth == 0 ? sizeof root_line - 1 : 0;
        if ((data || depth == 0) && !write_all(path, head, head_len, data ? data : "", data ? len : 0))
            ok = false;
        free(data);
        if (!*p)
            break;
        const char *next = strchr(p + 1, '/');
        size_t part = next ? (size_t)(next - p) : strlen(p);
        size_t rl = strlen(real_level), cl = strlen(copy_level);
        if (rl + part >= sizeof real_level || cl + part >= sizeof copy_level) {
            ok = false;
            break;
        }
        memcpy(real_level + rl, p, part);
        real_level[rl + part] = '\0';
        memcpy(copy_level + cl, p, part);
        copy_level[cl + part] = '\0';
        p += part;
    }
    if (ok) {
        char target[PATH_MAX + 256];
        if ((size_t)snprintf(target, sizeof target, "%s/%s", copy_level, base) < sizeof target) {
            editorconfig_handle h = editorconfig_handle_init();
            if (h && editorconfig_parse(target, h) == 0)
                take_values(h, out);
            if (h)
                editorconfig_handle_destroy(h);
        }
    }
    remove_copy(top, copies, copy_count);
    free(copies);
}

/* The files are the workspace's, and a hostile one can keep libeditorconfig's
 * glob matching busy for many seconds (a section glob that backtracks over a
 * long name: 250 of them took 20 s). So a lookup runs on the pool, and the
 * loop waits for it at most EDITORCONFIG_WAIT_MS: past that the document has
 * no .editorconfig values for now, and takes them when the lookup lands.
 *
 * One lookup runs at a time; the others wait their turn, first come first.
 * A few documents opened in such a repository would otherwise hold every
 * pool thread for seconds, and another client's read or save would wait for
 * them (eight did: a file/read waited 10 s). A lookup normally takes a
 * millisecond, so the turn costs nothing. */
#define EDITORCONFIG_WAIT_MS 100

typedef struct format_lookup {
    document_service *svc;
    char *doc_id; /* NULL: a path's lookup that no document waits for */
    char *workspace;
    char *path;
    document_format result;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool finished;
    struct format_lookup *next; /* in the service's waiting list */
} format_lookup;

static void lookup_work(ecp_job *job, unsigned item)
{
    (void)item;
    format_lookup *l = ecp_job_data(job);
    document__editorconfig(l->workspace, l->path, &l->result);
    pthread_mutex_lock(&l->lock);
    l->finished = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

static void lookup_free(void *data)
{
    format_lookup *l = data;
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free_each(l->doc_id, l->workspace, l->path, l);
}

static void lookup_done(ecp_job *job);

static const ecp_job_type lookup_job = {
    .name = "document.editorconfig",
    .lane = ECP_LANE_SHORT,
    .work = lookup_work,
    .done = lookup_done,
    .free_data = lookup_free,
};

static format_lookup *lookup_new(document_service *svc, document *doc, const char *path)
{
    format_lookup *l = xcalloc(1, sizeof *l);
    *l = (format_lookup){.svc = svc, .doc_id = doc ? xstrdup(doc->id) : NULL, .workspace = xstrdup(svc->workspace),
                         .path = xstrdup(path)};
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &attr);
    pthread_condattr_destroy(&attr);
    if (doc)
        doc->format_lookup = l;
    return l;
}

/* Hands l to the pool as the one lookup running; the job owns it from here. */
static void lookup_run(document_service *svc, format_lookup *l)
{
    svc->format_running = l;
    ecp_job_start(ecp_job_new(svc->jobs, &lookup_job, l), 1);
}

/* Starts the first waiting lookup whose document still waits for it. */
static void run_next(document_service *svc)
{
    while (!svc->format_running && svc->format_waiting) {
        format_lookup *l = svc->format_waiting;
        svc->format_waiting = l->next;
        document *doc = l->doc_id ? document__find(svc, l->doc_id, NULL) : NULL;
        if (doc && doc->format_lookup == l)
            lookup_run(svc, l);
        else
            lookup_free(l); /* closed, moved to another file, or under another workspace */
    }
}

/* Whether l's work ended before `until`; the loop waits meanwhile. */
static bool wait_finished(format_lookup *l, const struct timespec *until)
{
    pthread_mutex_lock(&l->lock);
    while (!l->finished && pthread_cond_timedwait(&l->cond, &l->lock, until) == 0)
        ;
    bool finished = l->finished;
    pthread_mutex_unlock(&l->lock);
    return finished;
}

/* A lookup that ended: its document (if still open, and still waiting for
 * this one) takes the values now, and the next waiting lookup starts. */
static void lookup_done(ecp_job *job)
{
    format_lookup *l = ecp_job_data(job);
    document_service *svc = l->svc;
    if (svc->format_running == l)
        svc->format_running = NULL;
    document *doc = l->doc_id ? document__find(svc, l->doc_id, NULL) : NULL;
    if (doc && doc->format_lookup == l) {
        doc->format_lookup = NULL;
        if (!ecp_job_cancelled(job) && l->finished) {
            doc->format = l->result;
            doc->format_known = true;
        }
    }
    run_next(svc);
}

/* What path's .editorconfig files say, in *out, if the lookup ends within
 * the wait (which covers the end of a lookup already running, then this
 * one); otherwise *out has no values and false is returned, and lookup_done
 * gives doc its values once its lookup, running or waiting its turn, ends. A
 * path's lookup that no document waits for (a save as) never waits its turn:
 * past the wait, the path has no values. */
static bool lookup_bounded(document_service *svc, document *doc, const char *path, document_format *out)
{
    document__editorconfig(NULL, NULL, out); /* no values */
    if (!svc->workspace || !path)
        return true;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += (long)EDITORCONFIG_WAIT_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    /* With lookups already waiting, the one running is a slow one: no wait.
     * (Its data lives until lookup_free, which runs on the loop after
     * lookup_done: not while the loop waits here.) */
    if (svc->format_running && (svc->format_waiting || !wait_finished(svc->format_running, &until))) {
        if (doc) {
            format_lookup *l = lookup_new(svc, doc, path);
            if (svc->format_waiting)
                svc->format_waiting_last->next = l;
            else
                svc->format_waiting = l;
            svc->format_waiting_last = l;
        }
        return false;
    }
    format_lookup *l = lookup_new(svc, doc, path);
    lookup_run(svc, l);
    bool finished = wait_finished(l, &until);
    if (finished)
        *out = l->result;
    if (finished && doc)
        doc->format_lookup = NULL; /* taken here: lookup_done leaves the document alone */
    return finished;
}

void document__format_lookups_free(document_service *svc)
{
    while (svc->format_waiting) {
        format_lookup *l = svc->format_waiting;
        svc->format_waiting = l->next;
        lookup_free(l);
    }
    svc->format_running = NULL;
}

const document_format *document__format(document_service *svc, document *doc)
{
    if (doc->format_known)
        return &doc->format;
    if (doc->format_lookup)
        return &doc->format; /* no values until the lookup lands */
    doc->format_known = lookup_bounded(svc, doc, doc->path, &doc->format);
    return &doc->format;
}

int document_format_of(document_service *self, const char *document_id, document_format *out, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    *out = *document__format(self, doc);
    return 0;
}

void document_service_set_workspace(document_service *self, const char *root)
{
    free(self->workspace);
    self->workspace = NULL;
    char resolved[PATH_MAX];
    if (root && realpath(root, resolved))
        self->workspace = xstrdup(resolved);
    /* what documents read under the old root no longer holds */
    for (size_t i = 0; i < self->doc_count; i++) {
        self->docs[i]->format_known = false;
        self->docs[i]->format_lookup = NULL; /* a lookup under the old root lands for nobody */
    }
}

/* What a save trims or adds is an edit on the loop: past this size the
 * document is written as it is. */
#define SAVE_FORMAT_MAX_BYTES ((size_t)8 << 20)

void document__format_for_save(document_service *svc, document *doc, const char *path)
{
    document_format other;
    const document_format *f;
    if (path && (!doc->path || strcmp(path, doc->path) != 0)) {
        lookup_bounded(svc, NULL, path, &other); /* a save as: the new file's */
        f = &other;
    } else {
        f = document__format(svc, doc);
    }
    bool trim = f->trim_trailing_whitespace == 1, final_newline = f->insert_final_newline == 1;
    size_t len = piece_tree_length(doc->tree);
    if ((!trim && !final_newline) || doc->read_only || len == 0 || len > SAVE_FORMAT_MAX_BYTES)
        return;
    char *text = xmalloc(len);
    piece_tree_copy(doc->tree, 0, len, text);
    doc_edit *edits = NULL;
    size_t count = 0, cap = 0;
    for (size_t start = 0; trim && start <= len;) {
        const char *nl = memchr(text + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t keep = end;
        while (keep > start && (text[keep - 1] == ' ' || text[keep - 1] == '\t'))
            keep--;
        if (keep < end) {
            if (count == cap) {
                cap = cap ? cap * 2 : 16;
                edits = xrealloc(edits, cap * sizeof *edits);
            }
            edits[count] = (doc_edit){keep, end, "", 0, count};
            count++;
        }
        if (!nl)
            break;
        start = end + 1;
    }
    if (final_newline && text[len - 1] != '\n') {
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            edits = xrealloc(edits, cap * sizeof *edits);
        }
        edits[count] = (doc_edit){len, len, "\n", 1, count};
        count++;
    }
    if (count)
        document__apply_sorted(svc, doc, 0, edits, count, false, DOC_CURSORS_FOLLOW, NULL, NULL);
    free(edits);
    free(text);
}
