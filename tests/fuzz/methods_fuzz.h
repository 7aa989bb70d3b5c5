/* methods_fuzz.h: what the two files of the methods fuzz target share
 * (methods_fuzz.c, the driver; methods_fuzz_params.c, the params). */
#ifndef ECPD_METHODS_FUZZ_H
#define ECPD_METHODS_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "arena.h"
#include "buf.h"
#include "framing.h"
#include "json.h"
#include "json_writer.h"
#include "rpc_sig.h"
#include "server.h"
#include "uri.h"

#define REQUIRE(cond)                                                                \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "methods_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            dump_session();                                                          \
            __builtin_trap();                                                        \
        }                                                                            \
    } while (0)

#define MAX_CALLS 24
#define MAX_DEPTH 8
#define MAX_POOL 64
#define ANSWER_TIMEOUT_MS 10000
#define LEARN_TRIES 24

/* ----- the learned shape of params ------------------------------------------------- */

typedef enum { T_ANY, T_STRING, T_INTEGER, T_NUMBER, T_BOOLEAN, T_OBJECT, T_ARRAY } shape_type;

typedef struct shape {
    char *key;               /* in the parent object; NULL for an array's element */
    shape_type type;
    struct shape *fields;    /* T_OBJECT: the required fields learned */
    size_t field_count;
    struct shape *element;   /* T_ARRAY: the element's shape, once known */
} shape;

typedef struct method_info {
    char *name;
    uint32_t hash;
    shape params;            /* T_OBJECT */
    char **produces;         /* keys of this method's results */
    size_t produce_count;
    size_t *prelude;         /* methods to call first: they produce what it needs */
    size_t prelude_count;
} method_info;

/* ----- what one input's session holds ---------------------------------------------- */

typedef struct pooled {
    char *key;
    bool is_string;
    char *text;              /* the string, or a number's JSON text */
    size_t len;
} pooled;

typedef struct session {
    server *srv;
    connection *conn;
    framing_decoder output;
    int64_t next_id;
    uint8_t *answers;        /* answers[id]: how many responses carried that id */
    size_t unanswered;       /* requests sent and not answered yet */
    size_t answers_cap;
    pooled pool[MAX_POOL];
    size_t pool_count, pool_next;
    bool learning;
    char **result_keys;      /* learning: the keys of the last result */
    size_t result_key_count;
    int last_code;           /* the last response's error code, 0 for a result */
    buf last_result;         /* the last result's JSON text */
    char *last_message;      /* the last error's message */
    buf trace;               /* the calls so far, for a failure's report */
} session;

typedef struct input {
    const uint8_t *data;
    size_t size, at;
} input;

/* ----- the target's state: made once, by LLVMFuzzerInitialize ----------------------- */

struct methods_fuzz_state {
    uv_loop_t loop;
    uv_timer_t tick;
    char root[PATH_MAX];     /* the private directory */
    char ws[PATH_MAX];       /* root/ws: the workspace and working directory */
    char ws_real[PATH_MAX];  /* the same, through symlinks (/tmp may be one) */
    char data[PATH_MAX];     /* root/data */
    FILE *null_log;
    bool sandboxed;
    method_info *methods;
    size_t method_count;
    size_t *ring;            /* method indexes by hash */
    char **vocabulary;       /* every key learned or seen in a result */
    size_t vocabulary_count;
    session *current;
    bool print;
    bool teardown_in_flight;
    char **argv;             /* libFuzzer's arguments, made absolute */
    char **writable;         /* where libFuzzer and the target may write */
    size_t writable_count;
};

extern struct methods_fuzz_state G;

/* Names under the workspace that inputs pick from: files that exist, and
 * names that do not yet. */
static const char *const workspace_names[] = {
    "a.txt", "sub/b.c", "sub", "sub/deep/c.md", "utf8.txt", "crlf.txt", "empty", "bin.dat", "",
    "new.txt", "sub/new.c", "newdir", "newdir/x/y.txt", "sub/deep", "sub/../a.txt", ".hidden", "a b%20c#?.txt",
};
#define WORKSPACE_NAMES (sizeof workspace_names / sizeof workspace_names[0])

/* ----- methods_fuzz_params.c: reading the input and building params ----- */

uint8_t take_u8(input *in);
uint16_t take_u16(input *in);
uint32_t take_u32(input *in);
uint64_t take_u64(input *in);
size_t take_bytes(input *in, size_t n, const uint8_t **out);
void gen_any(session *s, input *in, int depth, json_writer *w);
void gen_value(session *s, input *in, const shape *sh, const char *key, int depth, json_writer *w);

/* ----- methods_fuzz.c ----- */

/* Prints the calls of the current input (REQUIRE's report). */
void dump_session(void);

#endif
