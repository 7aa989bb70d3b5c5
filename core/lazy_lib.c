/* lazy_lib: see lazy_lib.h. */
#include "lazy_lib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* POSIX makes dlsym's void * convertible to a function pointer (both have
 * one representation); C does not say so, which is why the conversion is
 * done here only, by copying the bytes into the table's field. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers are as wide as void *");

static void fail(ecp_lazy_lib *lib, const char *why)
{
    snprintf(lib->failure, sizeof lib->failure, "%s (%s) cannot be loaded: %s", lib->name, lib->soname,
             why ? why : "unknown reason");
}

/* Under lib->lock. The handle is never closed: the table points into the
 * library for the rest of the process, as a library linked at start would.
 * RTLD_LOCAL keeps its symbols (and its dependencies') out of everyone
 * else's lookups. */
static int open_library(ecp_lazy_lib *lib)
{
    void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        fail(lib, dlerror());
        return ECP_LAZY_FAILED;
    }
    for (size_t i = 0; i < lib->symbol_count; i++) {
        dlerror();
        void *address = dlsym(handle, lib->symbols[i].name);
        if (!address) {
            char why[300];
            const char *said = dlerror();
            snprintf(why, sizeof why, "%s", said ? said : lib->symbols[i].name);
            fail(lib, why);
            dlclose(handle);
            return ECP_LAZY_FAILED;
        }
        memcpy((char *)lib->table + lib->symbols[i].offset, &address, sizeof address);
    }
    return ECP_LAZY_LOADED;
}

int ecp_lazy_lib_load(ecp_lazy_lib *lib, ecp_error *err)
{
    int state = atomic_load_explicit(&lib->state, memory_order_acquire);
    if (state == ECP_LAZY_UNTRIED) {
        pthread_mutex_lock(&lib->lock);
        state = atomic_load_explicit(&lib->state, memory_order_relaxed);
        if (state == ECP_LAZY_UNTRIED) {
            state = open_library(lib);
            atomic_store_explicit(&lib->state, state, memory_order_release);
        }
        pthread_mutex_unlock(&lib->lock);
    }
    if (state == ECP_LAZY_LOADED)
        return 0;
    return ecp_error_set(err, ECP_EIO, "%s", lib->failure);
}

const void *ecp_lazy_lib_table(ecp_lazy_lib *lib)
{
    if (atomic_load_explicit(&lib->state, memory_order_acquire) != ECP_LAZY_LOADED) {
        fprintf(stderr, "ecpd: %s called before it was loaded\n", lib->name);
        abort();
    }
    return lib->table;
}
