/* The file service's glob matcher: syntax, segments, dot files, pruning, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "file/glob.h"

static bool matches(const char *pattern, unsigned flags, const char *path)
{
    file__glob *g = NULL;
    ecp_error err;
    int rc = file__glob_compile(pattern, flags, &g, &err);
    if (rc != 0)
        fail_msg("pattern %s did not compile: %s", pattern, err.message);
    bool m = file__glob_match(g, path, strlen(path));
    file__glob_free(g);
    return m;
}

static bool below(const char *pattern, const char *dir)
{
    file__glob *g = NULL;
    assert_int_equal(file__glob_compile(pattern, 0, &g, NULL), 0);
    bool m = file__glob_could_match_below(g, dir, strlen(dir));
    file__glob_free(g);
    return m;
}

static void test_star_and_question(void **state)
{
    assert_true(matches("*.c", 0, "main.c"));
    assert_true(matches("*.c", 0, ".c") == false); /* leading dot needs a literal dot */
    assert_false(matches("*.c", 0, "src/main.c"));
    assert_false(matches("*.c", 0, "main.h"));
    assert_true(matches("m??n.c", 0, "main.c"));
    assert_false(matches("m?n.c", 0, "main.c"));
    assert_true(matches("*", 0, "anything"));
    assert_true(matches("a*b*c", 0, "aXXbYYc"));
    assert_false(matches("a*b*c", 0, "aXXbYY"));
    assert_true(matches("*a*a*a*a*a*b", 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
    assert_false(matches("*a*a*a*a*a*b", 0, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
    /* '?' is one code point, not one byte */
    assert_true(matches("caf?.txt", 0, "caf\xc3\xa9.txt"));
    assert_false(matches("caf??.txt", 0, "caf\xc3\xa9.txt"));
}

static void test_globstar(void **state)
{
    assert_true(matches("**/*.c", 0, "main.c"));
    assert_true(matches("**/*.c", 0, "a/b/c/main.c"));
    assert_true(matches("src/**/*.c", 0, "src/main.c"));
    assert_true(matches("src/**/*.c", 0, "src/x/y/main.c"));
    assert_false(matches("src/**/*.c", 0, "lib/x/main.c"));
    assert_true(matches("src/**", 0, "src/a/b"));
    assert_true(matches("src/**", 0, "src"));
    assert_true(matches("**/node_modules", FILE__GLOB_DOT, "a/b/node_modules"));
    assert_true(matches("a/**/b/**/c", 0, "a/x/b/y/z/c"));
    assert_false(matches("a/**/b/**/c", 0, "a/x/y/z/c"));
    assert_true(matches("**/**/**/x", 0, "x"));
}

static void test_dot_files(void **state)
{
    assert_false(matches("**/*.js", 0, ".hidden/a.js"));
    assert_false(matches("*", 0, ".env"));
    assert_true(matches(".*", 0, ".env"));
    assert_true(matches("**/.git", 0, "a/.git"));
    assert_true(matches("**/*.js", FILE__GLOB_DOT, ".hidden/a.js"));
    assert_true(matches("*", FILE__GLOB_DOT, ".env"));
}

static void test_classes(void **state)
{
    assert_true(matches("[abc].txt", 0, "b.txt"));
    assert_false(matches("[abc].txt", 0, "d.txt"));
    assert_true(matches("[a-c]x", 0, "bx"));
    assert_false(matches("[!a-c]x", 0, "bx"));
    assert_true(matches("[!a-c]x", 0, "dx"));
    assert_true(matches("[^a-c]x", 0, "dx"));
    assert_true(matches("[]]", 0, "]"));
    assert_true(matches("[\xc3\xa0-\xc3\xbf]", 0, "\xc3\xa9"));
    assert_true(matches("file[0-9][0-9].log", 0, "file42.log"));
    assert_false(matches("file[0-9][0-9].log", 0, "file4x.log"));
}

static void test_braces(void **state)
{
    assert_true(matches("*.{c,h}", 0, "a.c"));
    assert_true(matches("*.{c,h}", 0, "a.h"));
    assert_false(matches("*.{c,h}", 0, "a.o"));
    assert_true(matches("{src,lib}/**/*.c", 0, "lib/x/a.c"));
    assert_true(matches("{a/b,c}/d", 0, "a/b/d"));
    assert_true(matches("{a,{b,c}}x", 0, "cx"));
    assert_true(matches("{single}", 0, "single"));
    assert_true(matches("a{,b}c", 0, "ac"));
    assert_true(matches("a{,b}c", 0, "abc"));
}

static void test_escapes(void **state)
{
    assert_true(matches("\\*.c", 0, "*.c"));
    assert_false(matches("\\*.c", 0, "a.c"));
    assert_true(matches("a\\?b", 0, "a?b"));
    assert_true(matches("\\[x\\]", 0, "[x]"));
    assert_true(matches("x\\{a,b\\}", 0, "x{a,b}"));
}

static void test_basename_mode(void **state)
{
    assert_true(matches("*.min.js", FILE__GLOB_BASENAME, "dist/app.min.js"));
    assert_true(matches("build", FILE__GLOB_BASENAME, "a/b/build"));
    assert_false(matches("src/*.c", FILE__GLOB_BASENAME, "x/src/a.c"));
    assert_true(matches("src/*.c", FILE__GLOB_BASENAME, "src/a.c"));
}

static void test_pruning(void **state)
{
    assert_true(below("src/**/*.c", ""));
    assert_true(below("src/**/*.c", "src"));
    assert_true(below("src/**/*.c", "src/deep/er"));
    assert_false(below("src/**/*.c", "lib"));
    assert_false(below("*.c", "sub"));
    assert_true(below("*/*.c", "sub"));
    assert_false(below("*/*.c", "sub/deeper"));
    assert_false(below("**/*.c", ".git")); /* ** does not enter dot directories */
}

static void test_errors(void **state)
{
    file__glob *g = NULL;
    ecp_error err;
    assert_int_equal(file__glob_compile("src/[abc", 0, &g, &err), ECP_EINVAL);
    assert_null(g);
    assert_string_equal(err.message, "unclosed '[' at offset 4");
    assert_int_equal(file__glob_compile("{a,b", 0, &g, &err), ECP_EINVAL);
    assert_string_equal(err.message, "unclosed '{' at offset 0");
    assert_int_equal(file__glob_compile("abc\\", 0, &g, &err), ECP_EINVAL);
    assert_string_equal(err.message, "trailing backslash at offset 3");
    /* 2^11 alternatives is more than the 1024 allowed */
    assert_int_equal(file__glob_compile("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", 0, &g, &err),
                     ECP_EINVAL);
    assert_non_null(strstr(err.message, "more than 1024 alternatives"));
}

static void test_literal_detection(void **state)
{
    assert_true(file__glob_is_literal("node_modules"));
    assert_false(file__glob_is_literal("*.c"));
    assert_false(file__glob_is_literal("a{b,c}"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_star_and_question),
        cmocka_unit_test(test_globstar),
        cmocka_unit_test(test_dot_files),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_braces),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_basename_mode),
        cmocka_unit_test(test_pruning),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_literal_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
