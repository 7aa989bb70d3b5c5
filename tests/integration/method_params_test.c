/* Every method's params signature is enforced, driven from the server's own
 * tables: for each method ecp/methods lists, each required field left out,
 * each field of the wrong type and each limit passed is refused with -32602
 * naming the field, before the handler runs. A new method is covered the day
 * it is registered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "rpc_sig.h"
#include "test_client.h"

static bool flaw_applies(const ecp_sig *sig, uint32_t node, ecp_sig_flaw flaw)
{
    const ecp_sig_node *n = &sig->nodes[node];
    if (node == sig->root || n->type == ECP_SIG_LITERAL)
        return false; /* params that are not an object read as empty; a literal is one of its union's */
    switch (flaw) {
    case ECP_SIG_OMIT: return n->name && !n->optional;
    case ECP_SIG_MISTYPE: return n->type != ECP_SIG_ANY;
    case ECP_SIG_PAST_LIMIT: return n->has_min || n->has_max;
    case ECP_SIG_FLAWLESS: break;
    }
    return false;
}

static const char *const flaw_names[] = {"flawless", "missing", "mistyped", "past its limit"};

static void test_every_method_refuses_bad_params(void **state)
{
    (void)state;
    test_server *srv = test_server_new(NULL);
    test_client *c = test_client_connect(srv);
    char *list = NULL;
    assert_int_equal(test_client_request(c, "ecp/methods", "{}", &list), 0);
    long count = test_json_length(list, "methods");
    assert_true(count > 100);
    size_t checked = 0, methods_with_fields = 0;
    buf failures = BUF_INIT;
    for (long m = 0; m < count; m++) {
        char path[64];
        snprintf(path, sizeof path, "methods[%ld].name", m);
        char *name = test_json_string(list, path);
        snprintf(path, sizeof path, "methods[%ld].params", m);
        char *params = test_json_string(list, path);
        ecp_sig sig;
        ecp_error err = {0};
        if (ecp_sig_compile(params, &sig, &err) != 0)
            fail_msg("%s: %s", name, err.message);
        bool any_field = false;
        for (uint32_t node = 0; node < sig.count; node++) {
            for (int flaw = ECP_SIG_OMIT; flaw <= ECP_SIG_PAST_LIMIT; flaw++) {
                if (!flaw_applies(&sig, node, (ecp_sig_flaw)flaw))
                    continue;
                any_field = true;
                buf sent = BUF_INIT;
                json_writer w;
                jw_init(&w, &sent);
                char field[160], want[170];
                ecp_sig_write_example(&sig, node, (ecp_sig_flaw)flaw, &w, field, sizeof field);
                snprintf(want, sizeof want, "%s: ", field);
                char *out = NULL;
                int code = test_client_request(c, name, sent.data, &out);
                char *message = out ? test_json_string(out, "message") : NULL;
                if (code != -32602 || !message || strncmp(message, want, strlen(want)) != 0)
                    buf_appendf(&failures, "%s %s (%s) -> %d %s\n", name, sent.data, flaw_names[flaw], code,
                                out ? out : "");
                free(message);
                free(out);
                buf_free(&sent);
                checked++;
            }
        }
        methods_with_fields += any_field;
        ecp_sig_free(&sig);
        free(name);
        free(params);
    }
    free(list);
    test_client_disconnect(c);
    test_server_free(srv);
    if (failures.len) {
        fprintf(stderr, "params the signature refuses were let through:\n%s", failures.data);
        fail_msg("some flawed params were not refused");
    }
    buf_free(&failures);
    printf("%zu flawed requests to %zu methods refused\n", checked, methods_with_fields);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_method_refuses_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
