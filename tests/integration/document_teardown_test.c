/* The server going away while the document service still works for clients:
 * reads of large files and saves in flight when the server is freed. Run
 * under AddressSanitizer this proves that nothing leaks (every request is
 * answered, every call released) and nothing calls back into freed memory;
 * in every build it proves that a save already asked for reaches the disk
 * whole and leaves no temporary file behind. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_client.h"

typedef struct fx {
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/ecpd-doc-teardown-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* About 5.4 MB: well above the size read on the loop thread. */
static void write_large(const char *path, char tag)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    for (int i = 0; i < 100000; i++)
        fprintf(out, "%c row %07d of a file that is read on the thread pool\n", tag, i);
    fclose(out);
}

static long file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

static char *open_file(test_client *c, const char *path)
{
    char params[300];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    char *r = NULL;
    assert_int_equal(test_client_request(c, "document/open", params, &r), 0);
    char *id = test_json_string(r, "documentId");
    assert_non_null(id);
    free(r);
    return id;
}

static void edit_first_line(test_client *c, const char *id)
{
    char params[300];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"edited\\n\"}", id);
    char *r = NULL;
    assert_int_equal(test_client_request(c, "document/insert", params, &r), 0);
    free(r);
}

static void send_doc(test_client *c, const char *method, const char *id, const char *extra)
{
    char params[400];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"%s}", id, extra);
    test_client_send(c, method, params);
}

static void send_open(test_client *c, const char *path)
{
    char params[300];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    test_client_send(c, "document/open", params);
}

static void expect_starts_with(const char *path, const char *want)
{
    char got[32] = {0};
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    assert_int_equal(fread(got, 1, strlen(want), in), strlen(want));
    fclose(in);
    assert_string_equal(got, want);
}

/* Only the files the test wrote: a save leaves no temporary file. */
static void expect_files(const char *dir, int want)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    assert_int_equal(n, want);
}

static void test_free_with_open_and_save_in_flight(void **state)
{
    fx *f = *state;
    char saved[128], read[128];
    snprintf(saved, sizeof saved, "%s/saved.txt", f->dir);
    snprintf(read, sizeof read, "%s/read.txt", f->dir);
    write_large(saved, 's');
    write_large(read, 'r');
    long before = file_size(saved);

    test_server *s = test_server_new(NULL);
    test_client *c = test_client_connect(s);
    char *id = open_file(c, saved);
    edit_first_line(c, id);
    send_doc(c, "document/save", id, "");
    send_open(c, read);
    free(id);
    test_server_free(s);

    /* The save was not dropped: the edit is on disk, whole. */
    expect_starts_with(saved, "edited\ns row 0000000");
    assert_int_equal(file_size(saved), before + 7);
    expect_files(f->dir, 2);
}

/* The same with more at once: a read two clients wait for, a reload, a save
 * under a new name, and a client that is still connected when the server
 * goes. */
static void test_free_with_everything_in_flight(void **state)
{
    fx *f = *state;
    char a[128], b[128], copy[128], shared[128], copy_uri[160];
    snprintf(a, sizeof a, "%s/a.txt", f->dir);
    snprintf(b, sizeof b, "%s/b.txt", f->dir);
    snprintf(copy, sizeof copy, "%s/copy.txt", f->dir);
    snprintf(shared, sizeof shared, "%s/shared.txt", f->dir);
    write_large(a, 'a');
    write_large(b, 'b');
    write_large(shared, 'x');
    long size_a = file_size(a);

    test_server *s = test_server_new(NULL);
    test_client *c1 = test_client_connect(s);
    test_client *c2 = test_client_connect(s);
    char *ida = open_file(c1, a);
    char *idb = open_file(c1, b);
    edit_first_line(c1, ida);
    snprintf(copy_uri, sizeof copy_uri, ",\"uri\":\"file://%s\"", copy);
    send_doc(c1, "document/save", ida, copy_uri);
    send_doc(c2, "document/reload", idb, ",\"force\":true");
    send_open(c1, shared);
    send_open(c2, shared);
    free(ida);
    free(idb);
    test_server_free(s);

    expect_starts_with(copy, "edited\na row 0000000");
    assert_int_equal(file_size(copy), size_a + 7);
    expect_starts_with(a, "a row 0000000");
    assert_int_equal(file_size(a), size_a);
    expect_files(f->dir, 4);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_free_with_open_and_save_in_flight),
        T(test_free_with_everything_in_flight),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
