/* secrets: the env provider (read-only) and the encrypted provider in the
 * store.
 *
 * Encryption is libsodium's XChaCha20-Poly1305 (AEAD) with a random nonce
 * per value and the secret's key name as associated data, so a ciphertext
 * moved to another name fails to open. The encryption key is derived
 * (crypto_kdf) from 32 random bytes in <data-dir>/secret.key, created 0600
 * and published atomically (link), so two servers starting together agree
 * on one key. Plain text lives in sodium_malloc'd or wiped memory and is
 * never logged: every message here names the key, never the value.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal.h"

#define KEY_BYTES crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_BYTES crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_BYTES crypto_aead_xchacha20poly1305_ietf_ABYTES

static const session_secret_provider providers[] = {
    {.id = "env", .name = "Environment Variables", .priority = 20, .read_only = true},
    {.id = "encrypted-file", .name = "Encrypted File", .priority = 30, .read_only = false},
};

const session_secret_provider *session_secret_providers(size_t *count)
{
    *count = sizeof providers / sizeof providers[0];
    return providers;
}

/* ----- the key file ------------------------------------------------------------------------- */

static int read_master(const char *path, unsigned char *master, ecp_logger *log, ecp_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return ecp_error_errno(err, errno, path);
    struct stat st;
    int status = 0;
    if (fstat(fd, &st) < 0) {
        status = ecp_error_errno(err, errno, path);
    } else if (!S_ISREG(st.st_mode) || st.st_size != crypto_kdf_KEYBYTES) {
        status = ecp_error_set(err, ECP_EIO, "%s: not a key file of %d bytes", path, crypto_kdf_KEYBYTES);
    } else {
        if (st.st_mode & 077) {
            ecp_log(log, ECP_LOG_WARN, "secrets: %s was readable by others; made private (0600)", path);
            if (fchmod(fd, 0600) < 0)
                ecp_log(log, ECP_LOG_WARN, "secrets: chmod %s: %s", path, strerror(errno));
        }
        ssize_t n = read(fd, master, crypto_kdf_KEYBYTES);
        if (n != crypto_kdf_KEYBYTES)
            status = ecp_error_set(err, ECP_EIO, "%s: short read", path);
    }
    close(fd);
    return status;
}

/* Creates the key file unless another server just did: the key is written to
 * a private temporary file and linked into place, which fails if one exists. */
static int make_master(const char *path, unsigned char *master, ecp_logger *log, ecp_error *err)
{
    buf tmp = BUF_INIT;
    buf_appendf(&tmp, "%s.%ld.tmp", path, (long)getpid());
    int status = 0;
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        status = ecp_error_errno(err, errno, tmp.data);
        goto done;
    }
    randombytes_buf(master, crypto_kdf_KEYBYTES);
    if (write(fd, master, crypto_kdf_KEYBYTES) != crypto_kdf_KEYBYTES || fsync(fd) < 0) {
        status = ecp_error_errno(err, errno, tmp.data);
        close(fd);
        unlink(tmp.data);
        goto done;
    }
    close(fd);
    if (link(tmp.data, path) < 0) {
        int e = errno;
        unlink(tmp.data);
        if (e == EEXIST)
            status = read_master(path, master, log, err);
        else
            status = ecp_error_errno(err, e, path);
        goto done;
    }
    unlink(tmp.data);
done:
    buf_free(&tmp);
    return status;
}

int session__secrets_init(session_service *self, ecp_error *err)
{
    if (sodium_init() < 0)
        return ecp_error_set(err, ECP_EIO, "secrets: libsodium cannot start");
    self->secret_key = sodium_malloc(KEY_BYTES);
    if (!self->secret_key)
        return ecp_error_set(err, ECP_ENOMEM, "secrets: out of memory");
    unsigned char master[crypto_kdf_KEYBYTES];
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/secret.key", self->data_dir);
    ecp_error why = {0};
    int status = read_master(path.data, master, self->log, &why);
    if (status == ECP_ENOTFOUND)
        status = make_master(path.data, master, self->log, &why);
    if (status < 0) {
        /* Without a key file nothing can be decrypted later: keep the store's
         * secrets out of reach rather than write ones no later run can read. */
        ecp_log(self->log, ECP_LOG_ERROR, "secrets: %s; secrets set now last for this run only", why.message);
        randombytes_buf(master, sizeof master);
        self->secrets_ephemeral = true;
    }
    crypto_kdf_derive_from_key(self->secret_key, KEY_BYTES, 1, "ecpdsecr", master);
    sodium_memzero(master, sizeof master);
    sodium_mprotect_readonly(self->secret_key);
    buf_free(&path);
    return 0;
}

void session__secrets_free(session_service *self)
{
    sodium_free(self->secret_key); /* wipes it */
    self->secret_key = NULL;
}

/* ----- the env provider --------------------------------------------------------------------------- */

/* KEY in upper case with '.' and '-' as '_'. */
static void env_name(buf *out, const char *prefix, const char *key)
{
    buf_append_str(out, prefix);
    for (const char *c = key; *c; c++)
        buf_push(out, *c == '.' || *c == '-' ? '_' : (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c));
}

static const char *env_lookup(const char *key)
{
    buf name = BUF_INIT;
    env_name(&name, "ECPD_SECRET_", key);
    const char *v = getenv(name.data);
    if (!v) {
        buf_clear(&name);
        env_name(&name, "", key);
        v = getenv(name.data);
    }
    buf_free(&name);
    return v;
}

/* ----- store operations ------------------------------------------------------------------------------ */

typedef enum secret_action {
    SECRET_GET,
    SECRET_SET,
    SECRET_DELETE,
    SECRET_LIST,
} secret_action;

typedef struct secret_op {
    secret_action action;
    const unsigned char *key_material; /* the service's; it outlives the op */
    char *key;
    char *prefix;
    unsigned char *value; /* plain text: wiped before it is freed */
    size_t value_len;
    int64_t now, expires_at;
    char *description;
    /* results */
    bool found;
    int64_t created_at;
    char **keys;
    size_t key_count;
    /* completion */
    session_secret_get_cb get_cb;
    session_status_cb status_cb;
    session_secret_delete_cb delete_cb;
    session_secret_list_cb list_cb;
    void *ctx;
} secret_op;

static int secret_get_work(sqlite3 *db, secret_op *op, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, "SELECT nonce, ciphertext, created_at, expires_at, description FROM secrets WHERE key = ?1",
                               &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t expires = sqlite3_column_type(st, 3) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 3);
        const unsigned char *nonce = sqlite3_column_blob(st, 0);
        const unsigned char *cipher = sqlite3_column_blob(st, 1);
        size_t nonce_len = (size_t)sqlite3_column_bytes(st, 0), cipher_len = (size_t)sqlite3_column_bytes(st, 1);
        if (expires && expires <= op->now) {
            /* expired: as if it were not there */
        } else if (nonce_len != NONCE_BYTES || cipher_len < TAG_BYTES) {
            status = ecp_error_set(err, ECP_EIO, "secret '%s' is damaged in the store", op->key);
        } else {
            op->value = malloc(cipher_len - TAG_BYTES + 1);
            unsigned long long len = 0;
            if (!op->value) {
                status = ecp_error_set(err, ECP_ENOMEM, "out of memory");
            } else if (crypto_aead_xchacha20poly1305_ietf_decrypt(op->value, &len, NULL, cipher, cipher_len,
                                                                  (const unsigned char *)op->key, strlen(op->key),
                                                                  nonce, op->key_material) != 0) {
                status = ecp_error_set(err, ECP_EIO,
                                       "secret '%s' cannot be decrypted (was secret.key replaced?)", op->key);
            } else {
                op->value[len] = '\0';
                op->value_len = (size_t)len;
                op->found = true;
                op->created_at = sqlite3_column_int64(st, 2);
                op->expires_at = expires;
                const char *d = (const char *)sqlite3_column_text(st, 4);
                op->description = d ? xstrdup(d) : NULL;
            }
        }
    } else if (rc != SQLITE_DONE) {
        status = store_error(db, rc, err, "reading a secret");
    }
    sqlite3_finalize(st);
    return status;
}

static int secret_set_work(sqlite3 *db, secret_op *op, ecp_error *err)
{
    unsigned char nonce[NONCE_BYTES];
    randombytes_buf(nonce, sizeof nonce);
    size_t cipher_cap = op->value_len + TAG_BYTES;
    unsigned char *cipher = malloc(cipher_cap);
    if (!cipher)
        return ecp_error_set(err, ECP_ENOMEM, "out of memory");
    unsigned long long cipher_len = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(cipher, &cipher_len, op->value, op->value_len,
                                               (const unsigned char *)op->key, strlen(op->key), NULL, nonce,
                                               op->key_material);
    sqlite3_stmt *st;
    int status = store_prepare(db,
                               "INSERT INTO secrets (key, nonce, ciphertext, created_at, expires_at, description) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (key) DO UPDATE SET nonce = excluded.nonce, "
                               "ciphertext = excluded.ciphertext, expires_at = excluded.expires_at, "
                               "description = excluded.description",
                               &st, err);
    if (status == 0) {
        sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, nonce, sizeof nonce, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, cipher, (int)cipher_len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, op->now);
        if (op->expires_at)
            sqlite3_bind_int64(st, 5, op->expires_at);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_text(st, 6, op->description, -1, SQLITE_STATIC); /* NULL binds null */
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
            status = store_error(db, rc, err, "saving a secret");
        sqlite3_finalize(st);
    }
    free(cipher);
    return status;
}

static int secret_delete_work(sqlite3 *db, secret_op *op, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, "DELETE FROM secrets WHERE key = ?1", &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        op->found = sqlite3_changes(db) > 0;
    else
        status = store_error(db, rc, err, "deleting a secret");
    sqlite3_finalize(st);
    return status;
}

static int secret_list_work(sqlite3 *db, secret_op *op, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db,
                               "SELECT key FROM secrets WHERE (expires_at IS NULL OR expires_at > ?1) "
                               "AND substr(key, 1, length(?2)) = ?2 ORDER BY key",
                               &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_int64(st, 1, op->now);
    sqlite3_bind_text(st, 2, op->prefix ? op->prefix : "", -1, SQLITE_STATIC);
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (op->key_count == cap) {
            cap = cap ? cap * 2 : 16;
            op->keys = xrealloc(op->keys, cap * sizeof *op->keys);
        }
        op->keys[op->key_count++] = xstrdup((const char *)sqlite3_column_text(st, 0));
    }
    if (rc != SQLITE_DONE)
        status = store_error(db, rc, err, "listing the secrets");
    sqlite3_finalize(st);
    return status;
}

static int secret_work(sqlite3 *db, void *data, ecp_error *err)
{
    secret_op *op = data;
    switch (op->action) {
    case SECRET_GET: return secret_get_work(db, op, err);
    case SECRET_SET: return secret_set_work(db, op, err);
    case SECRET_DELETE: return secret_delete_work(db, op, err);
    case SECRET_LIST: return secret_list_work(db, op, err);
    }
    return 0;
}

static int compare_strings(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The env provider's keys: ECPD_SECRET_<KEY> variables, named by KEY in
 * lower case, a name secret/get finds them by again. */
static void add_env_keys(secret_op *op)
{
    extern char **environ;
    size_t cap = op->key_count;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "ECPD_SECRET_", 12) != 0)
            continue;
        const char *eq = strchr(*e, '=');
        if (!eq || eq == *e + 12)
            continue;
        char *key = xstrndup(*e + 12, (size_t)(eq - *e - 12));
        for (char *c = key; *c; c++)
            *c = *c >= 'A' && *c <= 'Z' ? (char)(*c + 32) : *c;
        if (op->prefix && strncmp(key, op->prefix, strlen(op->prefix)) != 0) {
            free(key);
            continue;
        }
        if (op->key_count == cap) {
            cap = cap ? cap * 2 : 16;
            op->keys = xrealloc(op->keys, cap * sizeof *op->keys);
        }
        op->keys[op->key_count++] = key;
    }
    if (op->key_count > 1)
        qsort(op->keys, op->key_count, sizeof *op->keys, compare_strings);
    size_t n = 0;
    for (size_t i = 0; i < op->key_count; i++) {
        if (n && strcmp(op->keys[n - 1], op->keys[i]) == 0)
            free(op->keys[i]);
        else
            op->keys[n++] = op->keys[i];
    }
    op->key_count = n;
}

static void secret_done(void *data, int status, const ecp_error *err)
{
    secret_op *op = data;
    switch (op->action) {
    case SECRET_GET: {
        session_secret_info info = {.key = op->key, .provider = "encrypted-file", .created_at = op->created_at,
                                    .expires_at = op->expires_at, .description = op->description};
        op->get_cb(op->ctx, status, err, status == 0 && op->found ? (const char *)op->value : NULL, op->value_len,
                   status == 0 && op->found ? &info : NULL);
        break;
    }
    case SECRET_SET: op->status_cb(op->ctx, status, err); break;
    case SECRET_DELETE: op->delete_cb(op->ctx, status, err, op->found); break;
    case SECRET_LIST:
        if (status == 0)
            add_env_keys(op);
        op->list_cb(op->ctx, status, err, (const char *const *)op->keys, op->key_count);
        break;
    }
}

static void secret_free(void *data)
{
    secret_op *op = data;
    if (op->value) {
        sodium_memzero(op->value, op->value_len);
        free(op->value);
    }
    for (size_t i = 0; i < op->key_count; i++)
        free(op->keys[i]);
    free_each(op->keys, op->key, op->prefix, op->description, op);
}

static const store_op_type secret_type = {
    .name = "secrets", .transaction = true, .work = secret_work, .done = secret_done, .free_data = secret_free,
};

static secret_op *new_op(session_service *self, secret_action action, const char *key, void *ctx)
{
    secret_op *op = xcalloc(1, sizeof *op);
    op->action = action;
    op->key_material = self->secret_key;
    op->key = key ? xstrdup(key) : NULL;
    op->now = session__now_ms();
    op->ctx = ctx;
    return op;
}

void session_secret_get(session_service *self, const char *key, session_secret_get_cb cb, void *ctx)
{
    const char *env = env_lookup(key);
    if (env) {
        session_secret_info info = {.key = key, .provider = "env"};
        cb(ctx, 0, NULL, env, strlen(env), &info);
        return;
    }
    secret_op *op = new_op(self, SECRET_GET, key, ctx);
    op->get_cb = cb;
    store_submit(self->store, &secret_type, op);
}

void session_secret_set(session_service *self, const char *key, const char *value, size_t len,
                        const session_secret_options *options, session_status_cb cb, void *ctx)
{
    const char *provider = options && options->provider ? options->provider : "encrypted-file";
    if (strcmp(provider, "env") == 0) {
        ecp_error err;
        ecp_error_set(&err, ECP_EREADONLY, "Secret provider 'env' is read-only");
        cb(ctx, err.status, &err);
        return;
    }
    if (strcmp(provider, "encrypted-file") != 0) {
        ecp_error err;
        ecp_error_set(&err, ECP_ENOTFOUND, "Unknown secret provider: %s", provider);
        cb(ctx, err.status, &err);
        return;
    }
    secret_op *op = new_op(self, SECRET_SET, key, ctx);
    op->value = xmalloc(len + 1);
    memcpy(op->value, value, len);
    op->value[len] = '\0';
    op->value_len = len;
    op->expires_at = options ? options->expires_at : 0;
    op->description = options && options->description ? xstrdup(options->description) : NULL;
    op->status_cb = cb;
    store_submit(self->store, &secret_type, op);
}

void session_secret_delete(session_service *self, const char *key, session_secret_delete_cb cb, void *ctx)
{
    secret_op *op = new_op(self, SECRET_DELETE, key, ctx);
    op->delete_cb = cb;
    store_submit(self->store, &secret_type, op);
}

void session_secret_list(session_service *self, const char *prefix, session_secret_list_cb cb, void *ctx)
{
    secret_op *op = new_op(self, SECRET_LIST, NULL, ctx);
    op->prefix = prefix ? xstrdup(prefix) : NULL;
    op->list_cb = cb;
    store_submit(self->store, &secret_type, op);
}
