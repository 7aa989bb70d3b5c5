/* lazy_git2: see lazy_git2.h. */
#define GITSVC_GIT2_TABLE_ONLY
#include "lazy_git2.h"

#include "lazy_lib.h"

static gitsvc_git2_api api;

static const ecp_lazy_symbol symbols[] = {
#define GITSVC_GIT2_SYMBOL(function) {#function, offsetof(gitsvc_git2_api, function)},
    GITSVC_GIT2_FUNCTIONS(GITSVC_GIT2_SYMBOL)
#undef GITSVC_GIT2_SYMBOL
};

static ecp_lazy_lib libgit2 = ECP_LAZY_LIB_INIT("libgit2", ECPD_GIT2_SONAME, symbols, &api);

int gitsvc__git2_load(ecp_error *err) { return ecp_lazy_lib_load(&libgit2, err); }

const gitsvc_git2_api *gitsvc__git2(void) { return ecp_lazy_lib_table(&libgit2); }
