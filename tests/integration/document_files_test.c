/* The document service through the in-process client: what save and reload
 * leave on disk, and large files opened on the thread pool while the server
 * keeps answering, cancelled, or abandoned. */
#include <dirent.h>

#include "document_fixture.h"

static char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return data;
}

static bool dir_has_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    bool found = false;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".ecpd-"))
            found = true;
    closedir(d);
    return found;
}

/* ----- save and reload ------------------------------------------------------------------------------------ */

static void expect_file(const char *path, const char *want, size_t want_len)
{
    size_t len;
    char *got = read_bytes(path, &len);
    if (len != want_len || memcmp(got, want, len) != 0)
        print_error("%s holds %zu bytes: %s\n", path, len, got);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    free(got);
}

static void test_save_round_trip(void **state)
{
    fx *f = *state;
    umask(022);
    char path[256], want[512];
    snprintf(path, sizeof path, "%s/crlf.txt", f->dir);
    const char original[] = "first\r\nsec\xff\xfeond\r\nthird\r\n";
    write_bytes(path, original, sizeof original - 1, 0640);
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", 4);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", id);
    expect_str(r, "text", "sec\xEF\xBF\xBD\xEF\xBF\xBDond");
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":5},\"text\":\"!\"}", id);
    test_client_clear_notifications(f->c);

    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want, "{\"success\":true,\"version\":2,\"uri\":\"file://%s\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_events(f->c, "document/didSave,#");
    /* CRLF and the invalid bytes are back, and the mode is kept. */
    const char edited[] = "first\r\nsec\xff\xfeond\r\nthird!\r\n";
    expect_file(path, edited, sizeof edited - 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_false(dir_has_temp_files(f->dir));
    expect_dirty(f->c, id, false);

    /* Undo to before the save: dirty; save that; redo: dirty again. */
    OK(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_dirty(f->c, id, true);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    expect_int(r, "version", 3);
    free(r);
    expect_file(path, original, sizeof original - 1);
    expect_dirty(f->c, id, false);
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);
    expect_dirty(f->c, id, true);

    /* A file whose first line end is LF is kept exactly, '\r' and all. */
    snprintf(path, sizeof path, "%s/mixed.txt", f->dir);
    const char mixed[] = "a\nb\r\nc";
    write_bytes(path, mixed, sizeof mixed - 1, 0600);
    char *m = open_doc(f->c, path, NULL);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", m);
    expect_str(r, "text", "b\r");
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":1},\"text\":\"!\"}", m);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", m);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "a\nb\r\nc!", 7);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    free(m);
    free(id);
}

static void test_save_as_and_failures(void **state)
{
    fx *f = *state;
    umask(022);
    char path[256], want[1024], p[512];
    char *id = open_doc(f->c, "memory://m.txt", "\"x\\ny\"");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/save", p,
                "{\"success\":false,\"version\":1,\"uri\":\"memory://m.txt\",\"error\":\"Document has no file: save it "
                "with a uri\"}");

    snprintf(path, sizeof path, "%s/out.py", f->dir);
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", id, path);
    snprintf(want, sizeof want, "{\"success\":true,\"version\":1,\"uri\":\"file://%s\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_file(path, "x\ny", 3);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    r = ok(f->c, "document/info", "%s", p);
    snprintf(want, sizeof want, "file://%s", path);
    expect_str(r, "uri", want);
    free(r);
    /* The document now has a file: a plain save works, and opening that
     * file finds this document. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1},\"text\":\"z\"}", id);
    r = ok(f->c, "document/save", "%s", p);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "x\nyz", 4);
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    expect_str(r, "documentId", id);
    free(r);

    char *other = open_doc(f->c, "memory://other.txt", "\"o\"");
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", other, path);
    snprintf(want, sizeof want, "Cannot save to file://%s: another open document has that uri", path);
    expect_bool(r, "success", false);
    expect_str(r, "error", want);
    free(r);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"memory://elsewhere\"}", other);
    expect_raw(r, "",
               "{\"success\":false,\"version\":1,\"uri\":\"memory://other.txt\",\"error\":\"Cannot save to "
               "memory://elsewhere: only file URIs can be saved to\"}");
    free(r);
    expect_call(f->c, "document/save", "{\"documentId\":\"nope\"}",
                "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    expect_message(fails(f->c, -32602, "document/save", "{\"documentId\":\"%s\",\"uri\":\"\"}", other),
                   "uri: must not be empty");

    /* A directory that cannot exist (its parent is a regular file; this
     * fails for root too): nothing changes on disk, the document stays dirty. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"!\"}", other);
    char blocker[256];
    snprintf(blocker, sizeof blocker, "%s/file.txt", f->dir);
    write_bytes(blocker, "keep", 4, 0644);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s/sub/a.txt\"}", other, blocker);
    snprintf(want, sizeof want,
             "{\"success\":false,\"version\":2,\"uri\":\"memory://other.txt\",\"error\":\"Failed to save %s/sub/a.txt: "
             "cannot create a file in its directory: Not a directory\"}",
             blocker);
    expect_raw(r, "", want);
    free(r);
    expect_dirty(f->c, other, true);
    expect_file(blocker, "keep", 4);

    /* A target that is a directory: the temporary file is written, the
     * rename fails, and the temporary file is gone again. */
    char adir[256];
    snprintf(adir, sizeof adir, "%s/adir", f->dir);
    assert_int_equal(mkdir(adir, 0755), 0);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", other, adir);
    snprintf(want, sizeof want, "Failed to save %s: cannot replace the file: Is a directory", adir);
    expect_bool(r, "success", false);
    expect_str(r, "error", want);
    free(r);
    assert_false(dir_has_temp_files(f->dir));
    assert_int_equal(stat(adir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    expect_dirty(f->c, other, true);
    free(other);
    free(id);
}

static void test_reload(void **state)
{
    fx *f = *state;
    char path[256], want[512];
    snprintf(path, sizeof path, "%s/r.txt", f->dir);
    write_bytes(path, "one\ntwo\n", 8, 0644);
    char *id = open_doc(f->c, path, NULL);
    write_bytes(path, "ONE\n", 4, 0644);
    char *r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"%s\",\"version\":2,\"changes\":[{\"range\":" RANGE(
                 0, 0, 2, 0) ",\"rangeLength\":8,\"text\":\"ONE\\n\"}]}",
             id, path);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "ONE\n");
    expect_dirty(f->c, id, false);
    /* A reload is an undoable step, not a wipe of the history. */
    r = ok(f->c, "document/canUndo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"canUndo\":true}");
    free(r);

    /* Unsaved changes are not thrown away unless asked. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"mine\"}", id);
    test_client_clear_notifications(f->c);
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":false,\"version\":3,\"error\":\"Document has unsaved changes\"}");
    free(r);
    expect_events(f->c, "#");
    expect_content(f->c, id, "ONE\nmine");
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\",\"force\":true}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":4}");
    free(r);
    expect_content(f->c, id, "ONE\n");

    /* The line ends are re-read too. */
    write_bytes(path, "x\r\ny\r\n", 6, 0644);
    OK(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_content(f->c, id, "x\ny\n");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":0},\"text\":\"z\"}", id);
    OK(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_file(path, "x\r\ny\r\nz", 7);

    unlink(path);
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want,
             "{\"success\":false,\"version\":6,\"error\":\"Failed to open file: %s: No such file or directory\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_content(f->c, id, "x\ny\nz");

    char *m = open_doc(f->c, "memory://mem.txt", "\"m\"");
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", m);
    expect_raw(r, "", "{\"success\":false,\"version\":1,\"error\":\"Document has no file to reload from\"}");
    free(r);
    expect_call(f->c, "document/reload", "{\"documentId\":\"nope\"}",
                "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    expect_message(fails(f->c, -32602, "document/reload", "{\"documentId\":\"%s\",\"force\":\"yes\"}", m),
                   "force: expected boolean, got string");
    free(m);
    free(id);
}

/* ----- large files ------------------------------------------------------------------------------------------- */

static void test_large_file_on_thread_pool(void **state)
{
    fx *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/big.txt", f->dir);
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    const int lines = 380000; /* about 20 MB */
    for (int i = 0; i < lines; i++)
        fprintf(out, "line %06d: the quick brown fox jumps over the lazy dog\n", i);
    fclose(out);

    char params[300];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t open_id = test_client_send(f->c, "document/open", params);
    int64_t ping_id = test_client_send(f->c, "ecp/ping", "{\"n\":1}");
    char *r;
    assert_int_equal(test_client_wait_response(f->c, ping_id, 30000, &r), 0);
    expect_raw(r, "", "{\"n\":1}");
    free(r);
    /* The ping came back while the file was still being read. */
    char want[128];
    snprintf(want, sizeof want, "#%lld", (long long)ping_id);
    assert_string_equal(test_client_event_log(f->c), want);
    assert_int_equal(test_client_wait_response(f->c, open_id, 30000, &r), 0);
    snprintf(want, sizeof want, "#%lld,document/didOpen,#%lld", (long long)ping_id, (long long)open_id);
    assert_string_equal(test_client_event_log(f->c), want);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", lines + 1);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":%d}", id, lines - 1);
    expect_str(r, "text", "line 379999: the quick brown fox jumps over the lazy dog");
    free(r);
    /* Edit near the end, save through the pool, and find it on disk. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":%d,\"column\":4},\"text\":\"!\"}", id,
       lines - 1);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    size_t len;
    char *disk = read_bytes(path, &len);
    const char *tail = "line! 379999: the quick brown fox jumps over the lazy dog\n";
    assert_true(len > strlen(tail));
    assert_string_equal(disk + len - strlen(tail), tail);
    free(disk);
    free(id);
}

static void test_large_crlf_seam(void **state)
{
    fx *f = *state;
    /* The file is read in 4 MiB chunks: put a CRLF's '\r' at the very end of
     * the first chunk and its '\n' at the start of the second. */
    const size_t first = (4u << 20) - 1;
    size_t size = first + 2 + 8 + (2u << 20) + 2;
    char *data = malloc(size);
    memset(data, 'a', first);
    memcpy(data + first, "\r\nsecond\r\n", 10);
    memset(data + first + 10, 'b', 2u << 20);
    memcpy(data + size - 2, "\r\n", 2);
    char path[256];
    snprintf(path, sizeof path, "%s/seam.txt", f->dir);
    write_bytes(path, data, size, 0644);
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", 4);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":0}", id);
    char *text = test_json_string(r, "text");
    assert_int_equal(strlen(text), first);
    assert_int_equal(strspn(text, "a"), first);
    free(text);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", id);
    expect_str(r, "text", "second");
    free(r);
    r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":0}}", id);
    expect_int(r, "offset", (int64_t)first + 1 + 7);
    free(r);
    /* Saving writes every CRLF back. */
    OK(f->c, "document/markClean", "{\"documentId\":\"%s\"}", id);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, data, size);
    free(data);
    free(id);
}

static void test_multibyte_across_pieces(void **state)
{
    fx *f = *state;
    /* 20,000 emoji on one line: the tree cuts its pieces by bytes, so reads
     * come back in chunks that split characters. */
    size_t n = 20000;
    char *json = malloc(n * 12 + 3), *utf8 = malloc(n * 4 + 1);
    char *p = json;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        memcpy(p, "\\ud83d\\ude00", 12);
        p += 12;
        memcpy(utf8 + i * 4, "\xF0\x9F\x98\x80", 4);
    }
    *p++ = '"';
    *p = '\0';
    utf8[n * 4] = '\0';
    char *id = open_doc(f->c, "memory://emoji-wall.txt", json);
    expect_content(f->c, id, utf8);
    char *r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":0}", id);
    expect_str(r, "text", utf8);
    free(r);
    OK(f->c, "document/selectAll", "{\"documentId\":\"%s\"}", id);
    r = ok(f->c, "document/selections", "{\"documentId\":\"%s\"}", id);
    expect_str(r, "selections[0]", utf8);
    free(r);
    /* Columns far along the line agree in every encoding. */
    r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":30000}}", id);
    expect_int(r, "offset", 30000);
    free(r);
    r = ok(f->c, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":39999}", id);
    expect_raw(r, "", "{\"position\":{\"line\":0,\"column\":39998}}");
    free(r);
    free(json);
    free(utf8);
    free(id);
}

static void write_big_file(const char *path, int lines)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    for (int i = 0; i < lines; i++)
        fprintf(out, "row %07d of a file that is read on the thread pool\n", i);
    fclose(out);
}

static void test_cancel_open(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/cancel.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t id = test_client_send(f->c, "document/open", params);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)id);
    test_client_notify(f->c, "$/cancelRequest", note);
    char *e = NULL;
    assert_int_equal(test_client_wait_response(f->c, id, 30000, &e), -32800);
    expect_str(e, "message", "Request cancelled");
    free(e);
    /* The read stops and nothing is opened, now or later. */
    test_server_run_for(f->s, 300);
    char *r = ok(f->c, "document/list", NULL);
    expect_raw(r, "", "{\"documents\":[]}");
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 0);
    /* Opening again works. */
    r = ok(f->c, "document/open", "%s", params);
    expect_int(r, "info.lineCount", 200001);
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 1);
}

static void test_disconnect_during_open(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/gone.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    test_client *c2 = test_client_connect(f->s);
    test_client_send(c2, "document/open", params);
    test_client_disconnect(c2);
    test_server_run_for(f->s, 300);
    char *r = ok(f->c, "document/list", NULL);
    expect_raw(r, "", "{\"documents\":[]}");
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 0);
}

static void test_concurrent_opens_share_one_read(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/twice.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t a = test_client_send(f->c, "document/open", params);
    int64_t b = test_client_send(f->c, "document/open", params);
    char *ra, *rb;
    assert_int_equal(test_client_wait_response(f->c, a, 30000, &ra), 0);
    assert_int_equal(test_client_wait_response(f->c, b, 30000, &rb), 0);
    char *ida = test_json_string(ra, "documentId"), *idb = test_json_string(rb, "documentId");
    assert_string_equal(ida, idb);
    char want[128];
    snprintf(want, sizeof want, "document/didOpen,#%lld,#%lld", (long long)a, (long long)b);
    assert_string_equal(test_client_event_log(f->c), want);
    /* Cancelling one of two waiters leaves the other its answer. */
    char other[256];
    snprintf(other, sizeof other, "%s/thrice.txt", f->dir);
    write_big_file(other, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", other);
    int64_t c = test_client_send(f->c, "document/open", params);
    int64_t d = test_client_send(f->c, "document/open", params);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)c);
    test_client_notify(f->c, "$/cancelRequest", note);
    char *rc, *rd;
    assert_int_equal(test_client_wait_response(f->c, c, 30000, &rc), -32800);
    assert_int_equal(test_client_wait_response(f->c, d, 30000, &rd), 0);
    expect_int(rd, "info.lineCount", 200001);
    free(rc);
    free(rd);
    free(ida);
    free(idb);
    free(ra);
    free(rb);
}

static void test_server_ends_while_reading(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/late.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    test_client_send(f->c, "document/open", params);
    /* teardown frees the server with the read in flight */
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_save_round_trip),
        T(test_save_as_and_failures),
        T(test_reload),
        T(test_large_file_on_thread_pool),
        T(test_large_crlf_seam),
        T(test_multibyte_across_pieces),
        T(test_cancel_open),
        T(test_disconnect_during_open),
        T(test_concurrent_opens_share_one_read),
        T(test_server_ends_while_reading),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
