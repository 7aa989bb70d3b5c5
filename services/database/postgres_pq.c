/* postgres_pq: see postgres_pq.h. */
#define DB_PQ_TABLE_ONLY
#include "postgres_pq.h"

ECP_LAZY_LIB_DEFINE(db_pq_api, DB_PQ_FUNCTIONS, db_pq_load, db_pq, "libpq", ECPD_PQ_SONAME)
