/* What the document service keeps, through its C API: undo history bounded
 * in bytes (the oldest steps go first), whole-text replacements that free
 * the old text instead of growing the tree, saves queued behind each other
 * and still written when the service goes, and the sweep of the temporary
 * files of interrupted saves, which touches nothing else. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "document/interface.h"
#include "internal.h"

typedef struct fx {
    uv_loop_t loop;
    ecp_pool *pool;
    document_service *svc;
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->pool = ecp_pool_new(&f->loop, NULL);
    f->svc = document_service_new(f->pool, NULL);
    strcpy(f->dir, "/tmp/ecpd-doc-keep-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    document_service_free(f->svc);
    ecp_pool_free(f->pool);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

typedef struct opened {
    int status;
    char id[64];
} opened;

static void on_opened(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    opened *o = ctx;
    o->status = status;
    if (id)
        snprintf(o->id, sizeof o->id, "%s", id);
}

static void open_text(fx *f, const char *uri, const char *text, size_t len, char id[64])
{
    opened o = {-1, ""};
    document_open_options opt = {.uri = uri, .content = text, .content_len = len};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    assert_int_equal(o.status, 0);
    strcpy(id, o.id);
}

/* A text of len bytes, different for each n. */
static char *text_number(size_t len, int n)
{
    char *t = malloc(len);
    for (size_t i = 0; i < len; i++)
        t[i] = i % 80 == 79 ? '\n' : (char)('a' + (i * 7 + (size_t)n) % 26);
    return t;
}

static bool text_is(fx *f, const char *id, const char *want, size_t len)
{
    buf out = BUF_INIT;
    assert_int_equal(document_get_text(f->svc, id, NULL, ECP_ENCODING_UTF8, &out, NULL), 0);
    bool same = out.len == len && memcmp(out.data, want, len) == 0;
    buf_free(&out);
    return same;
}

/* ----- history in bytes ------------------------------------------------------------ */

static void test_history_is_bounded_in_bytes(void **state)
{
    fx *f = *state;
    assert_int_equal(document_service_undo_limit(f->svc), DOCUMENT_UNDO_MAX_BYTES);
    assert_int_equal(DOCUMENT_UNDO_MAX_BYTES, (size_t)256 << 20);
    /* A large document (8 MiB) under a limit that two of its whole-text
     * steps (each keeps the old text's tree, not a copy of either text: a
     * little over 8 MiB) fit into, not three. */
    size_t len = 8u << 20;
    size_t limit = 20u << 20;
    document_service_set_undo_limit(f->svc, limit);
    assert_int_equal(document_service_undo_limit(f->svc), limit);
    enum { EDITS = 12 };
    char *texts[EDITS + 1];
    texts[0] = text_number(len, 0);
    char id[64];
    open_text(f, "memory://large", texts[0], len, id);
    document *doc = document__find(f->svc, id, NULL);
    for (int i = 1; i <= EDITS; i++) {
        texts[i] = text_number(len, i);
        assert_int_equal(document_set_content(f->svc, id, 0, texts[i], len, NULL, NULL), 0);
        assert_true(doc->history.bytes <= limit);
        /* The text is one fresh tree, not every version behind an add buffer. */
        assert_true(piece_tree_piece_count(doc->tree) <= len / 1024);
    }
    /* The newest steps are kept, the oldest went first. */
    int undone = 0;
    while (document_undo(f->svc, id, 0, NULL, NULL) == 0) {
        undone++;
        assert_true(text_is(f, id, texts[EDITS - undone], len));
    }
    assert_int_equal(undone, 2);
    /* Redo still works, and the redo branch counts against the limit too. */
    assert_int_equal(document_redo(f->svc, id, 0, NULL, NULL), 0);
    assert_true(text_is(f, id, texts[EDITS - 1], len));
    assert_true(doc->history.bytes <= limit);

    /* Lowering the limit trims every document at once, oldest first; one
     * step larger than the limit is not kept at all. */
    document_service_set_undo_limit(f->svc, 9u << 20);
    assert_true(doc->history.bytes <= 9u << 20);
    bool can_undo, can_redo;
    assert_int_equal(document_history(f->svc, id, &can_undo, &can_redo, NULL), 0);
    assert_false(can_undo);
    document_service_set_undo_limit(f->svc, 1u << 20);
    assert_int_equal(document_set_content(f->svc, id, 0, texts[3], len, NULL, NULL), 0);
    assert_int_equal(doc->history.bytes, 0);
    assert_int_equal(document_history(f->svc, id, &can_undo, &can_redo, NULL), 0);
    assert_false(can_undo);
    assert_false(can_redo);
    /* The state the file had is out of reach: the document is dirty. */
    document_info info;
    assert_int_equal(document_get_info(f->svc, id, &info, NULL), 0);
    assert_true(info.is_dirty);
    /* Small edits keep their steps under a small limit. */
    for (int i = 0; i < 100; i++) {
        document_edit e = {{{0, 0}, {0, 0}}, "x\n", 2};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    }
    int small = 0;
    while (document_undo(f->svc, id, 0, NULL, NULL) == 0)
        small++;
    assert_int_equal(small, 100);
    assert_true(text_is(f, id, texts[3], len));
    for (int i = 0; i <= EDITS; i++)
        free(texts[i]);
}

/* Typing joins a step; its bytes grow with it. */
static void test_joined_steps_are_counted(void **state)
{
    fx *f = *state;
    char id[64];
    open_text(f, "memory://typing", "", 0, id);
    document *doc = document__find(f->svc, id, NULL);
    size_t before = doc->history.bytes;
    for (int i = 0; i < 50; i++)
        assert_int_equal(document_type(f->svc, id, 0, "a", 1, 0, NULL, NULL), 0);
    assert_int_equal(doc->history.count, 1); /* one quick burst of typing */
    assert_true(doc->history.bytes >= before + 50);
    assert_int_equal(doc->history.bytes, doc->history.steps[0].bytes);
    document_service_set_undo_limit(f->svc, doc->history.bytes - 1);
    assert_int_equal(doc->history.count, 0);
    assert_int_equal(doc->history.bytes, 0);
}

/* ----- saves in a line --------------------------------------------------------------- */

typedef struct saves {
    int order[8];
    int status[8];
    int count;
} saves;

typedef struct save_ctx {
    saves *log;
    int n;
} save_ctx;

static void on_saved(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri)
{
    save_ctx *s = ctx;
    s->log->status[s->n] = status;
    s->log->order[s->log->count++] = s->n;
}

static char *file_text(const char *path, size_t *len)
{
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    assert_int_equal(fread(data, 1, (size_t)n, in), (size_t)n);
    fclose(in);
    *len = (size_t)n;
    return data;
}

static void test_saves_are_queued(void **state)
{
    fx *f = *state;
    char path[128], uri[160];
    snprintf(path, sizeof path, "%s/queued.txt", f->dir);
    snprintf(uri, sizeof uri, "file://%s", path);
    size_t len = 2u << 20;
    char id[64];
    char *texts[5];
    for (int i = 0; i < 5; i++)
        texts[i] = text_number(len, i);
    open_text(f, "memory://queued", texts[0], len, id);
    saves log = {0};
    save_ctx ctx[5];
    for (int i = 0; i < 5; i++) {
        ctx[i] = (save_ctx){&log, i};
        assert_int_equal(document_set_content(f->svc, id, 0, texts[i], len, NULL, NULL), 0);
        /* Saved as the file while the first save has not made it the
         * document's yet: every one of them names the file. */
        assert_non_null(document_save(f->svc, id, uri, on_saved, &ctx[i]));
    }
    /* One save of the file writes at a time; the others wait their turn. */
    document *doc = document__find(f->svc, id, NULL);
    assert_int_equal(doc->saves_pending, 5);
    while (log.count < 5)
        uv_run(&f->loop, UV_RUN_ONCE);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(log.order[i], i);
        assert_int_equal(log.status[i], 0);
    }
    size_t got_len;
    char *got = file_text(path, &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, texts[4], len);
    free(got);
    assert_int_equal(doc->saves_pending, 0);

    /* Queued behind one that writes when the service goes: all still land,
     * in order, and every caller hears ECP_ECANCELED. */
    saves gone = {0};
    for (int i = 0; i < 3; i++) {
        ctx[i] = (save_ctx){&gone, i};
        assert_int_equal(document_set_content(f->svc, id, 0, texts[i], len, NULL, NULL), 0);
        assert_non_null(document_save(f->svc, id, NULL, on_saved, &ctx[i]));
    }
    document_service_free(f->svc);
    f->svc = NULL;
    assert_int_equal(gone.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gone.order[i], i);
        assert_int_equal(gone.status[i], ECP_ECANCELED);
    }
    got = file_text(path, &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, texts[2], len);
    free(got);
    for (int i = 0; i < 5; i++)
        free(texts[i]);
    f->svc = document_service_new(f->pool, NULL);
}

/* ----- the sweep ------------------------------------------------------------------------ */

static void touch(const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static bool present(const char *dir, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_sweep_takes_only_leftovers(void **state)
{
    fx *f = *state;
    char path[128], sub[128];
    snprintf(path, sizeof path, "%s/f.c", f->dir);
    touch(f->dir, "f.c");
    touch(f->dir, ".f.c.ecpd-000000000000");
    touch(f->dir, ".f.c.ecpd-abcdefabcdef");
    const char *keep[] = {".f.c.ecpd-00000000000",  ".f.c.ecpd-0000000000000", ".f.c.ecpd-00000000000g",
                          ".f.c.ecpd-ABCDEFABCDEF", ".f.c.ecpd-backup-000000000000", ".g.c.ecpd-000000000000",
                          ".f.c.ecpd-000000000000~", "f.c.ecpd-000000000000",  ".f.ecpd-000000000000"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        touch(f->dir, keep[i]);
    /* A directory or a symlink of that name is not a file we made. */
    snprintf(sub, sizeof sub, "%s/.f.c.ecpd-111111111111", f->dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    char target[160], link_path[160];
    snprintf(target, sizeof target, "%s/precious", f->dir);
    touch(f->dir, "precious");
    snprintf(link_path, sizeof link_path, "%s/.f.c.ecpd-222222222222", f->dir);
    assert_int_equal(symlink(target, link_path), 0);
    /* One a writer holds. */
    char held[160];
    snprintf(held, sizeof held, "%s/.f.c.ecpd-333333333333", f->dir);
    int fd = open(held, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(flock(fd, LOCK_EX), 0);

    assert_int_equal(document__sweep_temps(path), 2);
    assert_false(present(f->dir, ".f.c.ecpd-000000000000"));
    assert_false(present(f->dir, ".f.c.ecpd-abcdefabcdef"));
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        assert_true(present(f->dir, keep[i]));
    assert_true(present(f->dir, ".f.c.ecpd-111111111111"));
    assert_true(present(f->dir, ".f.c.ecpd-222222222222"));
    assert_true(present(f->dir, "precious"));
    assert_true(present(f->dir, ".f.c.ecpd-333333333333"));
    close(fd);
    assert_int_equal(document__sweep_temps(path), 1);
    assert_false(present(f->dir, ".f.c.ecpd-333333333333"));
    assert_int_equal(document__sweep_temps(path), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_history_is_bounded_in_bytes),
        T(test_joined_steps_are_counted),
        T(test_saves_are_queued),
        T(test_sweep_takes_only_leftovers),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
