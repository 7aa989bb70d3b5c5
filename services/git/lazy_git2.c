/* lazy_git2: see lazy_git2.h. */
#define GITSVC_GIT2_TABLE_ONLY
#include "lazy_git2.h"

ECP_LAZY_LIB_DEFINE(gitsvc_git2_api, GITSVC_GIT2_FUNCTIONS, gitsvc__git2_load, gitsvc__git2, "libgit2", ECPD_GIT2_SONAME)
