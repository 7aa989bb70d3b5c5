/* The document service loses no edit, through the in-process client: every
 * spelling of a file is one document, saves of one file land in order, a
 * document follows its file (a clean one reloads as an undoable edit, a dirty
 * one is flagged and a save over the change is a conflict unless forced), a
 * deleted file is reported and written again by a save, reload is undoable,
 * byte order marks and hard links survive a save, the temporary files of an
 * interrupted save are swept, and file/read tells replaced bytes from exact
 * ones. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_client.h"

/* The watch gathers a file's events for about 50 ms; a loaded machine may
 * take much longer to get round to it. */
#define FOLLOW_MS 10000

/* ----- fixture and checks ------------------------------------------------------- */

typedef struct fx {
    test_server *s;
    test_client *c;
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_server_new(NULL);
    f->c = test_client_connect(f->s);
    strcpy(f->dir, "/tmp/ecpd-integrity-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    test_server_free(f->s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static char *vcall(test_client *c, const char *method, int *code, const char *fmt, va_list ap)
{
    char *params = NULL;
    if (fmt && vasprintf(&params, fmt, ap) < 0)
        abort();
    int64_t id = test_client_send(c, method, params);
    char *out = NULL;
    *code = test_client_wait_response(c, id, 30000, &out);
    free(params);
    return out;
}

/* A request that must succeed; returns its result JSON (free it). */
static char *ok(test_client *c, const char *method, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static char *ok(test_client *c, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != 0)
        print_error("%s failed with %d: %s\n", method, code, out ? out : "(none)");
    assert_int_equal(code, 0);
    return out;
}

/* A request that must fail with `want`; returns the error object (free it). */
static char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != want)
        print_error("%s: expected error %d, got %d: %s\n", method, want, code, out ? out : "(none)");
    assert_int_equal(code, want);
    return out;
}

#define OK(...) free(ok(__VA_ARGS__))

static void expect_str(const char *json, const char *path, const char *want)
{
    char *got = test_json_string(json, path);
    if (!got || strcmp(got, want) != 0)
        print_error("at '%s': want \"%s\", got \"%s\"\n", path, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void expect_int(const char *json, const char *path, int64_t want)
{
    int64_t got = INT64_MIN;
    assert_true(test_json_int(json, path, &got));
    assert_int_equal(got, want);
}

static void expect_bool(const char *json, const char *path, bool want)
{
    bool got = !want;
    if (!test_json_bool(json, path, &got))
        print_error("at '%s': no boolean in %s\n", path, json);
    assert_true(test_json_bool(json, path, &got));
    if (got != want)
        print_error("at '%s': want %s in %s\n", path, want ? "true" : "false", json);
    assert_int_equal(got, want);
}

static void write_bytes(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* Writes a new file and renames it over path, as most programs save. */
static void replace_file(const char *path, const char *data)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    write_bytes(tmp, data, strlen(data));
    assert_int_equal(rename(tmp, path), 0);
}

static char *read_bytes(const char *path, size_t *len)
{
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    assert_int_equal(fread(data, 1, (size_t)n, in), (size_t)n);
    data[n] = '\0';
    fclose(in);
    *len = (size_t)n;
    return data;
}

static void expect_file(const char *path, const char *want, size_t want_len)
{
    size_t len;
    char *got = read_bytes(path, &len);
    if (len != want_len || memcmp(got, want, len) != 0)
        print_error("%s holds %zu bytes: %.200s\n", path, len, got);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    free(got);
}

static char *open_file(test_client *c, const char *uri)
{
    char *r = ok(c, "document/open", "{\"uri\":\"%s\"}", uri);
    char *id = test_json_string(r, "documentId");
    assert_non_null(id);
    free(r);
    return id;
}

static void expect_content(test_client *c, const char *id, const char *want)
{
    char *r = ok(c, "document/content", "{\"documentId\":\"%s\"}", id);
    expect_str(r, "content", want);
    free(r);
}

static char *info_of(test_client *c, const char *id)
{
    return ok(c, "document/info", "{\"documentId\":\"%s\"}", id);
}

/* Names in dir that contain `part`. */
static int count_names(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, part))
            n++;
    closedir(d);
    return n;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void wait_for(test_client *c, const char *method, size_t count)
{
    if (!test_client_wait_notifications(c, method, count, FOLLOW_MS))
        print_error("no %s within %d ms; log: %s\n", method, FOLLOW_MS, test_client_notification_log(c));
    assert_true(test_client_notification_count(c, method) >= count);
}

/* ----- one file, one document ------------------------------------------------------ */

static void test_every_spelling_is_one_document(void **state)
{
    fx *f = *state;
    char sub[128], file[160], slink[160], dirlink[160], hard[160], uri[400];
    snprintf(sub, sizeof sub, "%s/x", f->dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(file, sizeof file, "%s/a.txt", sub);
    write_bytes(file, "text\n", 5);
    snprintf(slink, sizeof slink, "%s/link.txt", f->dir);
    assert_int_equal(symlink(file, slink), 0);
    snprintf(dirlink, sizeof dirlink, "%s/y", f->dir);
    assert_int_equal(symlink("x", dirlink), 0);
    snprintf(hard, sizeof hard, "%s/hard.txt", f->dir);
    assert_int_equal(link(file, hard), 0);

    snprintf(uri, sizeof uri, "file://%s/x/a.txt", f->dir);
    char *id = open_file(f->c, uri);
    const char *spellings[] = {"file://%s/x//a.txt", "file://%s/x/../x/a.txt", "file://%s/./x/a.txt", "%s/x/a.txt",
                               "file://%s/link.txt", "file://%s/y/a.txt", "file://%s/hard.txt"};
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        char other[400];
        snprintf(other, sizeof other, spellings[i], f->dir);
        char *r = ok(f->c, "document/open", "{\"uri\":\"%s\"}", other);
        expect_str(r, "documentId", id);
        /* The document keeps the uri it was first opened with. */
        expect_str(r, "info.uri", uri);
        free(r);
    }
    /* Opening with content names the same document too. */
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s\",\"content\":\"other\"}", slink);
    expect_str(r, "documentId", id);
    free(r);
    expect_content(f->c, id, "text\n");
    r = ok(f->c, "document/list", NULL);
    assert_int_equal(test_json_length(r, "documents"), 1);
    free(r);
    /* One didOpen for all of them. */
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 1);

    /* A second document cannot be saved under another spelling of the file. */
    char *m = NULL;
    r = ok(f->c, "document/open", "{\"uri\":\"memory://m.txt\",\"content\":\"m\"}");
    m = test_json_string(r, "documentId");
    free(r);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s/y/../link.txt\"}", m, f->dir);
    expect_bool(r, "success", false);
    free(r);
    expect_file(file, "text\n", 5);

    /* After a close, the next open (by any name) is a new document with that name. */
    OK(f->c, "document/close", "{\"documentId\":\"%s\"}", id);
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", slink);
    char *again = test_json_string(r, "documentId");
    assert_string_not_equal(again, id);
    free(r);
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s/x/a.txt\"}", f->dir);
    expect_str(r, "documentId", again);
    snprintf(uri, sizeof uri, "file://%s", slink);
    expect_str(r, "info.uri", uri);
    free(r);
    free(again);
    free(m);
    free(id);
}

/* Opens of one file by two names while it is read on the pool share the read. */
static void test_spellings_share_one_read(void **state)
{
    fx *f = *state;
    char path[160], params[400];
    snprintf(path, sizeof path, "%s/big.txt", f->dir);
    FILE *out = fopen(path, "wb");
    for (int i = 0; i < 60000; i++)
        fprintf(out, "line %06d of a file that is read on the pool\n", i);
    fclose(out);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t a = test_client_send(f->c, "document/open", params);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s/./big.txt\"}", f->dir);
    int64_t b = test_client_send(f->c, "document/open", params);
    char *ra, *rb;
    assert_int_equal(test_client_wait_response(f->c, a, 30000, &ra), 0);
    assert_int_equal(test_client_wait_response(f->c, b, 30000, &rb), 0);
    char *ida = test_json_string(ra, "documentId"), *idb = test_json_string(rb, "documentId");
    assert_string_equal(ida, idb);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 1);
    free(ida);
    free(idb);
    free(ra);
    free(rb);
}

/* ----- saves in order ---------------------------------------------------------------- */

static void test_saves_land_in_order(void **state)
{
    fx *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/order.txt", f->dir);
    write_bytes(path, "start\n", 6);
    char uri[200];
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);

    /* Texts of a few MiB each, so that every save takes a while to write;
     * each is asked for before the one before it has answered. */
    enum { SAVES = 6 };
    size_t len = 3u << 20;
    char *text = malloc(len + 1);
    int64_t ids[SAVES];
    for (int i = 0; i < SAVES; i++) {
        for (size_t k = 0; k < len; k++)
            text[k] = k % 64 == 63 ? '\n' : (char)('a' + (i + k) % 26);
        text[len] = '\0';
        char *params = malloc(2 * len + 200);
        int n = snprintf(params, 200, "{\"documentId\":\"%s\",\"content\":\"", id);
        for (size_t k = 0; k < len; k++) {
            if (text[k] == '\n') {
                params[n++] = '\\';
                params[n++] = 'n';
            } else {
                params[n++] = text[k];
            }
        }
        strcpy(params + n, "\"}");
        char *r;
        int64_t set = test_client_send(f->c, "document/setContent", params);
        assert_int_equal(test_client_wait_response(f->c, set, 30000, &r), 0);
        free(r);
        free(params);
        char save[200];
        snprintf(save, sizeof save, "{\"documentId\":\"%s\"}", id);
        ids[i] = test_client_send(f->c, "document/save", save);
    }
    int64_t last_version = 0;
    for (int i = 0; i < SAVES; i++) {
        char *r;
        assert_int_equal(test_client_wait_response(f->c, ids[i], 30000, &r), 0);
        expect_bool(r, "success", true);
        int64_t v;
        assert_true(test_json_int(r, "version", &v));
        assert_true(v >= last_version);
        last_version = v;
        free(r);
    }
    /* The answers came in the order the saves were asked for. */
    const char *log = test_client_event_log(f->c);
    const char *prev = log;
    for (int i = 0; i < SAVES; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "#%lld", (long long)ids[i]);
        const char *at = strstr(log, tag);
        assert_non_null(at);
        assert_true(at >= prev);
        prev = at;
    }
    /* The file holds the last text, and nothing is left beside it. */
    expect_file(path, text, len);
    assert_int_equal(count_names(f->dir, ".ecpd-"), 0);
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    free(r);
    free(text);
    free(id);
}

/* ----- following the file ------------------------------------------------------------- */

static void test_clean_document_reloads(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/clean.txt", f->dir);
    write_bytes(path, "one\n", 4);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    test_client_clear_notifications(f->c);

    replace_file(path, "two\nlines\n");
    wait_for(f->c, "document/didChange", 1);
    /* A reload is an edit like any other: only didChange, and one of it. */
    test_server_run_for(f->s, 200);
    assert_string_equal(test_client_notification_log(f->c), "document/didChange");
    const char *note = test_client_notification(f->c, "document/didChange", 0);
    expect_str(note, "documentId", id);
    expect_str(note, "uri", uri);
    expect_int(note, "version", 2);
    expect_str(note, "changes[0].text", "two\nlines\n");
    expect_content(f->c, id, "two\nlines\n");
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);

    /* Undoable: back to what was there before, which is not on disk. */
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    expect_bool(r, "canRedo", true);
    free(r);
    expect_content(f->c, id, "one\n");
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    free(r);
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    free(r);

    /* A write in place (same inode) is followed too; so is a second one. */
    test_client_clear_notifications(f->c);
    write_bytes(path, "three\n", 6);
    wait_for(f->c, "document/didChange", 1);
    expect_content(f->c, id, "three\n");
    /* Our own save is not mistaken for someone else's change. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"4\"}", id);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    test_client_clear_notifications(f->c);
    test_server_run_for(f->s, 400);
    assert_string_equal(test_client_notification_log(f->c), "");
    expect_content(f->c, id, "three\n4");
    r = ok(f->c, "document/canUndo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "canUndo", true);
    free(r);
    free(id);
}

static void test_dirty_document_is_flagged(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/dirty.txt", f->dir);
    write_bytes(path, "base\n", 5);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"mine\"}", id);
    test_client_clear_notifications(f->c);

    replace_file(path, "theirs\n");
    wait_for(f->c, "document/didChangeOnDisk", 1);
    test_server_run_for(f->s, 200);
    /* The text stays the user's: no didChange, one didChangeOnDisk. */
    assert_string_equal(test_client_notification_log(f->c), "document/didChangeOnDisk");
    const char *note = test_client_notification(f->c, "document/didChangeOnDisk", 0);
    char want[400];
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"%s\"}", id, uri);
    assert_string_equal(note, want);
    expect_content(f->c, id, "base\nmine");
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    expect_bool(r, "changedOnDisk", true);
    free(r);
    r = ok(f->c, "document/list", NULL);
    expect_bool(r, "documents[0].changedOnDisk", true);
    free(r);

    /* A save would lose their change: a conflict, and nothing is written. */
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", false);
    expect_bool(r, "conflict", true);
    expect_str(r, "error", "File changed on disk");
    expect_str(r, "uri", uri);
    free(r);
    expect_file(path, "theirs\n", 7);
    assert_int_equal(count_names(f->dir, ".ecpd-"), 0);
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    free(r);
    /* Even undoing every edit leaves it dirty: the file is not its text. */
    OK(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    expect_bool(r, "changedOnDisk", true);
    free(r);
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);

    /* force writes it anyway, and the document is clean and following again. */
    test_client_clear_notifications(f->c);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"force\":true}", id);
    expect_bool(r, "success", true);
    assert_false(test_json_has(r, "conflict"));
    free(r);
    expect_file(path, "base\nmine", 9);
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);
    test_server_run_for(f->s, 300);
    assert_string_equal(test_client_notification_log(f->c), "document/didSave");
    replace_file(path, "later\n");
    wait_for(f->c, "document/didChange", 1);
    expect_content(f->c, id, "later\n");
    char *e = fails(f->c, -32602, "document/save", "{\"documentId\":\"%s\",\"force\":1}", id);
    expect_str(e, "message", "force: expected boolean, got number");
    free(e);
    free(id);
}

/* markClean declares the text to be the file's: the flag goes, and the file
 * as it is now is what a save expects. */
static void test_mark_clean_adopts_the_file(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/adopt.txt", f->dir);
    write_bytes(path, "a\n", 2);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"b\"}", id);
    replace_file(path, "a\nb");
    wait_for(f->c, "document/didChangeOnDisk", 1);
    OK(f->c, "document/markClean", "{\"documentId\":\"%s\"}", id);
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1},\"text\":\"c\"}", id);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "a\nbc", 4);
    free(id);
}

/* A change made while the user edits, between the watch's report and the
 * reload: the document keeps the edit and is flagged instead. A change seen
 * only by the save itself (no watch in between) is a conflict as well. */
static void test_change_seen_by_the_save(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/race.txt", f->dir);
    write_bytes(path, "v1\n", 3);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"x\"}", id);
    /* Written and saved at once: the save checks the file before it writes. */
    replace_file(path, "v2 from elsewhere\n");
    test_client_clear_notifications(f->c);
    char params[200];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
    int64_t save = test_client_send(f->c, "document/save", params);
    char *r;
    assert_int_equal(test_client_wait_response(f->c, save, 30000, &r), 0);
    expect_bool(r, "success", false);
    expect_bool(r, "conflict", true);
    free(r);
    /* The flag is raised, and said, before the answer. */
    char want[64];
    snprintf(want, sizeof want, "document/didChangeOnDisk,#%lld", (long long)save);
    assert_string_equal(test_client_event_log(f->c), want);
    expect_file(path, "v2 from elsewhere\n", 18);
    r = info_of(f->c, id);
    expect_bool(r, "changedOnDisk", true);
    free(r);
    /* The report of that change comes once, however it was noticed. */
    test_server_run_for(f->s, 300);
    assert_int_equal(test_client_notification_count(f->c, "document/didChangeOnDisk"), 1);
    free(id);
}

static void test_deleted_file(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/gone.txt", f->dir);
    write_bytes(path, "keep me\n", 8);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    test_client_clear_notifications(f->c);

    assert_int_equal(unlink(path), 0);
    wait_for(f->c, "document/didChangeOnDisk", 1);
    test_server_run_for(f->s, 200);
    assert_string_equal(test_client_notification_log(f->c), "document/didChangeOnDisk");
    expect_content(f->c, id, "keep me\n");
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    expect_bool(r, "changedOnDisk", true);
    free(r);

    /* A save writes it again (there is no one else's change to lose). */
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "keep me\n", 8);
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);

    /* Deleted, then written again by someone else: a clean document reloads.
     * (Watches report nothing for a file created and deleted within 50 ms:
     * the save's own creation has to be reported first.) */
    test_server_run_for(f->s, 300);
    test_client_clear_notifications(f->c);
    assert_int_equal(unlink(path), 0);
    wait_for(f->c, "document/didChangeOnDisk", 1);
    replace_file(path, "reborn\n");
    wait_for(f->c, "document/didChange", 1);
    expect_content(f->c, id, "reborn\n");
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);
    free(id);
}

/* Rewrites path in place with data of the same size, then puts its
 * modification time back: only the change time (and the bytes) tell. */
static void rewrite_keeping_mtime(const char *path, const char *data)
{
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal((size_t)before.st_size, strlen(data));
    write_bytes(path, data, strlen(data));
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

static void test_rewrite_that_keeps_mtime_and_size_is_seen(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/same.txt", f->dir);
    write_bytes(path, "aaaa\n", 5);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    /* Our own save is not someone else's change, though it changes the change time. */
    test_server_run_for(f->s, 300);
    test_client_clear_notifications(f->c);
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    test_server_run_for(f->s, 400);
    assert_string_equal(test_client_notification_log(f->c), "document/didSave");
    test_client_clear_notifications(f->c);
    /* A chmod changes the change time alone: a clean document looks, finds its text, and says nothing. */
    assert_int_equal(chmod(path, 0640), 0);
    test_server_run_for(f->s, 400);
    assert_string_equal(test_client_notification_log(f->c), "");
    r = ok(f->c, "document/version", "{\"documentId\":\"%s\"}", id);
    expect_int(r, "version", 1);
    free(r);

    /* Clean: the document follows the disk. */
    rewrite_keeping_mtime(path, "bbbb\n");
    wait_for(f->c, "document/didChange", 1);
    expect_content(f->c, id, "bbbb\n");

    /* Dirty: flagged, and a save over it is a conflict. */
    test_server_run_for(f->s, 300);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"mine\"}", id);
    test_client_clear_notifications(f->c);
    rewrite_keeping_mtime(path, "cccc\n");
    wait_for(f->c, "document/didChangeOnDisk", 1);
    expect_content(f->c, id, "bbbb\nmine");
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", false);
    expect_bool(r, "conflict", true);
    free(r);
    expect_file(path, "cccc\n", 5);
    free(id);
}

/* An atomic replace by a file of the same size and modification time (a new
 * inode) is seen too. */
static void test_replace_that_keeps_mtime_and_size_is_seen(void **state)
{
    fx *f = *state;
    char path[160], uri[200], tmp[200];
    snprintf(path, sizeof path, "%s/swap.txt", f->dir);
    write_bytes(path, "aaaa\n", 5);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    test_client_clear_notifications(f->c);
    struct stat before;
    assert_int_equal(stat(path, &before), 0);
    snprintf(tmp, sizeof tmp, "%s.new", path);
    write_bytes(tmp, "dddd\n", 5);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, tmp, times, 0), 0);
    assert_int_equal(rename(tmp, path), 0);
    wait_for(f->c, "document/didChange", 1);
    expect_content(f->c, id, "dddd\n");
    free(id);
}

/* Save as onto what is not a regular file is refused as file/write refuses
 * it; it stays what it was, and nothing waits on it. */
static void test_save_as_onto_special_files_is_refused(void **state)
{
    fx *f = *state;
    char path[160], uri[200], fifo[160], node[160];
    snprintf(path, sizeof path, "%s/doc.txt", f->dir);
    write_bytes(path, "text\n", 5);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    snprintf(fifo, sizeof fifo, "%s/pipe", f->dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    /* A device node of our own with /dev/null's numbers, rather than risk the real one. */
    snprintf(node, sizeof node, "%s/null", f->dir);
    bool have_node = mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0;
    const char *targets[] = {fifo, node};
    const mode_t kinds[] = {S_IFIFO, S_IFCHR};
    for (size_t i = 0; i < (have_node ? 2u : 1u); i++) {
        char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", id, targets[i]);
        expect_bool(r, "success", false);
        char *error = test_json_string(r, "error");
        assert_non_null(error);
        if (!strstr(error, "Not a regular file"))
            print_error("save as %s: %s\n", targets[i], r);
        assert_non_null(strstr(error, "Not a regular file"));
        free(error);
        expect_str(r, "uri", uri);
        free(r);
        struct stat st;
        assert_int_equal(lstat(targets[i], &st), 0);
        assert_int_equal(st.st_mode & S_IFMT, kinds[i]);
    }
    assert_int_equal(count_names(f->dir, ".ecpd-"), 0);
    /* The document keeps its own file, and saves there. */
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    expect_str(r, "uri", uri);
    free(r);
    free(id);
}

/* ----- reload ---------------------------------------------------------------------------- */

static void test_reload_is_an_undoable_edit(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/reload.txt", f->dir);
    write_bytes(path, "disk 1\n", 7);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"edit\"}", id);
    write_bytes(path, "disk 2 is longer\n", 17);

    /* Forced over unsaved edits: they are one undo away. */
    char *r = ok(f->c, "document/reload", "{\"documentId\":\"%s\",\"force\":true}", id);
    expect_bool(r, "success", true);
    expect_int(r, "version", 3);
    free(r);
    expect_content(f->c, id, "disk 2 is longer\n");
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    assert_false(test_json_has(r, "changedOnDisk"));
    free(r);
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_content(f->c, id, "disk 1\nedit");
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_content(f->c, id, "disk 1\n");
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);
    expect_content(f->c, id, "disk 2 is longer\n");
    r = info_of(f->c, id);
    expect_bool(r, "isDirty", false);
    free(r);

    /* A reload of what is already there changes nothing, not even the version. */
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    expect_int(r, "version", 7);
    free(r);
    /* Typing after a reload is a step of its own. */
    OK(f->c, "document/type", "{\"documentId\":\"%s\",\"text\":\"t\"}", id);
    OK(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_content(f->c, id, "disk 2 is longer\n");
    free(id);
}

/* A reload cancelled with $/cancelRequest, its read already on the pool,
 * changes nothing at all. */
static void test_cancelled_reload_changes_nothing(void **state)
{
    fx *f = *state;
    char path[160], params[300];
    snprintf(path, sizeof path, "%s/cancel.txt", f->dir);
    FILE *out = fopen(path, "wb");
    for (int i = 0; i < 200000; i++)
        fprintf(out, "line %06d, long enough to be read on the pool\n", i);
    fclose(out);
    snprintf(params, sizeof params, "file://%s", path);
    char *id = open_file(f->c, params);
    char *r = info_of(f->c, id);
    int64_t version;
    assert_true(test_json_int(r, "version", &version));
    free(r);
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"force\":true}", id);
    int64_t rid = test_client_send(f->c, "document/reload", params);
    snprintf(params, sizeof params, "{\"id\":%lld}", (long long)rid);
    test_client_notify(f->c, "$/cancelRequest", params);
    assert_int_equal(test_client_wait_response(f->c, rid, 30000, &r), -32800);
    free(r);
    test_server_run_for(f->s, 300);
    r = info_of(f->c, id);
    expect_int(r, "version", version);
    expect_bool(r, "isDirty", false);
    free(r);
    r = ok(f->c, "document/canUndo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "canUndo", false);
    free(r);
    free(id);
}

/* ----- bytes on disk ------------------------------------------------------------------------ */

static void test_byte_order_mark_round_trip(void **state)
{
    fx *f = *state;
    char path[160], uri[200];
    snprintf(path, sizeof path, "%s/bom.txt", f->dir);
    const char original[] = "\xEF\xBB\xBFh\xC3\xA9llo\r\nworld\r\n";
    write_bytes(path, original, sizeof original - 1);
    snprintf(uri, sizeof uri, "file://%s", path);
    char *id = open_file(f->c, uri);
    /* Not text: not in the content, not in any position. */
    expect_content(f->c, id, "h\xC3\xA9llo\nworld\n");
    char *r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0}}", id);
    expect_int(r, "offset", 6);
    free(r);
    r = ok(f->c, "document/wordAtPosition", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0}}", id);
    expect_int(r, "range.start.column", 0);
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"> \"}", id);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    /* Written back, in front of the text, with the file's line ends. */
    const char saved[] = "\xEF\xBB\xBF> h\xC3\xA9llo\r\nworld\r\n";
    expect_file(path, saved, sizeof saved - 1);

    /* A file saved without one gets none; a reload learns the file's choice. */
    write_bytes(path, "plain\n", 6);
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"!\"}", id);
    OK(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_file(path, "plain\n!", 7);

    /* Save as keeps the mark of the document. */
    char other[160];
    snprintf(other, sizeof other, "%s/bom2.txt", f->dir);
    write_bytes(other, "\xEF\xBB\xBFx", 4);
    char *id2 = open_file(f->c, other);
    expect_content(f->c, id2, "x");
    char copy[160];
    snprintf(copy, sizeof copy, "%s/bom-copy.txt", f->dir);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", id2, copy);
    expect_bool(r, "success", true);
    free(r);
    expect_file(copy, "\xEF\xBB\xBFx", 4);
    free(id2);
    free(id);
}

static void test_hard_links_are_kept(void **state)
{
    fx *f = *state;
    char a[160], b[160], uri[200];
    snprintf(a, sizeof a, "%s/a.txt", f->dir);
    snprintf(b, sizeof b, "%s/b.txt", f->dir);
    write_bytes(a, "shared\n", 7);
    assert_int_equal(chmod(a, 0640), 0);
    assert_int_equal(link(a, b), 0);
    struct stat before, after;
    assert_int_equal(stat(a, &before), 0);

    snprintf(uri, sizeof uri, "file://%s", a);
    char *id = open_file(f->c, uri);
    OK(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"edited through a\\n\"}", id);
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    /* The same file under both names: the other link sees the new text. */
    expect_file(a, "edited through a\n", 17);
    expect_file(b, "edited through a\n", 17);
    assert_int_equal(stat(a, &after), 0);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_nlink, 2);
    assert_int_equal(after.st_mode & 07777, 0640);
    /* The copy kept aside while writing is gone, and nothing else is left. */
    assert_int_equal(count_names(f->dir, ".ecpd-"), 0);
    /* Opened by its other name, it is the same document. */
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", b);
    expect_str(r, "documentId", id);
    free(r);
    /* Our own write in place is not taken for someone else's. */
    test_client_clear_notifications(f->c);
    test_server_run_for(f->s, 300);
    assert_string_equal(test_client_notification_log(f->c), "");
    /* A second save, shorter, cuts the file to its length. */
    OK(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"short\"}", id);
    OK(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_file(b, "short", 5);
    free(id);
}

/* ----- temporary files of interrupted saves --------------------------------------------------- */

/* A temporary file as a save that died would leave it. */
static void leave_temp(const char *dir, const char *name)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_bytes(path, "half a save", 11);
}

static void test_leftovers_are_swept(void **state)
{
    fx *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/doc.txt", f->dir);
    write_bytes(path, "doc\n", 4);
    leave_temp(f->dir, ".doc.txt.ecpd-0123456789ab");
    leave_temp(f->dir, ".doc.txt.ecpd-a1b2c3d4e5f6");
    /* Not ours, or not this file's: kept. */
    const char *keep[] = {".doc.txt.ecpd-0123456789ab.bak", ".doc.txt.ecpd-0123456789AB", ".doc.txt.ecpd-0123456789",
                          ".other.txt.ecpd-0123456789ab", "doc.txt.ecpd-0123456789ab", ".doc.txt.ecpd-backup-0123456789ab",
                          ".doc.txt.0123456789ab.tmp"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        leave_temp(f->dir, keep[i]);
    /* One that a save in progress holds (locked): kept. */
    char held[300];
    snprintf(held, sizeof held, "%s/.doc.txt.ecpd-fedcba987654", f->dir);
    int hfd = open(held, O_WRONLY | O_CREAT, 0600);
    assert_true(hfd >= 0);
    assert_int_equal(flock(hfd, LOCK_EX), 0);

    char *id = open_file(f->c, path);
    /* Swept off the loop, soon after the open. */
    for (int i = 0; i < 500 && count_names(f->dir, ".doc.txt.ecpd-") > 5; i++)
        test_server_run_for(f->s, 10);
    char name[300];
    snprintf(name, sizeof name, "%s/.doc.txt.ecpd-0123456789ab", f->dir);
    assert_false(exists(name));
    snprintf(name, sizeof name, "%s/.doc.txt.ecpd-a1b2c3d4e5f6", f->dir);
    assert_false(exists(name));
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        snprintf(name, sizeof name, "%s/%s", f->dir, keep[i]);
        if (!exists(name))
            print_error("%s was removed\n", keep[i]);
        assert_true(exists(name));
    }
    assert_true(exists(held));

    /* One left after the open goes with the next save of the file. */
    leave_temp(f->dir, ".doc.txt.ecpd-00000000ffff");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"s\"}", id);
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    snprintf(name, sizeof name, "%s/.doc.txt.ecpd-00000000ffff", f->dir);
    assert_false(exists(name));
    assert_true(exists(held));
    /* Once its writer is gone, the held one goes too. */
    close(hfd);
    OK(f->c, "document/save", "{\"documentId\":\"%s\",\"force\":true}", id);
    assert_false(exists(held));
    expect_file(path, "sdoc\n", 5);
    free(id);
}

/* A save that cannot finish (here: past the file size limit, which a save
 * of the real server also meets as EFBIG, SIGXFSZ being ignored) answers
 * why, leaves the file as it was, and leaves no temporary file, whether it
 * replaces the file or writes it in place (hard links). */
static void test_failed_save_leaves_the_file(void **state)
{
    fx *f = *state;
    char path[160], twin[160], linked[160];
    snprintf(path, sizeof path, "%s/file.txt", f->dir);
    snprintf(twin, sizeof twin, "%s/linked.txt", f->dir);
    snprintf(linked, sizeof linked, "%s/linked-too.txt", f->dir);
    write_bytes(path, "intact\n", 7);
    write_bytes(twin, "intact too\n", 11);
    assert_int_equal(link(twin, linked), 0);
    char *id = open_file(f->c, path);
    char *id2 = open_file(f->c, twin);
    size_t big = 256u << 10;
    char *params = malloc(big + 200);
    for (int d = 0; d < 2; d++) {
        int n = snprintf(params, 200, "{\"documentId\":\"%s\",\"content\":\"", d ? id2 : id);
        memset(params + n, 'x', big);
        strcpy(params + n + big, "\"}");
        char *r;
        assert_int_equal(test_client_wait_response(f->c, test_client_send(f->c, "document/setContent", params), 30000,
                                                   &r),
                         0);
        free(r);
    }
    free(params);

    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, low = {64u << 10, 64u << 10};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    low.rlim_max = old.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
    char *r1 = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    char *r2 = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id2);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);

    char want[400];
    expect_bool(r1, "success", false);
    assert_false(test_json_has(r1, "conflict"));
    snprintf(want, sizeof want, "Failed to save %s: write failed: File too large", path);
    expect_str(r1, "error", want);
    expect_bool(r2, "success", false);
    snprintf(want, sizeof want, "Failed to save %s: write failed: File too large", twin);
    expect_str(r2, "error", want);
    free(r1);
    free(r2);
    expect_file(path, "intact\n", 7);
    expect_file(twin, "intact too\n", 11);
    expect_file(linked, "intact too\n", 11);
    assert_int_equal(count_names(f->dir, ".ecpd-"), 0);
    char *r = info_of(f->c, id);
    expect_bool(r, "isDirty", true);
    free(r);
    /* Nothing was lost: with room again, the same save goes through. */
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id2);
    expect_bool(r, "success", true);
    free(r);
    struct stat st;
    assert_int_equal(stat(linked, &st), 0);
    assert_int_equal(st.st_size, (off_t)big);
    free(id2);
    free(id);
}

/* ----- file/read --------------------------------------------------------------------------------- */

static void test_file_read_encodings(void **state)
{
    fx *f = *state;
    char path[160];
    snprintf(path, sizeof path, "%s/bytes.bin", f->dir);
    const char bytes[] = "ok\xFF\xFE\x00z\xC3\xA9";
    write_bytes(path, bytes, sizeof bytes - 1);

    char *r = ok(f->c, "file/read", "{\"uri\":\"file://%s\"}", path);
    expect_str(r, "encoding", "utf-8");
    expect_bool(r, "replaced", true);
    char *content = test_json_string(r, "content");
    assert_memory_equal(content, "ok\xEF\xBF\xBD\xEF\xBF\xBD\x00z\xC3\xA9", 12);
    free(content);
    expect_int(r, "size", 8);
    free(r);

    r = ok(f->c, "file/read", "{\"uri\":\"file://%s\",\"encoding\":\"base64\"}", path);
    expect_str(r, "encoding", "base64");
    expect_str(r, "content", "b2v//gB6w6k=");
    expect_int(r, "size", 8);
    assert_false(test_json_has(r, "replaced"));
    free(r);

    /* Every padding length, and valid text says nothing of replacing. */
    const char *const plain[] = {"", "a", "ab", "abc", "h\xC3\xA9llo"};
    const char *const coded[] = {"", "YQ==", "YWI=", "YWJj", "aMOpbGxv"};
    for (int i = 0; i < 5; i++) {
        write_bytes(path, plain[i], strlen(plain[i]));
        r = ok(f->c, "file/read", "{\"uri\":\"file://%s\",\"encoding\":\"BASE64\"}", path);
        expect_str(r, "content", coded[i]);
        free(r);
        r = ok(f->c, "file/read", "{\"uri\":\"file://%s\",\"encoding\":\"utf-8\"}", path);
        expect_str(r, "content", plain[i]);
        assert_false(test_json_has(r, "replaced"));
        free(r);
    }
    /* A large file crosses the encoder's blocks. */
    size_t big = 100000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)(i * 7 + 3);
    write_bytes(path, data, big);
    r = ok(f->c, "file/read", "{\"uri\":\"file://%s\",\"encoding\":\"base64\"}", path);
    char *b64 = test_json_string(r, "content");
    assert_int_equal(strlen(b64), (big + 2) / 3 * 4);
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0, k = 0; i + 2 < big; i += 3, k += 4) {
        unsigned v = (unsigned char)data[i] << 16 | (unsigned char)data[i + 1] << 8 | (unsigned char)data[i + 2];
        assert_int_equal(b64[k], alphabet[v >> 18 & 63]);
        assert_int_equal(b64[k + 3], alphabet[v & 63]);
    }
    free(b64);
    free(r);
    free(data);

    char *e = fails(f->c, -32602, "file/read", "{\"uri\":\"file://%s\",\"encoding\":\"latin1\"}", path);
    expect_str(e, "message", "encoding: unsupported encoding 'latin1' (\"utf-8\" or \"base64\")");
    free(e);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_every_spelling_is_one_document),
        T(test_spellings_share_one_read),
        T(test_saves_land_in_order),
        T(test_clean_document_reloads),
        T(test_dirty_document_is_flagged),
        T(test_mark_clean_adopts_the_file),
        T(test_change_seen_by_the_save),
        T(test_deleted_file),
        T(test_rewrite_that_keeps_mtime_and_size_is_seen),
        T(test_replace_that_keeps_mtime_and_size_is_seen),
        T(test_save_as_onto_special_files_is_refused),
        T(test_reload_is_an_undoable_edit),
        T(test_cancelled_reload_changes_nothing),
        T(test_byte_order_mark_round_trip),
        T(test_hard_links_are_kept),
        T(test_leftovers_are_swept),
        T(test_failed_save_leaves_the_file),
        T(test_file_read_encodings),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
