/* lazy_lib: a shared library opened the first time something needs it,
 * instead of by the dynamic loader when the process starts.
 *
 * libcurl, libpq and libgit2 bring some thirty more libraries with them
 * (OpenSSL, Kerberos, LDAP, GnuTLS, libssh2...), and relocating those was
 * most of what a server that answers one ping and exits spent. Each is
 * dlopen'ed at its first use and its functions are looked up once into a
 * typed table (a struct of function pointers, one field per function the
 * code calls); the code then calls through the table.
 *
 * The table is the process's, like the one the dynamic loader fills at start:
 * filled once, under a lock, by whichever thread asks first, and never changed
 * afterwards. A library that cannot be opened, or lacks a function, stays
 * unloaded for the life of the process, and every caller is told why, with
 * the library's name, so the request that needed it fails with that message
 * instead of the server failing to start.
 *
 * Declare one per library, statically:
 *
 *   static my_api api;
 *   static const ecp_lazy_symbol symbols[] = {{"curl_easy_init", offsetof(my_api, curl_easy_init)}, ...};
 *   static ecp_lazy_lib lib = ECP_LAZY_LIB_INIT("libcurl", "libcurl.so.4", symbols, &api);
 *
 * then ecp_lazy_lib_load(&lib, err) before the first call, and
 * ecp_lazy_lib_table(&lib) for the table. Any thread.
 */
#ifndef ECPD_LAZY_LIB_H
#define ECPD_LAZY_LIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "error.h"

typedef struct ecp_lazy_symbol {
    const char *name; /* as the library exports it */
    size_t offset;    /* of its function pointer in the table */
} ecp_lazy_symbol;

typedef struct ecp_lazy_lib {
    const char *name;   /* for people: "libcurl" */
    const char *soname; /* what dlopen is given: "libcurl.so.4" */
    const ecp_lazy_symbol *symbols;
    size_t symbol_count;
    void *table; /* a struct of function pointers, filled by the load */
    pthread_mutex_t lock;
    atomic_int state;  /* ECP_LAZY_UNTRIED, _LOADED or _FAILED; written under lock */
    char failure[400]; /* why it failed, once FAILED */
} ecp_lazy_lib;

enum { ECP_LAZY_UNTRIED, ECP_LAZY_LOADED, ECP_LAZY_FAILED };

#define ECP_LAZY_LIB_INIT(name_, soname_, symbols_, table_)                                                   \
    {                                                                                                         \
        .name = (name_), .soname = (soname_), .symbols = (symbols_),                                          \
        .symbol_count = sizeof(symbols_) / sizeof((symbols_)[0]), .table = (table_),                          \
        .lock = PTHREAD_MUTEX_INITIALIZER, .state = ECP_LAZY_UNTRIED,                                         \
    }

/* What a library's header declares: its table type, one function pointer per
 * name FUNCTIONS (an X-macro list) gives, typed from the library's own
 * prototype; LOAD(err), which opens it; and TABLE(), the filled table. */
#define ECP_LAZY_LIB_DECLARE(API, FUNCTIONS, LOAD, TABLE)                                                     \
    typedef struct API {                                                                                      \
        FUNCTIONS(ECP_LAZY_FIELD_)                                                                            \
    } API;                                                                                                    \
    int LOAD(ecp_error *err);                                                                                 \
    const API *TABLE(void)
#define ECP_LAZY_FIELD_(function) __typeof__(&function) function;
#define ECP_LAZY_SYMBOL_(function) {#function, offsetof(lazy_api_, function)},

/* What the library's one .c file defines for those: the table, the names to
 * look up, and LOAD and TABLE. NAME is for people ("libcurl"), SONAME what
 * dlopen is given. */
#define ECP_LAZY_LIB_DEFINE(API, FUNCTIONS, LOAD, TABLE, NAME, SONAME)                                        \
    typedef API lazy_api_;                                                                                    \
    static lazy_api_ lazy_table_;                                                                             \
    static const ecp_lazy_symbol lazy_symbols_[] = {FUNCTIONS(ECP_LAZY_SYMBOL_)};                             \
    static ecp_lazy_lib lazy_lib_ = ECP_LAZY_LIB_INIT(NAME, SONAME, lazy_symbols_, &lazy_table_);             \
    int LOAD(ecp_error *err) { return ecp_lazy_lib_load(&lazy_lib_, err); }                                   \
    const API *TABLE(void) { return ecp_lazy_lib_table(&lazy_lib_); }

/* Opens the library and fills its table, the first time; afterwards only
 * says how that went. Returns 0, or ECP_EIO with err "libcurl
 * (libcurl.so.4) cannot be loaded: <the loader's reason>". */
int ecp_lazy_lib_load(ecp_lazy_lib *lib, ecp_error *err);

/* The filled table. Only after ecp_lazy_lib_load succeeded: calling into a
 * library nobody loaded is a programming error, and aborts with its name. */
const void *ecp_lazy_lib_table(ecp_lazy_lib *lib);

#endif
