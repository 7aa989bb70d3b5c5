/* The file service's glob matcher: syntax, segments, dot files, pruning, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "file/glob.h"
#include "file/interface.h"

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
    /* a globstar at the end goes on below whatever it has taken */
    assert_true(below("**", "src"));
    assert_true(below("src/**", "src/a"));
    assert_true(below("src/**", "src/a/b"));
    assert_false(below("src/**", "lib"));
    assert_false(below("**", "src/.git"));
    assert_true(matches("src/**", 0, "src/a/b/c.txt"));
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

/* "{" n times, "a", "}" n times; or n "{a}" one after another; or n "a/" then "*". */
static char *nested_braces(size_t n)
{
    char *s = malloc(2 * n + 2);
    memset(s, '{', n);
    s[n] = 'a';
    memset(s + n + 1, '}', n);
    s[2 * n + 1] = '\0';
    return s;
}

static char *repeated(const char *unit, size_t n, const char *tail)
{
    size_t u = strlen(unit), t = strlen(tail);
    char *s = malloc(u * n + t + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * u, unit, u);
    memcpy(s + u * n, tail, t + 1);
    return s;
}

static void test_limits(void **state)
{
    file__glob *g = NULL;
    ecp_error err;
    /* braces nest 32 deep, not 33 */
    char *p = nested_braces(FILE__GLOB_MAX_BRACE_DEPTH);
    assert_true(matches(p, 0, "a"));
    free(p);
    p = nested_braces(FILE__GLOB_MAX_BRACE_DEPTH + 1);
    assert_int_equal(file__glob_compile(p, 0, &g, &err), ECP_EINVAL);
    assert_null(g);
    assert_string_equal(err.message, "pattern nests braces deeper than 32 (offset 32)");
    free(p);
    p = nested_braces(100000);
    assert_int_equal(file__glob_compile(p, 0, &g, &err), ECP_EINVAL);
    free(p);

    /* 256 groups one after another, not 257 */
    p = repeated("{a}", FILE__GLOB_MAX_BRACE_GROUPS, "");
    char *path = repeated("a", FILE__GLOB_MAX_BRACE_GROUPS, "");
    assert_true(matches(p, 0, path));
    free(p);
    free(path);
    p = repeated("{a}", FILE__GLOB_MAX_BRACE_GROUPS + 1, "");
    assert_int_equal(file__glob_compile(p, 0, &g, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "more than 256 brace groups"));
    free(p);

    /* 1024 segments, not 1025; matching them takes one frame each */
    p = repeated("a/", FILE__GLOB_MAX_SEGMENTS - 1, "*");
    path = repeated("a/", FILE__GLOB_MAX_SEGMENTS - 1, "b");
    assert_true(matches(p, 0, path));
    path[strlen(path) - 2] = 'c';
    assert_false(matches(p, 0, path));
    free(path);
    free(p);
    p = repeated("a/", FILE__GLOB_MAX_SEGMENTS, "*");
    assert_int_equal(file__glob_compile(p, 0, &g, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "more than 1024 path segments"));
    free(p);

    /* expansion that would write more than its budget stops early */
    char *long_alt = repeated("x", 1 << 16, "");
    size_t n = strlen(long_alt);
    p = malloc(4 * (n + 1) + 64);
    sprintf(p, "{%s,a}{%s,b}{%s,c}{%s,d}{a,b}{a,b}{a,b}{a,b}", long_alt, long_alt, long_alt, long_alt);
    assert_int_equal(file__glob_compile(p, 0, &g, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "pattern expands to more than"));
    free(p);
    free(long_alt);

    /* the alternatives still come out in order, the first first */
    assert_true(matches("{a,b{c,d}}/x", 0, "bd/x"));
    assert_true(matches("{a,b{c,d}}/x", 0, "a/x"));
    assert_false(matches("{a,b{c,d}}/x", 0, "b/x"));
    assert_int_equal(file_glob_check("{{a}}", &err), 0);
    assert_int_equal(file_glob_check("{{a}", &err), ECP_EINVAL);
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
        cmocka_unit_test(test_limits),
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
