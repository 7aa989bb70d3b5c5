/* llm_curl: see llm_curl.h. */
#define LLM_CURL_TABLE_ONLY
#include "llm_curl.h"

#include "lazy_lib.h"

static llm_curl_api api;

static const ecp_lazy_symbol symbols[] = {
#define LLM_CURL_SYMBOL(function) {#function, offsetof(llm_curl_api, function)},
    LLM_CURL_FUNCTIONS(LLM_CURL_SYMBOL)
#undef LLM_CURL_SYMBOL
};

static ecp_lazy_lib libcurl = ECP_LAZY_LIB_INIT("libcurl", ECPD_CURL_SONAME, symbols, &api);

int llm_curl_load(ecp_error *err) { return ecp_lazy_lib_load(&libcurl, err); }

const llm_curl_api *llm_curl(void) { return ecp_lazy_lib_table(&libcurl); }
