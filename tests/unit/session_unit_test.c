/* The session service's pure parts, without a server: JSONC to JSON, the
 * `when` grammar, canonical keys, ISO times, the schema table and the
 * themes' data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static char *strip(const char *text)
{
    buf out = BUF_INIT;
    session__jsonc_strip(text, strlen(text), &out);
    assert_int_equal(out.len, strlen(text)); /* offsets keep their meaning */
    return buf_detach(&out);
}

static void test_jsonc_comments_and_trailing_commas(void **state)
{
    char *s = strip("// top\n{\"a\": 1, /* in \n between */ \"b\": [1, 2,],\n}");
    json_doc doc = {0};
    assert_int_equal(json_doc_parse(&doc, s, strlen(s), NULL), 0);
    int64_t v;
    assert_true(json_int64(&doc, json_get(&doc, json_root(&doc), "a"), &v));
    assert_int_equal(v, 1);
    assert_int_equal(json_length(&doc, json_get(&doc, json_root(&doc), "b")), 2);
    json_doc_free(&doc);
    /* the line count is kept, so errors still point at the right line */
    size_t lines = 0;
    for (char *c = s; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 3);
    free(s);

    /* comment markers and commas inside strings are text */
    s = strip("{\"url\": \"http://x/*y*/\", \"t\": \",]\"}");
    assert_string_equal(s, "{\"url\": \"http://x/*y*/\", \"t\": \",]\"}");
    free(s);
    s = strip("{\"q\": \"a\\\"//b\",}");
    assert_string_equal(s, "{\"q\": \"a\\\"//b\" }");
    free(s);
    s = strip("\xEF\xBB\xBF{}");
    assert_string_equal(s, "   {}");
    free(s);
}

static void test_canonical_keys(void **state)
{
    struct {
        const char *in, *out;
    } cases[] = {
        {"ctrl+s", "ctrl+s"},           {"Shift+Ctrl+P", "ctrl+shift+p"}, {"meta+alt+x", "alt+meta+x"},
        {"Cmd+Option+Left", "alt+meta+left"}, {"ctrl++", "ctrl++"},        {"+", "+"},
        {"F12", "f12"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        assert_int_equal(session_key_canonical(cases[i].in, &out, NULL), 0);
        assert_string_equal(out, cases[i].out);
        free(out);
    }
    char *out = NULL;
    ecp_error err;
    assert_int_equal(session_key_canonical("ctrl+", &out, &err), ECP_EINVAL);
    assert_int_equal(session_key_canonical("", &out, &err), ECP_EINVAL);
    assert_int_equal(session_key_canonical("hyper+x", &out, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "'hyper' is not a modifier"));
}

static void test_when_syntax(void **state)
{
    const char *good[] = {
        "a", "!a", "a && b", "a || b && !c", "(a || b) && c", "lang == 'c'", "lang != \"c++\"",
        "!(a == x) || b", "editorTextFocus && resourceExtname == .md", "true", "  a  ",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(session_when_check(good[i], NULL), 0);
    const char *bad[] = {"a &&", "(a", "a)", "== b", "a == ", "'x'", "a & b", "a || || b", "lang == 'c", "!"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ecp_error err = {0};
        if (session_when_check(bad[i], &err) != ECP_EINVAL)
            fail_msg("'%s' should not parse", bad[i]);
        assert_non_null(strstr(err.message, "at offset"));
    }
}

/* n opening parentheses, then n negations, then a name, then the n closing parentheses. */
static char *nested_when(size_t parens, size_t negations)
{
    char *s = malloc(2 * parens + negations + 2);
    memset(s, '(', parens);
    memset(s + parens, '!', negations);
    s[parens + negations] = 'a';
    memset(s + parens + negations + 1, ')', parens);
    s[2 * parens + negations + 1] = '\0';
    return s;
}

static void test_when_depth_limit(void **state)
{
    /* 64 deep, '(' and '!' together, is fine; 65 is refused, either way */
    const size_t cases[][2] = {{64, 0}, {0, 64}, {32, 32}, {65, 0}, {0, 65}, {33, 32}, {50000, 0}, {0, 100000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *when = nested_when(cases[i][0], cases[i][1]);
        ecp_error err = {0};
        int rc = session_when_check(when, &err);
        if (cases[i][0] + cases[i][1] <= 64) {
            if (rc != 0)
                fail_msg("%zu '(' and %zu '!' should parse: %s", cases[i][0], cases[i][1], err.message);
        } else {
            assert_int_equal(rc, ECP_EINVAL);
            assert_non_null(strstr(err.message, "nests deeper than 64"));
            assert_true(strlen(err.message) < 200);
        }
        free(when);
    }
    /* unclosed parentheses past the limit are refused for their depth, not their end */
    char *open = malloc(50001);
    memset(open, '(', 50000);
    open[50000] = '\0';
    ecp_error err = {0};
    assert_int_equal(session_when_check(open, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "nests deeper than 64"));
    free(open);
    /* depth is nesting, not count: many groups side by side are fine */
    buf wide = BUF_INIT;
    for (int i = 0; i < 1000; i++)
        buf_appendf(&wide, "%s(!a)", i ? " && " : "");
    assert_int_equal(session_when_check(wide.data, NULL), 0);
    buf_free(&wide);
}

static void test_iso_times(void **state)
{
    int64_t ms;
    assert_true(session_time_parse_iso("2001-02-03T04:05:06Z", &ms));
    assert_int_equal(ms, 981173106000);
    assert_true(session_time_parse_iso("2001-02-03T04:05:06.789Z", &ms));
    assert_int_equal(ms, 981173106789);
    assert_true(session_time_parse_iso("2001-02-03T05:05:06+01:00", &ms));
    assert_int_equal(ms, 981173106000);
    assert_true(session_time_parse_iso("2001-02-03", &ms));
    assert_int_equal(ms, 981158400000);
    char out[32];
    session_time_iso(out, 981173106789);
    assert_string_equal(out, "2001-02-03T04:05:06.789Z");
    assert_false(session_time_parse_iso("soon", &ms));
    assert_false(session_time_parse_iso("2001-13-03", &ms));
    assert_false(session_time_parse_iso("2001-02-03T04:05:06Zjunk", &ms));
}

static void test_schema_is_whole(void **state)
{
    size_t count;
    const session_setting_schema *rows = session_settings_schema(&count);
    /* the catalogue's 79 keys, then the extensions */
    assert_int_equal(count, 79 + 10);
    size_t reported = 0;
    for (size_t i = 0; i < count; i++) {
        if (rows[i].extension != (i >= 79))
            fail_msg("%s: the catalogue's keys come first, the extensions after", rows[i].key);
        json_doc doc = {0};
        if (json_doc_parse(&doc, rows[i].default_json, strlen(rows[i].default_json), NULL) != 0)
            fail_msg("%s: default is not JSON", rows[i].key);
        json_doc_free(&doc);
        for (size_t j = 0; j < i; j++)
            if (strcmp(rows[i].key, rows[j].key) == 0)
                fail_msg("%s twice", rows[i].key);
        reported += rows[i].reported_by_default;
    }
    assert_int_equal(reported, 70 + 9); /* agent.model has no value until set */
    assert_true(session_setting_find("agent.maxTurns")->integer);
    assert_false(session_setting_find("editor.fontSize")->extension);
    assert_non_null(session_setting_find("lsp.hover.enabled"));
    assert_null(session_setting_find("lsp.hover"));
}

static void test_themes_are_complete(void **state)
{
    size_t count;
    const session_theme *themes = session_themes(&count);
    assert_int_equal(count, 8);
    for (size_t i = 0; i < count; i++) {
        for (size_t c = 0; c < SESSION_THEME_COLOR_COUNT; c++)
            if (!themes[i].colors[c] || themes[i].colors[c][0] != '#' || strlen(themes[i].colors[c]) != 7)
                fail_msg("%s: colour %s", themes[i].id, themes[i].color_names[c]);
        bool keyword = false;
        for (size_t t = 0; t < themes[i].token_color_count; t++)
            keyword |= strcmp(themes[i].token_colors[t].capture, "keyword") == 0;
        assert_true(keyword);
    }
    assert_string_equal(session_theme_find("one-light")->type, "light");
    assert_null(session_theme_find("solarized"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonc_comments_and_trailing_commas),
        cmocka_unit_test(test_canonical_keys),
        cmocka_unit_test(test_when_syntax),
        cmocka_unit_test(test_when_depth_limit),
        cmocka_unit_test(test_iso_times),
        cmocka_unit_test(test_schema_is_whole),
        cmocka_unit_test(test_themes_are_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
