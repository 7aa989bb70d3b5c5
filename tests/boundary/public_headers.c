/* What one part of the project may include from a service: its interface.h
 * and, for the composition root, its adapter.h. This must compile wherever a
 * service's library is linked, and interface.h must not bring the wire along:
 * a service that calls another through it cannot see JSON-RPC. */
#include "database/interface.h"
#include "document/interface.h"
#include "file/interface.h"
#include "git/interface.h"
#include "lsp/interface.h"
#include "session/interface.h"
#include "store/interface.h"
#include "syntax/interface.h"
#include "terminal/interface.h"

#if defined(ECPD_RPC_H) || defined(ECPD_JSON_H) || defined(ECPD_JSON_WRITER_H) || defined(ECPD_JSONRPC_H) || \
    defined(ECPD_CALL_H)
#error "a service's interface.h includes the wire"
#endif

#include "database/adapter.h"
#include "document/adapter.h"
#include "file/adapter.h"
#include "git/adapter.h"
#include "lsp/adapter.h"
#include "session/adapter.h"
#include "syntax/adapter.h"
#include "terminal/adapter.h"

/* The entry points have the types the composition root calls them with. */
int boundary_entry_points_resolve(void)
{
    void (*database)(ecp_adapter *, database_service *) = database_adapter_init;
    void (*document)(ecp_adapter *, document_service *, ecp_bus *) = document_adapter_init;
    void (*file)(ecp_adapter *, file_service *, ecp_bus *) = file_adapter_init;
    void (*git)(ecp_adapter *, gitsvc *, ecp_bus *) = git_adapter_init;
    void (*lsp)(ecp_adapter *, lsp_service *, ecp_bus *) = lsp_adapter_init;
    void (*session)(ecp_adapter *, session_service *, document_service *, ecp_bus *) = session_adapter_init;
    void (*syntax)(ecp_adapter *, syntax_service *, ecp_bus *) = syntax_adapter_init;
    void (*terminal)(ecp_adapter *, terminal_service *, ecp_bus *) = terminal_adapter_init;
    return database != 0 && document != 0 && file != 0 && git != 0 && lsp != 0 && session != 0 && syntax != 0 &&
           terminal != 0;
}
