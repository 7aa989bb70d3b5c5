#include "compose.h"

#include <string.h>

#include "document/interface.h"
#include "file/interface.h"

int server_services_start(server_services *self, const server_env *env, ecp_error *err)
{
    memset(self, 0, sizeof *self);
    ecp_adapter adapter;

    self->document = document_service_new(env->pool, env->log);
    if (!self->document)
        goto fail;
    document_adapter_init(&adapter, self->document, env->bus);
    env->register_adapter(env->router, &adapter);

    self->file = file_service_new(env->loop, env->log);
    if (!self->file)
        goto fail;
    file_adapter_init(&adapter, self->file, env->bus);
    env->register_adapter(env->router, &adapter);

    return 0;

fail:
    server_services_stop(self);
    return ecp_error_set(err, ECP_ENOMEM, "could not create the services");
}

void server_services_stop(server_services *self)
{
    if (self->file)
        file_service_free(self->file);
    if (self->document)
        document_service_free(self->document);
    memset(self, 0, sizeof *self);
}
