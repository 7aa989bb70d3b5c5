/* The document service through the in-process client: positions and offsets
 * in the three position encodings, the columns each client's change events
 * carry, and two clients on one document. */
#include "document_fixture.h"

/* ----- positions and encodings ---------------------------------------------------------------------- */

static void test_position_offset(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://o.txt", "\"ab\\n\\ud83d\\ude00c\\n\\u4e2d\"");
    static const struct {
        int line, column, offset;
    } pairs[] = {{0, 0, 0}, {0, 2, 2}, {1, 0, 3}, {1, 2, 5}, {1, 3, 6}, {2, 0, 7}, {2, 1, 8}, {3, 0, 8}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char *r = ok(f->c, "document/positionToOffset",
                     "{\"documentId\":\"%s\",\"position\":{\"line\":%d,\"column\":%d}}", id, pairs[i].line,
                     pairs[i].column);
        char want[64];
        snprintf(want, sizeof want, "{\"offset\":%d}", pairs[i].offset);
        expect_raw(r, "", want);
        free(r);
    }
    /* Inside a surrogate pair: the start of the character. */
    char *r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1}}", id);
    expect_raw(r, "", "{\"offset\":3}");
    free(r);
    static const struct {
        int offset, line, column;
    } back[] = {{0, 0, 0}, {2, 0, 2}, {3, 1, 0}, {4, 1, 0}, {5, 1, 2}, {6, 1, 3}, {7, 2, 0}, {8, 2, 1}};
    for (size_t i = 0; i < sizeof back / sizeof back[0]; i++) {
        r = ok(f->c, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":%d}", id, back[i].offset);
        char want[96];
        snprintf(want, sizeof want, "{\"position\":{\"line\":%d,\"column\":%d}}", back[i].line, back[i].column);
        expect_raw(r, "", want);
        free(r);
    }
    expect_message(fails(f->c, -32003, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":9}", id),
                   "Invalid offset: 9 is past the end of the document");
    expect_message(fails(f->c, -32602, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":-1}", id),
                   "offset: must be >= 0, got -1");
    expect_message(fails(f->c, -32001, "document/offsetToPosition", "{\"documentId\":\"x\",\"offset\":0}"),
                   "Document not found");
    expect_message(fails(f->c, -32001, "document/positionToOffset",
                         "{\"documentId\":\"x\",\"position\":{\"line\":0,\"column\":0}}"),
                   "Document not found");
    expect_message(fails(f->c, -32003, "document/positionToOffset",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":4}}", id),
                   "Invalid position: column 4 is past the end of line 1 (3 columns)");
    free(id);
}

static test_client *connect_with(test_server *s, const char *encoding)
{
    test_client *c = test_client_connect(s);
    char *r = ok(c, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"%s\"]}}", encoding);
    expect_str(r, "positionEncoding", encoding);
    free(r);
    return c;
}

static void expect_change_range(test_client *c, size_t index, const char *range_and_length)
{
    const char *note = test_client_notification(c, "document/didChange", index);
    assert_non_null(note);
    char *range = test_json_raw(note, "changes[0].range");
    int64_t len = -1;
    assert_true(test_json_int(note, "changes[0].rangeLength", &len));
    char got[256];
    snprintf(got, sizeof got, "%s/%lld", range, (long long)len);
    if (strcmp(got, range_and_length) != 0)
        print_error("want %s\ngot  %s\n", range_and_length, got);
    assert_string_equal(got, range_and_length);
    free(range);
}


/* With every client counting bytes the change events carry byte columns
 * only; a client that then connects (UTF-16 until it says otherwise) gets
 * real UTF-16 ones at once. */
static void test_a_new_client_gets_its_columns(void **state)
{
    fx *f = *state;
    free(ok(f->c, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-8\"]}}"));
    char *id = open_doc(f->c, "memory://late.txt", "\"\\ud83d\\ude00x\"");
    test_client *late = test_client_connect(f->s);
    OK(late, "ecp/ping", "{}");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"y\"}", id);
    expect_change_range(late, 0, RANGE(0, 2, 0, 2) "/0");
    test_client_disconnect(late);
    free(id);
}

/* A change whose text is huge has it escaped off the loop: every client
 * still gets it whole, in its own units, and before the answer of the edit
 * that made it (the answer waits behind it). */
static void test_a_huge_change_text_arrives_whole_and_first(void **state)
{
    fx *f = *state;
    test_client *c32 = connect_with(f->s, "utf-32");
    char *id = open_doc(f->c, "memory://huge.txt", "\"\\ud83d\\ude00ab\"");
    test_client_clear_notifications(c32);
    const char unit[] = "say \\\"q\\\" \\t \\u00e9 \\ud83d\\ude00\\n"; /* as JSON */
    const char decoded[] = "say \"q\" \t \xC3\xA9 \xF0\x9F\x98\x80\n";
    size_t copies = (2u << 20) / (sizeof decoded - 1) + 1;
    buf params = BUF_INIT, want = BUF_INIT;
    buf_appendf(&params, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":2},\"text\":\"", id);
    for (size_t i = 0; i < copies; i++) {
        buf_append(&params, unit, sizeof unit - 1);
        buf_append(&want, decoded, sizeof decoded - 1);
    }
    buf_append_str(&params, "\"}");
    char *r = NULL;
    assert_int_equal(test_client_request(f->c, "document/insert", params.data, &r), 0);
    free(r);
    /* answered: the change was there already */
    const char *note = test_client_notification(f->c, "document/didChange", 0);
    assert_non_null(note);
    char *text = test_json_string(note, "changes[0].text");
    assert_non_null(text);
    assert_int_equal(strlen(text), want.len);
    assert_true(memcmp(text, want.data, want.len) == 0);
    free(text);
    expect_change_range(f->c, 0, RANGE(0, 2, 0, 2) "/0");
    assert_true(test_client_wait_notifications(c32, "document/didChange", 1, 10000));
    expect_change_range(c32, 0, RANGE(0, 1, 0, 1) "/0");
    text = test_json_string(test_client_notification(c32, "document/didChange", 0), "changes[0].text");
    assert_true(text && strlen(text) == want.len && memcmp(text, want.data, want.len) == 0);
    free(text);
    buf_free(&params);
    buf_free(&want);
    test_client_disconnect(c32);
    free(id);
}

static void test_encodings(void **state)
{
    fx *f = *state;
    test_client *c16 = f->c;
    test_client *c8 = connect_with(f->s, "utf-8");
    test_client *c32 = connect_with(f->s, "utf-32");
    /* a (1 byte) U+1F600 (4 bytes, 2 UTF-16 units) b U+4E2D (3 bytes) c */
    char *id = open_doc(c16, "memory://enc.txt", "\"a\\ud83d\\ude00b\\u4e2dc\"");
    test_client_clear_notifications(c8);
    test_client_clear_notifications(c32);

    /* The same cursor, in each client's units. */
    OK(c16, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    char want[256];
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"clientId\":1,\"cursors\":[" AT(0, 5) "]}", id);
    expect_note(c16, 0, "document/didChangeCursors", want);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"clientId\":1,\"cursors\":[" AT(0, 9) "]}", id);
    expect_note(c8, 0, "document/didChangeCursors", want);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"clientId\":1,\"cursors\":[" AT(0, 4) "]}", id);
    expect_note(c32, 0, "document/didChangeCursors", want);
    char *r = ok(c8, "document/clients", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "clients[0].cursors", "[" AT(0, 9) "]");
    free(r);

    /* Offsets count the client's units too. */
    r = ok(c16, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    expect_int(r, "offset", 5);
    free(r);
    r = ok(c8, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":9}}", id);
    expect_int(r, "offset", 9);
    free(r);
    r = ok(c32, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4}}", id);
    expect_int(r, "offset", 4);
    free(r);
    r = ok(c8, "document/textInRange", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 5) "}", id);
    expect_str(r, "text", "\xF0\x9F\x98\x80");
    free(r);
    r = ok(c32, "document/textInRange", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 3) "}", id);
    expect_str(r, "text", "\xF0\x9F\x98\x80" "b");
    free(r);

    /* One edit, three renderings of its change. */
    test_client_clear_notifications(c16);
    test_client_clear_notifications(c8);
    test_client_clear_notifications(c32);
    r = ok(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":9},\"text\":\"X\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    expect_change_range(c8, 0, RANGE(0, 9, 0, 9) "/0");
    expect_change_range(c16, 0, RANGE(0, 5, 0, 5) "/0");
    expect_change_range(c32, 0, RANGE(0, 4, 0, 4) "/0");
    r = ok(c32, "document/delete", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 2) "}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3}");
    free(r);
    expect_change_range(c32, 1, RANGE(0, 1, 0, 2) "/1");
    expect_change_range(c16, 1, RANGE(0, 1, 0, 3) "/2");
    expect_change_range(c8, 1, RANGE(0, 1, 0, 5) "/4");
    expect_content(c16, id, "ab\xE4\xB8\xAD" "Xc");

    /* Range errors speak the client's units. */
    expect_message(fails(c8, -32003, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":20},\"text\":\"x\"}", id),
                   "Invalid position: column 20 is past the end of line 0 (7 columns)");
    expect_message(fails(c16, -32003, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":20},\"text\":\"x\"}", id),
                   "Invalid position: column 20 is past the end of line 0 (5 columns)");
    /* A byte column inside a character snaps to the character's start. */
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"Y\"}", id);
    expect_content(c16, id, "abY\xE4\xB8\xAD" "Xc");

    /* The columns computed follow who is connected: with the UTF-32 client
     * gone nobody reads UTF-32 columns, and one that connects and
     * negotiates UTF-32 later gets its own units again. */
    test_client_disconnect(c32);
    test_client *late32 = test_client_connect(f->s);
    free(ok(late32, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-32\"]}}"));
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"\\ud83d\\ude00\"}",
       id);
    test_client_clear_notifications(c16);
    test_client_clear_notifications(late32);
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":11},\"text\":\"Z\"}", id);
    expect_change_range(c16, 0, RANGE(0, 7, 0, 7) "/0");
    expect_change_range(late32, 0, RANGE(0, 6, 0, 6) "/0");
    OK(c8, "document/delete", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 0, 0, 4) "}", id);
    expect_change_range(c16, 1, RANGE(0, 0, 0, 2) "/2");
    expect_change_range(late32, 1, RANGE(0, 0, 0, 1) "/1");
    expect_content(c16, id, "abY\xE4\xB8\xAD" "XZc");
    test_client_disconnect(late32);

    /* Words, in UTF-16. */
    char *w = open_doc(c16, "memory://w.txt", "\"\\ud83d\\ude00ab cd\"");
    r = ok(c16, "document/wordAtPosition", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3}}", w);
    expect_raw(r, "", "{\"range\":" RANGE(0, 2, 0, 4) ",\"text\":\"ab\"}");
    free(r);
    r = ok(c8, "document/wordAtPosition", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4}}", w);
    expect_raw(r, "", "{\"range\":" RANGE(0, 4, 0, 6) ",\"text\":\"ab\"}");
    free(r);
    free(w);
    free(id);
}

static void test_word_at_position(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://word.txt", "\"Hello World foo_bar9 x\"");
    char p[256];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "null");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 0, 0, 5) ",\"text\":\"Hello\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":10}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 6, 0, 11) ",\"text\":\"World\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":14}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 12, 0, 20) ",\"text\":\"foo_bar9\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":22}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "null");
    expect_call(f->c, "document/wordAtPosition", "{\"documentId\":\"nope\",\"position\":{\"line\":0,\"column\":0}}",
                "null");
    expect_message(fails(f->c, -32003, "document/wordAtPosition",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1}}", id),
                   "Invalid position: line 1 is past the end (1 line)");
    expect_message(fails(f->c, -32602, "document/wordAtPosition", "{\"documentId\":\"%s\"}", id),
                   "position: required object");
    free(id);
}

/* ----- two clients ------------------------------------------------------------------------------------ */

static void test_two_clients(void **state)
{
    fx *f = *state;
    test_client *c1 = f->c, *c2 = test_client_connect(f->s);
    /* A connection's framing is known once it has spoken. */
    free(ok(c2, "ecp/ping", "{}"));
    test_client_clear_notifications(c2);
    char *r = ok(c1, "document/open", "{\"uri\":\"memory://shared.txt\",\"content\":\"hello\"}");
    char *id = test_json_string(r, "documentId");
    free(r);
    expect_events(c1, "document/didOpen,#");
    assert_string_equal(test_client_event_log(c2), "document/didOpen");
    test_client_clear_notifications(c2);

    /* The second client opens the same uri: the same document, no didOpen. */
    r = ok(c2, "document/open", "{\"uri\":\"memory://shared.txt\"}");
    expect_str(r, "documentId", id);
    free(r);
    expect_events(c2, "#");
    assert_string_equal(test_client_event_log(c1), "");

    OK(c1, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"text\":\" world\"}", id);
    expect_events(c1, "document/didChange,#");
    assert_string_equal(test_client_event_log(c2), "document/didChange");
    const char *note = test_client_notification(c2, "document/didChange", 0);
    expect_int(note, "version", 2);
    expect_str(note, "changes[0].text", " world");
    test_client_clear_notifications(c2);

    r = ok(c2, "document/replace",
           "{\"documentId\":\"%s\",\"range\":" RANGE(0, 0, 0, 5) ",\"text\":\"HELLO\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3}");
    free(r);
    expect_events(c2, "document/didChange,#");
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://shared.txt\",\"version\":3,\"changes\":[{\"range\":" RANGE(
                 0, 0, 0, 5) ",\"rangeLength\":5,\"text\":\"HELLO\"}]}",
             id);
    expect_note(c1, 0, "document/didChange", want);
    assert_string_equal(test_client_event_log(c1), "document/didChange");
    test_client_clear_notifications(c1);
    expect_content(c1, id, "HELLO world");
    expect_content(c2, id, "HELLO world");

    /* Each client has its own cursors: a move is heard by every client, with
     * whose it was, and an edit by one moves the other's. */
    OK(c2, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3}}", id);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"clientId\":2,\"cursors\":[" AT(0, 3) "]}", id);
    expect_note(c1, 0, "document/didChangeCursors", want);
    OK(c1, "document/edit",
       "{\"documentId\":\"%s\",\"edits\":[{\"range\":" RANGE(0, 0, 0, 0) ",\"text\":\"> \"}]}", id);
    r = ok(c2, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[" AT(0, 5) "]}");
    free(r);
    test_client_clear_notifications(c1);
    test_client_clear_notifications(c2);

    /* Undo by one client undoes the other's edit, and both hear it. */
    r = ok(c2, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_events(c2, "document/didChange,#");
    assert_string_equal(test_client_event_log(c1), "document/didChange");
    expect_content(c1, id, "HELLO world");
    test_client_clear_notifications(c1);

    /* Both hold it: one's close leaves it to the other, whose close closes it. */
    OK(c1, "document/close", "{\"documentId\":\"%s\"}", id);
    expect_content(c2, id, "HELLO world");
    assert_int_equal(test_client_notification_count(c2, "document/didClose"), 0);
    test_client_clear_notifications(c2);
    OK(c2, "document/close", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"memory://shared.txt\"}", id);
    expect_note(c1, 0, "document/didClose", want);
    /* A client going away closes nothing the others hold. */
    char *id2 = open_doc(c2, "memory://other.txt", "\"x\"");
    free(open_doc(c1, "memory://other.txt", NULL));
    test_client_disconnect(c2);
    expect_content(c1, id2, "x");
    free(id2);
    free(id);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_position_offset),
        T(test_a_new_client_gets_its_columns),
        T(test_a_huge_change_text_arrives_whole_and_first),
        T(test_encodings),
        T(test_word_at_position),
        T(test_two_clients),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
