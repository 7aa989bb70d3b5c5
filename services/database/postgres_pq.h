/* postgres_pq: libpq, opened the first time a PostgreSQL connection is made
 * (core/lazy_lib.h), not by the dynamic loader at every start: with it come
 * OpenSSL, Kerberos and LDAP.
 *
 * postgres.c includes this header instead of <libpq-fe.h> and calls libpq by
 * its own names; below, each name stands for the function in the table, so
 * a call compiles only if its function is listed in DB_PQ_FUNCTIONS (an
 * unlisted one would be an undefined symbol: libpq is not linked). Nothing
 * may call it before db_pq_load has succeeded.
 */
#ifndef ECPD_DATABASE_POSTGRES_PQ_H
#define ECPD_DATABASE_POSTGRES_PQ_H

#include <libpq-fe.h>

#include "error.h"
#include "lazy_lib.h"

#define DB_PQ_FUNCTIONS(X) \
    X(PQconnectStartParams) \
    X(PQconnectPoll) \
    X(PQstatus) \
    X(PQerrorMessage) \
    X(PQfinish) \
    X(PQsocket) \
    X(PQsetNoticeProcessor) \
    X(PQsetnonblocking) \
    X(PQserverVersion) \
    X(PQgetCancel) \
    X(PQcancel) \
    X(PQfreeCancel) \
    X(PQsendQuery) \
    X(PQsendQueryParams) \
    X(PQsetSingleRowMode) \
    X(PQflush) \
    X(PQisBusy) \
    X(PQconsumeInput) \
    X(PQgetResult) \
    X(PQresultStatus) \
    X(PQresultErrorField) \
    X(PQclear) \
    X(PQcmdStatus) \
    X(PQcmdTuples) \
    X(PQnfields) \
    X(PQfname) \
    X(PQftype) \
    X(PQftable) \
    X(PQftablecol) \
    X(PQgetisnull) \
    X(PQgetlength) \
    X(PQgetvalue)

/* The table, LOAD and TABLE (core/lazy_lib.h): db_pq_load() opens libpq the first time
 * (any thread) and returns 0, or ECP_EIO with err naming the library and why
 * the loader refused it; db_pq() is the table, only after that succeeded. */
ECP_LAZY_LIB_DECLARE(db_pq_api, DB_PQ_FUNCTIONS, db_pq_load, db_pq);

#ifndef DB_PQ_TABLE_ONLY
#define PQconnectStartParams (db_pq()->PQconnectStartParams)
#define PQconnectPoll (db_pq()->PQconnectPoll)
#define PQstatus (db_pq()->PQstatus)
#define PQerrorMessage (db_pq()->PQerrorMessage)
#define PQfinish (db_pq()->PQfinish)
#define PQsocket (db_pq()->PQsocket)
#define PQsetNoticeProcessor (db_pq()->PQsetNoticeProcessor)
#define PQsetnonblocking (db_pq()->PQsetnonblocking)
#define PQserverVersion (db_pq()->PQserverVersion)
#define PQgetCancel (db_pq()->PQgetCancel)
#define PQcancel (db_pq()->PQcancel)
#define PQfreeCancel (db_pq()->PQfreeCancel)
#define PQsendQuery (db_pq()->PQsendQuery)
#define PQsendQueryParams (db_pq()->PQsendQueryParams)
#define PQsetSingleRowMode (db_pq()->PQsetSingleRowMode)
#define PQflush (db_pq()->PQflush)
#define PQisBusy (db_pq()->PQisBusy)
#define PQconsumeInput (db_pq()->PQconsumeInput)
#define PQgetResult (db_pq()->PQgetResult)
#define PQresultStatus (db_pq()->PQresultStatus)
#define PQresultErrorField (db_pq()->PQresultErrorField)
#define PQclear (db_pq()->PQclear)
#define PQcmdStatus (db_pq()->PQcmdStatus)
#define PQcmdTuples (db_pq()->PQcmdTuples)
#define PQnfields (db_pq()->PQnfields)
#define PQfname (db_pq()->PQfname)
#define PQftype (db_pq()->PQftype)
#define PQftable (db_pq()->PQftable)
#define PQftablecol (db_pq()->PQftablecol)
#define PQgetisnull (db_pq()->PQgetisnull)
#define PQgetlength (db_pq()->PQgetlength)
#define PQgetvalue (db_pq()->PQgetvalue)
#endif

#endif
