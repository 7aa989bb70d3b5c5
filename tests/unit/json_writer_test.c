/* Unit tests of the JSON writer's shared bytes (json_writer.h): big values
 * spliced rather than copied, bytes kept alive while a write is pending,
 * optional members; and of reading and writing whole file descriptors
 * (buf.h). The reader and the writer's values are in json_test.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "json.h"
#include "json_writer.h"
#include "shared.h"

/* A big value is spliced, not copied, when the writer allows it: the
 * output is the same text, and the splice keeps its bytes alive after the
 * one who made them has let go. A small one, or a writer that does not
 * allow splices, copies as jw_raw does. */
static void test_writer_splices(void **state)
{
    (void)state;
    size_t big = JW_SPLICE_MIN + 3;
    char *text = xmalloc(big + 1);
    text[0] = '"';
    memset(text + 1, 'a', big - 2);
    text[big - 1] = '"';
    text[big] = '\0';
    ecp_shared *owner = ecp_shared_adopt(text, big);

    buf out = BUF_INIT;
    jw_splices splices = {0};
    json_writer w;
    jw_init(&w, &out);
    jw_allow_splices(&w, &splices);
    jw_object_begin(&w);
    jw_key(&w, "small");
    jw_raw_shared(&w, "\"b\"", 3, owner); /* under the threshold: copied */
    jw_key(&w, "big");
    jw_raw_shared(&w, ecp_shared_data(owner), ecp_shared_len(owner), owner);
    jw_key_int(&w, "after", 1);
    jw_object_end(&w);
    ecp_shared_unref(owner); /* the splice holds its own reference */

    assert_int_equal(splices.count, 1);
    assert_int_equal(splices.items[0].at, strlen("{\"small\":\"b\",\"big\":"));
    assert_int_equal(jw_spliced_len(out.len, &splices), out.len + big);
    buf whole = BUF_INIT;
    jw_splices_append_to(&whole, out.data, out.len, &splices);
    assert_int_equal(whole.len, out.len + big);
    json_doc doc;
    assert_int_equal(json_doc_parse(&doc, whole.data, whole.len, NULL), 0);
    size_t n;
    const char *raw = json_raw(&doc, json_get(&doc, json_root(&doc), "big"), &n);
    assert_int_equal(n, big);
    assert_int_equal(raw[1], 'a');
    json_doc_free(&doc);
    buf_free(&whole);
    jw_splices_free(&splices);

    /* no splices allowed: the same call copies */
    buf plain = BUF_INIT;
    char bytes[] = "[1]";
    ecp_shared *small = ecp_shared_adopt(xstrndup(bytes, 3), 3);
    jw_init(&w, &plain);
    jw_raw_shared(&w, ecp_shared_data(small), 3, small);
    ecp_shared_unref(small);
    assert_string_equal(plain.data, "[1]");
    buf_free(&plain);
    buf_free(&out);
}

static void count_ready(void *ctx) { (*(int *)ctx)++; }

/* Bytes still being made: splices of them are not ready, those who asked
 * are told once (not one who withdrew), and the bytes are then the value. */
static void test_pending_shared_bytes(void **state)
{
    (void)state;
    ecp_shared *s = ecp_shared_pending();
    assert_false(ecp_shared_ready(s));
    int first = 0, withdrew = 0, late = 0;
    ecp_shared_when_ready(s, count_ready, &first);
    ecp_shared_when_ready(s, count_ready, &withdrew);
    ecp_shared_forget(s, count_ready, &withdrew);
    jw_splices splices = {0};
    jw_splices_add(&splices, 1, NULL, 0, s);
    ecp_shared *waiting = NULL;
    assert_false(jw_splices_ready(&splices, &waiting));
    assert_ptr_equal(waiting, s);

    ecp_shared_fill(s, xstrndup("\"x\"", 3), 3);
    assert_int_equal(first, 1);
    assert_int_equal(withdrew, 0);
    assert_true(jw_splices_ready(&splices, NULL));
    ecp_shared_when_ready(s, count_ready, &late); /* ready: at once */
    assert_int_equal(late, 1);
    ecp_shared_unref(s); /* the splice keeps it */
    assert_int_equal(jw_spliced_len(2, &splices), 5);
    buf whole = BUF_INIT;
    jw_splices_append_to(&whole, "[]", 2, &splices);
    assert_string_equal(whole.data, "[\"x\"]");
    buf_free(&whole);
    jw_splices_free(&splices);
}

static void test_key_string_opt(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_string_opt(&w, "absent", NULL);
    jw_key_string_opt(&w, "present", "x");
    jw_key_string_opt(&w, "empty", "");
    jw_object_end(&w);
    assert_string_equal(out.data, "{\"present\":\"x\",\"empty\":\"\"}");
    buf_free(&out);
}

/* buf_write_fd writes all of a buffer larger than one write, and
 * buf_read_fd reads it back whole, or stops at its limit. */
static void test_buf_fd(void **state)
{
    (void)state;
    char path[] = "/tmp/ecpd_buf_fd_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    size_t len = 300000;
    char *data = malloc(len);
    for (size_t i = 0; i < len; i++)
        data[i] = (char)('a' + i % 26);
    assert_int_equal(buf_write_fd(fd, data, len), 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    buf back = BUF_INIT;
    assert_int_equal(buf_read_fd(&back, fd, len), 0);
    assert_int_equal(back.len, len);
    assert_memory_equal(back.data, data, len);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    buf_clear(&back);
    assert_int_equal(buf_read_fd(&back, fd, len - 1), ECP_ETOOBIG);
    assert_true(back.len <= len - 1);
    buf_free(&back);
    free(data);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_splices),
        cmocka_unit_test(test_pending_shared_bytes),
        cmocka_unit_test(test_key_string_opt),
        cmocka_unit_test(test_buf_fd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
