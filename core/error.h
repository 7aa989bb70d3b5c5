/* error: the two tables of failure codes.
 *
 * ECP_STATUS_CODES are what functions below the wire return: 0 for success or a
 * negative code, with an optional ecp_error carrying a human message. They know
 * nothing of JSON-RPC.
 *
 * ECP_WIRE_CODES are the numbers clients see: JSON-RPC's own codes and each
 * service's codes from the ECP catalogue. Only adapters and the server use
 * them; an adapter maps a status to the wire code its service documents.
 * Several wire numbers collide across services (-32001 is both "server not
 * initialized" and "document not found"); the enum keeps a name for each.
 */
#ifndef ECPD_ERROR_H
#define ECPD_ERROR_H

#include <stddef.h>

#define ECP_STATUS_CODES(X)                                   \
    X(ECP_OK, 0, "success")                                   \
    X(ECP_ENOMEM, -1, "out of memory")                        \
    X(ECP_EINVAL, -2, "invalid argument")                     \
    X(ECP_ENOTFOUND, -3, "not found")                         \
    X(ECP_EEXIST, -4, "already exists")                       \
    X(ECP_EISDIR, -5, "is a directory")                       \
    X(ECP_ENOTDIR, -6, "not a directory")                     \
    X(ECP_ENOTEMPTY, -7, "directory not empty")               \
    X(ECP_EACCES, -8, "permission denied")                    \
    X(ECP_EIO, -9, "input/output error")                      \
    X(ECP_ERANGE, -10, "out of range")                        \
    X(ECP_EREADONLY, -11, "read-only")                        \
    X(ECP_ECANCELED, -12, "cancelled")                        \
    X(ECP_ENOTSUP, -13, "not supported")                      \
    X(ECP_EBADURI, -14, "invalid URI")                        \
    X(ECP_ENOPROVIDER, -15, "no provider for the URI scheme") \
    X(ECP_ETOOBIG, -16, "too large")                          \
    X(ECP_ELOOP, -17, "too many levels of symbolic links")    \
    X(ECP_EPARSE, -18, "malformed input")                     \
    X(ECP_ESTATE, -19, "not allowed in the current state")    \
    X(ECP_ECONFLICT, -20, "changed elsewhere since it was read") \
    X(ECP_ETIMEDOUT, -21, "timed out")

enum ecp_status {
#define ECP_STATUS_ENUM(name, value, text) name = value,
    ECP_STATUS_CODES(ECP_STATUS_ENUM)
#undef ECP_STATUS_ENUM
};

/* The default text of a status code ("not found"). */
const char *ecp_status_text(int status);

/* Maps an errno value (ENOENT, EACCES, ...) to a status code. */
int ecp_status_from_errno(int errnum);

#define ECP_WIRE_CODES(X)                               \
    /* JSON-RPC 2.0 and the protocol itself */          \
    X(PARSE_ERROR, -32700)                              \
    X(INVALID_REQUEST, -32600)                          \
    X(METHOD_NOT_FOUND, -32601)                         \
    X(INVALID_PARAMS, -32602)                           \
    X(INTERNAL_ERROR, -32603)                           \
    X(SERVER_ERROR, -32000)                             \
    X(SERVER_NOT_INITIALIZED, -32001)                   \
    X(SERVER_SHUTTING_DOWN, -32002)                     \
    X(REQUEST_CANCELLED, -32800)                        \
    /* document */                                      \
    X(DOCUMENT_NOT_FOUND, -32001)                       \
    X(DOCUMENT_READ_ONLY, -32002)                       \
    X(INVALID_POSITION, -32003)                         \
    X(INVALID_RANGE, -32004)                            \
    /* file */                                          \
    X(FILE_NOT_FOUND, -32100)                           \
    X(FILE_ACCESS_DENIED, -32101)                       \
    X(FILE_IS_DIRECTORY, -32102)                        \
    X(FILE_NOT_DIRECTORY, -32103)                       \
    X(FILE_ALREADY_EXISTS, -32104)                      \
    X(FILE_NOT_EMPTY, -32105)                           \
    X(FILE_INVALID_URI, -32106)                         \
    X(FILE_NO_PROVIDER, -32107)                         \
    X(FILE_NOT_SUPPORTED, -32108)                       \
    X(FILE_IO_ERROR, -32109)                            \
    /* git */                                           \
    X(GIT_NOT_A_REPO, -32200)                           \
    X(GIT_UNCOMMITTED_CHANGES, -32201)                  \
    X(GIT_MERGE_CONFLICT, -32202)                       \
    X(GIT_PUSH_REJECTED, -32203)                        \
    X(GIT_AUTH_FAILED, -32204)                          \
    X(GIT_NETWORK_ERROR, -32205)                        \
    X(GIT_BRANCH_NOT_FOUND, -32206)                     \
    X(GIT_BRANCH_EXISTS, -32207)                        \
    X(GIT_COMMAND_FAILED, -32208)                       \
    /* session */                                       \
    X(SETTING_NOT_FOUND, -32300)                        \
    X(INVALID_VALUE, -32301)                            \
    X(SESSION_NOT_FOUND, -32302)                        \
    X(THEME_NOT_FOUND, -32303)                          \
    X(INVALID_KEYBINDING, -32304)                       \
    X(SESSION_NOT_INITIALIZED, -32305)                  \
    /* lsp */                                           \
    X(LSP_SERVER_NOT_FOUND, -32400)                     \
    X(LSP_SERVER_START_FAILED, -32401)                  \
    X(LSP_SERVER_NOT_INITIALIZED, -32402)               \
    X(LSP_REQUEST_TIMEOUT, -32403)                      \
    X(LSP_REQUEST_FAILED, -32404)                       \
    X(LSP_DOCUMENT_NOT_OPEN, -32405)                    \
    X(LSP_INVALID_URI, -32406)                          \
    X(LSP_INVALID_POSITION, -32407)                     \
    X(LSP_NOT_SUPPORTED, -32408)                        \
    X(LSP_DISABLED, -32409)                             \
    X(LSP_WORKSPACE_NOT_TRUSTED, -32410)                \
    /* syntax */                                        \
    X(SYNTAX_NOT_READY, -32500)                         \
    X(SYNTAX_LANGUAGE_NOT_SUPPORTED, -32501)            \
    X(SYNTAX_THEME_NOT_FOUND, -32502)                   \
    X(SYNTAX_SESSION_NOT_FOUND, -32503)                 \
    X(SYNTAX_PARSE_ERROR, -32504)                       \
    X(SYNTAX_INVALID_LINE, -32505)                      \
    /* terminal */                                      \
    X(TERMINAL_NOT_FOUND, -32700)                       \
    X(TERMINAL_EXISTS, -32701)                          \
    X(TERMINAL_START_FAILED, -32702)                    \
    X(TERMINAL_NOT_RUNNING, -32703)                     \
    X(TERMINAL_INVALID_DIMENSIONS, -32704)              \
    X(TERMINAL_SHELL_NOT_FOUND, -32705)                 \
    X(TERMINAL_WRITE_FAILED, -32706)

enum ecp_wire_code {
#define ECP_WIRE_ENUM(name, value) ECP_WIRE_##name = value,
    ECP_WIRE_CODES(ECP_WIRE_ENUM)
#undef ECP_WIRE_ENUM
};

/* How one service's statuses appear on the wire, as data: each adapter keeps
 * one table of these and answers every failure through it, so the mapping is
 * read in one place and cannot differ between two handlers. */
typedef struct ecp_wire_map {
    int status;   /* an ECP_STATUS_CODES value */
    int wire;     /* the ECP_WIRE_CODES value clients see for it */
} ecp_wire_map;

/* The wire code that map (count entries) gives status; the first entry that
 * lists status wins. fallback when none does. */
int ecp_wire_code(const ecp_wire_map *map, size_t count, int status, int fallback);

/* A failure with its message, filled in by the function that failed. */
typedef struct ecp_error {
    int status;          /* an ECP_STATUS_CODES value */
    char message[512];   /* for a person: names what failed and why */
} ecp_error;

/* Records status and a formatted message in err (which may be NULL) and
 * returns status, so a function can `return ecp_error_set(err, ...)`. */
int ecp_error_set(ecp_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same for an errno value: the message is "<what>: <strerror>". */
int ecp_error_errno(ecp_error *err, int errnum, const char *what);

#endif
