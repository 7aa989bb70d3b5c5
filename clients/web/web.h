/* ecp-web: the browser GUI's server. It serves the page's static files to
 * whoever holds the token, and relays each page's WebSocket to a connection
 * of its own on ecpd's Unix socket: one JSON-RPC message per text frame
 * toward the page, one Content-Length framed message toward ecpd. It is a
 * client of the socket, like ecp-tui --connect, not a transport of ecpd. */
#ifndef ECP_WEB_H
#define ECP_WEB_H

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* 32 random bytes, as hex. */
#define WEB_TOKEN_BYTES 32
#define WEB_TOKEN_CHARS (WEB_TOKEN_BYTES * 2)

/* Flow control of each relay, both ways: reading one side stops while more
 * than the high watermark waits to be written to the other, and resumes once
 * that drains below the low one. */
#define WEB_HIGH_WATERMARK ((size_t)1 << 20)
#define WEB_LOW_WATERMARK ((size_t)256 << 10)
/* The largest message relayed either way: ecpd's own default limit. */
#define WEB_MAX_MESSAGE ((size_t)256 << 20)

typedef struct bridge bridge;

typedef struct web {
    uv_loop_t *loop;
    char token[WEB_TOKEN_CHARS + 1];
    char *static_dir;   /* realpath of --static */
    char *socket_path;  /* ecpd's socket */
    char *workspace;
    char *server_path;  /* the ecpd to start when none answers */
    bool tls;
    uint64_t last_server_start_ms; /* one start at a time for every page that finds no server */
    bridge *pages;      /* every relay whose WebSocket is open, to close them at the end */
} web;

/* http.c: the token, the static files and the upgrade's checks. */
void web_make_token(char out[WEB_TOKEN_CHARS + 1]);
/* True when the request carries the right token, in ?token= or the cookie. */
bool web_request_has_token(const web *w, struct lws *wsi);
/* LWS_CALLBACK_HTTP: answers the request. Returns what the callback returns. */
int web_serve_http(web *w, struct lws *wsi, const char *path, size_t path_len);
/* LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: 0 lets the upgrade go on; otherwise the
 * answer (403 or 404) has been written and this is what the callback returns. */
int web_confirm_upgrade(web *w, struct lws *wsi);

/* bridge.c: one WebSocket's relay to ecpd. */
bridge *bridge_open(web *w, struct lws *wsi);
int bridge_receive(bridge *b, const char *data, size_t len);
int bridge_writeable(bridge *b);
void bridge_closed(bridge *b);
/* Starts a server at once when nobody listens on the socket, as each page would (the first page
 * then finds it ready, and a server that cannot start says so before anyone opens the page). */
void bridge_start_server_if_absent(web *w);
/* Closes every page's WebSocket (1001) once what ecpd sent it is delivered. */
void bridge_close_all(web *w);

#endif
