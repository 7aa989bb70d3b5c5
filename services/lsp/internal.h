/* What the lsp service's own files share. */
#ifndef ECPD_LSP_INTERNAL_H
#define ECPD_LSP_INTERNAL_H

#include "interface.h"

/* The default request timeout, when neither the options nor the settings name one. */
#define LSP_DEFAULT_TIMEOUT_MS 30000u
/* initialize has the request timeout, but never less than this: starting a
 * server (an interpreter, a JIT, a project to load) is slower than
 * answering a hover, and a deadline tuned for hovers must not fail it. */
#define LSP_MIN_INITIALIZE_TIMEOUT_MS 5000u
/* Restarts allowed within LSP_RESTART_WINDOW_MS before a crashed server stays down. */
#define LSP_MAX_RESTARTS 3
#define LSP_RESTART_WINDOW_MS 60000u
/* How long a stopped server has to exit by itself before it is killed. */
#define LSP_STOP_GRACE_MS 1000u

#endif
