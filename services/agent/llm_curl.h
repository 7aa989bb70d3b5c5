/* llm_curl: libcurl, opened the first time the agent makes an HTTP request
 * (core/lazy_lib.h), not by the dynamic loader at every start: with it come
 * OpenSSL, GnuTLS, Kerberos, LDAP, libssh2 and a dozen more.
 *
 * llm.c includes this header instead of <curl/curl.h> and calls libcurl by
 * its own names; below, each name stands for the function in the table, so
 * a call compiles only if its function is listed in LLM_CURL_FUNCTIONS (an
 * unlisted one would be an undefined symbol: libcurl is not linked). Nothing
 * may call it before llm_curl_load has succeeded.
 */
#ifndef ECPD_AGENT_LLM_CURL_H
#define ECPD_AGENT_LLM_CURL_H

/* libcurl wraps the calls of its variadic functions in macros of their own
 * names (type checks, or a count of the arguments): the calls below go
 * through the table instead. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt

#include "error.h"
#include "lazy_lib.h"

#define LLM_CURL_FUNCTIONS(X)  \
    X(curl_global_init)        \
    X(curl_easy_init)          \
    X(curl_easy_cleanup)       \
    X(curl_easy_setopt)        \
    X(curl_easy_getinfo)       \
    X(curl_easy_pause)         \
    X(curl_easy_strerror)      \
    X(curl_multi_init)         \
    X(curl_multi_cleanup)      \
    X(curl_multi_setopt)       \
    X(curl_multi_add_handle)   \
    X(curl_multi_remove_handle) \
    X(curl_multi_assign)       \
    X(curl_multi_socket_action) \
    X(curl_multi_info_read)    \
    X(curl_slist_append)       \
    X(curl_slist_free_all)

/* The table, LOAD and TABLE (core/lazy_lib.h): llm_curl_load() opens libcurl the first time
 * (any thread) and returns 0, or ECP_EIO with err naming the library and why
 * the loader refused it; llm_curl() is the table, only after that succeeded. */
ECP_LAZY_LIB_DECLARE(llm_curl_api, LLM_CURL_FUNCTIONS, llm_curl_load, llm_curl);

#ifndef LLM_CURL_TABLE_ONLY
#define curl_global_init (llm_curl()->curl_global_init)
#define curl_easy_init (llm_curl()->curl_easy_init)
#define curl_easy_cleanup (llm_curl()->curl_easy_cleanup)
#define curl_easy_setopt (llm_curl()->curl_easy_setopt)
#define curl_easy_getinfo (llm_curl()->curl_easy_getinfo)
#define curl_easy_pause (llm_curl()->curl_easy_pause)
#define curl_easy_strerror (llm_curl()->curl_easy_strerror)
#define curl_multi_init (llm_curl()->curl_multi_init)
#define curl_multi_cleanup (llm_curl()->curl_multi_cleanup)
#define curl_multi_setopt (llm_curl()->curl_multi_setopt)
#define curl_multi_add_handle (llm_curl()->curl_multi_add_handle)
#define curl_multi_remove_handle (llm_curl()->curl_multi_remove_handle)
#define curl_multi_assign (llm_curl()->curl_multi_assign)
#define curl_multi_socket_action (llm_curl()->curl_multi_socket_action)
#define curl_multi_info_read (llm_curl()->curl_multi_info_read)
#define curl_slist_append (llm_curl()->curl_slist_append)
#define curl_slist_free_all (llm_curl()->curl_slist_free_all)
#endif

#endif
