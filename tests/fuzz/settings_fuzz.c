/* Fuzzing the settings as they load: a user settings file (JSONC) read by a
 * fresh session service, then each of its values set as config/set would.
 *
 * One store (in memory), document service, file service and pool live for
 * the whole process; each input is written to the settings file, a session
 * service starts on it, and is freed. Whatever the file holds, the service
 * starts, and every value it ends up with passes the schema again (so what a
 * file gives is what config/set would take). Each top-level member of the
 * input, when it parses, is then set through session_setting_set: a refusal
 * must name its reason, and nothing set survives the input (the store's layer
 * is reset before the service goes). Nothing leaves the target's private
 * directory; no child process, no network. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "buf.h"
#include "document/interface.h"
#include "file/interface.h"
#include "internal.h"
#include "json.h"
#include "job.h"
#include "store/interface.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static uv_loop_t loop;
static char dir[] = "/tmp/ecpd-settings-fuzz-XXXXXX";
static char *settings_path;
static FILE *null_log;
static ecp_logger logger;
static ecp_pool *pool;
static store *db;
static document_service *documents;
static file_service *files;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    file_service_free(files);
    document_service_free(documents);
    store_close(db);
    ecp_pool_free(pool);
    uv_run(&loop, UV_RUN_NOWAIT);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    REQUIRE(uv_loop_init(&loop) == 0);
    REQUIRE(mkdtemp(dir) != NULL);
    REQUIRE(asprintf(&settings_path, "%s/settings.jsonc", dir) > 0);
    null_log = fopen("/dev/null", "w");
    REQUIRE(null_log != NULL);
    logger = (ecp_logger){.out = null_log, .level = ECP_LOG_DEBUG};
    pool = ecp_pool_new(&loop, &logger);
    store_options so = {.data_dir = dir, .memory_only = true};
    ecp_error err;
    db = store_open(&loop, &logger, &so, &err);
    REQUIRE(db != NULL);
    documents = document_service_new(pool, &logger);
    files = file_service_new(pool, &logger);
    atexit(cleanup);
    return 0;
}

/* Every value the service holds passes the schema again. */
static void check_effective(session_service *svc)
{
    size_t count;
    const session_setting_schema *schema = session_settings_schema(&count);
    for (size_t i = 0; i < count; i++) {
        const char *value = session_setting_json(svc, schema[i].key);
        if (!value)
            continue;
        char reason[SESSION_REASON_MAX];
        ecp_error err;
        if (session_setting_set(svc, schema[i].key, value, strlen(value), reason, &err) != 0) {
            fprintf(stderr, "settings_fuzz: %s = %s was taken but is refused: %s\n", schema[i].key, value, reason);
            __builtin_trap();
        }
    }
}

/* Sets each top-level member of the input as config/set would. */
static void set_members(session_service *svc, const char *text, size_t len)
{
    buf stripped = BUF_INIT;
    session__jsonc_strip(text, len, &stripped);
    json_doc doc;
    if (json_doc_parse(&doc, stripped.data ? stripped.data : "", stripped.len, NULL) == 0 &&
        json_type_of(&doc, json_root(&doc)) == JSON_OBJECT) {
        arena a = ARENA_INIT;
        for (json_ref k = json_first(&doc, json_root(&doc)); k != JSON_NO_REF; k = json_next(&doc, k)) {
            const char *key;
            size_t key_len, value_len;
            REQUIRE(json_string(&doc, k, &a, &key, &key_len));
            const char *value = json_raw(&doc, k + 1, &value_len);
            char reason[SESSION_REASON_MAX];
            ecp_error err;
            int rc = session_setting_set(svc, key, value, value_len, reason, &err);
            REQUIRE(rc == 0 || (rc < 0 && reason[0] && err.message[0]));
        }
        arena_free(&a);
    }
    json_doc_free(&doc);
    buf_free(&stripped);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(settings_path, "wb");
    REQUIRE(f != NULL);
    REQUIRE(fwrite(data, 1, size, f) == size || size == 0);
    fclose(f);

    session_service_options o = {
        .pool = pool, .log = &logger, .store = db, .documents = documents, .files = files,
        .config_path = settings_path, .data_dir = dir,
    };
    ecp_error err;
    session_service *svc = session_service_new(&o, &err);
    REQUIRE(svc != NULL);
    check_effective(svc);
    set_members(svc, (const char *)data, size);
    REQUIRE(session_setting_reset(svc, NULL, &err) == 0);
    session_service_free(svc);
    for (int i = 0; i < 3; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    return 0;
}
