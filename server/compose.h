/* compose: the composition root of ecpd's services.
 *
 * This is the one place that knows every service: it creates each one, hands
 * it the services it depends on, and registers each adapter with the router.
 * Services never find each other any other way.
 */
#ifndef ECPD_SERVER_COMPOSE_H
#define ECPD_SERVER_COMPOSE_H

#include <uv.h>

#include "error.h"
#include "job.h"
#include "log.h"
#include "rpc.h"

typedef struct server_env {
    uv_loop_t *loop;
    ecp_logger *log;
    ecp_pool *pool;          /* where services run their jobs (each keeps its own ecp_job_set) */
    ecp_bus *bus;
    const char *workspace;   /* may be NULL */
    const char *data_dir;    /* exists, 0700 */
    /* Registers an adapter; the router copies the struct and owns adapter->ctx
     * (released through adapter->destroy at teardown, or at once when the
     * router refuses the adapter's table: then it returns a negative status
     * with err saying why). */
    int (*register_adapter)(void *router, const ecp_adapter *adapter, ecp_error *err);
    void *router;
} server_env;

typedef struct server_services {
    struct document_service *document;
    struct file_service *file;
    struct terminal_service *terminal;
} server_services;

/* Creates every service and registers its adapter. A service that cannot be
 * created, or an adapter whose table the router refuses, fails the whole
 * server. On failure what was created stays in self: the caller releases the
 * adapters first, then calls server_services_stop, as at teardown (an adapter
 * registered before the failure still refers to its service). */
int server_services_start(server_services *self, const server_env *env, ecp_error *err);

/* Destroys the services, dependents first. Adapters are already gone. */
void server_services_stop(server_services *self);

#endif
