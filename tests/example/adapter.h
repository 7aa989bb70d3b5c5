/* adapter: the wordcount service on the wire (the `wordcount` namespace).
 * The composition root (here, the example's test) is its only includer. */
#ifndef ECPD_WORDCOUNT_ADAPTER_H
#define ECPD_WORDCOUNT_ADAPTER_H

#include "interface.h"
#include "rpc.h"

/* Fills *out with the namespace's methods; svc is borrowed and must outlive
 * the server. */
void wordcount_adapter_init(ecp_adapter *out, wordcount_service *svc);

#endif
