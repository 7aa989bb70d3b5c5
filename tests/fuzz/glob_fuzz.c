/* Fuzzing the file service's glob compiler and matcher.
 *
 * An input is a flags byte, then a pattern, then paths, separated by NUL
 * bytes. The pattern is compiled with the flags the byte picks; a refused
 * pattern must say why in a message of its own. A compiled one is matched
 * against each path, and the pruning a walker relies on must hold: when a path
 * matches, file__glob_could_match_below is true for each directory above it,
 * so no walk skips a directory that holds a match. The segment matcher is
 * also run on the pattern and each path as they are. Stack and time are what
 * an attacker would aim at: the target runs under ASan's stack checks, and
 * libFuzzer's timeout catches a compile or match that takes too long. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "file/glob.h"
#include "file/interface.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0] & (FILE__GLOB_DOT | FILE__GLOB_BASENAME);
    char *text = malloc(size);
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    const char *pattern = text;
    size_t plen = strlen(pattern);

    file__glob *g = NULL;
    ecp_error err = {0};
    int rc = file__glob_compile(pattern, flags, &g, &err);
    ecp_error check_err = {0};
    int check_rc = file_glob_check(pattern, &check_err);
    if (rc != 0) {
        REQUIRE(rc == ECP_EINVAL && g == NULL && err.message[0]);
        /* the flags change how a pattern matches, never whether it compiles */
        REQUIRE(check_rc == ECP_EINVAL && strcmp(err.message, check_err.message) == 0);
        free(text);
        return 0;
    }
    REQUIRE(g != NULL && check_rc == 0);

    /* each path after the pattern, up to the end of the input */
    const char *end = text + size - 1;
    for (const char *path = pattern + plen + 1; path < end; path += strlen(path) + 1) {
        size_t len = strlen(path);
        bool matched = file__glob_match(g, path, len);
        (void)file__glob_match_segment(pattern, plen, path, len, (flags & FILE__GLOB_DOT) != 0);
        (void)file__glob_could_match_below(g, path, len);
        if (!matched)
            continue;
        /* each directory above the path's last name: a '/' with a name before it and one after it */
        for (size_t i = 1; i < len; i++)
            if (path[i] == '/' && path[i - 1] != '/' && i + strspn(path + i, "/") < len)
                REQUIRE(file__glob_could_match_below(g, path, i));
    }
    file__glob_free(g);
    free(text);
    return 0;
}
