#include "compose.h"

#include <string.h>

#include "document/adapter.h"
#include "document/interface.h"
#include "file/adapter.h"
#include "file/interface.h"
#include "git/adapter.h"
#include "git/interface.h"

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

    self->git = gitsvc_new(env->pool, env->log, self->file, self->document);
    if (!self->git)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the git service");
    git_adapter_init(&adapter, self->git, env->bus);
    return env->register_adapter(env->router, &adapter, err);
}

void server_services_stop(server_services *self)
{
    if (self->git)
        gitsvc_free(self->git);
    if (self->file)
        file_service_free(self->file);
    if (self->document)
        document_service_free(self->document);
    memset(self, 0, sizeof *self);
}
