/* postgres_pq: see postgres_pq.h. */
#define DB_PQ_TABLE_ONLY
#include "postgres_pq.h"

#include "lazy_lib.h"

static db_pq_api api;

static const ecp_lazy_symbol symbols[] = {
#define DB_PQ_SYMBOL(function) {#function, offsetof(db_pq_api, function)},
    DB_PQ_FUNCTIONS(DB_PQ_SYMBOL)
#undef DB_PQ_SYMBOL
};

static ecp_lazy_lib libpq = ECP_LAZY_LIB_INIT("libpq", ECPD_PQ_SONAME, symbols, &api);

int db_pq_load(ecp_error *err) { return ecp_lazy_lib_load(&libpq, err); }

const db_pq_api *db_pq(void) { return ecp_lazy_lib_table(&libpq); }
