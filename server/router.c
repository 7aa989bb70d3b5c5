/* The router knows namespaces, not methods: it finds the adapter by the part
 * before the first '/', then the method in that adapter's own table, the same
 * table `ecp/methods` lists. Methods without a '/' (initialize, shutdown...)
 * live in the namespace "". */
#include <string.h>

#include "internal.h"

void server__router_init(router *self) { memset(self, 0, sizeof *self); }

void server__router_free(router *self)
{
    for (size_t i = self->count; i-- > 0;)
        if (self->adapters[i].destroy)
            self->adapters[i].destroy(self->adapters[i].ctx);
    free(self->adapters);
    memset(self, 0, sizeof *self);
}

void server__router_register(void *opaque, const ecp_adapter *adapter)
{
    router *self = opaque;
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->adapters = xrealloc(self->adapters, self->cap * sizeof *self->adapters);
    }
    self->adapters[self->count++] = *adapter;
}

const ecp_method *server__router_find(const router *self, const char *method, const ecp_adapter **adapter_out)
{
    const char *slash = strchr(method, '/');
    size_t ns_len = slash ? (size_t)(slash - method) : 0;
    for (size_t i = 0; i < self->count; i++) {
        const ecp_adapter *a = &self->adapters[i];
        if (strlen(a->ns) != ns_len || strncmp(a->ns, method, ns_len) != 0)
            continue;
        for (size_t m = 0; m < a->method_count; m++) {
            if (strcmp(a->methods[m].name, method) == 0) {
                *adapter_out = a;
                return &a->methods[m];
            }
        }
    }
    return NULL;
}
