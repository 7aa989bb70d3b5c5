/* The router knows namespaces, not methods: it finds the adapter by the part
 * before the first '/', then the method in that adapter's own table, the same
 * table `ecp/methods` lists. Methods without a '/' (initialize, shutdown...)
 * live in the namespace "".
 *
 * Registration is where a table is checked, once: after it, dispatch may take
 * for granted that every name is routed to exactly one method and that every
 * method documents itself. It is also where each method's params signature
 * is compiled (rpc_sig.h), so that every request is checked against it
 * before its handler runs: the signature ecp/methods prints is the one the
 * server enforces. */
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* A route is the method's place, adapter and row, packed in one number; the
 * adapters array may move as it grows, the places do not. */
#define ROUTE_PART_MAX 0xFFFFu

/* The table of routes is written only here, at registration, with the names
 * of the server's own method tables; what a client sends is only looked up.
 * So its hash needs no secret key (unlike ecp_map's, whose keys clients
 * choose): a lookup stops at the first empty slot, and with the table at
 * most half full the longest run of full slots is fixed at start by the
 * server's names, whatever name a client sends. FNV-1a costs a few
 * instructions a byte, where SipHash costs a few dozen. */
struct route_slot {
    const char *name; /* NULL: empty */
    uint32_t hash;
    uint32_t route;
};

static uint32_t route_hash(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static void route_put(struct route_slot *slots, size_t mask, const char *name, uint32_t hash, uint32_t route)
{
    size_t i = hash & mask;
    while (slots[i].name)
        i = (i + 1) & mask;
    slots[i] = (struct route_slot){name, hash, route};
}

static void route_add(router *self, const char *name, size_t adapter, size_t method)
{
    if ((self->route_count + 1) * 2 > (self->routes ? self->route_mask + 1 : 0)) {
        size_t size = self->routes ? (self->route_mask + 1) * 2 : 64;
        struct route_slot *slots = xcalloc(size, sizeof *slots);
        for (size_t i = 0; self->routes && i <= self->route_mask; i++)
            if (self->routes[i].name)
                route_put(slots, size - 1, self->routes[i].name, self->routes[i].hash, self->routes[i].route);
        free(self->routes);
        self->routes = slots;
        self->route_mask = size - 1;
    }
    route_put(self->routes, self->route_mask, name, route_hash(name), (uint32_t)(adapter << 16 | method));
    self->route_count++;
}

void server__router_init(router *self, ecp_logger *log)
{
    memset(self, 0, sizeof *self);
    self->log = log;
}

static void free_signatures(ecp_sig *sigs, size_t count)
{
    for (size_t m = 0; sigs && m < count; m++)
        ecp_sig_free(&sigs[m]);
    free(sigs);
}

void server__router_free(router *self)
{
    for (size_t i = self->count; i-- > 0;) {
        if (self->adapters[i].destroy)
            self->adapters[i].destroy(self->adapters[i].ctx);
        free_signatures(self->signatures[i], self->adapters[i].method_count);
    }
    free(self->adapters);
    free(self->signatures);
    free(self->routes);
    memset(self, 0, sizeof *self);
}

static bool in_namespace(const char *ns, const char *name)
{
    size_t len = strlen(ns);
    if (len == 0)
        return name[0] && !strchr(name, '/');
    return strncmp(name, ns, len) == 0 && name[len] == '/' && name[len + 1];
}

static bool documented(const char *text) { return text && text[0]; }

static const ecp_adapter *adapter_of(const router *self, const char *ns)
{
    for (size_t i = 0; i < self->count; i++)
        if (strcmp(self->adapters[i].ns, ns) == 0)
            return &self->adapters[i];
    return NULL;
}

/* Fills err with why the router cannot take adapter; 0 when it can, with
 * its methods' signatures compiled into sigs (method_count of them). */
static int check(const router *self, const ecp_adapter *adapter, ecp_sig *sigs, ecp_error *err)
{
    const char *ns = adapter->ns;
    if (!ns || strchr(ns, '/'))
        return ecp_error_set(err, ECP_EINVAL, "namespace \"%s\" is not a name without '/'", ns ? ns : "(null)");
    if (adapter->method_count && !adapter->methods)
        return ecp_error_set(err, ECP_EINVAL, "namespace \"%s\" lists %zu methods but has no table", ns,
                             adapter->method_count);
    for (size_t m = 0; m < adapter->method_count; m++) {
        const ecp_method *method = &adapter->methods[m];
        const char *name = method->name ? method->name : "(null)";
        const ecp_adapter *owner;
        if (!method->name || !in_namespace(ns, name))
            return ecp_error_set(err, ECP_EINVAL, "method %s is outside its namespace \"%s\"", name, ns);
        if (!method->handler)
            return ecp_error_set(err, ECP_EINVAL, "method %s has no handler", name);
        if (!documented(method->summary) || !documented(method->params))
            return ecp_error_set(err, ECP_EINVAL, "method %s has no %s", name,
                                 documented(method->summary) ? "params signature" : "summary");
        for (size_t earlier = 0; earlier < m; earlier++)
            if (strcmp(adapter->methods[earlier].name, name) == 0)
                return ecp_error_set(err, ECP_EINVAL, "method %s is listed twice", name);
        if (server__router_find(self, name, &owner))
            return ecp_error_set(err, ECP_EINVAL, "method %s is already routed to namespace \"%s\"", name,
                                 owner->ns);
        ecp_error why;
        if (ecp_sig_compile(method->params, &sigs[m], &why) != 0)
            return ecp_error_set(err, ECP_EINVAL, "method %s: %s", name, why.message);
    }
    if (adapter_of(self, ns))
        return ecp_error_set(err, ECP_EINVAL, "namespace \"%s\" is already registered", ns);
    if (self->count >= ROUTE_PART_MAX || adapter->method_count > ROUTE_PART_MAX)
        return ecp_error_set(err, ECP_EINVAL, "namespace \"%s\" does not fit the router", ns);
    return 0;
}

int server__router_register(void *opaque, const ecp_adapter *adapter, ecp_error *err)
{
    router *self = opaque;
    ecp_error local;
    if (!err)
        err = &local;
    ecp_sig *sigs = xcalloc(adapter->method_count ? adapter->method_count : 1, sizeof *sigs);
    if (check(self, adapter, sigs, err) != 0) {
        ecp_log(self->log, ECP_LOG_ERROR, "adapter refused: %s", err->message);
        free_signatures(sigs, adapter->method_count);
        if (adapter->destroy)
            adapter->destroy(adapter->ctx);
        return err->status;
    }
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->adapters = xrealloc(self->adapters, self->cap * sizeof *self->adapters);
        self->signatures = xrealloc(self->signatures, self->cap * sizeof *self->signatures);
    }
    self->signatures[self->count] = sigs;
    for (size_t m = 0; m < adapter->method_count; m++)
        route_add(self, adapter->methods[m].name, self->count, m);
    self->adapters[self->count++] = *adapter;
    return 0;
}

const ecp_method *server__router_find(const router *self, const char *method, const ecp_adapter **adapter_out)
{
    /* check() keeps every name in its own namespace and routed once, so the
     * name alone finds the method */
    if (!self->routes)
        return NULL;
    uint32_t hash = route_hash(method), route;
    for (size_t i = hash & self->route_mask;; i = (i + 1) & self->route_mask) {
        const struct route_slot *slot = &self->routes[i];
        if (!slot->name)
            return NULL;
        if (slot->hash == hash && strcmp(slot->name, method) == 0) {
            route = slot->route;
            break;
        }
    }
    const ecp_adapter *a = &self->adapters[route >> 16];
    *adapter_out = a;
    return &a->methods[route & ROUTE_PART_MAX];
}

bool server__router_admit(const router *self, const ecp_adapter *adapter, const ecp_method *method, ecp_call *call)
{
    const ecp_sig *sig = &self->signatures[adapter - self->adapters][method - adapter->methods];
    char message[400];
    if (ecp_sig_check(sig, ecp_call_doc(call), ecp_call_params(call), message, sizeof message))
        return true;
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s", message);
    return false;
}
