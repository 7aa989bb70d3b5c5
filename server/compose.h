/* compose: the composition root of ecpd's services.
 *
 * This is the one place that knows every service: it creates each one, hands
 * it the services it depends on, and registers each adapter with the router.
 * Services never find each other any other way.
 */
#ifndef ECPD_SERVER_COMPOSE_H
#define ECPD_SERVER_COMPOSE_H

#include <stdbool.h>

#include <uv.h>

#include "error.h"
#include "job.h"
#include "log.h"
#include "rpc.h"

/* What the server lends the services as they start. Nothing in it is the
 * services' to free. env itself lives only during server_services_start:
 * keep the fields, not env. How long each field lives: */
typedef struct server_env {
    /* loop, log, pool and bus: until server_services_stop() returns. */
    uv_loop_t *loop;
    ecp_logger *log;
    ecp_pool *pool;          /* where services run their jobs (each keeps its own ecp_job_set) */
    ecp_bus *bus;
    /* Only during server_services_start: a service that needs it later keeps
     * its own copy. It is the workspace the server started with (may be NULL);
     * a client's initialize may name another one later, which this string
     * never becomes. */
    const char *workspace;
    const char *data_dir;    /* exists, 0700; until server_services_stop() returns */
    const char *config_path; /* --config FILE, may be NULL; only during server_services_start */
    bool trust_workspace;    /* --trust-workspace */
    /* Registers an adapter; the router copies the struct and owns adapter->ctx
     * (released through adapter->destroy at teardown, or at once when the
     * router refuses the adapter's table: then it returns a negative status
     * with err saying why). See ecp_adapter in rpc.h for how long the pointers
     * in it must live. register_adapter and router: only during
     * server_services_start. */
    int (*register_adapter)(void *router, const ecp_adapter *adapter, ecp_error *err);
    void *router;
} server_env;

typedef struct server_services {
    struct store *store; /* the server's own database, lent to the services that persist */
    struct document_service *document;
    struct file_service *file;
    struct session_service *session;
    struct gitsvc *git;
    struct terminal_service *terminal;
    struct database_service *database;
    struct lsp_service *lsp;
    struct syntax_service *syntax;
    struct agent_service *agent;
} server_services;

/* Creates every service and registers its adapter. A service that cannot be
 * created, or an adapter whose table the router refuses, fails the whole
 * server. On failure what was created stays in self: the caller releases the
 * adapters first, then calls server_services_stop, as at teardown (an adapter
 * registered before the failure still refers to its service). */
int server_services_start(server_services *self, const server_env *env, ecp_error *err);

/* Destroys the services, dependents first. Adapters are already gone. */
void server_services_stop(server_services *self);

/* Whether the store keeps state on disk (initialize's capabilities.persistence). */
bool server_services_persistent(const server_services *self);

/* The server.maxConnections setting, read at each new connection (a change
 * applies to the next one); fallback when there is no session service. */
size_t server_services_connection_limit(const server_services *self, size_t fallback);

/* The agent, for a front end that is not a connection of the server (ecpd
 * --acp speaks its own protocol on stdio). */
struct server;
struct agent_service *server_agent(struct server *srv);

/* The workspace changed (initialize named one); workspace may be NULL. */
void server_services_set_workspace(server_services *self, const char *workspace);

/* The position encodings the connected clients use changed (one connected,
 * negotiated or left): mask has a (1u << ECP_ENCODING_*) bit for each. */
void server_services_client_encodings(server_services *self, unsigned mask);

#endif
