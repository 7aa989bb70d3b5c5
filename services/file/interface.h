/* file: the local file system as an editor needs it.
 *
 * The file service reads, writes, lists, copies, renames and deletes files and
 * directories named by absolute paths; finds files by name (fuzzy search), by
 * pattern (glob) and by content (grep); and watches directory trees for
 * changes. It promises that a write which replaces a file is atomic (the file
 * holds either its old or its new contents, never a mix, and keeps its mode),
 * that a write, a copy or a rename never replaces a FIFO, socket or device,
 * that tree walks never follow a directory symlink unless asked and never loop,
 * that searches stop as soon as they have what was asked and can be cancelled
 * at any time, that a pattern past the glob limits is refused with the limit
 * named (file_glob_check), and that a watch reports each creation, change and
 * deletion of a path exactly once (bursts of writes within about 50 ms are
 * one change). It follows its own settings (files.exclude) once handed the
 * session service (file_service_follow_settings).
 *
 * Four kinds of functions live here:
 * - path helpers (pure string work; any thread);
 * - blocking single operations (file_read, file_write, ...) that touch no
 *   service state, for callers already off the loop (a job of another
 *   service, a test);
 * - the service's jobs: the same operations and the tree walks run off the
 *   loop as jobs the service owns (core/job.h), each prepared, then started,
 *   each calling back once on the loop;
 * - watches, which belong to a file_service and run their callbacks on its
 *   loop thread; listeners of the service hear every change its watches
 *   report.
 *
 * Paths are absolute and '/'-separated; callers turn URIs into paths with
 * file_path_from_uri. Every function that can fail returns 0 or a negative
 * ECP_STATUS code and fills the optional ecp_error with a message that names
 * the path and the reason ("File not found: /tmp/a.txt").
 */
#ifndef ECPD_FILE_INTERFACE_H
#define ECPD_FILE_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "buf.h"
#include "error.h"
#include "job.h"
#include "log.h"
#include "shared.h"
#include "utf.h"

typedef struct file_service file_service;

/* ----- the service ------------------------------------------------------------ */

/* Creates the service, whose jobs run on `pool` and whose callbacks run on
 * the pool's loop (both borrowed; they must outlive the service). log may be
 * NULL. Returns NULL only when out of memory. */
file_service *file_service_new(ecp_pool *pool, ecp_logger *log);

/* Follows the session service's settings the service reads (files.exclude,
 * see file_service_set_watch_exclude): takes their values now and each
 * change afterwards. session (borrowed) must outlive the following; NULL
 * stops following, as the service must before the session service goes.
 * The session service reads its files through this one, so it comes later
 * and is handed over here rather than at creation. */
struct session_service;
void file_service_follow_settings(file_service *self, struct session_service *session);

/* Ends every watch and closes the service's jobs: walks are cancelled, work
 * already on a thread is waited for, and so are writes that have not begun
 * (their bytes exist nowhere else), calls the jobs serve are answered, and no
 * callback of a walk or a watch runs afterwards. Then frees the service. Handles it closes are
 * released by the loop's close callbacks, so the loop should run once more
 * before it closes. Listeners are dropped without being told. */
void file_service_free(file_service *self);

uv_loop_t *file_service_loop(file_service *self);

/* ----- paths and URIs (pure; any thread) ---------------------------------------- */

/* Appends to out the normalised absolute path that a `file://` URI (encoded or
 * not) or a plain absolute path names: "." and empty segments are dropped and
 * ".." removes the segment before it, as URL parsing does. Fails with
 * ECP_ENOPROVIDER for another scheme and ECP_EBADURI for a relative path or a
 * malformed URI. */
int file_path_from_uri(const char *uri, size_t len, buf *out, ecp_error *err);

/* Appends the percent-encoded `file://` URI of an absolute path. */
void file_uri_from_path(buf *out, const char *path);

/* Appends the lexical normal form of an absolute path (see above). */
void file_path_normalize(buf *out, const char *path, size_t len);

/* ----- single operations (blocking; any thread) ---------------------------------- */

typedef struct file_info {
    bool exists;       /* false only when nothing is there (ENOENT, ENOTDIR on the way) */
    bool is_directory; /* of the target, after following symlinks */
    bool is_file;
    bool is_symlink;   /* the path itself is a symlink */
    uint64_t size;
    double mod_time;    /* ms since the epoch, with sub-millisecond precision */
    double create_time; /* birth time when the file system records it, else change time */
    uint32_t mode;      /* st_mode */
} file_info;

/* Fills *out for path. A missing path is not an error: out->exists is false
 * and everything else zero. Fails only when the path cannot be examined
 * (ECP_EACCES on a parent directory, say). */
int file_stat(const char *path, file_info *out, ecp_error *err);

/* Reads a whole regular file. *data (malloc'd, NUL-terminated, caller frees)
 * receives the bytes and *len their number; info (may be NULL) the file's
 * metadata. Fails with ECP_ENOTFOUND, ECP_EISDIR, ECP_EACCES, ECP_ETOOBIG (over
 * max_size bytes), or ECP_EIO for something that is not a regular file (a FIFO
 * or a device, which could block or never end). */
int file_read(const char *path, size_t max_size, char **data, size_t *len, file_info *info, ecp_error *err);

typedef struct file_write_options {
    bool create_parents; /* create missing parent directories */
    bool overwrite;      /* false: fail with ECP_EEXIST when the path exists */
} file_write_options;

/* Writes len bytes as the whole contents of path: into a temporary file in the
 * same directory, flushed with fsync, then renamed over path, so readers see
 * the old or the new contents and nothing in between. An existing file keeps
 * its mode (and owner, when permitted); a symlink is followed and its target
 * replaced. New files get 0666 less the umask. *mod_time (may be NULL)
 * receives the new modification time. Fails with ECP_ENOTFOUND (missing parent
 * without create_parents), ECP_EEXIST, ECP_EISDIR, ECP_EACCES or ECP_EIO. */
int file_write(const char *path, const char *data, size_t len, const file_write_options *options,
               double *mod_time, ecp_error *err);

/* Deletes a file or symlink. ECP_EISDIR for a directory (use file_delete_dir). */
int file_delete(const char *path, ecp_error *err);

/* Renames (moves) from to `to`, replacing a file at `to`; across file systems
 * it copies then deletes. ECP_ENOTFOUND when from is missing; ECP_EIO when `to`
 * is a FIFO, socket or device (never replaced). */
int file_rename(const char *from, const char *to, ecp_error *err);

/* Copies a file (contents and mode; replacing `to` atomically as file_write
 * does) or, recursively, a directory (then `to` must not exist: ECP_EEXIST).
 * Symlinks inside a copied directory are copied as symlinks. ECP_EIO when
 * from, or an existing `to`, is not a regular file (a FIFO is never read). */
int file_copy(const char *from, const char *to, ecp_error *err);

typedef enum file_type {
    FILE_TYPE_FILE,
    FILE_TYPE_DIRECTORY,
    FILE_TYPE_SYMLINK,
    FILE_TYPE_OTHER, /* FIFO, socket, device */
} file_type;

typedef struct file_dir_entry {
    char *name;      /* owned by the array */
    file_type type;  /* of the entry itself: a symlink is FILE_TYPE_SYMLINK */
    uint64_t size;   /* files only */
    double mod_time; /* files only */
} file_dir_entry;

/* Lists a directory: directories first, then the rest, each group in a
 * case-insensitive order (lower case first on ties). *entries (caller frees
 * with file_dir_entries_free) receives *count entries. ECP_ENOTFOUND,
 * ECP_ENOTDIR, ECP_EACCES. */
int file_read_dir(const char *path, file_dir_entry **entries, size_t *count, ecp_error *err);
void file_dir_entries_free(file_dir_entry *entries, size_t count);

/* Creates a directory; recursive creates missing parents and accepts an
 * existing directory. Without recursive, ECP_EEXIST when path exists and
 * ECP_ENOTFOUND when its parent is missing. */
int file_create_dir(const char *path, bool recursive, ecp_error *err);

/* Deletes a directory; recursive deletes its contents first (symlinks are
 * removed, never followed). ECP_ENOTFOUND, ECP_ENOTDIR, ECP_ENOTEMPTY. */
int file_delete_dir(const char *path, bool recursive, ecp_error *err);

/* ----- the service's jobs (asynchronous; callbacks on the loop thread) ---------- */

/* Every operation that touches the disk runs as a job of the service, off
 * the loop. Starting one takes two steps: file_<op>_prepare copies the
 * arguments (strings included: the caller's may go once it returns) and
 * hands back the job, not started; file_job_start starts it. In between,
 * the caller may make the job serve a call (ecp_job_serve), so that the
 * client's $/cancelRequest or disconnect cancels it and the service's
 * teardown answers it, while nothing here knows what a call is (a served
 * call must be made before a job starts, hence the two steps).
 *
 * The job stays valid until its callback has returned: it is the handle to
 * cancel (ecp_job_cancel). The callback runs once, on the loop: with the
 * result (owned by the service, valid during the call only), with an error
 * (a negative ECP_* status and a message for a person), or with
 * ECP_ECANCELED when the job was cancelled before the operation began. Once
 * begun, an operation runs to its end, so no change to the disk stops
 * half-way. The callback never runs once the service is freed; a write that
 * has not begun by then still runs (its bytes exist nowhere else), the other
 * operations are dropped. A prepared job must be started. */
void file_job_start(ecp_job *job);

/* How a job that returns nothing but its outcome ends. */
typedef void (*file_done_cb)(void *ctx, int status, const ecp_error *err);

typedef struct file_read_result file_read_result;

typedef struct file_read_args {
    const char *path;
    size_t max_size;  /* larger files fail with ECP_ETOOBIG */
    bool check_utf8;  /* tell whether the bytes are valid UTF-8 */
    /* May be NULL. Renders the result on the pool thread, after the read,
     * so that a big file costs the loop nothing: it appends to out whatever
     * the caller will send, which reaches the callback as result->rendered.
     * It may read only r and fctx (borrowed until the callback has run). */
    void (*format)(void *fctx, const file_read_result *r, buf *out);
    void *fctx;
} file_read_args;

struct file_read_result {
    const char *data; /* the bytes, NUL-terminated */
    size_t len;
    file_info info;
    bool invalid_utf8;    /* check_utf8 found bytes that are not UTF-8 */
    ecp_shared *rendered; /* what args.format wrote; NULL without it. The service's: take a reference
                             (ecp_shared_ref, or ecp_call_reply_shared) to keep it past the callback */
};

typedef void (*file_read_cb)(void *ctx, int status, const ecp_error *err, const file_read_result *result);

/* file_read as a job in the short lane. */
ecp_job *file_read_prepare(file_service *self, const file_read_args *args, file_read_cb cb, void *ctx);

typedef struct file_write_args {
    const char *path;
    const char *data;
    size_t len;
    file_write_options options;
} file_write_args;

typedef struct file_write_result {
    double mod_time;
    size_t bytes_written;
} file_write_result;

typedef void (*file_write_cb)(void *ctx, int status, const ecp_error *err, const file_write_result *result);

/* file_write as a job in the short lane. A write that was asked for always
 * runs, even cancelled or at the service's teardown: its bytes exist nowhere
 * else, and it replaces the file atomically, so running late harms nothing. */
ecp_job *file_write_prepare(file_service *self, const file_write_args *args, file_write_cb cb, void *ctx);

typedef void (*file_stat_cb)(void *ctx, int status, const ecp_error *err, const file_info *info);

/* file_stat as a job in the short lane. */
ecp_job *file_stat_prepare(file_service *self, const char *path, file_stat_cb cb, void *ctx);

typedef struct file_read_dir_result {
    const file_dir_entry *entries; /* in file_read_dir's order */
    size_t count;
} file_read_dir_result;

typedef void (*file_read_dir_cb)(void *ctx, int status, const ecp_error *err, const file_read_dir_result *result);

/* file_read_dir as a job in the short lane. */
ecp_job *file_read_dir_prepare(file_service *self, const char *path, file_read_dir_cb cb, void *ctx);

/* file_delete, file_rename, file_copy, file_create_dir and file_delete_dir
 * as jobs in the short lane. */
ecp_job *file_delete_prepare(file_service *self, const char *path, file_done_cb cb, void *ctx);
ecp_job *file_rename_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx);
ecp_job *file_copy_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx);
ecp_job *file_create_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx);
ecp_job *file_delete_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx);

/* ----- tree walks (asynchronous; callbacks on the loop thread) ------------------ */

/* A walk is a job of the service in the long lane, so that however many
 * walks run, reads and writes still find a free thread. It is prepared and
 * started as the jobs above are, except that file_glob_prepare (and its
 * siblings) compiles the patterns first and fails at once on a bad one
 * (then there is no job and the callback never runs). A walk stops as soon
 * as it is cancelled; its callback then gets ECP_ECANCELED. file_walk_start
 * is file_job_start under the name walks have always used. */
void file_walk_start(ecp_job *walk);

typedef struct file_glob_result file_glob_result;

typedef struct file_glob_options {
    const char *pattern;            /* see the syntax in glob.h: * ? ** [..] [!..] {a,b} */
    const char *base;               /* absolute directory the pattern is relative to */
    size_t max_results;             /* 0: no limit */
    bool include_directories;       /* also return matching directories */
    bool follow_symlinks;           /* descend into symlinked directories (loops are cut) */
    const char *const *exclude;     /* patterns; a path matching one is skipped with all below it */
    size_t exclude_count;
    /* May be NULL: renders the result at the end of the walk, on its pool
     * thread, as file_grep_options.format does. */
    void (*format)(void *fctx, const file_glob_result *r, buf *out);
    void *fctx;
} file_glob_options;

struct file_glob_result {
    char **paths;  /* absolute, in walk order (each directory's entries sorted by name) */
    size_t count;
    bool truncated; /* max_results was reached */
    ecp_shared *rendered; /* what options.format wrote; NULL without it (see file_grep_result) */
};

/* status is 0 or an error; result is NULL on error and valid only during the call. */
typedef void (*file_glob_cb)(void *ctx, int status, const ecp_error *err, const file_glob_result *result);

/* Compiles the patterns at once (ECP_EINVAL with the reason for a bad one)
 * and prepares the walk into *walk. One work item: a glob walks in order. */
int file_glob_prepare(file_service *self, const file_glob_options *options, file_glob_cb cb, void *ctx,
                      ecp_job **walk, ecp_error *err);

typedef struct file_search_result file_search_result;

typedef struct file_search_options {
    const char *pattern;        /* compared with file names */
    const char *base;           /* absolute directory to search below */
    size_t max_results;         /* 0: no limit */
    const char *const *exclude; /* a path containing one of these (or matching it, if it is a glob) is skipped */
    size_t exclude_count;
    ecp_position_encoding encoding; /* units of the match ranges */
    /* May be NULL: renders the result at the end of the walk, on its pool
     * thread, as file_grep_options.format does. */
    void (*format)(void *fctx, const file_search_result *r, buf *out);
    void *fctx;
} file_search_options;

typedef struct file_search_range {
    size_t start, end; /* in the name, in `encoding` units */
} file_search_range;

typedef struct file_search_hit {
    char *path;        /* absolute */
    const char *name;  /* points into path */
    int score;         /* 100 prefix, 50 substring, 25 characters in order */
    file_search_range *ranges;
    size_t range_count;
} file_search_hit;

struct file_search_result {
    file_search_hit *hits; /* best score first, then shorter names, then by path */
    size_t count;
    ecp_shared *rendered; /* what options.format wrote; NULL without it (see file_grep_result) */
};

typedef void (*file_search_cb)(void *ctx, int status, const ecp_error *err, const file_search_result *result);

/* Fuzzy search for files (not directories) below base whose name contains the
 * pattern's characters in order, skipping `.git`, `node_modules` and
 * `.DS_Store`. */
int file_search_prepare(file_service *self, const file_search_options *options, file_search_cb cb, void *ctx,
                        ecp_job **walk, ecp_error *err);

/* The scorer file_search uses, exposed for tests: fills up to max_ranges byte
 * ranges of name that matched (runs of consecutive characters merge) and
 * returns 100, 50, 25 or 0 (no match). ASCII letters compare without case. */
int file_fuzzy_score(const char *pattern, size_t plen, const char *name, size_t nlen, file_search_range *ranges,
                     size_t max_ranges, size_t *range_count);

typedef struct file_grep_result file_grep_result;

typedef struct file_grep_options {
    const char *pattern;
    bool regex;                  /* PCRE2 syntax; false: a literal string */
    bool case_sensitive;
    const char *base;            /* absolute directory (or a single file) to search */
    const char *const *include;  /* globs; when given, only files matching one are searched */
    size_t include_count;
    const char *const *exclude;  /* globs; matching files and directories are skipped */
    size_t exclude_count;
    size_t max_results;          /* 0: no limit */
    ecp_position_encoding encoding; /* units of match columns */
    unsigned threads;            /* work items to spread files over (at most ECP_JOB_MAX_ITEMS); 0: one per
                                    core, no more than the pool lets long work hold */
    /* May be NULL. Renders the result at the end of the job, on the pool
     * thread that ends it, so that a big answer costs the loop nothing: it
     * appends to out whatever the caller will send, which reaches the
     * callback as result->rendered. It may read only r and fctx (borrowed
     * until the callback has run). */
    void (*format)(void *fctx, const file_grep_result *r, buf *out);
    void *fctx;
} file_grep_options;

typedef struct file_grep_match {
    char *path;    /* absolute */
    size_t line;   /* 0-based */
    size_t column; /* of the first match in the line, in `encoding` units */
    char *text;    /* the line without its end of line, cut to at most FILE_GREP_TEXT_MAX bytes */
} file_grep_match;

#define FILE_GREP_TEXT_MAX 1000

struct file_grep_result {
    file_grep_match *matches; /* sorted by path, then line */
    size_t count;
    bool truncated;           /* more lines matched than max_results */
    size_t files_searched;
    ecp_shared *rendered;     /* what options.format wrote; NULL without it. The service's: take a reference
                                 (ecp_shared_ref, or ecp_call_reply_shared) to keep it past the callback */
};

typedef void (*file_grep_cb)(void *ctx, int status, const ecp_error *err, const file_grep_result *result);

/* Searches the lines of every text file below base (one result per matching
 * line). Skips `.git`, `node_modules`, `.DS_Store`, symlinks and binary files
 * (a NUL byte in the first 8 KiB). A regex that does not compile fails at
 * once with ECP_EINVAL and PCRE2's message and offset, a missing base with
 * ECP_ENOTFOUND. Lines are matched one at a time: a match never spans a line
 * end. */
int file_grep_prepare(file_service *self, const file_grep_options *options, file_grep_cb cb, void *ctx,
                      ecp_job **walk, ecp_error *err);

/* ----- watches (callbacks on the loop thread) ------------------------------------ */

typedef enum file_change_type {
    FILE_CHANGE_CREATED,
    FILE_CHANGE_CHANGED,
    FILE_CHANGE_DELETED,
} file_change_type;

typedef struct file_change {
    const char *path; /* absolute; valid during the callback */
    file_change_type type;
    bool is_directory;
    double timestamp; /* ms since the epoch of the first event of the burst */
} file_change;

typedef void (*file_watch_cb)(void *ctx, const file_change *change);

/* Watches path: a directory (its entries; with recursive, every directory
 * below it but node_modules, including ones created later) or a single file,
 * the whole tree covered on return. Each path's
 * events are gathered for 50 ms and reported as one change: created,
 * changed or deleted (a path created and deleted within the window reports
 * nothing; a rename is deleted(old) then created(new)). The callback may
 * remove any watch. *id receives the watch's id. ECP_ENOTFOUND when path is
 * missing; ECP_EIO when the system refuses to watch. */
int file_watch_add(file_service *self, const char *path, bool recursive, file_watch_cb cb, void *ctx, uint64_t *id,
                   ecp_error *err);

/* Runs once a watch started with file_watch_start covers its whole tree. */
typedef void (*file_watch_ready_cb)(void *ctx, uint64_t id);

typedef struct file_watch_options {
    bool recursive;
    /* Do not descend into directories the exclude patterns match
     * (file_service_set_watch_exclude). */
    bool exclude;
    file_watch_ready_cb ready; /* may be NULL */
} file_watch_options;

/* Watches path as file_watch_add does, but covers a recursive watch's tree a
 * little at a time, so the loop stays free for everyone else however big the
 * tree: a job of the service lists the directories off the loop, then the
 * loop watches them a slice per turn. Meanwhile the directories already
 * covered report their changes, and a directory created during the setup
 * ends up covered. ready (with the ctx of cb) runs on the loop once the
 * whole tree is covered, never before this function has returned, and never
 * once the watch is removed. Errors as file_watch_add's, for path itself. */
int file_watch_start(file_service *self, const char *path, const file_watch_options *options, file_watch_cb cb,
                     void *ctx, uint64_t *id, ecp_error *err);

/* Sets the directories a watch started with options.exclude does not
 * descend into, from the `files.exclude` setting's JSON value (an object of
 * glob patterns, relative to the watch's directory, each kept when its value
 * is true; a pattern without '/' names a directory at any depth). NULL means
 * none. Applies to watches started afterwards. Patterns that do not compile
 * are left out, logged and reported by ECP_EINVAL, the others still apply;
 * ECP_EPARSE or ECP_EINVAL for a value that is not an object. Whatever the
 * patterns, a recursive watch never descends into node_modules. */
int file_service_set_watch_exclude(file_service *self, const char *files_exclude_json, ecp_error *err);

/* Whether pattern compiles as a glob of the service (file/glob, file/grep's
 * include and exclude, file/search's excludes, files.exclude): 0, or
 * ECP_EINVAL with a message naming the problem, or the limit passed ("pattern
 * nests braces deeper than 32 (offset 32)"). Patterns are bounded: braces
 * nest at most 32 deep, at most 256 brace groups, at most 1024 '/'-separated
 * segments, at most 1024 alternatives after brace expansion. Needs no
 * service: a settings check runs it before any value is taken. */
int file_glob_check(const char *pattern, ecp_error *err);

/* Stops a watch; no callback runs for it afterwards. ECP_ENOTFOUND for an
 * unknown id. */
int file_watch_remove(file_service *self, uint64_t id);

/* ----- listeners (callbacks on the loop thread) ---------------------------------- */

/* Listeners follow the changes of the whole service without owning a watch
 * (the git service refreshing its status after any change a client's watch
 * sees). on_change runs for every change a watch of the service reports,
 * right after that watch's own callback, with the same file_change. So a
 * path that no watch covers is heard of by nobody, and a path that two
 * watches cover is heard of twice, once per watch. A listener may subscribe
 * and unsubscribe listeners (itself included) and add and remove watches
 * from inside on_change; one unsubscribed there hears nothing more, not even
 * the rest of that change. */
typedef struct file_listener {
    void (*on_change)(void *ctx, const file_change *change);
} file_listener;

/* Subscribes (listener, ctx). listener is borrowed (usually a static const)
 * and must stay valid until unsubscribed or the service is freed. */
void file_subscribe(file_service *self, const file_listener *listener, void *ctx);

/* Unsubscribes (listener, ctx); false when it was not subscribed. */
bool file_unsubscribe(file_service *self, const file_listener *listener, void *ctx);

#endif
