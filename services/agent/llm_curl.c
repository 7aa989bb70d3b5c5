/* llm_curl: see llm_curl.h. */
#define LLM_CURL_TABLE_ONLY
#include "llm_curl.h"

ECP_LAZY_LIB_DEFINE(llm_curl_api, LLM_CURL_FUNCTIONS, llm_curl_load, llm_curl, "libcurl", ECPD_CURL_SONAME)
