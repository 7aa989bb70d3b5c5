/* ssh_remote: [user@]host[:path] read as ssh and the remote shell need it,
 * every remote word quoted so the shell gives it back unchanged (checked
 * against a real sh), and $ECP_SSH_OPTIONS' words before --ssh-option's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ssh_remote.h"

static void parse_ok(const char *spec, const char *destination, const char *host, const char *path)
{
    ecp_ssh s;
    ecp_error err;
    assert_int_equal(ecp_ssh_parse(&s, spec, &err), 0);
    assert_string_equal(s.destination, destination);
    assert_string_equal(s.host, host);
    if (path)
        assert_string_equal(s.path, path);
    else
        assert_null(s.path);
    assert_string_equal(s.ecpd, "ecpd");
    ecp_ssh_free(&s);
}

static void test_targets(void **state)
{
    (void)state;
    unsetenv("ECP_SSH_OPTIONS");
    parse_ok("devbox", "devbox", "devbox", NULL);
    parse_ok("me@devbox", "me@devbox", "devbox", NULL);
    parse_ok("me@devbox:/src/a b", "me@devbox", "devbox", "/src/a b");
    parse_ok("devbox:", "devbox", "devbox", NULL);
    parse_ok("devbox:rel/x:y", "devbox", "devbox", "rel/x:y");
    parse_ok("[::1]:/w", "::1", "::1", "/w");
    parse_ok("me@[fe80::1]", "me@fe80::1", "fe80::1", NULL);
    const char *bad[] = {"", ":/w", "@host", "-oProxyCommand=x", "me@-x", "[::1", "[::1]x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ecp_ssh s;
        ecp_error err;
        assert_true(ecp_ssh_parse(&s, bad[i], &err) < 0);
        assert_true(strlen(err.message) > 0);
    }
}

/* Runs sh -c 'printf "%s\n" WORD' with WORD as ecp_ssh_quote writes it. */
static void round_trip(const char *word)
{
    buf command = BUF_INIT;
    buf_append_str(&command, "printf '%s\\n' ");
    ecp_ssh_quote(&command, word);
    char *argv[] = {"sh", "-c", command.data, NULL};
    buf out = BUF_INIT;
    assert_int_equal(ecp_ssh_run(argv, 10000, &out, NULL), 0);
    buf_push(&out, 0);
    size_t n = strlen(word);
    assert_int_equal(out.len, n + 2);
    assert_memory_equal(out.data, word, n);
    buf_free(&out);
    buf_free(&command);
}

static void test_quoting(void **state)
{
    (void)state;
    round_trip("plain");
    round_trip("/tmp/my ws");
    round_trip("$(touch /tmp/never) `id` $HOME ${X}");
    round_trip("it's 'quoted' \"twice\"");
    round_trip("back\\slash; & | > < * ? ~ # !");
    round_trip("line\nbreak\ttab");
    round_trip("");
}

static void test_argv(void **state)
{
    (void)state;
    setenv("ECP_SSH_OPTIONS", " -Fcfg  -p 2222 ", 1);
    ecp_ssh s;
    ecp_error err;
    assert_int_equal(ecp_ssh_parse(&s, "me@h:/w 1", &err), 0);
    ecp_ssh_add_option(&s, "-i/k");
    ecp_ssh_set_ecpd(&s, "/opt/ecpd");
    char **argv = ecp_ssh_stdio_argv(&s, NULL);
    const char *want[] = {"ssh", "-Fcfg", "-p", "2222", "-i/k", "-T", "--", "me@h",
                          "'/opt/ecpd' '--stdio' '--workspace' '/w 1'", NULL};
    for (size_t i = 0; want[i] || argv[i]; i++) {
        assert_non_null(argv[i]);
        assert_non_null(want[i]);
        assert_string_equal(argv[i], want[i]);
    }
    ecp_ssh_argv_free(argv);
    ecp_ssh_free(&s);
    unsetenv("ECP_SSH_OPTIONS");
}

static void test_failure_words(void **state)
{
    (void)state;
    ecp_ssh s;
    ecp_error err;
    assert_int_equal(ecp_ssh_parse(&s, "box:/w", &err), 0);
    char *why = ecp_ssh_failure(&s, ECP_SSH_NOT_FOUND, "bash: line 1: ecpd: command not found\n");
    assert_non_null(strstr(why, "ecpd is not installed on box (or not on its PATH for non-interactive ssh)"));
    assert_non_null(strstr(why, "--ssh-ecpd PATH"));
    free(why);
    why = ecp_ssh_failure(&s, ECP_SSH_FAILED, "ssh: connect to host box port 22: Connection refused\r\n");
    assert_string_equal(why, "ssh: connect to host box port 22: Connection refused");
    free(why);
    why = ecp_ssh_failure(&s, 128 + 9, NULL);
    assert_string_equal(why, "ssh to box was killed by signal 9");
    free(why);
    ecp_ssh_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_quoting),
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_failure_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
