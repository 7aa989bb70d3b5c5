/* rpc_sig: a method's params signature, compiled once into descriptors.
 *
 * The signature an adapter writes in its method table ("{uri: string,
 * force?: boolean}") is what ecp/methods prints and also what the router
 * checks every request against before the handler runs, so a handler never
 * sees a declared field that is missing or of the wrong type. The syntax:
 *
 *   params  := "any" | object
 *   type    := base ("[]")* ("|" base ("[]")*)*       alternatives: string|string[]
 *   base    := "string" | "integer" limit* | "number" limit* | "boolean"
 *            | "object" | "any" | "\"text\""            one string value: "up"|"down"
 *            | "{" [field ("," field)*] "}"             fields; unknown extra fields are allowed
 *            | "{[" name [":" "string"] "]:" type "}"   any keys, every value a type
 *            | "Position" | "Range" | "Cursor"          the shapes of PROTOCOL.md section 4
 *   field   := name ["?"] ":" type                     "?": optional (absent or null)
 *   limit   := (">=" | "<=") integer                   integer >= 0, integer >= 1 <= 1000
 *
 * A field whose value is null counts as absent, but where any value is taken. Nesting is bounded
 * (ECP_SIG_MAX_DEPTH): the checker walks a request with a stack of that many
 * frames and never deeper, whatever the client sends. */
#ifndef ECPD_RPC_SIG_H
#define ECPD_RPC_SIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "json.h"
#include "json_writer.h"

#define ECP_SIG_MAX_DEPTH 12
#define ECP_SIG_NONE UINT32_MAX

typedef enum ecp_sig_type {
    ECP_SIG_ANY,
    ECP_SIG_STRING,
    ECP_SIG_INTEGER,
    ECP_SIG_NUMBER,
    ECP_SIG_BOOLEAN,
    ECP_SIG_LITERAL, /* one string value, in name */
    ECP_SIG_OBJECT,  /* fields are the children; `object` has none */
    ECP_SIG_MAP,     /* the child is every member's type */
    ECP_SIG_ARRAY,   /* the child is every element's type */
    ECP_SIG_UNION,   /* the children are the alternatives, tried in order */
} ecp_sig_type;

/* One descriptor. Children are linked: first `child`, then each one's `next`. */
typedef struct ecp_sig_node {
    ecp_sig_type type;
    const char *name;  /* an object's field: its key; a literal: its text; else NULL */
    bool optional;     /* an object's field that may be absent */
    bool has_min, has_max;
    int64_t min, max;  /* integer and number limits */
    uint32_t child, next, parent;
} ecp_sig_node;

typedef struct ecp_sig {
    ecp_sig_node *nodes;
    size_t count;
    uint32_t root;     /* nodes[root] is the params: an object, or any */
    char *names;       /* the storage of every node's name */
} ecp_sig;

/* Compiles text. Returns 0, or ECP_EINVAL with err saying where it does not
 * parse; *out is then empty (freeing it is still allowed). */
int ecp_sig_compile(const char *text, ecp_sig *out, ecp_error *err);
void ecp_sig_free(ecp_sig *sig);

/* Checks params (JSON_NO_REF when absent; anything but an object reads as an
 * empty one) against sig. True when they fit; else false with the -32602
 * message, in the form of rpc.h's readers ("position.line: expected integer,
 * got string", "documentId: required string"), in message. */
bool ecp_sig_check(const ecp_sig *sig, const json_doc *doc, json_ref params, char *message, size_t cap);

/* The type a person reads for a node: "string", "integer", "array",
 * "string or array". */
const char *ecp_sig_type_name(const ecp_sig *sig, uint32_t node, char *dst, size_t cap);

/* ----- examples, for tests and fuzzers ----- */

typedef enum ecp_sig_flaw {
    ECP_SIG_FLAWLESS,   /* params that fit */
    ECP_SIG_OMIT,       /* target (a required field) left out */
    ECP_SIG_MISTYPE,    /* target of a JSON type it does not take */
    ECP_SIG_PAST_LIMIT, /* target (with a limit) one past it */
} ecp_sig_flaw;

/* Writes params that fit sig but for `flaw` at node `target`. Optional
 * fields are left out unless target lies inside one; arrays and maps get one
 * element when target lies inside it, else none. path (may be NULL) gets the
 * target's field path as an error message names it ("edits[0].range"). */
void ecp_sig_write_example(const ecp_sig *sig, uint32_t target, ecp_sig_flaw flaw, json_writer *w, char *path,
                           size_t cap);

#endif
