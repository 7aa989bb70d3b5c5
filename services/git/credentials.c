/* credentials: what the service may offer a remote that asks who we are.
 *
 * Two sources and never a person: an ssh-agent for SSH remotes, and the
 * session's secret store for HTTP(S) remotes, under "git.token.<host>". The
 * store is read on the loop (the session service answers there), so the
 * tokens are loaded before a transfer's job starts and handed to it; the
 * callback libgit2 calls on the job's thread only looks them up. Each kind
 * of credential is offered once: a remote that asks again refused it, and
 * the transfer fails as an authentication failure instead of asking forever.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "session/interface.h"

/* ----- loading the tokens (loop) ------------------------------------------------------------ */

struct gitsvc__load {
    gitsvc *svc; /* NULL once the service is gone: finish quietly */
    gitsvc_tokens_cb cb;
    void *ctx;
    char **keys;
    size_t key_count, next;
    gitsvc_tokens tokens;
    gitsvc__load *link;
};

static void load_end(gitsvc__load *l)
{
    gitsvc *svc = l->svc;
    if (svc) {
        for (gitsvc__load **p = &svc->loads; *p; p = &(*p)->link)
            if (*p == l) {
                *p = l->link;
                break;
            }
    }
    for (size_t i = 0; i < l->key_count; i++)
        free(l->keys[i]);
    free(l->keys);
    if (svc) {
        gitsvc_tokens *tokens = xmalloc(sizeof *tokens);
        *tokens = l->tokens;
        l->cb(l->ctx, tokens);
    } else {
        gitsvc_tokens_free(&l->tokens);
    }
    free(l);
}

static void load_next(gitsvc__load *l);

static void got_token(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                      const session_secret_info *info)
{
    (void)info;
    gitsvc__load *l = ctx;
    const char *key = l->keys[l->next - 1];
    if (status == 0 && value) {
        l->tokens.items = xrealloc(l->tokens.items, (l->tokens.count + 1) * sizeof *l->tokens.items);
        gitsvc_token *t = &l->tokens.items[l->tokens.count++];
        t->host = xstrdup(key + strlen(GITSVC_TOKEN_PREFIX));
        t->value = xstrndup(value, len);
    } else if (status && l->svc) {
        ecp_log(l->svc->log, ECP_LOG_WARN, "git: cannot read the secret %s: %s", key, err ? err->message : "");
    }
    load_next(l);
}

static void load_next(gitsvc__load *l)
{
    if (l->next == l->key_count || !l->svc) {
        load_end(l);
        return;
    }
    const char *key = l->keys[l->next++];
    session_secret_get(l->svc->session, key, got_token, l);
}

static void got_keys(void *ctx, int status, const ecp_error *err, const char *const *keys, size_t count)
{
    gitsvc__load *l = ctx;
    if (status) {
        if (l->svc)
            ecp_log(l->svc->log, ECP_LOG_WARN, "git: cannot list the secrets of remotes: %s",
                    err ? err->message : "");
        count = 0;
    }
    l->keys = count ? xcalloc(count, sizeof *l->keys) : NULL;
    for (size_t i = 0; i < count; i++)
        if (strlen(keys[i]) > strlen(GITSVC_TOKEN_PREFIX))
            l->keys[l->key_count++] = xstrdup(keys[i]);
    load_next(l);
}

void gitsvc_tokens_load(gitsvc *self, gitsvc_tokens_cb cb, void *ctx)
{
    if (!self->session) {
        cb(ctx, xcalloc(1, sizeof(gitsvc_tokens)));
        return;
    }
    gitsvc__load *l = xcalloc(1, sizeof *l);
    l->svc = self;
    l->cb = cb;
    l->ctx = ctx;
    l->link = self->loads;
    self->loads = l;
    session_secret_list(self->session, GITSVC_TOKEN_PREFIX, got_keys, l);
}

void gitsvc__tokens_orphan(gitsvc *self)
{
    for (gitsvc__load *l = self->loads; l; l = l->link)
        l->svc = NULL;
    self->loads = NULL;
}

void gitsvc_tokens_free(gitsvc_tokens *tokens)
{
    if (!tokens)
        return;
    for (size_t i = 0; i < tokens->count; i++) {
        free(tokens->items[i].host);
        if (tokens->items[i].value) {
            /* a secret does not outlive its use in freed memory */
            volatile char *v = tokens->items[i].value;
            while (*v)
                *v++ = '\0';
        }
        free(tokens->items[i].value);
    }
    free(tokens->items);
    tokens->items = NULL;
    tokens->count = 0;
}

/* ----- offering them (any thread) ---------------------------------------------------------- */

/* The host (and port) of an http:// or https:// URL, into out; false for
 * any other URL. */
static bool http_host(const char *url, char *out, size_t size, size_t *host_len)
{
    const char *p;
    if (!strncmp(url, "https://", 8))
        p = url + 8;
    else if (!strncmp(url, "http://", 7))
        p = url + 7;
    else
        return false;
    size_t n = strcspn(p, "/?#");
    const char *at = memchr(p, '@', n); /* user info is not part of the host */
    if (at) {
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    if (n == 0 || n >= size)
        return false;
    memcpy(out, p, n);
    out[n] = '\0';
    /* without the port; "[::1]:8080" keeps its brackets */
    const char *colon = strrchr(out, ':');
    const char *bracket = strrchr(out, ']');
    *host_len = colon && (!bracket || colon > bracket) ? (size_t)(colon - out) : n;
    return true;
}

static const gitsvc_token *find_token(const gitsvc_tokens *tokens, const char *name, size_t len)
{
    for (size_t i = 0; tokens && i < tokens->count; i++)
        if (strlen(tokens->items[i].host) == len && !strncasecmp(tokens->items[i].host, name, len))
            return &tokens->items[i];
    return NULL;
}

const char *gitsvc_token_for_url(const gitsvc_tokens *tokens, const char *url)
{
    char host[512];
    size_t host_len;
    if (!url || !http_host(url, host, sizeof host, &host_len))
        return NULL;
    const gitsvc_token *t = find_token(tokens, host, strlen(host)); /* host:port first */
    if (!t && host_len != strlen(host))
        t = find_token(tokens, host, host_len);
    return t ? t->value : NULL;
}

int gitsvc_credentials_acquire(struct git_credential **out, const char *url, const char *username_from_url,
                               unsigned int allowed_types, void *payload)
{
    gitsvc_credentials *c = payload;
    unsigned ask = c->asks++;
    const char *token = gitsvc_token_for_url(c->tokens, url);
    if (token && (allowed_types & GIT_CREDENTIAL_USERPASS_PLAINTEXT) && !c->offered_token) {
        c->offered_token = true;
        const char *colon = strchr(token, ':');
        if (colon) {
            char *user = xstrndup(token, (size_t)(colon - token));
            int rc = git_credential_userpass_plaintext_new(out, user, colon + 1);
            free(user);
            return rc;
        }
        const char *user = username_from_url && username_from_url[0] ? username_from_url : "x-access-token";
        return git_credential_userpass_plaintext_new(out, user, token);
    }
    /* one try each: a second ask means the first was refused */
    if (ask == 0 && (allowed_types & GIT_CREDENTIAL_SSH_KEY) && getenv("SSH_AUTH_SOCK"))
        return git_credential_ssh_key_from_agent(out, username_from_url ? username_from_url : "git");
    if (ask == 0 && (allowed_types & GIT_CREDENTIAL_USERNAME) && username_from_url)
        return git_credential_username_new(out, username_from_url);
    c->failed = true;
    git_error_set_str(GIT_ERROR_NET, token && c->offered_token
                                         ? "authentication failed: the remote refused the stored token"
                                         : "authentication required and no credentials are available");
    return GIT_EAUTH;
}
