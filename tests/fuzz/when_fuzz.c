/* Fuzzing key bindings' `when` clauses and keys.
 *
 * An input is a clause, then context entries, separated by NUL bytes: each
 * entry "name=value" is a string, "name" alone the boolean true and "!name"
 * false. A clause that checks must evaluate, with any context, without an
 * error; one that does not must be refused the same way by the evaluation,
 * with a message that names the problem and stays short. The clause is also
 * read as a key, which must come out canonical: reading the canonical form
 * again gives it back unchanged. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define MAX_CONTEXT 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *when = text;

    session_context_value ctx[MAX_CONTEXT];
    char *names[MAX_CONTEXT];
    size_t n = 0;
    for (const char *e = when + strlen(when) + 1; e < text + size && n < MAX_CONTEXT; e += strlen(e) + 1) {
        const char *eq = strchr(e, '=');
        bool negated = e[0] == '!';
        names[n] = eq ? strndup(e, (size_t)(eq - e)) : strdup(e + negated);
        ctx[n] = (session_context_value){names[n], eq ? eq + 1 : NULL, !negated};
        n++;
    }

    ecp_error check_err = {0}, eval_err = {0};
    int checked = session_when_check(when, &check_err);
    bool value = false;
    int evaluated = session__when_eval(when, ctx, n, &value, &eval_err);
    if (!*when) {
        REQUIRE(checked == 0);
    } else if (checked == 0) {
        REQUIRE(evaluated == 0);
    } else {
        REQUIRE(checked == ECP_EINVAL && evaluated == ECP_EINVAL);
        REQUIRE(strcmp(check_err.message, eval_err.message) == 0);
        REQUIRE(strstr(check_err.message, "at offset") != NULL);
    }

    char *key = NULL;
    ecp_error key_err = {0};
    if (session_key_canonical(when, &key, &key_err) == 0) {
        char *again = NULL;
        REQUIRE(session_key_canonical(key, &again, NULL) == 0);
        REQUIRE(strcmp(key, again) == 0);
        free(again);
        free(key);
    } else {
        REQUIRE(key_err.message[0]);
    }

    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(text);
    return 0;
}
