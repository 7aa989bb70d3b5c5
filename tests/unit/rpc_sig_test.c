/* The params signature compiler and checker (core/rpc_sig.h). */
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

static ecp_sig compile_ok(const char *text)
{
    ecp_sig sig;
    ecp_error err = {0};
    if (ecp_sig_compile(text, &sig, &err) != 0)
        fail_msg("%s: %s", text, err.message);
    return sig;
}

/* NULL when params fit, else the -32602 message (static buffer). */
static const char *check(const char *signature, const char *params)
{
    static char message[400];
    ecp_sig sig = compile_ok(signature);
    json_doc doc;
    assert_int_equal(json_doc_parse(&doc, params, strlen(params), NULL), 0);
    bool ok = ecp_sig_check(&sig, &doc, json_root(&doc), message, sizeof message);
    json_doc_free(&doc);
    ecp_sig_free(&sig);
    return ok ? NULL : message;
}

#define FITS(sig, params) assert_null(check(sig, params))
#define REFUSED(sig, params, says) assert_string_equal(check(sig, params), says)

static void test_scalars(void **state)
{
    (void)state;
    const char *sig = "{s: string, i: integer, n: number, b: boolean, o: object, a: any}";
    FITS(sig, "{\"s\":\"x\",\"i\":3,\"n\":2.5,\"b\":false,\"o\":{\"k\":[1]},\"a\":[1,{}]}");
    FITS(sig, "{\"s\":\"\",\"i\":3.0,\"n\":2,\"b\":true,\"o\":{},\"a\":null}");
    REFUSED(sig, "{\"s\":1,\"i\":3,\"n\":2,\"b\":true,\"o\":{},\"a\":1}", "s: expected string, got number");
    REFUSED(sig, "{\"s\":\"x\",\"i\":3.5,\"n\":2,\"b\":true,\"o\":{},\"a\":1}", "i: expected integer, got number");
    REFUSED(sig, "{\"s\":\"x\",\"i\":\"3\",\"n\":2,\"b\":true,\"o\":{},\"a\":1}", "i: expected integer, got string");
    REFUSED(sig, "{\"s\":\"x\",\"i\":3,\"n\":\"2\",\"b\":true,\"o\":{},\"a\":1}", "n: expected number, got string");
    REFUSED(sig, "{\"s\":\"x\",\"i\":3,\"n\":2,\"b\":0,\"o\":{},\"a\":1}", "b: expected boolean, got number");
    REFUSED(sig, "{\"s\":\"x\",\"i\":3,\"n\":2,\"b\":true,\"o\":[],\"a\":1}", "o: expected object, got array");
    REFUSED(sig, "{\"s\":\"x\",\"i\":3,\"n\":2,\"b\":true,\"o\":{}}", "a: required (any JSON value, null included)");
}

static void test_required_optional_and_null(void **state)
{
    (void)state;
    const char *sig = "{documentId: string, force?: boolean}";
    FITS(sig, "{\"documentId\":\"d\"}");
    FITS(sig, "{\"documentId\":\"d\",\"force\":null}");
    FITS(sig, "{\"documentId\":\"d\",\"extra\":[1,2,3]}"); /* unknown fields stay allowed */
    REFUSED(sig, "{}", "documentId: required string");
    REFUSED(sig, "{\"documentId\":null}", "documentId: required string");
    REFUSED(sig, "{\"documentId\":\"d\",\"force\":\"yes\"}", "force: expected boolean, got string");
    /* absent params, and params that are not an object, have no fields */
    REFUSED(sig, "[\"d\"]", "documentId: required string");
    ecp_sig s = compile_ok(sig);
    char message[200];
    assert_false(ecp_sig_check(&s, NULL, JSON_NO_REF, message, sizeof message));
    assert_string_equal(message, "documentId: required string");
    ecp_sig_free(&s);
    FITS("{}", "{\"anything\":1}");
    FITS("any", "[1,2]");
    FITS("{force?: boolean}", "{}");
}

static void test_nesting_arrays_and_named_shapes(void **state)
{
    (void)state;
    const char *sig = "{documentId: string, edits: {range: Range, text: string}[]}";
    FITS(sig, "{\"documentId\":\"d\",\"edits\":[]}");
    FITS(sig, "{\"documentId\":\"d\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":1},"
              "\"end\":{\"line\":2,\"column\":0}},\"text\":\"\"}]}");
    REFUSED(sig, "{\"documentId\":\"d\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":1},"
                 "\"end\":{\"line\":2,\"column\":0}},\"text\":\"\"},5]}",
            "edits[1]: expected object, got number");
    REFUSED(sig, "{\"documentId\":\"d\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":1},"
                 "\"end\":{\"line\":\"2\",\"column\":0}},\"text\":\"\"}]}",
            "edits[0].range.end.line: expected integer, got string");
    REFUSED(sig, "{\"documentId\":\"d\",\"edits\":[{\"range\":{\"start\":{\"line\":0}}}]}",
            "edits[0].range.start.column: required integer");
    REFUSED(sig, "{\"documentId\":\"d\",\"edits\":{}}", "edits: expected array, got object");
    REFUSED("{c: Cursor[]}", "{\"c\":[{\"position\":{\"line\":0,\"column\":0},\"selection\":{\"anchor\":1}}]}",
            "c[0].selection.anchor: expected object, got number");
    REFUSED("{m: integer[][]}", "{\"m\":[[1],[2,\"x\"]]}", "m[1][1]: expected integer, got string");
    FITS("{m: integer[][]}", "{\"m\":[[1],[2,3],[]]}");
}

static void test_maps_unions_and_literals(void **state)
{
    (void)state;
    FITS("{env?: {[name]: string}}", "{\"env\":{\"A\":\"1\",\"B\":\"\"}}");
    REFUSED("{env?: {[name: string]: string}}", "{\"env\":{\"A\":\"1\",\"B\":2}}", "env.B: expected string, got number");
    const char *sig = "{include?: string|string[]}";
    FITS(sig, "{\"include\":\"*.c\"}");
    FITS(sig, "{\"include\":[\"*.c\"]}");
    REFUSED(sig, "{\"include\":3}", "include: expected string or array, got number");
    REFUSED(sig, "{\"include\":[\"a\",3]}", "include[1]: expected string, got number");
    const char *enumerated = "{direction: \"up\"|\"down\"|\"left\"|\"right\"}";
    FITS(enumerated, "{\"direction\":\"left\"}");
    REFUSED(enumerated, "{\"direction\":\"sideways\"}", "direction: must be up, down, left or right, got \"sideways\"");
    REFUSED(enumerated, "{\"direction\":1}", "direction: expected string, got number");
    REFUSED(enumerated, "{}", "direction: required string");
    const char *ssl = "{ssl?: boolean|{ca?: string}}";
    FITS(ssl, "{\"ssl\":true}");
    FITS(ssl, "{\"ssl\":{\"ca\":\"x\"}}");
    REFUSED(ssl, "{\"ssl\":{\"ca\":1}}", "ssl.ca: expected string, got number");
    REFUSED(ssl, "{\"ssl\":\"yes\"}", "ssl: expected boolean or object, got string");
}

static void test_limits(void **state)
{
    (void)state;
    const char *sig = "{line: integer >= 0, cols?: integer >= 1 <= 1000, ratio?: number <= 1}";
    FITS(sig, "{\"line\":0,\"cols\":1000,\"ratio\":0.5}");
    REFUSED(sig, "{\"line\":-1}", "line: must be >= 0, got -1");
    REFUSED(sig, "{\"line\":0,\"cols\":0}", "cols: must be >= 1, got 0");
    REFUSED(sig, "{\"line\":0,\"cols\":1001}", "cols: must be <= 1000, got 1001");
    REFUSED(sig, "{\"line\":0,\"ratio\":1.5}", "ratio: must be <= 1, got 1.5");
    REFUSED(sig, "{\"line\":0.5}", "line: expected integer, got number");
    REFUSED("{p: Position}", "{\"p\":{\"line\":3,\"column\":-4}}", "p.column: must be >= 0, got -4");
}

static void test_bad_signatures_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "{", "{a}", "{a: }", "{a: strin}", "{a: string,}", "{a: string b: string}", "{a: string}}",
        "string", "{a: integer >= x}", "{a: [string]}", "{a: string, a: integer}", "{[k]: string",
        "{a: \"unterminated}", "{a: \"\"}", "{a: {[k: integer]: string}}", "{a: string|}", "{a?: }",
        "{a: {b: {c: {d: {e: {f: {g: {h: {i: {j: {k: {l: {m: string}}}}}}}}}}}}}",
        "{a: string[][][][][][][][][][][][][]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ecp_sig sig;
        ecp_error err = {0};
        if (ecp_sig_compile(bad[i], &sig, &err) == 0)
            fail_msg("compiled: %s", bad[i]);
        assert_int_equal(err.status, ECP_EINVAL);
        assert_non_null(strstr(err.message, "params signature"));
        ecp_sig_free(&sig);
    }
    ecp_sig sig;
    ecp_error err;
    assert_int_equal(ecp_sig_compile(NULL, &sig, &err), ECP_EINVAL);
}

/* Params nested far deeper than their signature are walked only as deep as
 * the signature goes, with no recursion whatever the client sends. */
static void test_deep_params(void **state)
{
    (void)state;
    enum { DEPTH = JSON_MAX_DEPTH - 2 };
    buf deep = BUF_INIT;
    for (int i = 0; i < DEPTH; i++)
        buf_push(&deep, '[');
    for (int i = 0; i < DEPTH; i++)
        buf_push(&deep, ']');
    buf params = BUF_INIT;
    buf_appendf(&params, "{\"a\":%s,\"o\":{\"x\":%s},\"l\":[%s]}", deep.data, deep.data, deep.data);
    FITS("{a: any, o: object, l: any[]}", params.data);
    assert_string_equal(check("{a: string}", params.data), "a: expected string, got array");
    assert_string_equal(check("{l: string[][]}", params.data), "l[0][0]: expected string, got array");
    buf_free(&params);
    buf_free(&deep);
}

/* The examples the method tests send: flawless ones fit, and each flaw is
 * refused naming the field it was put in. */
static void test_examples(void **state)
{
    (void)state;
    ecp_sig sig = compile_ok("{documentId: string, edits: {range: Range, text: string}[], group?: boolean, "
                             "env?: {[k]: string}, mode?: \"a\"|\"b\", n?: integer >= 1}");
    for (uint32_t node = 0; node < sig.count; node++) {
        for (int flaw = ECP_SIG_FLAWLESS; flaw <= ECP_SIG_PAST_LIMIT; flaw++) {
            const ecp_sig_node *n = &sig.nodes[node];
            bool applies = flaw == ECP_SIG_FLAWLESS || (flaw == ECP_SIG_OMIT && n->name && !n->optional &&
                                                        n->type != ECP_SIG_LITERAL) ||
                           (flaw == ECP_SIG_MISTYPE && n->type != ECP_SIG_ANY && n->type != ECP_SIG_LITERAL) ||
                           (flaw == ECP_SIG_PAST_LIMIT && (n->has_min || n->has_max));
            if (!applies || (node == sig.root && flaw != ECP_SIG_FLAWLESS))
                continue;
            buf out = BUF_INIT;
            json_writer w;
            jw_init(&w, &out);
            char path[128], message[300];
            ecp_sig_write_example(&sig, node, (ecp_sig_flaw)flaw, &w, path, sizeof path);
            json_doc doc;
            assert_int_equal(json_doc_parse(&doc, out.data, out.len, NULL), 0);
            bool ok = ecp_sig_check(&sig, &doc, json_root(&doc), message, sizeof message);
            if (flaw == ECP_SIG_FLAWLESS) {
                if (!ok)
                    fail_msg("%s: %s", out.data, message);
            } else {
                char want[140];
                snprintf(want, sizeof want, "%s: ", path);
                if (ok || strncmp(message, want, strlen(want)) != 0)
                    fail_msg("flaw %d at %s: %s -> %s", flaw, path, out.data, ok ? "fits" : message);
            }
            json_doc_free(&doc);
            buf_free(&out);
        }
    }
    ecp_sig_free(&sig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_required_optional_and_null),
        cmocka_unit_test(test_nesting_arrays_and_named_shapes),
        cmocka_unit_test(test_maps_unions_and_literals),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_bad_signatures_refused),
        cmocka_unit_test(test_deep_params),
        cmocka_unit_test(test_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
