#include "compose.h"

#include <string.h>

#include "document/adapter.h"
#include "document/interface.h"
#include "file/adapter.h"
#include "file/interface.h"
#include "terminal/adapter.h"
#include "terminal/interface.h"

int server_services_start(server_services *self, const server_env *env, ecp_error *err)
{
    memset(self, 0, sizeof *self);
    ecp_adapter adapter;
    int status;

    self->document = document_service_new(env->pool, env->log);
    if (!self->document)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the document service");
    document_adapter_init(&adapter, self->document, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;

    self->file = file_service_new(env->pool, env->log);
    if (!self->file)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the file service");
    file_adapter_init(&adapter, self->file, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;

    /* No settings reach the terminals yet: a settings service would pass
     * `terminal.integrated.shell` as .shell (or later through
     * terminal_service_set_shell). */
    terminal_service_options terminal_options = {.shell = NULL, .cwd = env->workspace};
    self->terminal = terminal_service_new(env->loop, env->log, &terminal_options);
    if (!self->terminal)
        return ecp_error_set(err, ECP_EIO, "could not create the terminal service: no SIGCHLD handler");
    terminal_adapter_init(&adapter, self->terminal, env->bus);
    return env->register_adapter(env->router, &adapter, err);
}

void server_services_stop(server_services *self)
{
    if (self->terminal)
        terminal_service_free(self->terminal);
    if (self->file)
        file_service_free(self->file);
    if (self->document)
        document_service_free(self->document);
    memset(self, 0, sizeof *self);
}
