/* The file namespace through the in-process client: every method's result shape, every
 * file error code with its data, and what is on disk afterwards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "test_client.h"

static test_server *srv;
static test_client *cl;
static char dir[64];

/* ----- helpers ------------------------------------------------------------------ */

static char *vcall(const char *method, int want, const char *fmt, va_list ap)
{
    char params[8192];
    vsnprintf(params, sizeof params, fmt, ap);
    char *out = NULL;
    int code = test_client_request(cl, method, params, &out);
    if (code != want)
        fail_msg("%s %s: wanted %d, got %d: %s", method, params, want, code, out ? out : "(nothing)");
    return out;
}

/* Calls method and asserts success; returns the result JSON (free it). */
static char *ok(const char *method, const char *fmt, ...);
static char *ok(const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = vcall(method, 0, fmt, ap);
    va_end(ap);
    return r;
}

/* Calls method and asserts the error code; returns the error JSON (free it). */
static char *fails(const char *method, int code, const char *fmt, ...);
static char *fails(const char *method, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = vcall(method, code, fmt, ap);
    va_end(ap);
    return r;
}

static void want_str(const char *json, const char *path, const char *want)
{
    char *s = test_json_string(json, path);
    if (!s || strcmp(s, want))
        fail_msg("%s: wanted \"%s\", got \"%s\" in %s", path, want, s ? s : "(absent)", json);
    free(s);
}

static void want_bool(const char *json, const char *path, bool want)
{
    bool b;
    if (!test_json_bool(json, path, &b) || b != want)
        fail_msg("%s: wanted %s in %s", path, want ? "true" : "false", json);
}

static int64_t get_int(const char *json, const char *path)
{
    int64_t v;
    if (!test_json_int(json, path, &v))
        fail_msg("%s: no integer in %s", path, json);
    return v;
}

/* A file error: code name and data.uri. */
static void want_file_error(char *err, const char *code_name, const char *uri)
{
    want_str(err, "data.code", code_name);
    if (uri)
        want_str(err, "data.uri", uri);
    free(err);
}

static void put(const char *rel, const char *content)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static char *slurp(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    char *data = calloc(1, 1 << 16);
    size_t n = fread(data, 1, (1 << 16) - 1, f);
    data[n] = '\0';
    fclose(f);
    return data;
}

static bool on_disk(const char *rel)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return lstat(p, &st) == 0;
}

static void sub(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static int count_entries(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static int setup(void **state)
{
    strcpy(dir, "/tmp/ecpd-file-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    srv = test_server_new(NULL);
    cl = test_client_connect(srv);
    return 0;
}

static int teardown(void **state)
{
    test_server_free(srv);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chattr -i -R %s 2>/dev/null; rm -rf %s", dir, dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ----- read ------------------------------------------------------------------------- */

static void test_read(void **state)
{
    put("hello.txt", "h\xc3\xa9llo\nworld\n");
    char *r = ok("file/read", "{\"uri\":\"file://%s/hello.txt\"}", dir);
    want_str(r, "content", "h\xc3\xa9llo\nworld\n");
    want_str(r, "encoding", "utf-8");
    assert_int_equal(get_int(r, "size"), 13);
    char *mt = test_json_raw(r, "modTime");
    assert_true(atof(mt) > 1.6e12); /* ms since the epoch */
    free(mt);
    free(r);

    /* a plain path works as well as a URI */
    r = ok("file/read", "{\"uri\":\"%s/hello.txt\"}", dir);
    assert_int_equal(get_int(r, "size"), 13);
    free(r);

    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/missing.txt", dir);
    want_file_error(fails("file/read", -32100, "{\"uri\":\"%s\"}", uri), "FILE_NOT_FOUND", uri);

    sub("adir");
    snprintf(uri, sizeof uri, "file://%s/adir", dir);
    want_file_error(fails("file/read", -32102, "{\"uri\":\"%s\"}", uri), "IS_DIRECTORY", uri);

    /* a FIFO would block a reader forever: refused, not waited on */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    char *e = fails("file/read", -32109, "{\"uri\":\"%s\"}", fifo);
    char *msg = test_json_string(e, "message");
    assert_non_null(strstr(msg, "Not a regular file"));
    free(msg);
    want_file_error(e, "IO_ERROR", fifo);

    /* a path through a file */
    snprintf(uri, sizeof uri, "%s/hello.txt/x", dir);
    want_file_error(fails("file/read", -32103, "{\"uri\":\"%s\"}", uri), "NOT_DIRECTORY", uri);
}

static void test_odd_names(void **state)
{
    /* space, '#', '%', non-ASCII, and a ".." on the way */
    put("a b#c%d \xc3\xa9.txt", "odd");
    char *r = ok("file/read", "{\"uri\":\"file://%s/sub/../a%%20b%%23c%%25d%%20%%C3%%A9.txt\"}", dir);
    want_str(r, "content", "odd");
    free(r);
    /* the unencoded form is accepted too */
    r = ok("file/read", "{\"uri\":\"file://%s/a b#c%%d \xc3\xa9.txt\"}", dir);
    want_str(r, "content", "odd");
    free(r);
    /* and listed with an encoded URI that reads back */
    r = ok("file/readDir", "{\"uri\":\"%s\"}", dir);
    char want[512];
    snprintf(want, sizeof want, "file://%s/a%%20b%%23c%%25d%%20%%C3%%A9.txt", dir);
    want_str(r, "entries[0].uri", want);
    want_str(r, "entries[0].name", "a b#c%d \xc3\xa9.txt");
    free(r);
    r = ok("file/stat", "{\"uri\":\"%s\"}", want);
    want_bool(r, "exists", true);
    want_str(r, "uri", want);
    free(r);
}

/* ----- write ---------------------------------------------------------------------------- */

static void test_write(void **state)
{
    char *r = ok("file/write", "{\"uri\":\"file://%s/new.txt\",\"content\":\"one\\ntwo \xe2\x82\xac\\n\"}", dir);
    want_bool(r, "success", true);
    assert_int_equal(get_int(r, "bytesWritten"), 12);
    char *mt = test_json_raw(r, "modTime");
    assert_true(atof(mt) > 1.6e12);
    free(mt);
    free(r);
    char *c = slurp("new.txt");
    assert_string_equal(c, "one\ntwo \xe2\x82\xac\n");
    free(c);

    /* overwriting keeps the mode and leaves no temporary file behind */
    char p[512];
    snprintf(p, sizeof p, "%s/new.txt", dir);
    assert_int_equal(chmod(p, 0640), 0);
    r = ok("file/write", "{\"uri\":\"%s\",\"content\":\"replaced\"}", p);
    free(r);
    c = slurp("new.txt");
    assert_string_equal(c, "replaced");
    free(c);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(count_entries("."), 1);

    /* overwrite:false refuses and changes nothing */
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/new.txt", dir);
    want_file_error(fails("file/write", -32104, "{\"uri\":\"%s\",\"content\":\"x\",\"overwrite\":false}", uri),
                      "ALREADY_EXISTS", uri);
    c = slurp("new.txt");
    assert_string_equal(c, "replaced");
    free(c);
    r = ok("file/write", "{\"uri\":\"file://%s/fresh.txt\",\"content\":\"f\",\"overwrite\":false}", dir);
    free(r);
    assert_true(on_disk("fresh.txt"));

    /* missing parents: an error unless createParents */
    snprintf(uri, sizeof uri, "file://%s/x/y/z.txt", dir);
    want_file_error(fails("file/write", -32100, "{\"uri\":\"%s\",\"content\":\"z\"}", uri), "FILE_NOT_FOUND", uri);
    assert_false(on_disk("x"));
    r = ok("file/write", "{\"uri\":\"%s\",\"content\":\"z\",\"createParents\":true}", uri);
    free(r);
    c = slurp("x/y/z.txt");
    assert_string_equal(c, "z");
    free(c);

    /* a directory is not a file */
    snprintf(uri, sizeof uri, "file://%s/x", dir);
    want_file_error(fails("file/write", -32102, "{\"uri\":\"%s\",\"content\":\"z\"}", uri), "IS_DIRECTORY", uri);

    /* through a symlink: the target changes, the link stays a link */
    char link[512];
    snprintf(link, sizeof link, "%s/link.txt", dir);
    assert_int_equal(symlink("fresh.txt", link), 0);
    r = ok("file/write", "{\"uri\":\"%s\",\"content\":\"via link\"}", link);
    free(r);
    c = slurp("fresh.txt");
    assert_string_equal(c, "via link");
    free(c);
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    /* an empty file is a file */
    r = ok("file/write", "{\"uri\":\"%s/empty\",\"content\":\"\"}", dir);
    assert_int_equal(get_int(r, "bytesWritten"), 0);
    free(r);
    r = ok("file/read", "{\"uri\":\"%s/empty\"}", dir);
    want_str(r, "content", "");
    free(r);

    /* bad params */
    char *e = fails("file/write", -32602, "{\"uri\":\"%s/q\",\"content\":\"x\",\"encoding\":\"latin1\"}", dir);
    char *msg = test_json_string(e, "message");
    assert_non_null(strstr(msg, "encoding"));
    free(msg);
    free(e);
    e = fails("file/write", -32602, "{\"uri\":\"%s/q\"}", dir);
    msg = test_json_string(e, "message");
    assert_non_null(strstr(msg, "content"));
    free(msg);
    free(e);
}

/* ----- stat, exists -------------------------------------------------------------------- */

static void test_stat_exists(void **state)
{
    put("f.txt", "12345");
    sub("d");
    char p[512];
    snprintf(p, sizeof p, "%s/l", dir);
    assert_int_equal(symlink("f.txt", p), 0);

    char *r = ok("file/stat", "{\"uri\":\"%s/f.txt\"}", dir);
    want_bool(r, "exists", true);
    want_bool(r, "isFile", true);
    want_bool(r, "isDirectory", false);
    want_bool(r, "isSymlink", false);
    assert_int_equal(get_int(r, "size"), 5);
    assert_true(test_json_has(r, "modTime") && test_json_has(r, "createTime"));
    char want[512];
    snprintf(want, sizeof want, "file://%s/f.txt", dir);
    want_str(r, "uri", want);
    free(r);

    r = ok("file/stat", "{\"uri\":\"%s/d\"}", dir);
    want_bool(r, "isDirectory", true);
    want_bool(r, "isFile", false);
    free(r);

    r = ok("file/stat", "{\"uri\":\"%s/l\"}", dir);
    want_bool(r, "isSymlink", true);
    want_bool(r, "isFile", true);
    assert_int_equal(get_int(r, "size"), 5);
    free(r);

    /* missing: not an error */
    r = ok("file/stat", "{\"uri\":\"%s/nothing\"}", dir);
    want_bool(r, "exists", false);
    want_bool(r, "isFile", false);
    want_bool(r, "isDirectory", false);
    assert_int_equal(get_int(r, "size"), 0);
    assert_int_equal(get_int(r, "modTime"), 0);
    free(r);

    r = ok("file/exists", "{\"uri\":\"%s/f.txt\"}", dir);
    assert_string_equal(r, "{\"exists\":true}");
    free(r);
    r = ok("file/exists", "{\"uri\":\"%s/nothing\"}", dir);
    assert_string_equal(r, "{\"exists\":false}");
    free(r);
}

/* ----- delete, rename, copy ------------------------------------------------------------ */

static void test_delete(void **state)
{
    put("gone.txt", "x");
    char *r = ok("file/delete", "{\"uri\":\"%s/gone.txt\"}", dir);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    assert_false(on_disk("gone.txt"));

    char uri[512];
    snprintf(uri, sizeof uri, "%s/gone.txt", dir);
    want_file_error(fails("file/delete", -32100, "{\"uri\":\"%s\"}", uri), "FILE_NOT_FOUND", uri);

    sub("keep");
    snprintf(uri, sizeof uri, "%s/keep", dir);
    char *e = fails("file/delete", -32102, "{\"uri\":\"%s\"}", uri);
    char *msg = test_json_string(e, "message");
    assert_non_null(strstr(msg, "deleteDir"));
    free(msg);
    want_file_error(e, "IS_DIRECTORY", uri);
    assert_true(on_disk("keep"));
}

static void test_rename(void **state)
{
    put("a.txt", "A");
    put("b.txt", "B");
    char *r = ok("file/rename", "{\"oldUri\":\"%s/a.txt\",\"newUri\":\"%s/c.txt\"}", dir, dir);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    assert_false(on_disk("a.txt"));
    char *c = slurp("c.txt");
    assert_string_equal(c, "A");
    free(c);

    /* onto an existing file: replaced */
    r = ok("file/rename", "{\"oldUri\":\"file://%s/c.txt\",\"newUri\":\"file://%s/b.txt\"}", dir, dir);
    free(r);
    c = slurp("b.txt");
    assert_string_equal(c, "A");
    free(c);

    char old[512];
    snprintf(old, sizeof old, "file://%s/none.txt", dir);
    want_file_error(fails("file/rename", -32100, "{\"oldUri\":\"%s\",\"newUri\":\"%s/z\"}", old, dir),
                      "FILE_NOT_FOUND", old);

    /* across schemes, and a scheme nobody serves */
    want_file_error(fails("file/rename", -32106, "{\"oldUri\":\"%s/b.txt\",\"newUri\":\"memory://x/b.txt\"}", dir),
                      "INVALID_URI", "memory://x/b.txt");
    want_file_error(fails("file/rename", -32107, "{\"oldUri\":\"memory://x/a\",\"newUri\":\"memory://x/b\"}"),
                      "NO_PROVIDER", "memory://x/a");
    /* a directory onto a non-empty directory */
    sub("d1");
    sub("d2");
    put("d2/inside", "i");
    char uri[512];
    snprintf(uri, sizeof uri, "%s/d2", dir);
    want_file_error(fails("file/rename", -32105, "{\"oldUri\":\"%s/d1\",\"newUri\":\"%s\"}", dir, uri), "NOT_EMPTY",
                      uri);
}

static void test_copy(void **state)
{
    put("src.txt", "copy me");
    char p[512];
    snprintf(p, sizeof p, "%s/src.txt", dir);
    chmod(p, 0751);
    char *r = ok("file/copy", "{\"sourceUri\":\"%s/src.txt\",\"targetUri\":\"%s/dst.txt\"}", dir, dir);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    char *c = slurp("dst.txt");
    assert_string_equal(c, "copy me");
    free(c);
    struct stat st;
    snprintf(p, sizeof p, "%s/dst.txt", dir);
    stat(p, &st);
    assert_int_equal(st.st_mode & 07777, 0751);
    assert_true(on_disk("src.txt"));

    /* a directory, recursively, with its symlinks as symlinks */
    sub("tree");
    sub("tree/inner");
    put("tree/inner/f", "deep");
    snprintf(p, sizeof p, "%s/tree/ln", dir);
    assert_int_equal(symlink("inner/f", p), 0);
    r = ok("file/copy", "{\"sourceUri\":\"%s/tree\",\"targetUri\":\"%s/tree2\"}", dir, dir);
    free(r);
    c = slurp("tree2/inner/f");
    assert_string_equal(c, "deep");
    free(c);
    snprintf(p, sizeof p, "%s/tree2/ln", dir);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    /* into itself: refused, nothing made */
    char *e = fails("file/copy", -32602, "{\"sourceUri\":\"%s/tree\",\"targetUri\":\"%s/tree/inner/again\"}", dir, dir);
    free(e);
    assert_false(on_disk("tree/inner/again"));

    char src[512];
    snprintf(src, sizeof src, "%s/nope", dir);
    want_file_error(fails("file/copy", -32100, "{\"sourceUri\":\"%s\",\"targetUri\":\"%s/x\"}", src, dir),
                      "FILE_NOT_FOUND", src);
    char dst[512];
    snprintf(dst, sizeof dst, "%s/tree2", dir);
    want_file_error(fails("file/copy", -32104, "{\"sourceUri\":\"%s/tree\",\"targetUri\":\"%s\"}", dir, dst),
                      "ALREADY_EXISTS", dst);
}

/* What is not a regular file (a FIFO, a device node) is never replaced by a
 * regular one: write, copy and rename onto it are refused alike, and it stays
 * what it was. A copy from a FIFO is refused at once, not waited on. */
static void want_refused_special(const char *method, const char *params, const char *target, mode_t kind)
{
    char *e = fails(method, -32109, "%s", params);
    char *msg = test_json_string(e, "message");
    if (!msg || !strstr(msg, "Not a regular file"))
        fail_msg("%s %s: %s", method, params, e);
    free(msg);
    want_file_error(e, "IO_ERROR", NULL);
    struct stat st;
    assert_int_equal(lstat(target, &st), 0);
    assert_int_equal(st.st_mode & S_IFMT, kind);
}

static void test_special_files_are_not_replaced(void **state)
{
    put("src.txt", "data");
    char fifo[512], node[512], params[2048];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    /* A device node of our own (/dev/null's numbers): replacing the real
     * one would break the machine if the refusal failed. */
    snprintf(node, sizeof node, "%s/null", dir);
    bool have_node = mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0;
    struct {
        const char *path;
        mode_t kind;
    } targets[] = {{fifo, S_IFIFO}, {node, S_IFCHR}};
    for (size_t i = 0; i < (have_node ? 2u : 1u); i++) {
        snprintf(params, sizeof params, "{\"uri\":\"%s\",\"content\":\"x\"}", targets[i].path);
        want_refused_special("file/write", params, targets[i].path, targets[i].kind);
        snprintf(params, sizeof params, "{\"sourceUri\":\"%s/src.txt\",\"targetUri\":\"%s\"}", dir, targets[i].path);
        want_refused_special("file/copy", params, targets[i].path, targets[i].kind);
        snprintf(params, sizeof params, "{\"oldUri\":\"%s/src.txt\",\"newUri\":\"%s\"}", dir, targets[i].path);
        want_refused_special("file/rename", params, targets[i].path, targets[i].kind);
        assert_true(on_disk("src.txt"));
    }
    /* from a FIFO nobody writes to: refused, and the server answers */
    snprintf(params, sizeof params, "{\"sourceUri\":\"%s\",\"targetUri\":\"%s/out.txt\"}", fifo, dir);
    want_refused_special("file/copy", params, fifo, S_IFIFO);
    assert_false(on_disk("out.txt"));
    char *r = ok("file/stat", "{\"uri\":\"%s/src.txt\"}", dir);
    want_bool(r, "exists", true);
    free(r);
}

/* ----- directories --------------------------------------------------------------------- */

static void test_read_dir(void **state)
{
    put("beta.txt", "bb");
    put("Alpha.txt", "a");
    put("alpha.txt", "a");
    sub("zdir");
    sub("Adir");
    char p[512];
    snprintf(p, sizeof p, "%s/link", dir);
    assert_int_equal(symlink("beta.txt", p), 0);

    char *r = ok("file/readDir", "{\"uri\":\"file://%s\"}", dir);
    assert_int_equal(test_json_length(r, "entries"), 6);
    /* directories first, then case-insensitively (lower case first on ties) */
    want_str(r, "entries[0].name", "Adir");
    want_str(r, "entries[1].name", "zdir");
    want_str(r, "entries[2].name", "alpha.txt");
    want_str(r, "entries[3].name", "Alpha.txt");
    want_str(r, "entries[4].name", "beta.txt");
    want_str(r, "entries[5].name", "link");
    want_str(r, "entries[0].type", "directory");
    want_str(r, "entries[4].type", "file");
    want_str(r, "entries[5].type", "symlink");
    assert_int_equal(get_int(r, "entries[4].size"), 2);
    assert_true(test_json_has(r, "entries[4].modTime"));
    /* size and modTime only for files */
    assert_false(test_json_has(r, "entries[0].size"));
    assert_false(test_json_has(r, "entries[5].modTime"));
    char want[512];
    snprintf(want, sizeof want, "file://%s/beta.txt", dir);
    want_str(r, "entries[4].uri", want);
    free(r);

    char uri[512];
    snprintf(uri, sizeof uri, "%s/none", dir);
    want_file_error(fails("file/readDir", -32100, "{\"uri\":\"%s\"}", uri), "FILE_NOT_FOUND", uri);
    snprintf(uri, sizeof uri, "%s/beta.txt", dir);
    want_file_error(fails("file/readDir", -32103, "{\"uri\":\"%s\"}", uri), "NOT_DIRECTORY", uri);
}

static void test_create_delete_dir(void **state)
{
    char *r = ok("file/createDir", "{\"uri\":\"%s/made\"}", dir);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    assert_true(on_disk("made"));

    char uri[512];
    snprintf(uri, sizeof uri, "%s/made", dir);
    want_file_error(fails("file/createDir", -32104, "{\"uri\":\"%s\"}", uri), "ALREADY_EXISTS", uri);
    r = ok("file/createDir", "{\"uri\":\"%s\",\"recursive\":true}", uri);
    free(r);
    snprintf(uri, sizeof uri, "%s/p/q/r", dir);
    want_file_error(fails("file/createDir", -32100, "{\"uri\":\"%s\"}", uri), "FILE_NOT_FOUND", uri);
    r = ok("file/createDir", "{\"uri\":\"%s\",\"recursive\":true}", uri);
    free(r);
    assert_true(on_disk("p/q/r"));

    /* deleteDir */
    snprintf(uri, sizeof uri, "%s/none", dir);
    want_file_error(fails("file/deleteDir", -32100, "{\"uri\":\"%s\"}", uri), "FILE_NOT_FOUND", uri);
    put("plain", "x");
    snprintf(uri, sizeof uri, "%s/plain", dir);
    want_file_error(fails("file/deleteDir", -32103, "{\"uri\":\"%s\"}", uri), "NOT_DIRECTORY", uri);
    snprintf(uri, sizeof uri, "%s/p", dir);
    want_file_error(fails("file/deleteDir", -32105, "{\"uri\":\"%s\"}", uri), "NOT_EMPTY", uri);
    assert_true(on_disk("p/q/r"));

    /* recursive: everything below goes, a symlink's target outside stays */
    put("outside.txt", "stay");
    char p[512];
    snprintf(p, sizeof p, "%s/p/q/to-outside", dir);
    assert_int_equal(symlink("../../outside.txt", p), 0);
    snprintf(p, sizeof p, "%s/p/dirlink", dir);
    assert_int_equal(symlink("..", p), 0);
    r = ok("file/deleteDir", "{\"uri\":\"%s\",\"recursive\":true}", uri);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    assert_false(on_disk("p"));
    char *c = slurp("outside.txt");
    assert_string_equal(c, "stay");
    free(c);
    r = ok("file/deleteDir", "{\"uri\":\"%s/made\"}", dir);
    free(r);
    assert_false(on_disk("made"));
}

/* ----- search, glob --------------------------------------------------------------------- */

static void test_search(void **state)
{
    sub("src");
    sub("src/deep");
    sub("node_modules");
    sub(".git");
    put("src/document.c", "");
    put("src/deep/my_document.h", "");
    put("src/d_o_c.txt", "");
    put("src/other.c", "");
    put("node_modules/document.js", "");
    put(".git/document", "");

    char *r = ok("file/search", "{\"pattern\":\"doc\",\"includePatterns\":[\"file://%s\"]}", dir);
    assert_int_equal(test_json_length(r, "results"), 3);
    want_str(r, "results[0].name", "document.c");
    assert_int_equal(get_int(r, "results[0].score"), 100);
    assert_int_equal(get_int(r, "results[0].matches[0].start"), 0);
    assert_int_equal(get_int(r, "results[0].matches[0].end"), 3);
    char want[512];
    snprintf(want, sizeof want, "file://%s/src/document.c", dir);
    want_str(r, "results[0].uri", want);
    want_str(r, "results[1].name", "my_document.h");
    assert_int_equal(get_int(r, "results[1].score"), 50);
    assert_int_equal(get_int(r, "results[1].matches[0].start"), 3);
    want_str(r, "results[2].name", "d_o_c.txt");
    assert_int_equal(get_int(r, "results[2].score"), 25);
    assert_int_equal(test_json_length(r, "results[2].matches"), 3);
    free(r);

    r = ok("file/search", "{\"pattern\":\"doc\",\"maxResults\":1,\"includePatterns\":[\"%s\"]}", dir);
    assert_int_equal(test_json_length(r, "results"), 1);
    want_str(r, "results[0].name", "document.c");
    free(r);

    /* excludes are substrings of the path */
    r = ok("file/search", "{\"pattern\":\"doc\",\"includePatterns\":[\"%s\"],\"excludePatterns\":[\"deep\"]}", dir);
    assert_int_equal(test_json_length(r, "results"), 2);
    free(r);

    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/none", dir);
    want_file_error(fails("file/search", -32100, "{\"pattern\":\"x\",\"includePatterns\":[\"%s\"]}", uri),
                      "FILE_NOT_FOUND", uri);
    free(fails("file/search", -32602, "{\"includePatterns\":[\"%s\"]}", dir));
}

static void test_glob(void **state)
{
    sub("src");
    sub("src/a");
    sub("lib");
    sub(".hidden");
    put("src/main.c", "");
    put("src/util.h", "");
    put("src/a/deep.c", "");
    put("src/a/x1.txt", "");
    put("src/a/y1.txt", "");
    put("lib/lib.c", "");
    put(".hidden/h.c", "");
    put("top.c", "");

    char *r = ok("file/glob", "{\"pattern\":\"**/*.c\",\"baseUri\":\"file://%s\"}", dir);
    assert_int_equal(test_json_length(r, "uris"), 4);
    char want[512];
    snprintf(want, sizeof want, "file://%s/lib/lib.c", dir);
    want_str(r, "uris[0]", want);
    snprintf(want, sizeof want, "file://%s/src/a/deep.c", dir);
    want_str(r, "uris[1]", want);
    snprintf(want, sizeof want, "file://%s/top.c", dir);
    want_str(r, "uris[3]", want);
    free(r);

    r = ok("file/glob", "{\"pattern\":\"src/*.{c,h}\",\"baseUri\":\"%s\"}", dir);
    assert_int_equal(test_json_length(r, "uris"), 2);
    free(r);
    r = ok("file/glob", "{\"pattern\":\"src/a/[!x]?.txt\",\"baseUri\":\"%s\"}", dir);
    assert_int_equal(test_json_length(r, "uris"), 1);
    snprintf(want, sizeof want, "file://%s/src/a/y1.txt", dir);
    want_str(r, "uris[0]", want);
    free(r);
    r = ok("file/glob", "{\"pattern\":\"**\",\"baseUri\":\"%s\",\"includeDirectories\":true,\"maxResults\":3}", dir);
    assert_int_equal(test_json_length(r, "uris"), 3);
    snprintf(want, sizeof want, "file://%s/lib", dir);
    want_str(r, "uris[0]", want);
    free(r);
    r = ok("file/glob", "{\"pattern\":\"**/*.c\",\"baseUri\":\"%s\",\"excludePatterns\":[\"src\"]}", dir);
    assert_int_equal(test_json_length(r, "uris"), 2);
    free(r);
    /* an absolute pattern ignores the base */
    r = ok("file/glob", "{\"pattern\":\"%s/src/*.c\",\"baseUri\":\"/nonexistent\"}", dir);
    assert_int_equal(test_json_length(r, "uris"), 1);
    free(r);

    /* symlinked directories: not followed unless asked, and a loop ends */
    char p[512];
    snprintf(p, sizeof p, "%s/src/a/loop", dir);
    assert_int_equal(symlink("..", p), 0);
    r = ok("file/glob", "{\"pattern\":\"**/*.c\",\"baseUri\":\"%s/src\"}", dir);
    assert_int_equal(test_json_length(r, "uris"), 2);
    free(r);
    r = ok("file/glob", "{\"pattern\":\"**/*.c\",\"baseUri\":\"%s/src\",\"followSymlinks\":true}", dir);
    assert_int_equal(test_json_length(r, "uris"), 2);
    free(r);

    char *e = fails("file/glob", -32602, "{\"pattern\":\"src/[ab\",\"baseUri\":\"%s\"}", dir);
    want_str(e, "message", "pattern: unclosed '[' at offset 4");
    free(e);
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/top.c", dir);
    e = fails("file/glob", -32103, "{\"pattern\":\"*\",\"baseUri\":\"%s\"}", uri);
    want_str(e, "data.code", "NOT_DIRECTORY");
    free(e);
}

/* ----- URI helpers -------------------------------------------------------------------------- */

static void test_uri_helpers(void **state)
{
    char *r = ok("file/pathToUri", "{\"path\":\"/tmp/a b/#x%%/\xc3\xa9\"}");
    assert_string_equal(r, "{\"uri\":\"file:///tmp/a%20b/%23x%25/%C3%A9\"}");
    free(r);
    r = ok("file/pathToUri", "{\"path\":\"/tmp/x/../y/./z\"}");
    assert_string_equal(r, "{\"uri\":\"file:///tmp/y/z\"}");
    free(r);
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    r = ok("file/pathToUri", "{\"path\":\"rel.txt\"}");
    char *uri = test_json_string(r, "uri");
    assert_true(!strncmp(uri, "file://", 7));
    assert_true(strstr(uri, "rel.txt") != NULL);
    free(uri);
    free(r);

    r = ok("file/uriToPath", "{\"uri\":\"file:///tmp/a%%20b/%%C3%%A9\"}");
    assert_string_equal(r, "{\"path\":\"/tmp/a b/\xc3\xa9\"}");
    free(r);
    r = ok("file/uriToPath", "{\"uri\":\"https://example.com/x\"}");
    assert_string_equal(r, "{\"path\":null}");
    free(r);
    want_file_error(fails("file/uriToPath", -32106, "{\"uri\":\"relative/path\"}"), "INVALID_URI", "relative/path");

    r = ok("file/getParent", "{\"uri\":\"file:///tmp/a%%20b/c.txt\"}");
    assert_string_equal(r, "{\"parent\":\"file:///tmp/a%20b\"}");
    free(r);
    r = ok("file/getParent", "{\"uri\":\"file:///\"}");
    assert_string_equal(r, "{\"parent\":\"file:///\"}");
    free(r);
    r = ok("file/getBasename", "{\"uri\":\"file:///tmp/a%%20b/c%%23.txt\"}");
    assert_string_equal(r, "{\"basename\":\"c#.txt\"}");
    free(r);
    r = ok("file/join", "{\"baseUri\":\"file:///tmp/base\",\"paths\":[\"x\",\"../y\",\"z w.txt\"]}");
    assert_string_equal(r, "{\"uri\":\"file:///tmp/base/y/z%20w.txt\"}");
    free(r);
    char *e = fails("file/join", -32602, "{\"baseUri\":\"file:///tmp\",\"paths\":[\"ok\",3]}");
    want_str(e, "message", "paths[1]: must be a string");
    free(e);
    free(fails("file/join", -32602, "{\"baseUri\":\"file:///tmp\"}"));
}

static void test_bad_uris(void **state)
{
    want_file_error(fails("file/read", -32106, "{\"uri\":\"relative/x.txt\"}"), "INVALID_URI", "relative/x.txt");
    want_file_error(fails("file/stat", -32107, "{\"uri\":\"http://example.com/x\"}"), "NO_PROVIDER",
                      "http://example.com/x");
    want_file_error(fails("file/read", -32106, "{\"uri\":\"file://otherhost/etc/passwd\"}"), "INVALID_URI",
                      "file://otherhost/etc/passwd");
    char *e = fails("file/read", -32602, "{}");
    want_str(e, "message", "uri: required string");
    free(e);
    e = fails("file/read", -32602, "{\"uri\":42}");
    free(e);
}

/* Root ignores mode bits, so permission denied is made with the immutable
 * flag, which stops root too; where it cannot be set, mode bits are used when
 * not root, or the case is skipped. */
static void test_access_denied(void **state)
{
    put("locked.txt", "locked");
    char p[512];
    snprintf(p, sizeof p, "%s/locked.txt", dir);
    int fd = open(p, O_RDONLY);
    int flags = 0;
    bool immutable = false;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
        flags |= FS_IMMUTABLE_FL;
        immutable = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (fd >= 0)
        close(fd);
    if (!immutable) {
        if (geteuid() == 0) {
            fprintf(stderr, "test_access_denied: skipped: running as root without CAP_LINUX_IMMUTABLE, so no "
                            "permission check can fail here\n");
            skip();
        }
        chmod(dir, 0500);
    }
    want_file_error(fails("file/delete", -32101, "{\"uri\":\"%s\"}", p), "ACCESS_DENIED", p);
    want_file_error(fails("file/write", -32101, "{\"uri\":\"%s\",\"content\":\"x\"}", p), "ACCESS_DENIED", p);
    char *c = slurp("locked.txt");
    assert_string_equal(c, "locked");
    free(c);
    if (immutable) {
        fd = open(p, O_RDONLY);
        flags &= ~FS_IMMUTABLE_FL;
        ioctl(fd, FS_IOC_SETFLAGS, &flags);
        close(fd);
    } else {
        chmod(dir, 0700);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_odd_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stat_exists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_special_files_are_not_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_delete_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_search, setup, teardown),
        cmocka_unit_test_setup_teardown(test_glob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uri_helpers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_uris, setup, teardown),
        cmocka_unit_test_setup_teardown(test_access_denied, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
