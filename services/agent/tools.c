/* tools: what the model may do, checked and confined to the workspace, acting
 * through the document and file services. Disk work runs as jobs; a command
 * runs as a child process on the loop. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena.h"
#include "document/interface.h"
#include "file/interface.h"
#include "git/interface.h"
#include "lsp/interface.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "process.h"
#include "uri.h"

#define READ_MAX_BYTES (8u << 20)
#define OUTPUT_MAX_BYTES (64u << 10)
#define SHELL_TIMEOUT_DEFAULT_MS 30000
#define SHELL_TIMEOUT_MAX_MS 600000
#define LIST_MAX_ENTRIES 2000
#define GREP_MAX_RESULTS 200

static const agent_tool_info tools[] = {
    {"read_file", "Read a text file of the workspace. An open document's unsaved text is what you get.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"relative to the "
     "workspace, or absolute inside it\"},\"line_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":"
     "\"first line to return, 0-based\"},\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"lines to "
     "return\"}},\"required\":[\"path\"]}"},
    {"write_file", "Write the whole content of a file of the workspace (created with its directories if missing).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},"
     "\"required\":[\"path\",\"content\"]}"},
    {"edit_file", "Replace old_string by new_string in a file of the workspace. old_string must occur exactly once "
                  "unless all_occurrences is true.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"old_string\":{\"type\":\"string\"},"
     "\"new_string\":{\"type\":\"string\"},\"all_occurrences\":{\"type\":\"boolean\"}},"
     "\"required\":[\"path\",\"old_string\",\"new_string\"]}"},
    {"list_directory", "List a directory of the workspace as a tree (directories end with '/').",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"max_depth\":{\"type\":\"integer\","
     "\"minimum\":1,\"maximum\":10}},\"required\":[\"path\"]}"},
    {"grep", "Search the lines of the workspace's text files for a regular expression (PCRE2).",
     "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\","
     "\"description\":\"directory or file to search; the workspace when absent\"},\"include\":{\"type\":\"string\","
     "\"description\":\"a glob the file names must match\"},\"max_results\":{\"type\":\"integer\",\"minimum\":1}},"
     "\"required\":[\"pattern\"]}"},
    {"git", "Inspect the workspace's git repository: status, diff (unstaged, or staged) or log.",
     "{\"type\":\"object\",\"properties\":{\"operation\":{\"type\":\"string\",\"enum\":[\"status\",\"diff\","
     "\"log\"]},\"path\":{\"type\":\"string\",\"description\":\"diff: one file (all changed files when absent)\"},"
     "\"staged\":{\"type\":\"boolean\"},\"max_count\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
     "\"log: commits to show (default 20)\"}},\"required\":[\"operation\"]}"},
    {"diagnostics", "The language servers' diagnostics (errors, warnings) for a file of the workspace, or for every "
                    "file that has some.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}"},
    {"update_plan", "Keep a plan of the task's steps for the user to follow: send the complete list each time, "
                    "each step with its status.",
     "{\"type\":\"object\",\"properties\":{\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
     "\"properties\":{\"content\":{\"type\":\"string\"},\"priority\":{\"type\":\"string\",\"enum\":[\"high\","
     "\"medium\",\"low\"]},\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\",\"completed\"]}},"
     "\"required\":[\"content\",\"status\"]}}},\"required\":[\"entries\"]}"},
    {"shell_command", "Run a command with /bin/sh in the workspace; its output (stdout and stderr) is returned.",
     "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},\"timeout\":{\"type\":\"integer\","
     "\"minimum\":1,\"description\":\"milliseconds (default 30000)\"}},\"required\":[\"command\"]}"},
};

#define TOOL_COUNT (sizeof tools / sizeof tools[0])

const agent_tool_info *agent_tools(size_t *count)
{
    *count = TOOL_COUNT;
    return tools;
}

/* ----- confinement ---------------------------------------------------------------------- */

int agent_confine(const char *workspace, const char *path, char **out, ecp_error *err)
{
    *out = NULL;
    if (!workspace)
        return ecp_error_set(err, ECP_EACCES, "there is no workspace: the tools work only inside one");
    char root[PATH_MAX];
    if (!realpath(workspace, root))
        return ecp_error_set(err, ECP_ENOTFOUND, "the workspace %s cannot be resolved", workspace);
    buf joined = BUF_INIT, lexical = BUF_INIT;
    if (path[0] == '/')
        buf_append_str(&joined, path);
    else
        buf_appendf(&joined, "%s/%s", root, path);
    file_path_normalize(&lexical, joined.data, joined.len);
    buf_free(&joined);
    if (!uri_path_within(lexical.data, root)) {
        int s = ecp_error_set(err, ECP_EACCES, "%s is outside the workspace", path);
        buf_free(&lexical);
        return s;
    }
    /* Follow the symlinks of the longest part that exists; the rest does not
     * exist, so it holds none. */
    char *probe = xstrdup(lexical.data);
    size_t cut = strlen(probe);
    char real[PATH_MAX];
    for (;;) {
        char saved = probe[cut];
        probe[cut] = '\0';
        bool found = realpath(cut ? probe : "/", real) != NULL;
        probe[cut] = saved;
        if (found)
            break;
        if (errno != ENOENT && errno != ENOTDIR) {
            real[0] = '\0';
            break;
        }
        while (cut > 0 && probe[cut - 1] != '/')
            cut--;
        if (cut > 0)
            cut--;
    }
    buf resolved = BUF_INIT;
    if (real[0])
        buf_appendf(&resolved, "%s%s", strcmp(real, "/") == 0 ? "" : real, probe + cut);
    free(probe);
    buf_free(&lexical);
    if (!real[0] || !uri_path_within(resolved.data, root)) {
        int s = ecp_error_set(err, ECP_EACCES, "%s is outside the workspace (through a symlink)", path);
        buf_free(&resolved);
        return s;
    }
    *out = buf_detach(&resolved);
    return 0;
}

/* ----- checking a call ------------------------------------------------------------------- */

static const char *arg_string(const json_doc *d, const char *key, arena *a, size_t *len)
{
    const char *s = NULL;
    json_ref v = json_get(d, json_root(d), key);
    if (v == JSON_NO_REF || json_type_of(d, v) != JSON_STRING || !json_string(d, v, a, &s, len))
        return NULL;
    return s;
}

static bool has_string(const json_doc *d, const char *key)
{
    return json_type_of(d, json_get(d, json_root(d), key)) == JSON_STRING;
}

int plan_entries(const json_doc *d, buf *out, ecp_error *err)
{
    static const char *const priorities[] = {"high", "medium", "low"}, *const statuses[] = {"pending", "in_progress",
                                                                                           "completed"};
    json_ref entries = json_get(d, json_root(d), "entries");
    if (entries == JSON_NO_REF || json_type_of(d, entries) != JSON_ARRAY)
        return ecp_error_set(err, ECP_EINVAL, "update_plan needs an array entries");
    json_writer w;
    if (out) {
        jw_init(&w, out);
        jw_array_begin(&w);
    }
    arena a = ARENA_INIT;
    int status = 0;
    for (json_ref e = json_first(d, entries); e != JSON_NO_REF && !status; e = json_next(d, e)) {
        json_ref content = json_type_of(d, e) == JSON_OBJECT ? json_get(d, e, "content") : JSON_NO_REF;
        const char *text = NULL, *priority = "medium", *step = NULL;
        json_ref p = content != JSON_NO_REF ? json_get(d, e, "priority") : JSON_NO_REF;
        json_ref st = content != JSON_NO_REF ? json_get(d, e, "status") : JSON_NO_REF;
        if (content == JSON_NO_REF || !json_string(d, content, &a, &text, NULL))
            status = ecp_error_set(err, ECP_EINVAL, "each plan entry needs a string content");
        else if (p != JSON_NO_REF && (!json_string(d, p, &a, &priority, NULL) ||
                                      (strcmp(priority, priorities[0]) && strcmp(priority, priorities[1]) &&
                                       strcmp(priority, priorities[2]))))
            status = ecp_error_set(err, ECP_EINVAL, "a plan entry's priority is high, medium or low");
        else if (st == JSON_NO_REF || !json_string(d, st, &a, &step, NULL) ||
                 (strcmp(step, statuses[0]) && strcmp(step, statuses[1]) && strcmp(step, statuses[2])))
            status = ecp_error_set(err, ECP_EINVAL, "a plan entry's status is pending, in_progress or completed");
        else if (out) {
            jw_object_begin(&w);
            jw_key_string(&w, "content", text);
            jw_key_string(&w, "priority", priority);
            jw_key_string(&w, "status", step);
            jw_object_end(&w);
        }
    }
    if (out)
        jw_array_end(&w);
    arena_free(&a);
    return status;
}

int tool_check(agent_service *svc, const char *name, const char *arguments, tool_plan *plan, ecp_error *err)
{
    memset(plan, 0, sizeof *plan);
    for (size_t i = 0; i < TOOL_COUNT; i++)
        if (strcmp(tools[i].name, name) == 0)
            plan->name = tools[i].name;
    bool read_only = false;
    if (!plan->name && mcp_tool_known(svc, name, &read_only)) {
        plan->name = "mcp";
        plan->mcp = true;
        plan->needs_approval = !read_only;
    }
    if (!plan->name)
        return ecp_error_set(err, ECP_ENOTFOUND, "unknown tool %s", name);
    json_doc d = {0};
    if (json_doc_parse(&d, arguments, strlen(arguments), NULL) < 0 || json_type_of(&d, json_root(&d)) != JSON_OBJECT) {
        json_doc_free(&d);
        return ecp_error_set(err, ECP_EINVAL, "the arguments of %s are not a JSON object", name);
    }
    if (plan->mcp) {
        json_doc_free(&d);
        return 0; /* the server checks its own arguments */
    }
    static const char *const required[][4] = {
        {"read_file", "path"}, {"write_file", "path", "content"}, {"edit_file", "path", "old_string", "new_string"},
        {"list_directory", "path"}, {"grep", "pattern"}, {"shell_command", "command"}, {"git", "operation"},
        {"diagnostics"}, {"update_plan"},
    };
    int status = 0;
    for (size_t i = 0; i < TOOL_COUNT && !status; i++)
        if (strcmp(required[i][0], name) == 0)
            for (size_t k = 1; k < 4 && required[i][k] && !status; k++)
                if (!has_string(&d, required[i][k]))
                    status = ecp_error_set(err, ECP_EINVAL, "%s needs a string argument %s", name, required[i][k]);
    arena a = ARENA_INIT;
    if (!status) {
        const char *path = arg_string(&d, "path", &a, NULL);
        if (!path && strcmp(name, "grep") == 0)
            path = ".";
        if (path)
            status = agent_confine(svc->workspace, path, &plan->path, err);
    }
    if (!status && strcmp(name, "git") == 0) {
        const char *op = arg_string(&d, "operation", &a, NULL);
        if (strcmp(op, "status") != 0 && strcmp(op, "diff") != 0 && strcmp(op, "log") != 0)
            status = ecp_error_set(err, ECP_EINVAL, "git: operation must be status, diff or log, not %s", op);
        else if (!plan->path)
            status = agent_confine(svc->workspace, ".", &plan->path, err);
    }
    if (!status && strcmp(name, "update_plan") == 0)
        status = plan_entries(&d, NULL, err);
    if (!status && strcmp(name, "edit_file") == 0) {
        size_t n = 0;
        arg_string(&d, "old_string", &a, &n);
        if (n == 0)
            status = ecp_error_set(err, ECP_EINVAL, "edit_file needs a non-empty old_string");
    }
    plan->needs_approval =
        strcmp(name, "write_file") == 0 || strcmp(name, "edit_file") == 0 || strcmp(name, "shell_command") == 0;
    arena_free(&a);
    json_doc_free(&d);
    if (status)
        tool_plan_free(plan);
    return status;
}

void tool_plan_free(tool_plan *plan)
{
    free(plan->path);
    plan->path = NULL;
}

/* ----- runs ------------------------------------------------------------------------------ */

typedef enum run_kind { RUN_READ, RUN_WRITE, RUN_EDIT, RUN_LIST, RUN_GIT, RUN_NONE, RUN_GREP, RUN_SHELL } run_kind;

struct tool_run {
    agent_service *svc;
    run_kind kind;
    tool_done_fn done;
    void *ctx;
    bool cancelled;
    ecp_job *job;
    /* inputs */
    char *path;
    char *root; /* the workspace, resolved when the run starts: read, write and edit open r->path beneath it */
    char *content, *old_string, *new_string;
    size_t content_len, old_len, new_len;
    bool all_occurrences;
    int64_t line_offset, limit, max_depth;
    char *operation, *workspace; /* git */
    bool staged;                 /* git diff */
    /* result */
    bool error;
    buf output;
    /* shell */
    ecp_process *process;
    uv_timer_t timer;
    bool exited, output_ended, timed_out;
    int64_t exit_status;
    int term_signal;
    int64_t timeout_ms;
};

static void run_free(tool_run *r)
{
    free_each(r->path, r->root, r->content, r->old_string, r->new_string, r->operation, r->workspace);
    buf_free(&r->output);
    free(r);
}

static void set_error(tool_run *r, const char *fmt, const char *detail)
{
    r->error = true;
    buf_clear(&r->output);
    buf_append_str(&r->output, "Error: ");
    buf_appendf(&r->output, fmt, detail);
}

static void append_capped(buf *out, const char *s, size_t n)
{
    if (out->len >= OUTPUT_MAX_BYTES)
        return;
    size_t room = OUTPUT_MAX_BYTES - out->len;
    buf_append(out, s, n < room ? n : room);
    if (n > room)
        buf_append_str(out, "\n[output truncated]");
}

/* The lines [offset, offset + limit) of text. */
static void slice_lines(buf *out, const char *text, size_t len, int64_t offset, int64_t limit)
{
    size_t line = 0, i = 0;
    while (i < len && (int64_t)line < offset) {
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl) {
            i = len;
            break;
        }
        i = (size_t)(nl - text) + 1;
        line++;
    }
    size_t start = i;
    if (limit > 0) {
        int64_t taken = 0;
        while (i < len && taken < limit) {
            const char *nl = memchr(text + i, '\n', len - i);
            i = nl ? (size_t)(nl - text) + 1 : len;
            taken++;
        }
    } else {
        i = len;
    }
    append_capped(out, text + start, i - start);
}

/* ----- opening beneath the workspace ------------------------------------------------------
 *
 * A path is checked when the model asks for it, but a write waits for the
 * user's approval: a directory on the way may have become a symlink out of the
 * workspace by the time it runs. So the file is opened again, relative to the
 * workspace's own descriptor, by a resolution that cannot leave it (openat2
 * with RESOLVE_BENEATH); a symlink that stays inside is followed. Everything
 * after that (the temporary file, the rename) happens in the directory
 * descriptor found, so no path is resolved twice. */

/* The path of r->path below r->root ("" for the root itself), or NULL when it
 * is not below it (the workspace itself moved since the call was checked). */
static const char *below_root(const tool_run *r)
{
    if (!r->root)
        return NULL;
    size_t n = strlen(r->root);
    if (n == 1 && r->root[0] == '/')
        return r->path + 1;
    if (strncmp(r->path, r->root, n) != 0)
        return NULL;
    if (r->path[n] == '\0')
        return r->path + n;
    return r->path[n] == '/' ? r->path + n + 1 : NULL;
}

/* Without openat2 (Linux before 5.6): one component at a time from dir, no
 * symlink followed, no ".." (which the checked path never holds). Stricter
 * than openat2: any symlink on the way is refused, with EXDEV. */
static int open_walk(int dir, const char *rel, int flags, mode_t mode)
{
    char *copy = xstrdup(rel), *save = NULL;
    int cur = dir, rc = 0;
    char *name = strtok_r(copy, "/", &save);
    while (name && strcmp(name, ".") == 0)
        name = strtok_r(NULL, "/", &save);
    if (!name) {
        rc = openat(dir, ".", flags | O_CLOEXEC, mode);
        rc = rc < 0 ? -errno : rc;
        goto done;
    }
    for (;;) {
        char *next = strtok_r(NULL, "/", &save);
        while (next && strcmp(next, ".") == 0)
            next = strtok_r(NULL, "/", &save);
        if (strcmp(name, "..") == 0) {
            rc = -EXDEV;
            break;
        }
        int fd = next ? openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : openat(cur, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0) {
            rc = -errno;
            struct stat st;
            if ((errno == ELOOP || errno == ENOTDIR) && fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISLNK(st.st_mode))
                rc = -EXDEV;
            break;
        }
        if (cur != dir)
            close(cur);
        cur = fd;
        if (!next) {
            rc = fd;
            cur = dir; /* handed out, not closed */
            break;
        }
        name = next;
    }
    if (cur != dir)
        close(cur);
done:
    free(copy);
    return rc;
}

/* rel opened beneath dir: a descriptor, or a negative errno (EXDEV when the
 * resolution would leave dir). */
static int open_beneath(int dir, const char *rel, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & O_CREAT) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    const char *path = rel[0] ? rel : ".";
    for (int attempt = 0; attempt < 8; attempt++) {
        long fd = syscall(SYS_openat2, dir, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if (errno == ENOSYS)
            return open_walk(dir, path, flags, mode);
        if (errno != EAGAIN && errno != EINTR) /* EAGAIN: a rename raced the resolution */
            return -errno;
    }
    return -EAGAIN;
}

/* The error a failed open beneath the workspace gives the model. */
static void beneath_error(tool_run *r, int errnum)
{
    static const char outside[] = "%s is outside the workspace (through a symlink)";
    static const struct {
        int errnum;
        const char *format; /* of the path */
    } known[] = {
        {EXDEV, outside}, {ELOOP, outside}, {ENOENT, "File not found: %s"}, {EISDIR, "Is a directory: %s"},
        {ENOTDIR, "Not a directory: %s"}, {EACCES, "Permission denied: %s"}, {EPERM, "Permission denied: %s"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].errnum == errnum) {
            set_error(r, known[i].format, r->path);
            return;
        }
    buf msg = BUF_INIT;
    buf_appendf(&msg, "%s: %s", r->path, strerror(errnum));
    set_error(r, "%s", msg.data);
    buf_free(&msg);
}

static int open_root(tool_run *r, const char **rel)
{
    *rel = below_root(r);
    if (!*rel) {
        set_error(r, "%s is outside the workspace", r->path);
        return -1;
    }
    int fd = open(r->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        set_error(r, "the workspace cannot be opened: %s", strerror(errno));
    return fd;
}

/* Reads the regular file r->path, opened beneath the workspace. */
static int read_beneath(tool_run *r, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    const char *rel;
    int root = open_root(r, &rel);
    if (root < 0)
        return -1;
    int fd = open_beneath(root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
    close(root);
    if (fd < 0) {
        beneath_error(r, -fd);
        return -1;
    }
    struct stat st;
    int rc = -1;
    buf bytes = BUF_INIT;
    if (fstat(fd, &st) != 0) {
        beneath_error(r, errno);
    } else if (S_ISDIR(st.st_mode)) {
        beneath_error(r, EISDIR);
    } else if (!S_ISREG(st.st_mode)) {
        set_error(r, "Not a regular file: %s", r->path);
    } else {
        char chunk[65536];
        for (;;) {
            ssize_t n = read(fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                beneath_error(r, errno);
                break;
            }
            if (n == 0) {
                rc = 0;
                break;
            }
            if (bytes.len + (size_t)n > READ_MAX_BYTES) {
                char limit[64];
                snprintf(limit, sizeof limit, "%u", READ_MAX_BYTES);
                buf_clear(&bytes);
                set_error(r, "File too large: over %s bytes", limit);
                break;
            }
            buf_append(&bytes, chunk, (size_t)n);
        }
    }
    close(fd);
    if (rc == 0) {
        *len = bytes.len;
        *data = bytes.data ? buf_detach(&bytes) : xstrdup("");
    }
    buf_free(&bytes);
    return rc;
}

/* The directory rel_dir beneath root, its missing parts created (mkdir -p)
 * one component at a time, each opened beneath the one before. */
static int open_dir_creating(int root, const char *rel_dir)
{
    int fd = open_beneath(root, rel_dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd != -ENOENT)
        return fd;
    char *copy = xstrdup(rel_dir), *save = NULL;
    int cur = root;
    fd = -ENOENT;
    for (char *name = strtok_r(copy, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
        fd = open_beneath(cur, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd == -ENOENT) {
            if (mkdirat(cur, name, 0777) != 0 && errno != EEXIST)
                fd = -errno;
            else
                fd = open_beneath(cur, name, O_RDONLY | O_DIRECTORY, 0);
        }
        if (cur != root)
            close(cur);
        cur = fd;
        if (fd < 0)
            break;
    }
    free(copy);
    return fd;
}

/* Writes data as the whole of r->path, beneath the workspace: into a
 * temporary file of the same directory, flushed, then renamed over the name,
 * both through the directory's descriptor. An existing file keeps its mode
 * (and owner, when permitted); missing directories are created. What is not a
 * regular file (a FIFO, a device, a symlink that appeared since the check) is
 * refused. */
static int write_beneath(tool_run *r, const char *data, size_t len)
{
    const char *rel;
    int root = open_root(r, &rel);
    if (root < 0)
        return -1;
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    char *dir_rel = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup("");
    int rc = -1, dfd = -1, fd = -1;
    char tmp[NAME_MAX + 1] = "";
    if (!*name) {
        beneath_error(r, EISDIR);
        goto done;
    }
    dfd = open_dir_creating(root, dir_rel);
    if (dfd < 0) {
        beneath_error(r, -dfd);
        goto done;
    }
    struct stat st;
    bool exists = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && errno != ENOENT) {
        beneath_error(r, errno);
        goto done;
    }
    if (exists && S_ISLNK(st.st_mode)) {
        /* The checked path had its symlinks resolved: this one came later. */
        set_error(r, "%s became a symlink after it was checked; not written", r->path);
        goto done;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        beneath_error(r, EISDIR);
        goto done;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        set_error(r, "Not a regular file: %s", r->path);
        goto done;
    }
    mode_t mode = exists ? (st.st_mode & 07777) : 0666;
    int errnum = EEXIST;
    for (int attempt = 0; attempt < 16 && fd < 0 && errnum == EEXIST; attempt++) {
        unsigned char rnd[6];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            memset(rnd, attempt, sizeof rnd);
        snprintf(tmp, sizeof tmp, ".%.200s.%02x%02x%02x%02x%02x%02x.tmp", name, rnd[0], rnd[1], rnd[2], rnd[3],
                 rnd[4], rnd[5]);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        errnum = fd < 0 ? errno : 0;
    }
    if (fd < 0) {
        tmp[0] = '\0';
        if ((errnum == EACCES || errnum == EPERM) && exists && st.st_nlink > 1) {
            /* Written in place, a hard link is every name of the file, and
             * one of them may be outside the workspace. The rename below
             * never writes through one; this would. */
            set_error(r, "%s has other hard links and its directory refuses new files; not written in place",
                      r->path);
        } else if ((errnum == EACCES || errnum == EPERM) && exists) {
            /* The directory refuses new files but the file itself may be
             * writable: write it in place, as the user could by hand. The
             * links are counted again on what was opened, before truncating. */
            fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            struct stat now;
            if (fd >= 0 && (fstat(fd, &now) != 0 || !S_ISREG(now.st_mode) || now.st_nlink > 1 ||
                            ftruncate(fd, 0) != 0))
                errnum = EINVAL;
            else if (fd >= 0)
                errnum = buf_write_fd(fd, data, len) == 0 ? 0 : errno;
            if (fd >= 0 && errnum == 0 && fsync(fd) != 0)
                errnum = errno;
            if (fd >= 0 && errnum == 0)
                rc = 0;
            else
                beneath_error(r, fd < 0 ? errno : errnum);
        } else {
            beneath_error(r, errnum);
        }
        goto done;
    }
    errnum = buf_write_fd(fd, data, len) == 0 ? 0 : errno;
    if (errnum == 0 && exists) {
        fchmod(fd, st.st_mode & 07777); /* the umask may have cut bits from the mode given to openat */
        if (st.st_uid != geteuid() || st.st_gid != getegid())
            (void)!fchown(fd, st.st_uid, st.st_gid);
    }
    if (errnum == 0 && fsync(fd) != 0)
        errnum = errno;
    if (errnum == 0 && renameat(dfd, tmp, dfd, name) != 0)
        errnum = errno;
    if (errnum != 0) {
        beneath_error(r, errnum);
        goto done;
    }
    tmp[0] = '\0';
    (void)fsync(dfd); /* the rename is durable once the directory is */
    rc = 0;
done:
    if (fd >= 0)
        close(fd);
    if (tmp[0])
        unlinkat(dfd, tmp, 0);
    if (dfd >= 0)
        close(dfd);
    close(root);
    free(dir_rel);
    return rc;
}

/* old -> new in text: the count of occurrences in *count; out gets the new
 * text when the count is acceptable. */
static int replace_text(tool_run *r, const char *text, size_t len, buf *out)
{
    size_t count = 0;
    for (size_t i = 0; i + r->old_len <= len;) {
        if (memcmp(text + i, r->old_string, r->old_len) == 0) {
            count++;
            buf_append(out, r->new_string, r->new_len);
            i += r->old_len;
        } else {
            buf_push(out, text[i]);
            i++;
        }
        if (i + r->old_len > len)
            buf_append(out, text + i, len - i);
    }
    if (count == 0) {
        set_error(r, "old_string was not found in %s", r->path);
        return -1;
    }
    if (count > 1 && !r->all_occurrences) {
        char n[32];
        snprintf(n, sizeof n, "%zu", count);
        set_error(r, "old_string occurs %s times; make it unique or set all_occurrences", n);
        return -1;
    }
    buf_clear(&r->output);
    buf_appendf(&r->output, "Replaced %zu occurrence%s in %s", count, count == 1 ? "" : "s", r->path);
    return 0;
}

static void list_into(tool_run *r, const char *dir, const char *prefix, int depth, size_t *entries)
{
    file_dir_entry *list = NULL;
    size_t count = 0;
    ecp_error err = {0};
    if (file_read_dir(dir, &list, &count, &err) < 0) {
        if (depth == 0)
            set_error(r, "%s", err.message);
        return;
    }
    for (size_t i = 0; i < count && *entries < LIST_MAX_ENTRIES; i++) {
        const file_dir_entry *e = &list[i];
        if (strcmp(e->name, ".git") == 0)
            continue;
        bool is_dir = e->type == FILE_TYPE_DIRECTORY;
        buf_appendf(&r->output, "%s%s%s\n", prefix, e->name, is_dir ? "/" : "");
        (*entries)++;
        if (is_dir && depth + 1 < r->max_depth) {
            buf child = BUF_INIT, child_prefix = BUF_INIT;
            buf_appendf(&child, "%s/%s", dir, e->name);
            buf_appendf(&child_prefix, "%s  ", prefix);
            list_into(r, child.data, child_prefix.data, depth + 1, entries);
            buf_free(&child);
            buf_free(&child_prefix);
        }
    }
    file_dir_entries_free(list, count);
}

/* list_directory's directory, opened beneath the workspace as a read is, then
 * listed through its descriptor (list_into steps into subdirectories only,
 * never into symlinks). */
static void list_beneath(tool_run *r, size_t *entries)
{
    const char *rel;
    int root = open_root(r, &rel);
    if (root < 0)
        return;
    int fd = open_beneath(root, rel, O_RDONLY | O_DIRECTORY, 0);
    close(root);
    if (fd < 0) {
        beneath_error(r, -fd);
        return;
    }
    char through_fd[64];
    snprintf(through_fd, sizeof through_fd, "/proc/self/fd/%d", fd);
    list_into(r, through_fd, "", 0, entries);
    close(fd);
}

static void diff_into(tool_run *r, gitsvc_repo *repo, const char *rel, arena *mem)
{
    gitsvc_hunk *hunks = NULL;
    size_t count = 0;
    gitsvc_error gerr = {0};
    if (gitsvc_diff_read(repo, rel, r->staged, mem, &hunks, &count, &gerr) < 0) {
        set_error(r, "%s", gerr.message);
        return;
    }
    if (count)
        buf_appendf(&r->output, "--- a/%s\n+++ b/%s\n", rel, rel);
    for (size_t h = 0; h < count; h++) {
        const gitsvc_hunk *k = &hunks[h];
        buf_appendf(&r->output, "@@ -%zu,%zu +%zu,%zu @@\n", k->old_start, k->old_count, k->new_start, k->new_count);
        for (size_t i = 0; i < k->line_count; i++) {
            const gitsvc_diff_line *l = &k->lines[i];
            char mark = l->type == GITSVC_LINE_ADDED ? '+' : l->type == GITSVC_LINE_DELETED ? '-' : ' ';
            buf_push(&r->output, mark);
            append_capped(&r->output, l->content, strlen(l->content));
            buf_push(&r->output, '\n');
        }
    }
}

static void git_work(tool_run *r, ecp_job *job)
{
    gitsvc_repo *repo = NULL;
    gitsvc_error gerr = {0};
    if (gitsvc_repo_open(r->workspace, &repo, NULL, &gerr) < 0) {
        set_error(r, "%s", gerr.message);
        return;
    }
    arena mem = ARENA_INIT;
    gitsvc_status st;
    if (strcmp(r->operation, "log") == 0) {
        gitsvc_commit_info *commits = NULL;
        size_t count = 0;
        if (gitsvc_log_read(repo, (size_t)r->limit, job, &mem, &commits, &count, &gerr) < 0)
            set_error(r, "%s", gerr.message);
        for (size_t i = 0; !r->error && i < count; i++)
            buf_appendf(&r->output, "%s %s %s <%s> %s\n", commits[i].short_hash, commits[i].date, commits[i].author,
                        commits[i].email, commits[i].subject);
        if (!r->error && count == 0)
            buf_append_str(&r->output, "No commits\n");
    } else if (gitsvc_status_read(repo, job, &mem, &st, &gerr) < 0) {
        set_error(r, "%s", gerr.message);
    } else if (strcmp(r->operation, "status") == 0) {
        buf_appendf(&r->output, "On branch %s\n", st.branch);
        for (size_t i = 0; i < st.staged_count; i++)
            buf_appendf(&r->output, "staged %c %s\n", st.staged[i].status, st.staged[i].path);
        for (size_t i = 0; i < st.unstaged_count; i++)
            buf_appendf(&r->output, "unstaged %c %s\n", st.unstaged[i].status, st.unstaged[i].path);
        for (size_t i = 0; i < st.untracked_count; i++)
            buf_appendf(&r->output, "untracked %s\n", st.untracked[i]);
        if (!st.staged_count && !st.unstaged_count && !st.untracked_count)
            buf_append_str(&r->output, "nothing to commit, working tree clean\n");
    } else if (r->path && strcmp(r->path, gitsvc_repo_root(repo)) != 0) {
        const char *rel = NULL;
        if (gitsvc_repo_relative(repo, r->path, &mem, &rel, &gerr) < 0)
            set_error(r, "%s", gerr.message);
        else
            diff_into(r, repo, rel, &mem);
    } else {
        gitsvc_status_entry *list = r->staged ? st.staged : st.unstaged;
        size_t n = r->staged ? st.staged_count : st.unstaged_count;
        for (size_t i = 0; i < n && !r->error; i++)
            diff_into(r, repo, list[i].path, &mem);
        if (!r->error && r->output.len == 0)
            buf_append_str(&r->output, "No changes\n");
    }
    arena_free(&mem);
    gitsvc_repo_close(repo);
}

static void run_work(ecp_job *job, unsigned item)
{
    (void)item;
    tool_run *r = ecp_job_data(job);
    char *data = NULL;
    size_t len = 0;
    switch (r->kind) {
    case RUN_READ:
        if (read_beneath(r, &data, &len) == 0)
            slice_lines(&r->output, data, len, r->line_offset, r->limit);
        break;
    case RUN_WRITE:
        if (write_beneath(r, r->content ? r->content : "", r->content_len) == 0)
            buf_appendf(&r->output, "Wrote %zu bytes to %s", r->content_len, r->path);
        break;
    case RUN_EDIT:
        if (read_beneath(r, &data, &len) == 0) {
            buf edited = BUF_INIT;
            if (replace_text(r, data, len, &edited) == 0)
                write_beneath(r, edited.data ? edited.data : "", edited.len);
            buf_free(&edited);
        }
        break;
    case RUN_GIT:
        git_work(r, job);
        break;
    case RUN_LIST: {
        size_t entries = 0;
        list_beneath(r, &entries);
        if (!r->error && entries >= LIST_MAX_ENTRIES)
            buf_append_str(&r->output, "[listing truncated]\n");
        if (!r->error && entries == 0)
            buf_append_str(&r->output, "(empty directory)\n");
        break;
    }
    default:
        break;
    }
    free(data);
}

static void run_done(ecp_job *job)
{
    tool_run *r = ecp_job_data(job);
    if (!r->cancelled)
        r->done(r->ctx, r->error, r->output.data ? r->output.data : "");
}

static void run_data_free(void *data) { run_free(data); }

static const ecp_job_type write_type = {"agent.tool.write", ECP_LANE_SHORT, true, run_work, run_done, run_data_free};
static const ecp_job_type read_type = {"agent.tool.read", ECP_LANE_SHORT, false, run_work, run_done, run_data_free};
static const ecp_job_type list_type = {"agent.tool.list", ECP_LANE_LONG, false, run_work, run_done, run_data_free};

/* ----- open documents -------------------------------------------------------------------- */

typedef struct doc_lookup {
    const char *uri;
    char *document_id;
} doc_lookup;

static void match_document(void *ctx, const document_info *info)
{
    doc_lookup *l = ctx;
    if (!l->document_id && strcmp(info->uri, l->uri) == 0)
        l->document_id = xstrdup(info->document_id);
}

/* The open document of path, or NULL (malloc'd id). */
static char *open_document(agent_service *svc, const char *path)
{
    buf uri = BUF_INIT;
    file_uri_from_path(&uri, path);
    doc_lookup l = {uri.data, NULL};
    document_list(svc->documents, match_document, &l);
    buf_free(&uri);
    return l.document_id;
}

/* read, write and edit of an open document, on the loop: the result is ready
 * before the (empty) job that delivers it starts. */
static void run_on_document(tool_run *r, const char *document_id)
{
    document_service *docs = r->svc->documents;
    ecp_error err = {0};
    buf text = BUF_INIT;
    if (r->kind == RUN_WRITE) {
        if (document_set_content(docs, document_id, 0, r->content, r->content_len, NULL, &err) < 0)
            set_error(r, "%s", err.message);
        else
            buf_appendf(&r->output, "Wrote %zu bytes to the open document %s", r->content_len, r->path);
    } else if (document_get_text(docs, document_id, NULL, ECP_ENCODING_UTF8, &text, &err) < 0) {
        set_error(r, "%s", err.message);
    } else if (r->kind == RUN_READ) {
        slice_lines(&r->output, text.data ? text.data : "", text.len, r->line_offset, r->limit);
    } else {
        buf edited = BUF_INIT;
        if (replace_text(r, text.data ? text.data : "", text.len, &edited) == 0) {
            /* One edit per occurrence, in the coordinates before any of them: undoable as one step. */
            size_t cap = 8, n = 0;
            document_edit *edits = xmalloc(cap * sizeof *edits);
            for (size_t i = 0; i + r->old_len <= text.len;) {
                if (memcmp(text.data + i, r->old_string, r->old_len) != 0) {
                    i++;
                    continue;
                }
                if (n == cap)
                    edits = xrealloc(edits, (cap *= 2) * sizeof *edits);
                document_edit *e = &edits[n++];
                document_offset_to_position(docs, document_id, i, ECP_ENCODING_UTF8, &e->range.start, NULL);
                document_offset_to_position(docs, document_id, i + r->old_len, ECP_ENCODING_UTF8, &e->range.end, NULL);
                e->text = r->new_string;
                e->len = r->new_len;
                i += r->old_len;
            }
            if (document_apply_edits(docs, document_id, 0, edits, n, ECP_ENCODING_UTF8, 0, NULL, &err) < 0)
                set_error(r, "%s", err.message);
            free(edits);
        }
        buf_free(&edited);
    }
    buf_free(&text);
    r->kind = RUN_NONE;
}

/* ----- grep -------------------------------------------------------------------------------- */

static void grep_done(void *ctx, int status, const ecp_error *err, const file_grep_result *result)
{
    tool_run *r = ctx;
    if (!r->cancelled) {
        if (status < 0) {
            set_error(r, "%s", err && err->message[0] ? err->message : "grep failed");
        } else {
            size_t root_len = strlen(r->svc->workspace ? r->svc->workspace : "");
            for (size_t i = 0; i < result->count; i++) {
                const file_grep_match *m = &result->matches[i];
                const char *shown = m->path;
                if (root_len && strncmp(shown, r->svc->workspace, root_len) == 0 && shown[root_len] == '/')
                    shown += root_len + 1;
                char head[64];
                snprintf(head, sizeof head, ":%zu:", m->line + 1);
                append_capped(&r->output, shown, strlen(shown));
                append_capped(&r->output, head, strlen(head));
                append_capped(&r->output, m->text, strlen(m->text));
                append_capped(&r->output, "\n", 1);
            }
            if (result->truncated)
                buf_append_str(&r->output, "[more matches not shown]\n");
            if (result->count == 0)
                buf_append_str(&r->output, "No matches\n");
        }
        r->done(r->ctx, r->error, r->output.data ? r->output.data : "");
    }
    run_free(r);
}

/* ----- shell ------------------------------------------------------------------------------- */

static void shell_timer_closed(uv_handle_t *h)
{
    tool_run *r = h->data;
    if (!r->cancelled) {
        buf out = BUF_INIT;
        bool error = true;
        if (r->timed_out)
            buf_appendf(&out, "Error: the command timed out after %lld ms\n", (long long)r->timeout_ms);
        else if (r->term_signal)
            buf_appendf(&out, "Error: the command was killed by signal %d\n", r->term_signal);
        else if (r->exit_status)
            buf_appendf(&out, "Error: the command exited with status %lld\n", (long long)r->exit_status);
        else
            error = false;
        if (r->output.len)
            buf_append(&out, r->output.data, r->output.len);
        else if (!error)
            buf_append_str(&out, "(no output)\n");
        if (!error)
            buf_append_str(&out, "\nExit code: 0");
        r->done(r->ctx, error, out.data);
        buf_free(&out);
    }
    run_free(r);
}

/* The result is whole once the command has exited and its output ended. */
static void shell_maybe_finish(tool_run *r)
{
    if (!r->exited || !r->output_ended)
        return;
    ecp_process_close(r->process);
    r->process = NULL;
    uv_timer_stop(&r->timer);
    if (!uv_is_closing((uv_handle_t *)&r->timer))
        uv_close((uv_handle_t *)&r->timer, shell_timer_closed);
}

static void shell_output(void *ctx, const char *data, size_t len) { append_capped(&((tool_run *)ctx)->output, data, len); }

static void shell_output_end(void *ctx, int status)
{
    tool_run *r = ctx;
    (void)status;
    r->output_ended = true;
    shell_maybe_finish(r);
}

static void shell_exit(void *ctx, int64_t status, int signal)
{
    tool_run *r = ctx;
    r->exited = true;
    r->exit_status = status;
    r->term_signal = r->timed_out ? 0 : signal;
    shell_maybe_finish(r);
}

static void shell_timeout(uv_timer_t *t)
{
    tool_run *r = t->data;
    r->timed_out = true;
    ecp_process_kill_now(r->process);
}

static int shell_start(tool_run *r, const char *command) /* always 0: a failure is the run's result */
{
    uv_timer_init(r->svc->loop, &r->timer);
    r->timer.data = r;
    /* stdout and stderr, interleaved as they come, through one pipe */
    buf script = BUF_INIT;
    buf_appendf(&script, "exec 2>&1\n%s", command);
    const char *argv[] = {"/bin/sh", "-c", script.data, NULL};
    /* its own process group, so that a kill reaches what it started too */
    ecp_process_options o = {
        .argv = argv, .cwd = r->svc->workspace, .pipe_stdout = true, .own_group = true, .ctx = r,
        .on_output = shell_output, .on_output_end = shell_output_end, .on_exit = shell_exit,
    };
    ecp_error err = {0};
    r->process = ecp_process_start(r->svc->loop, &o, &err);
    buf_free(&script);
    if (!r->process) {
        /* The timer is closed the ordinary way; the result says why. */
        const char *reason = strstr(err.message, ": ");
        r->exit_status = 127;
        buf_appendf(&r->output, "the command could not start: %s\n", reason ? reason + 2 : err.message);
        r->exited = r->output_ended = true;
        shell_maybe_finish(r);
        return 0;
    }
    uv_timer_start(&r->timer, shell_timeout, (uint64_t)r->timeout_ms, 0);
    return 0;
}

/* ----- diagnostics (the LSP service's, in memory: on the loop) ------------------------------ */

static const char *const severities[] = {"", "error", "warning", "info", "hint"};

static void write_diagnostic(void *ctx, const lsp_diagnostic *d)
{
    tool_run *r = ctx;
    char head[96];
    snprintf(head, sizeof head, "%zu:%zu: %s: ", d->start_line + 1, d->start_column + 1,
             severities[d->severity >= 1 && d->severity <= 4 ? d->severity : 0]);
    buf_append_str(&r->output, r->operation); /* the path being reported */
    buf_push(&r->output, ':');
    buf_append_str(&r->output, head);
    append_capped(&r->output, d->message, strlen(d->message));
    if (d->source)
        buf_appendf(&r->output, " (%s)", d->source);
    buf_push(&r->output, '\n');
}

static void diagnostics_of(tool_run *r, const char *uri)
{
    buf path = BUF_INIT;
    if (file_path_from_uri(uri, strlen(uri), &path, NULL) < 0) {
        buf_free(&path);
        return;
    }
    const char *ws = r->svc->workspace;
    size_t n = strlen(ws);
    bool in_workspace = strncmp(path.data, ws, n) == 0 && path.data[n] == '/';
    if (in_workspace || (r->path && strcmp(path.data, r->path) == 0)) {
        free(r->operation);
        r->operation = xstrdup(in_workspace ? path.data + n + 1 : path.data);
        lsp_diagnostics_in_lines(r->svc->lsp, uri, 0, SIZE_MAX, ECP_ENCODING_UTF16, write_diagnostic, r);
    }
    buf_free(&path);
}

static void each_uri(void *ctx, const char *uri) { diagnostics_of(ctx, uri); }

static void diagnostics_into(tool_run *r)
{
    if (!r->svc->lsp || !r->svc->workspace) {
        set_error(r, "%s", r->svc->lsp ? "there is no workspace" : "no language servers run in this server");
        return;
    }
    if (r->path) {
        buf uri = BUF_INIT;
        file_uri_from_path(&uri, r->path);
        diagnostics_of(r, uri.data);
        buf_free(&uri);
    } else {
        lsp_diagnostics_each(r->svc->lsp, each_uri, r);
    }
    if (r->output.len == 0)
        buf_append_str(&r->output, "No diagnostics\n");
}

/* ----- starting ---------------------------------------------------------------------------- */

static char *dup_arg(const json_doc *d, const char *key, arena *a, size_t *len)
{
    size_t n = 0;
    const char *s = arg_string(d, key, a, &n);
    if (len)
        *len = n;
    return s ? xstrndup(s, n) : NULL;
}

static int64_t int_arg(const json_doc *d, const char *key, int64_t def)
{
    int64_t v;
    json_ref ref = json_get(d, json_root(d), key);
    return ref != JSON_NO_REF && json_int64(d, ref, &v) ? v : def;
}

tool_run *tool_start(agent_service *svc, const tool_plan *plan, const char *arguments, tool_done_fn done, void *ctx)
{
    tool_run *r = xcalloc(1, sizeof *r);
    r->svc = svc;
    r->done = done;
    r->ctx = ctx;
    r->path = plan->path ? xstrdup(plan->path) : NULL;
    json_doc d = {0};
    arena a = ARENA_INIT;
    json_doc_parse(&d, arguments, strlen(arguments), NULL); /* checked by tool_check */
    const ecp_job_type *type = &read_type;
    const char *name = plan->name;
    if (strcmp(name, "read_file") == 0) {
        r->kind = RUN_READ;
        r->line_offset = int_arg(&d, "line_offset", 0);
        r->limit = int_arg(&d, "limit", 0);
    } else if (strcmp(name, "write_file") == 0) {
        r->kind = RUN_WRITE;
        r->content = dup_arg(&d, "content", &a, &r->content_len);
        type = &write_type;
    } else if (strcmp(name, "edit_file") == 0) {
        r->kind = RUN_EDIT;
        r->old_string = dup_arg(&d, "old_string", &a, &r->old_len);
        r->new_string = dup_arg(&d, "new_string", &a, &r->new_len);
        json_ref all = json_get(&d, json_root(&d), "all_occurrences");
        bool b = false;
        r->all_occurrences = all != JSON_NO_REF && json_bool(&d, all, &b) && b;
        type = &write_type;
    } else if (strcmp(name, "list_directory") == 0) {
        r->kind = RUN_LIST;
        r->max_depth = int_arg(&d, "max_depth", 2);
        if (r->max_depth < 1)
            r->max_depth = 1;
        if (r->max_depth > 10)
            r->max_depth = 10;
        type = &list_type;
    } else if (strcmp(name, "git") == 0) {
        r->kind = RUN_GIT;
        if (svc->git) /* without it (a server made without git), libgit2's own error answers */
            gitsvc_start_libgit2(svc->git);
        r->operation = dup_arg(&d, "operation", &a, NULL);
        r->workspace = xstrdup(svc->workspace);
        json_ref staged = json_get(&d, json_root(&d), "staged");
        bool b = false;
        r->staged = staged != JSON_NO_REF && json_bool(&d, staged, &b) && b;
        r->limit = int_arg(&d, "max_count", 20);
        if (r->limit < 1 || r->limit > 1000)
            r->limit = 20;
        if (strcmp(r->operation, "diff") != 0 || !json_get(&d, json_root(&d), "path")) {
            free(r->path);
            r->path = NULL;
        }
        type = &list_type;
    } else if (strcmp(name, "update_plan") == 0) {
        r->kind = RUN_NONE; /* the plan itself went out as content: the model is told it did */
        json_ref entries = json_get(&d, json_root(&d), "entries");
        buf_appendf(&r->output, "The plan is updated (%zu steps).", json_length(&d, entries));
    } else if (strcmp(name, "diagnostics") == 0) {
        r->kind = RUN_NONE;
        diagnostics_into(r);
    } else if (strcmp(name, "grep") == 0) {
        r->kind = RUN_GREP;
    } else {
        r->kind = RUN_SHELL;
    }

    if (r->kind == RUN_GREP) {
        char *pattern = dup_arg(&d, "pattern", &a, NULL);
        char *include = dup_arg(&d, "include", &a, NULL);
        const char *includes[1] = {include};
        int64_t max = int_arg(&d, "max_results", GREP_MAX_RESULTS);
        file_grep_options o = {
            .pattern = pattern, .regex = true, .case_sensitive = true, .base = r->path,
            .include = include ? includes : NULL, .include_count = include ? 1 : 0,
            .max_results = max > 0 && max < 10000 ? (size_t)max : GREP_MAX_RESULTS, .encoding = ECP_ENCODING_UTF8,
        };
        ecp_error err = {0};
        ecp_job *walk = NULL;
        if (file_grep_prepare(svc->files, &o, grep_done, r, &walk, &err) < 0) {
            set_error(r, "%s", err.message);
            r->kind = RUN_NONE;
        } else {
            r->job = walk;
            file_walk_start(walk);
        }
        free(pattern);
        free(include);
        if (r->kind == RUN_GREP)
            goto out;
    } else if (r->kind == RUN_SHELL) {
        char *command = dup_arg(&d, "command", &a, NULL);
        r->timeout_ms = int_arg(&d, "timeout", SHELL_TIMEOUT_DEFAULT_MS);
        if (r->timeout_ms < 1 || r->timeout_ms > SHELL_TIMEOUT_MAX_MS)
            r->timeout_ms = SHELL_TIMEOUT_DEFAULT_MS;
        shell_start(r, command);
        free(command);
        goto out;
    } else if (r->kind == RUN_LIST) {
        r->root = svc->workspace ? realpath(svc->workspace, NULL) : NULL;
    } else if (r->kind != RUN_GIT && r->kind != RUN_NONE) {
        r->root = svc->workspace ? realpath(svc->workspace, NULL) : NULL;
        char *document_id = open_document(svc, r->path);
        if (document_id)
            run_on_document(r, document_id);
        free(document_id);
    }
    r->job = ecp_job_new(svc->jobs, type, r);
    ecp_job_start(r->job, 1);
out:
    arena_free(&a);
    json_doc_free(&d);
    return r;
}

void tool_cancel(tool_run *r)
{
    if (!r)
        return;
    r->cancelled = true;
    if (r->kind == RUN_SHELL) {
        if (!r->exited)
            ecp_process_kill_now(r->process);
    } else if (r->job) {
        ecp_job_cancel(r->job);
    }
}
