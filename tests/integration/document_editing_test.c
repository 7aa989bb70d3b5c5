/* The editing commands through the in-process client: indent, outdent,
 * newline, duplicateLines, moveLines, deleteWord, toggleComment, find and
 * replace. Each must act at the caller's cursors only, be one undo step,
 * move a second client's cursors with the text, and refuse bad params. */
#include "document_fixture.h"

/* Sets c's cursors (a JSON array of Cursor). */
static void set_cursors(test_client *c, const char *id, const char *cursors)
{
    OK(c, "document/setCursors", "{\"documentId\":\"%s\",\"cursors\":%s}", id, cursors);
}

#define SEL(al, ac, l, c)                                                                                          \
    "{\"position\":{\"line\":" #l ",\"column\":" #c "},\"selection\":{\"anchor\":{\"line\":" #al                \
    ",\"column\":" #ac "},\"active\":{\"line\":" #l ",\"column\":" #c "}}}"

static void expect_cursors(test_client *c, const char *id, const char *want)
{
    char *r = ok(c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors", want);
    free(r);
}

/* Runs an editing command that must succeed and returns its result. */
static char *edit(test_client *c, const char *method, const char *id, const char *extra)
{
    char *r = ok(c, method, "{\"documentId\":\"%s\"%s%s}", id, extra ? "," : "", extra ? extra : "");
    expect_bool(r, "success", true);
    return r;
}

/* One undo brings back `before` (then a redo puts the edit back). */
static void expect_one_step(test_client *c, const char *id, const char *before)
{
    char *r = ok(c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_content(c, id, before);
    OK(c, "document/redo", "{\"documentId\":\"%s\"}", id);
}

static test_client *second_client(fx *f, const char *uri)
{
    test_client *c2 = test_client_connect(f->s);
    free(ok(c2, "document/open", "{\"uri\":\"%s\"}", uri));
    test_client_clear_notifications(c2);
    return c2;
}

/* ----- indent and outdent ------------------------------------------------------------- */

static void test_indent_outdent(void **state)
{
    fx *f = *state;
    const char *text = "if x:\n    y\nz\n";
    char *id = open_doc(f->c, "memory://i.py", "\"if x:\\n    y\\nz\\n\"");
    test_client *c2 = second_client(f, "memory://i.py");
    set_cursors(c2, id, "[" AT(1, 4) "]");
    /* lines 0 and 1 selected; the unit is 4 spaces, as the text's own lines say */
    set_cursors(f->c, id, "[" SEL(0, 0, 1, 5) "]");
    test_client_clear_notifications(f->c);
    char *r = edit(f->c, "document/indent", id, NULL);
    expect_int(r, "version", 2);
    expect_raw(r, "cursors", "[" SEL(0, 4, 1, 9) "]");
    free(r);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "    if x:\n        y\nz\n");
    /* the other client's caret stays before the same 'y' */
    expect_cursors(c2, id, "[" AT(1, 8) "]");
    expect_one_step(f->c, id, text);

    r = edit(f->c, "document/outdent", id, NULL);
    expect_raw(r, "cursors", "[" SEL(0, 0, 1, 5) "]");
    free(r);
    expect_content(f->c, id, text);
    r = edit(f->c, "document/outdent", id, NULL);
    free(r);
    expect_content(f->c, id, "if x:\ny\nz\n");
    expect_one_step(f->c, id, text);
    test_client_disconnect(c2);
    free(id);
}

static void test_indent_with_tabs_and_a_caret(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://t.c", "\"int f() {\\n\\tx;\\n\\ty;\\n}\\n\"");
    set_cursors(f->c, id, "[" AT(3, 1) "]");
    free(edit(f->c, "document/indent", id, NULL));
    expect_content(f->c, id, "int f() {\n\tx;\n\ty;\n\t}\n");
    expect_cursors(f->c, id, "[" AT(3, 2) "]");
    free(edit(f->c, "document/outdent", id, NULL));
    free(edit(f->c, "document/outdent", id, NULL)); /* nothing left to take: no change, no error */
    expect_content(f->c, id, "int f() {\n\tx;\n\ty;\n}\n");
    free(id);
}

/* ----- newline ----------------------------------------------------------------------------- */

static void test_newline(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://n.py", "\"def f():\\n    return 1\"");
    test_client *c2 = second_client(f, "memory://n.py");
    set_cursors(c2, id, "[" AT(1, 4) "]");
    /* after ':' one unit more; inside the indented line, its indent */
    set_cursors(f->c, id, "[" AT(0, 8) "," AT(1, 10) "]");
    char *r = edit(f->c, "document/newline", id, NULL);
    expect_raw(r, "cursors", "[" AT(1, 4) "," AT(3, 4) "]");
    free(r);
    expect_content(f->c, id, "def f():\n    \n    return\n     1");
    expect_cursors(c2, id, "[" AT(2, 4) "]");
    expect_one_step(f->c, id, "def f():\n    return 1");
    test_client_disconnect(c2);

    /* a selection is replaced; '{' opens a level */
    char *id2 = open_doc(f->c, "memory://n.c", "\"  if (a) {XYZ}\"");
    set_cursors(f->c, id2, "[" SEL(0, 10, 0, 13) "]");
    free(edit(f->c, "document/newline", id2, NULL));
    /* the unit is the 2 spaces the text's one line starts with */
    expect_content(f->c, id2, "  if (a) {\n    }");
    expect_cursors(f->c, id2, "[" AT(1, 4) "]");
    free(id2);
    free(id);
}

/* ----- duplicate and move lines ------------------------------------------------------------ */

static void test_duplicate_lines(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://d.txt", "\"a\\nb\\nc\"");
    test_client *c2 = second_client(f, "memory://d.txt");
    set_cursors(c2, id, "[" AT(2, 1) "]");
    set_cursors(f->c, id, "[" AT(1, 1) "]");
    free(edit(f->c, "document/duplicateLines", id, NULL));
    expect_content(f->c, id, "a\nb\nb\nc");
    expect_cursors(f->c, id, "[" AT(2, 1) "]");
    expect_cursors(c2, id, "[" AT(3, 1) "]");
    expect_one_step(f->c, id, "a\nb\nc");
    /* the last line, without a line end, and a selection over two lines */
    set_cursors(f->c, id, "[" SEL(2, 0, 3, 1) "]");
    free(edit(f->c, "document/duplicateLines", id, NULL));
    expect_content(f->c, id, "a\nb\nb\nc\nb\nc");
    expect_cursors(f->c, id, "[" SEL(4, 0, 5, 1) "]");
    test_client_disconnect(c2);
    free(id);
}

static void test_move_lines(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://m.txt", "\"a\\nb\\nc\"");
    test_client *c2 = second_client(f, "memory://m.txt");
    set_cursors(c2, id, "[" AT(0, 0) "]");
    set_cursors(f->c, id, "[" AT(0, 1) "]");
    char *r = edit(f->c, "document/moveLines", id, "\"direction\":\"down\"");
    expect_int(r, "version", 2);
    free(r);
    expect_content(f->c, id, "b\na\nc");
    expect_cursors(f->c, id, "[" AT(1, 1) "]");
    /* the other client's caret was on the moved line: it moves with it */
    expect_cursors(c2, id, "[" AT(1, 0) "]");
    expect_one_step(f->c, id, "a\nb\nc");
    free(edit(f->c, "document/moveLines", id, "\"direction\":\"down\""));
    expect_content(f->c, id, "b\nc\na");
    expect_cursors(f->c, id, "[" AT(2, 1) "]");
    /* at the bottom already: nothing changes, no version */
    r = ok(f->c, "document/version", "{\"documentId\":\"%s\"}", id);
    int64_t version = 0;
    assert_true(test_json_int(r, "version", &version));
    free(r);
    r = edit(f->c, "document/moveLines", id, "\"direction\":\"down\"");
    expect_int(r, "version", version);
    free(r);
    free(edit(f->c, "document/moveLines", id, "\"direction\":\"up\""));
    expect_content(f->c, id, "b\na\nc");
    expect_cursors(f->c, id, "[" AT(1, 1) "]");
    /* a selection of two lines that ends at the start of the next */
    set_cursors(f->c, id, "[" SEL(0, 0, 2, 0) "]");
    free(edit(f->c, "document/moveLines", id, "\"direction\":\"down\""));
    expect_content(f->c, id, "c\nb\na");
    expect_cursors(f->c, id, "[" SEL(1, 0, 2, 1) "]");
    char *e = fails(f->c, -32602, "document/moveLines", "{\"documentId\":\"%s\",\"direction\":\"left\"}", id);
    expect_message(e, "direction: must be up or down, got \"left\"");
    test_client_disconnect(c2);
    free(id);
}

/* ----- delete a word -------------------------------------------------------------------------- */

static void test_delete_word(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://w.txt", "\"foo bar baz\"");
    test_client *c2 = second_client(f, "memory://w.txt");
    set_cursors(c2, id, "[" AT(0, 9) "]");
    set_cursors(f->c, id, "[" AT(0, 7) "]");
    free(edit(f->c, "document/deleteWord", id, "\"direction\":\"left\""));
    expect_content(f->c, id, "foo  baz");
    expect_cursors(f->c, id, "[" AT(0, 4) "]");
    expect_cursors(c2, id, "[" AT(0, 6) "]");
    expect_one_step(f->c, id, "foo bar baz");
    free(edit(f->c, "document/deleteWord", id, "\"direction\":\"right\""));
    expect_content(f->c, id, "foo ");
    /* two carets in one word delete it once */
    OK(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"one two\"}", id);
    set_cursors(f->c, id, "[" AT(0, 5) "," AT(0, 6) "]");
    free(edit(f->c, "document/deleteWord", id, "\"direction\":\"left\""));
    expect_content(f->c, id, "one o");
    char *e = fails(f->c, -32602, "document/deleteWord", "{\"documentId\":\"%s\",\"direction\":\"up\"}", id);
    expect_message(e, "direction: must be left or right, got \"up\"");
    e = fails(f->c, -32602, "document/deleteWord", "{\"documentId\":\"%s\"}", id);
    free(e);
    test_client_disconnect(c2);
    free(id);
}

/* ----- comments ------------------------------------------------------------------------------------ */

static void test_toggle_comment(void **state)
{
    fx *f = *state;
    const char *text = "def f():\n    x = 1\n\n      y = 2\n";
    char *id = open_doc(f->c, "memory://c.py", "\"def f():\\n    x = 1\\n\\n      y = 2\\n\"");
    test_client *c2 = second_client(f, "memory://c.py");
    set_cursors(c2, id, "[" AT(1, 4) "]");
    set_cursors(f->c, id, "[" SEL(1, 2, 3, 3) "]");
    free(edit(f->c, "document/toggleComment", id, NULL));
    /* at the least indent; the blank line is left alone */
    expect_content(f->c, id, "def f():\n    # x = 1\n\n    #   y = 2\n");
    expect_cursors(c2, id, "[" AT(1, 6) "]");
    expect_one_step(f->c, id, text);
    free(edit(f->c, "document/toggleComment", id, NULL));
    expect_content(f->c, id, text);
    /* one commented line among others: all get commented */
    OK(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"x\\n# y\"}", id);
    OK(f->c, "document/selectAll", "{\"documentId\":\"%s\"}", id);
    free(edit(f->c, "document/toggleComment", id, NULL));
    expect_content(f->c, id, "# x\n# # y");

    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://a.lua\",\"languageId\":\"lua\",\"content\":\"print(1)\"}");
    char *lua = test_json_string(r, "documentId");
    free(r);
    free(edit(f->c, "document/toggleComment", lua, NULL));
    expect_content(f->c, lua, "-- print(1)");
    char *js = open_doc(f->c, "memory://a.js", "\"  // f()\"");
    free(edit(f->c, "document/toggleComment", js, NULL));
    expect_content(f->c, js, "  f()");

    char *md = open_doc(f->c, "memory://a.md", "\"# title\"");
    char *e = fails(f->c, -32602, "document/toggleComment", "{\"documentId\":\"%s\"}", md);
    expect_message(e, "Language 'markdown' has no line comment");
    test_client_disconnect(c2);
    free(md);
    free(js);
    free(lua);
    free(id);
}

/* ----- the indent unit --------------------------------------------------------------------- */

static void expect_indent(test_client *c, const char *uri, const char *content_json, const char *want)
{
    char *id = open_doc(c, uri, content_json);
    char *r = ok(c, "document/info", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "indent", want);
    free(r);
    free(id);
}

static void test_indent_detected(void **state)
{
    fx *f = *state;
    expect_indent(f->c, "memory://u1.txt", "\"plain\"", "{\"style\":\"spaces\",\"size\":4}");
    expect_indent(f->c, "memory://u2.js", "\"a {\\n  b {\\n    c\\n  }\\n  d\\n}\"",
                  "{\"style\":\"spaces\",\"size\":2}");
    expect_indent(f->c, "memory://u3.c", "\"a {\\n\\tb;\\n\\tc;\\n  d\\n}\"",
                  "{\"style\":\"tabs\",\"size\":4}");
    /* the step between lines counts, not the depth: 8 spaces at level 2 of 4 */
    expect_indent(f->c, "memory://u4.py", "\"a:\\n    b:\\n        c\\n    d\\n        e\"",
                  "{\"style\":\"spaces\",\"size\":4}");
}

/* ----- characters are grapheme clusters ---------------------------------------------------------- */

static void move(test_client *c, const char *id, const char *dir)
{
    OK(c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"%s\"}", id, dir);
}

static void test_graphemes(void **state)
{
    fx *f = *state;
    /* columns in UTF-16 units: 👍🏽 is 4, the family (man ZWJ woman ZWJ girl) 8, e + U+0301 2 */
    char *id = open_doc(f->c, "memory://g.txt",
                        "\"a\\ud83d\\udc4d\\ud83c\\udffdb\\ne\\u0301x\\n\\ud83d\\udc68\\u200d\\ud83d\\udc69"
                        "\\u200d\\ud83d\\udc67z\"");
    set_cursors(f->c, id, "[" AT(0, 1) "]");
    move(f->c, id, "right");
    expect_cursors(f->c, id, "[" AT(0, 5) "]");
    move(f->c, id, "left");
    expect_cursors(f->c, id, "[" AT(0, 1) "]");
    set_cursors(f->c, id, "[" AT(0, 3) "]"); /* between the thumb and its skin tone */
    expect_cursors(f->c, id, "[" AT(0, 1) "]");
    set_cursors(f->c, id, "[" AT(1, 0) "]");
    move(f->c, id, "right");
    expect_cursors(f->c, id, "[" AT(1, 2) "]");
    set_cursors(f->c, id, "[" AT(1, 1) "]");
    expect_cursors(f->c, id, "[" AT(1, 0) "]");
    set_cursors(f->c, id, "[" AT(2, 0) "]");
    move(f->c, id, "right");
    expect_cursors(f->c, id, "[" AT(2, 8) "]");
    move(f->c, id, "left");
    expect_cursors(f->c, id, "[" AT(2, 0) "]");
    OK(f->c, "document/addCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":5}}", id);
    expect_cursors(f->c, id, "[" AT(2, 0) "]"); /* snapped onto the first, and merged */
    /* left across a line end, and right onto the next line */
    set_cursors(f->c, id, "[" AT(1, 0) "]");
    move(f->c, id, "left");
    expect_cursors(f->c, id, "[" AT(0, 6) "]");
    move(f->c, id, "right");
    expect_cursors(f->c, id, "[" AT(1, 0) "]");
    free(id);
}

/* ----- .editorconfig --------------------------------------------------------------------------- */

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_bytes(path, text, strlen(text), 0644);
}

static char *open_file(test_client *c, const char *dir, const char *name)
{
    char *r = ok(c, "document/open", "{\"uri\":\"file://%s/%s\"}", dir, name);
    char *id = test_json_string(r, "documentId");
    free(r);
    return id;
}

static char *info_of(test_client *c, const char *id)
{
    return ok(c, "document/info", "{\"documentId\":\"%s\"}", id);
}

static void test_editorconfig(void **state)
{
    fx *f = *state;
    /* a server whose workspace is dir/ws, with a .editorconfig above it that must not be read */
    char ws[128], sub[160], big[160];
    snprintf(ws, sizeof ws, "%s/ws", f->dir);
    snprintf(sub, sizeof sub, "%s/sub", ws);
    snprintf(big, sizeof big, "%s/big", ws);
    assert_int_equal(mkdir(ws, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(mkdir(big, 0755), 0);
    put_file(f->dir, ".editorconfig", "[*.md]\nindent_size = 7\n[*.txt]\ncharset = latin1\n");
    put_file(ws, ".editorconfig",
             "[*]\nindent_style = tab\ntrim_trailing_whitespace = true\ninsert_final_newline = true\n"
             "[*.py]\nindent_style = space\nindent_size = 2\nend_of_line = lf\ncharset = utf-8\n");
    /* a link is not followed; a file past the bounds is not read */
    char link[200];
    snprintf(link, sizeof link, "%s/.editorconfig", sub);
    assert_int_equal(symlink("../.editorconfig-elsewhere", link), 0);
    put_file(ws, ".editorconfig-elsewhere", "[*]\nindent_size = 3\nindent_style = space\n");
    buf huge = BUF_INIT;
    buf_append_str(&huge, "[*]\nindent_style = space\nindent_size = 5\n");
    while (huge.len < (70 << 10))
        buf_append_str(&huge, "# padding padding padding padding padding padding padding padding\n");
    buf_push(&huge, '\0');
    put_file(big, ".editorconfig", huge.data);
    buf_free(&huge);
    put_file(ws, "a.py", "x = 1\n");
    put_file(ws, "b.c", "int x;\n");
    put_file(ws, "c.md", "# t\n");
    put_file(ws, "t.txt", "a  \nb\t");
    put_file(sub, "s.c", "int y;\n");
    put_file(big, "g.c", "int z;\n");
    put_file(f->dir, "out.py", "x\n");

    /* the private copy lives in TMPDIR: one planted there is not read either */
    char tmpd[160];
    snprintf(tmpd, sizeof tmpd, "%s/tmp", f->dir);
    assert_int_equal(mkdir(tmpd, 0700), 0);
    put_file(tmpd, ".editorconfig", "[*.c]\ncharset = latin1\n");
    setenv("TMPDIR", tmpd, 1);
    test_server *s = test_server_new(&(test_server_options){.workspace = ws});
    test_client *c = test_client_connect(s);
    char *py = open_file(c, ws, "a.py");
    char *r = info_of(c, py);
    expect_raw(r, "indent", "{\"style\":\"spaces\",\"size\":2}");
    expect_str(r, "endOfLine", "lf");
    expect_str(r, "charset", "utf-8");
    expect_bool(r, "insertFinalNewline", true);
    expect_bool(r, "trimTrailingWhitespace", true);
    free(r);
    char *cc = open_file(c, ws, "b.c");
    r = info_of(c, cc);
    expect_raw(r, "indent", "{\"style\":\"tabs\",\"size\":4}");
    assert_false(test_json_has(r, "charset")); /* the one above the workspace is not read */
    free(r);
    free(edit(c, "document/indent", cc, NULL));
    expect_content(c, cc, "\tint x;\n");
    char *md = open_file(c, ws, "c.md");
    r = info_of(c, md);
    expect_raw(r, "indent", "{\"style\":\"tabs\",\"size\":4}");
    free(r);
    char *sc = open_file(c, sub, "s.c");
    r = info_of(c, sc);
    expect_raw(r, "indent", "{\"style\":\"tabs\",\"size\":4}");
    free(r);
    char *gc = open_file(c, big, "g.c");
    r = info_of(c, gc);
    expect_raw(r, "indent", "{\"style\":\"tabs\",\"size\":4}");
    free(r);
    char *out = open_file(c, f->dir, "out.py");
    r = info_of(c, out);
    assert_false(test_json_has(r, "trimTrailingWhitespace"));
    expect_raw(r, "indent", "{\"style\":\"spaces\",\"size\":4}");
    free(r);

    /* a save trims trailing blanks and ends the file with a line end, as one undoable edit */
    char *txt = open_file(c, ws, "t.txt");
    OK(c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"z \"}", txt);
    r = ok(c, "document/save", "{\"documentId\":\"%s\"}", txt);
    expect_bool(r, "success", true);
    free(r);
    expect_content(c, txt, "z a\nb\n");
    char path[256], got[64] = {0};
    snprintf(path, sizeof path, "%s/t.txt", ws);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(got, 1, sizeof got - 1, fp);
    fclose(fp);
    assert_int_equal(n, 6);
    assert_string_equal(got, "z a\nb\n");
    expect_dirty(c, txt, false);
    OK(c, "document/undo", "{\"documentId\":\"%s\"}", txt);
    expect_content(c, txt, "z a  \nb\t");

    free(txt);
    free(out);
    free(gc);
    free(sc);
    free(md);
    free(cc);
    free(py);
    test_server_free(s);
    unsetenv("TMPDIR");
}

/* ----- find and replace ------------------------------------------------------------------------ */

static void test_find(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://f.txt", "\"foo Foo food\\nbar foo\"");
    char *r = ok(f->c, "document/find", "{\"documentId\":\"%s\",\"query\":\"foo\"}", id);
    expect_raw(r, "", "{\"matches\":[" RANGE(0, 0, 0, 3) "," RANGE(0, 4, 0, 7) "," RANGE(0, 8, 0, 11) "," RANGE(
                          1, 4, 1, 7) "],\"total\":4,\"current\":0}");
    free(r);
    r = ok(f->c, "document/find",
           "{\"documentId\":\"%s\",\"query\":\"foo\",\"caseSensitive\":true,\"wholeWord\":true,"
           "\"from\":{\"line\":0,\"column\":1}}",
           id);
    expect_raw(r, "", "{\"matches\":[" RANGE(0, 0, 0, 3) "," RANGE(1, 4, 1, 7) "],\"total\":2,\"current\":1}");
    free(r);
    /* backwards from the end of the first line: the last match before it */
    r = ok(f->c, "document/find",
           "{\"documentId\":\"%s\",\"query\":\"f(o+)\",\"regex\":true,\"backwards\":true,"
           "\"from\":{\"line\":1,\"column\":0},\"limit\":2}",
           id);
    expect_raw(r, "", "{\"matches\":[" RANGE(0, 4, 0, 7) "," RANGE(0, 8, 0, 11) "],\"total\":4,\"current\":1}");
    free(r);
    r = ok(f->c, "document/find", "{\"documentId\":\"%s\",\"query\":\"zzz\"}", id);
    expect_raw(r, "", "{\"matches\":[],\"total\":0}");
    free(r);
    /* empty matches advance: ^ finds each line once */
    r = ok(f->c, "document/find", "{\"documentId\":\"%s\",\"query\":\"^\",\"regex\":true}", id);
    expect_int(r, "total", 2);
    free(r);
    char *e = fails(f->c, -32602, "document/find", "{\"documentId\":\"%s\",\"query\":\"a(b\",\"regex\":true}", id);
    expect_message(e, "query: invalid regular expression at offset 3: missing closing parenthesis");
    e = fails(f->c, -32602, "document/find", "{\"documentId\":\"%s\",\"query\":\"\"}", id);
    expect_message(e, "query: must not be empty");
    e = fails(f->c, -32602, "document/find", "{\"documentId\":\"%s\",\"query\":\"a\",\"limit\":0}", id);
    free(e);
    e = fails(f->c, -32003, "document/find",
              "{\"documentId\":\"%s\",\"query\":\"a\",\"from\":{\"line\":9,\"column\":0}}", id);
    free(e);
    e = fails(f->c, -32001, "document/find", "{\"documentId\":\"doc_nope\",\"query\":\"a\"}");
    free(e);
    /* a pattern that backtracks without end fails instead of holding the server */
    OK(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\"}", id);
    e = fails(f->c, -32602, "document/find", "{\"documentId\":\"%s\",\"query\":\"(a+)+$\\\\d\",\"regex\":true}", id);
    free(e);
    free(id);
}

/* Over 1 MiB the search runs on the pool; the answer is the same. */
static void test_find_large(void **state)
{
    fx *f = *state;
    size_t n = (size_t)3 << 19; /* 1.5 MiB of "x\n" lines, with a needle near the end */
    buf content = BUF_INIT;
    buf_append_str(&content, "{\"uri\":\"memory://big.txt\",\"content\":\"");
    for (size_t i = 0; i < n / 3; i++)
        buf_append(&content, "x\\n", 3);
    buf_append_str(&content, "needle\"}");
    buf_push(&content, '\0');
    char *r = ok(f->c, "document/open", "%s", content.data);
    buf_free(&content);
    char *id = test_json_string(r, "documentId");
    free(r);
    r = ok(f->c, "document/find", "{\"documentId\":\"%s\",\"query\":\"NEEDLE\"}", id);
    char want[256];
    snprintf(want, sizeof want, "{\"matches\":[{\"start\":{\"line\":%zu,\"column\":0},\"end\":{\"line\":%zu,"
             "\"column\":6}}],\"total\":1,\"current\":0}", n / 3, n / 3);
    expect_raw(r, "", want);
    free(r);
    /* everything matches: the total is counted up to its bound, the list up to limit */
    r = ok(f->c, "document/find", "{\"documentId\":\"%s\",\"query\":\"x\",\"limit\":3}", id);
    expect_int(r, "total", 100000);
    expect_bool(r, "totalCapped", true);
    assert_int_equal(test_json_length(r, "matches"), 3);
    free(r);
    free(id);
}

static void test_replace(void **state)
{
    fx *f = *state;
    const char *text = "a1 b22 a3\nc4";
    char *id = open_doc(f->c, "memory://r.txt", "\"a1 b22 a3\\nc4\"");
    test_client *c2 = second_client(f, "memory://r.txt");
    set_cursors(c2, id, "[" AT(1, 2) "]");
    set_cursors(f->c, id, "[" AT(0, 1) "]");
    /* the next match from the cursor, then the caret after it */
    char *r = ok(f->c, "document/replace",
                 "{\"documentId\":\"%s\",\"query\":\"a\\\\d\",\"regex\":true,\"replacement\":\"<$0>\"}", id);
    expect_bool(r, "success", true);
    expect_int(r, "replaced", 1);
    expect_raw(r, "cursors", "[" AT(0, 11) "]");
    free(r);
    expect_content(f->c, id, "a1 b22 <a3>\nc4");
    expect_one_step(f->c, id, text);
    /* every match, groups, in one step */
    r = ok(f->c, "document/replace",
           "{\"documentId\":\"%s\",\"query\":\"([a-z])(\\\\d+)\",\"regex\":true,\"replacement\":\"$2${1}$$\","
           "\"all\":true}",
           id);
    expect_int(r, "replaced", 4);
    free(r);
    expect_content(f->c, id, "1a$ 22b$ <3a$>\n4c$");
    expect_cursors(c2, id, "[" AT(1, 3) "]");
    OK(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_content(f->c, id, "a1 b22 <a3>\nc4");
    /* literal: $ is itself; a range bounds it */
    r = ok(f->c, "document/replace",
           "{\"documentId\":\"%s\",\"query\":\"A\",\"replacement\":\"$1\",\"all\":true,\"range\":" RANGE(0, 0, 0, 5) "}",
           id);
    expect_int(r, "replaced", 1);
    free(r);
    expect_content(f->c, id, "$11 b22 <a3>\nc4");
    /* nothing found: no step */
    r = ok(f->c, "document/replace", "{\"documentId\":\"%s\",\"query\":\"zz\",\"replacement\":\"y\"}", id);
    expect_int(r, "replaced", 0);
    free(r);
    char *e = fails(f->c, -32602, "document/replace",
                    "{\"documentId\":\"%s\",\"query\":\"(\",\"regex\":true,\"replacement\":\"\"}", id);
    expect_message(e, "query: invalid regular expression at offset 1: missing closing parenthesis");
    e = fails(f->c, -32602, "document/replace", "{\"documentId\":\"%s\",\"query\":\"a\"}", id);
    free(e);
    /* without a query it is still the replacement of a range */
    OK(f->c, "document/replace", "{\"documentId\":\"%s\",\"range\":" RANGE(1, 0, 1, 2) ",\"text\":\"Z\"}", id);
    expect_content(f->c, id, "$11 b22 <a3>\nZ");
    test_client_disconnect(c2);
    free(id);
}

/* ----- refusals ------------------------------------------------------------------------------------- */

static void test_refusals(void **state)
{
    fx *f = *state;
    char *r = ok(f->c, "document/indent", "{\"documentId\":\"doc_nope\"}");
    expect_bool(r, "success", false);
    expect_str(r, "error", "Document not found");
    free(r);
    char *id = open_doc(f->c, "memory://ro.txt", "\"a\"");
    OK(f->c, "document/close", "{\"documentId\":\"%s\"}", id);
    free(id);
    r = ok(f->c, "document/open", "{\"uri\":\"memory://ro2.txt\",\"content\":\"a\",\"readOnly\":true}");
    id = test_json_string(r, "documentId");
    free(r);
    r = ok(f->c, "document/newline", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", false);
    expect_str(r, "error", "Document is read-only");
    free(r);
    expect_content(f->c, id, "a");
    char *e = fails(f->c, -32602, "document/indent", "{}");
    free(e);
    free(id);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_indent_outdent), T(test_indent_with_tabs_and_a_caret),
        T(test_newline),        T(test_duplicate_lines),
        T(test_move_lines),     T(test_delete_word),
        T(test_toggle_comment), T(test_indent_detected),
        T(test_graphemes),      T(test_editorconfig),   T(test_find),           T(test_find_large),
        T(test_replace),        T(test_refusals),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
