/* adapter: the config, session, keybindings, theme, secret and workspace
 * methods over the session service.
 *
 * Params are read with core's ecp_arg_* readers (-32602 naming the field);
 * statuses become the catalogue's codes through one table, here and only
 * here; the service's events become config/didChange, theme/didChange and
 * $/showMessage. Store-backed methods answer from their completion, on the
 * loop. A secret's value is written into a result and nowhere else.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "document/interface.h"
#include "error.h"
#include "interface.h"
#include "rpc.h"
#include "uri.h"

typedef struct session_adapter {
    session_service *svc;
    document_service *docs;
    ecp_bus *bus;
} session_adapter;

/* ----- errors ---------------------------------------------------------------------------------- */

/* Which catalogue code a service status becomes, one table per namespace;
 * anything unlisted is -32603. Secret failures are all -32603, as the
 * catalogue has it. */
static const ecp_wire_map config_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_INVALID_VALUE},
    {ECP_EINVAL, ECP_WIRE_INVALID_VALUE},
};
static const ecp_wire_map session_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_SESSION_NOT_FOUND},
    {ECP_ESTATE, ECP_WIRE_SESSION_NOT_INITIALIZED},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
};
static const ecp_wire_map theme_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_THEME_NOT_FOUND},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
};
static const ecp_wire_map keybinding_codes[] = {
    {ECP_EINVAL, ECP_WIRE_INVALID_KEYBINDING},
};
static const ecp_wire_map workspace_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_FILE_NOT_FOUND},
    {ECP_ENOTDIR, ECP_WIRE_FILE_NOT_DIRECTORY},
    {ECP_EACCES, ECP_WIRE_FILE_ACCESS_DENIED},
};

#define COUNT(a) (sizeof a / sizeof a[0])

/* The map of the method's namespace; NULL (count 0) for none. */
static const ecp_wire_map *codes_of(ecp_call *call, size_t *count)
{
    const char *method = ecp_call_method(call);
    static const struct {
        const char *prefix;
        const ecp_wire_map *map;
        size_t count;
    } tables[] = {
        {"config/", config_codes, COUNT(config_codes)},
        {"session/", session_codes, COUNT(session_codes)},
        {"theme/", theme_codes, COUNT(theme_codes)},
        {"keybindings/", keybinding_codes, COUNT(keybinding_codes)},
        {"workspace/", workspace_codes, COUNT(workspace_codes)},
    };
    for (size_t i = 0; i < COUNT(tables); i++) {
        if (strncmp(method, tables[i].prefix, strlen(tables[i].prefix)) == 0) {
            *count = tables[i].count;
            return tables[i].map;
        }
    }
    *count = 0;
    return NULL;
}

static void reply_error(ecp_call *call, int status, const ecp_error *err, const char *data_json)
{
    size_t count;
    const ecp_wire_map *map = codes_of(call, &count);
    ecp_call_reply_status(call, map, count, status, err, data_json);
}

/* {"<name>": "<value>"} as error data. */
static char *data_one(const char *name, const char *value)
{
    buf b = BUF_INIT;
    json_writer w;
    jw_init(&w, &b);
    jw_object_begin(&w);
    jw_key_string(&w, name, value);
    jw_object_end(&w);
    return buf_detach(&b);
}

/* ----- shared writers -------------------------------------------------------------------------------- */

/* Answers a failed completion; false when status is success. */
static bool answered_failure(ecp_call *call, int status, const ecp_error *err)
{
    if (status >= 0)
        return false;
    reply_error(call, status, err, NULL);
    return true;
}

static void write_info(json_writer *w, const document_info *info)
{
    ecp_write_fields(w, ECP_FIELDS(ECP_STRING_FIELD("documentId", info->document_id),
                                   ECP_STRING_FIELD("uri", info->uri), ECP_STRING_FIELD("languageId", info->language_id),
                                   ECP_INT_FIELD("version", info->version), ECP_BOOL_FIELD("isDirty", info->is_dirty),
                                   ECP_BOOL_FIELD("isReadOnly", info->is_read_only),
                                   ECP_INT_FIELD("lineCount", info->line_count),
                                   /* as document/info has it: only when it is so */
                                   ECP_TRUE_FIELD_OPT("changedOnDisk", info->changed_on_disk)));
}

static void write_iso(json_writer *w, const char *key, int64_t ms)
{
    char when[32];
    session_time_iso(when, ms);
    jw_key_string(w, key, when);
}

/* A value's canonical JSON text from the call's params. */
static char *value_text(ecp_call *call, json_ref ref)
{
    buf b = BUF_INIT;
    json_writer w;
    jw_init(&w, &b);
    json_write_value(&w, ecp_call_doc(call), ref);
    return buf_detach(&b);
}

/* ----- config methods ------------------------------------------------------------------------------------------ */

static void m_config_get(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str key;
    if (!ecp_arg_string(call, ecp_call_params(call), "key", &key))
        return;
    const char *value = session_setting_json(ad->svc, key.ptr);
    const char *ignored = session_setting_ignored(ad->svc, key.ptr);
    json_writer *w = ecp_call_result_object(call);
    if (value) {
        jw_key(w, "value");
        jw_raw(w, value, strlen(value));
    }
    if (ignored) {
        /* the untrusted workspace's own value, which does not apply */
        jw_key_bool(w, "restricted", true);
        jw_key(w, "workspaceValue");
        jw_raw(w, ignored, strlen(ignored));
    }
    ecp_call_finish_object(call, w);
}

static void m_config_set(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str key;
    if (!ecp_arg_string(call, params, "key", &key))
        return;
    json_ref value = json_get(ecp_call_doc(call), params, "value");
    if (value == JSON_NO_REF) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "value: required (any JSON value, null included)");
        return;
    }
    char *text = value_text(call, value);
    char reason[SESSION_REASON_MAX];
    ecp_error err;
    int status = session_setting_set(ad->svc, key.ptr, text, strlen(text), reason, &err);
    if (status < 0) {
        buf data = BUF_INIT;
        json_writer w;
        jw_init(&w, &data);
        jw_object_begin(&w);
        jw_key_string(&w, "key", key.ptr);
        jw_key(&w, "value");
        jw_raw(&w, text, strlen(text));
        jw_key_string(&w, "reason", reason);
        jw_object_end(&w);
        reply_error(call, status, &err, data.data);
        buf_free(&data);
    } else {
        ecp_call_reply_success(call, true);
    }
    free(text);
}

static void write_setting(void *ctx, const char *key, const char *value)
{
    json_writer *w = ctx;
    jw_key(w, key);
    jw_raw(w, value, strlen(value));
}

static void m_config_get_all(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_writer *w = ecp_call_result_key(call, "settings");
    jw_object_begin(w);
    session_settings_each(ad->svc, write_setting, w);
    jw_object_end(w);
    ecp_call_finish_key(call, w);
}

static void m_config_reset(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str key;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "key", &key))
        return;
    ecp_error err;
    int status = session_setting_reset(ad->svc, key.ptr, &err);
    if (status < 0) {
        char *data = data_one("key", key.ptr);
        reply_error(call, status, &err, data);
        free(data);
        return;
    }
    ecp_call_reply_success(call, true);
}

static void m_config_schema(void *ctx, ecp_call *call)
{
    size_t count;
    const session_setting_schema *rows = session_settings_schema(&count);
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "schema");
    jw_object_begin(w);
    jw_key(w, "properties");
    jw_object_begin(w);
    for (size_t i = 0; i < count; i++) {
        const session_setting_schema *r = &rows[i];
        jw_key(w, r->key);
        jw_object_begin(w);
        jw_key_string(w, "type", r->integer ? "integer" : session_setting_type_name(r->type));
        jw_key(w, "default");
        jw_raw(w, r->default_json, strlen(r->default_json));
        if (r->choices) {
            jw_key(w, "enum");
            jw_array_begin(w);
            for (const char *const *c = r->choices; *c; c++)
                jw_string(w, *c);
            jw_array_end(w);
        }
        if (r->description)
            jw_key_string(w, "description", r->description);
        if (r->has_range) {
            jw_key_double(w, "minimum", r->minimum);
            jw_key_double(w, "maximum", r->maximum);
        }
        if (r->extension)
            jw_key_bool(w, "extension", true);
        if (r->restricted)
            jw_key_bool(w, "restricted", true);
        jw_object_end(w);
    }
    jw_object_end(w);
    jw_object_end(w);
    ecp_call_finish_object(call, w);
}

/* ----- session methods --------------------------------------------------------------------------------------------- */

static void saved(void *ctx, int status, const ecp_error *err, const char *id)
{
    ecp_call *call = ctx;
    if (answered_failure(call, status, err))
        return;
    ecp_call_reply_string(call, "sessionId", id);
}

static void m_session_save(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), state;
    ecp_str name;
    if (!ecp_arg_string_opt(call, params, "name", &name) || !ecp_arg_object_opt(call, params, "state", &state))
        return;
    if (name.ptr && !name.ptr[0]) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "name: must not be empty");
        return;
    }
    char *state_text = state != JSON_NO_REF ? value_text(call, state) : NULL;
    session_save(ad->svc, ecp_call_client(call), name.ptr, state_text, saved, ecp_call_defer(call));
    free(state_text);
}

static bool arg_session_id(ecp_call *call, ecp_str *id)
{
    return ecp_arg_string(call, ecp_call_params(call), "sessionId", id);
}

static void reply_session_error(ecp_call *call, int status, const ecp_error *err)
{
    ecp_str id = {0};
    json_ref ref = json_get(ecp_call_doc(call), ecp_call_params(call), "sessionId");
    const char *text = NULL;
    if (status == ECP_ENOTFOUND && json_string(ecp_call_doc(call), ref, ecp_call_arena(call), &text, &id.len)) {
        char *data = data_one("sessionId", text);
        reply_error(call, status, err, data);
        free(data);
        return;
    }
    reply_error(call, status, err, NULL);
}

static void loaded(void *ctx, int status, const ecp_error *err, const char *state)
{
    ecp_call *call = ctx;
    if (status < 0) {
        reply_session_error(call, status, err);
        return;
    }
    ecp_call_reply_raw(call, state, strlen(state));
}

static void m_session_load(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str id;
    if (!arg_session_id(call, &id))
        return;
    session_load(ad->svc, id.ptr, loaded, ecp_call_defer(call));
}

static void listed(void *ctx, int status, const ecp_error *err, const session_summary *list, size_t count)
{
    ecp_call *call = ctx;
    if (answered_failure(call, status, err))
        return;
    json_writer *w = ecp_call_result_list(call, "sessions");
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "id", list[i].id);
        jw_key_string(w, "name", list[i].name ? list[i].name : list[i].id);
        jw_key_string(w, "type", list[i].type);
        jw_key_string(w, "workspaceRoot", list[i].workspace_root);
        write_iso(w, "lastModified", list[i].last_modified);
        jw_key_int(w, "documentCount", list[i].document_count);
        jw_object_end(w);
    }
    ecp_call_finish_list(call, w);
}

static void m_session_list(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    session_list(ad->svc, listed, ecp_call_defer(call));
}

static void deleted(void *ctx, int status, const ecp_error *err)
{
    ecp_call *call = ctx;
    if (status < 0)
        reply_session_error(call, status, err);
    else
        ecp_call_reply_success(call, true);
}

static void m_session_delete(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str id;
    if (!arg_session_id(call, &id))
        return;
    session_delete(ad->svc, id.ptr, deleted, ecp_call_defer(call));
}

static void m_session_current(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    const char *state = session_current(ad->svc);
    if (state)
        ecp_call_reply_raw(call, state, strlen(state));
    else
        ecp_call_reply_null(call);
}

typedef struct reopen_reply {
    ecp_call *call;
    session_adapter *ad;
} reopen_reply;

static void reopened(void *ctx, int status, const ecp_error *err, const session_reopened *result)
{
    reopen_reply *r = ctx;
    ecp_call *call = r->call;
    if (status < 0) {
        reply_session_error(call, status, err);
        free(r);
        return;
    }
    json_writer *w = ecp_call_result_list(call, "documents");
    for (size_t i = 0; i < result->document_count; i++) {
        document_info info;
        if (document_get_info(r->ad->docs, result->document_ids[i], &info, NULL) != 0)
            continue;
        if (!ecp_call_abandoned(call)) /* the client that asked holds what came back, as if it had opened it */
            document_hold(r->ad->docs, result->document_ids[i], ecp_call_client(call), NULL);
        write_info(w, &info);
    }
    jw_array_end(w);
    jw_key(w, "missing");
    jw_array_begin(w);
    for (size_t i = 0; i < result->missing_count; i++)
        jw_string(w, result->missing[i]);
    ecp_call_finish_list(call, w);
    free(r);
}

static reopen_reply *new_reopen_reply(session_adapter *ad, ecp_call *call)
{
    reopen_reply *r = xcalloc(1, sizeof *r);
    r->call = ecp_call_defer(call);
    r->ad = ad;
    return r;
}

static void m_session_restore(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str id;
    if (!arg_session_id(call, &id))
        return;
    session_restore(ad->svc, ecp_call_client(call), id.ptr, reopened, new_reopen_reply(ad, call));
}

static void recoverable(void *ctx, int status, const ecp_error *err, const session_recoverable *list, size_t count)
{
    ecp_call *call = ctx;
    if (answered_failure(call, status, err))
        return;
    json_writer *w = ecp_call_result_list(call, "documents");
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "uri", list[i].uri);
        jw_key_string(w, "languageId", list[i].language_id);
        write_iso(w, "savedAt", list[i].saved_at);
        jw_key_int(w, "bytes", list[i].bytes);
        jw_object_end(w);
    }
    ecp_call_finish_list(call, w);
}

static void m_session_recoverable(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    session_recoverable_list(ad->svc, recoverable, ecp_call_defer(call));
}

/* Reads `uris?`: *uris NULL when absent. Answers -32602 and returns false
 * when it is not an array of strings. */
static bool arg_uris(ecp_call *call, const char ***uris, size_t *count)
{
    json_ref list;
    *uris = NULL;
    *count = 0;
    if (!ecp_arg_array_opt(call, ecp_call_params(call), "uris", &list))
        return false;
    if (list == JSON_NO_REF)
        return true;
    const json_doc *doc = ecp_call_doc(call);
    size_t n = json_length(doc, list), i = 0;
    const char **out = arena_alloc(ecp_call_arena(call), (n ? n : 1) * sizeof *out);
    for (json_ref e = json_first(doc, list); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        if (!json_string(doc, e, ecp_call_arena(call), &out[i], NULL)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uris[%zu]: expected string", i);
            return false;
        }
    }
    *uris = out;
    *count = n;
    return true;
}

static void m_session_recover(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    const char **uris;
    size_t count;
    if (!arg_uris(call, &uris, &count))
        return;
    session_recover(ad->svc, uris, count, reopened, new_reopen_reply(ad, call));
}

static void discarded(void *ctx, int status, const ecp_error *err)
{
    ecp_call *call = ctx;
    if (status < 0)
        reply_error(call, status, err, NULL);
    else
        ecp_call_reply_success(call, true);
}

static void m_session_discard_recovery(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    const char **uris;
    size_t count;
    if (!arg_uris(call, &uris, &count))
        return;
    session_discard_recovery(ad->svc, uris, count, discarded, ecp_call_defer(call));
}

/* ----- keybindings methods ------------------------------------------------------------------------------------- */

/* {bindings: [...]}: keybindings/get's result and keybindings/didChange's params. */
static void write_bindings(session_service *svc, json_writer *w)
{
    size_t count;
    const session_keybinding *list = session_keybindings(svc, &count);
    jw_object_begin(w);
    jw_key(w, "bindings");
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "key", list[i].key);
        jw_key_string(w, "command", list[i].command);
        if (list[i].when)
            jw_key_string(w, "when", list[i].when);
        if (list[i].args_json) {
            jw_key(w, "args");
            jw_raw(w, list[i].args_json, strlen(list[i].args_json));
        }
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

static void m_keybindings_get(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    write_bindings(ad->svc, ecp_call_result(call));
    ecp_call_finish(call);
}

static void render_bindings(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    write_bindings(ctx, w);
}

/* Every client hears the bindings after a change, before the answer, so one
 * client's rebinding reaches the others' keymaps. */
static void bindings_changed(session_adapter *ad, ecp_call *call)
{
    ecp_bus_notify(ad->bus, "keybindings/didChange", render_bindings, ad->svc);
    ecp_call_reply_success(call, true);
}

/* Reads one binding object; `path` names it in messages ("bindings[2]"). */
static bool arg_binding(ecp_call *call, json_ref obj, const char *path, session_keybinding *out, char **args)
{
    arena *a = ecp_call_arena(call);
    ecp_str key, command, when;
    if (!ecp_arg_string(call, obj, arena_sprintf(a, "%s.key", path), &key) ||
        !ecp_arg_string(call, obj, arena_sprintf(a, "%s.command", path), &command) ||
        !ecp_arg_string_opt(call, obj, arena_sprintf(a, "%s.when", path), &when))
        return false;
    if (!key.len || !command.len) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s.%s: must not be empty", path, key.len ? "command" : "key");
        return false;
    }
    json_ref args_ref = json_get(ecp_call_doc(call), obj, "args");
    *args = args_ref != JSON_NO_REF ? value_text(call, args_ref) : NULL;
    *out = (session_keybinding){.key = key.ptr, .command = command.ptr, .when = when.ptr, .args_json = *args};
    return true;
}

static void reply_binding_error(ecp_call *call, int status, const ecp_error *err, const session_keybinding *b)
{
    buf data = BUF_INIT;
    json_writer w;
    jw_init(&w, &data);
    jw_object_begin(&w);
    jw_key_string(&w, "key", b->key);
    if (b->when)
        jw_key_string(&w, "when", b->when);
    jw_object_end(&w);
    reply_error(call, status, err, data.data);
    buf_free(&data);
}

static void m_keybindings_set(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref list;
    if (!ecp_arg_array(call, ecp_call_params(call), "bindings", &list))
        return;
    const json_doc *doc = ecp_call_doc(call);
    size_t n = json_length(doc, list), i = 0;
    session_keybinding *bindings = arena_calloc(ecp_call_arena(call), (n ? n : 1) * sizeof *bindings);
    char **args = xcalloc(n ? n : 1, sizeof *args);
    bool ok = true;
    for (json_ref e = json_first(doc, list); e != JSON_NO_REF && ok; e = json_next(doc, e), i++) {
        char path[48];
        snprintf(path, sizeof path, "bindings[%zu]", i);
        if (json_type_of(doc, e) != JSON_OBJECT) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: expected object", path);
            ok = false;
        } else {
            ok = arg_binding(call, e, path, &bindings[i], &args[i]);
        }
    }
    if (ok) {
        ecp_error err;
        size_t bad = 0;
        int status = session_keybindings_set(ad->svc, bindings, n, &bad, &err);
        if (status < 0)
            reply_binding_error(call, status, &err, &bindings[bad]);
        else
            bindings_changed(ad, call);
    }
    for (size_t k = 0; k < n; k++)
        free(args[k]);
    free(args);
}

static void m_keybindings_add(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), obj;
    if (!ecp_arg_object_opt(call, params, "binding", &obj))
        return;
    /* the binding may also come as the params themselves */
    const char *path = obj != JSON_NO_REF ? "binding" : "params";
    if (obj == JSON_NO_REF)
        obj = params;
    session_keybinding b;
    char *args = NULL;
    if (!arg_binding(call, obj, path, &b, &args))
        return;
    ecp_error err;
    int status = session_keybinding_add(ad->svc, &b, &err);
    if (status < 0)
        reply_binding_error(call, status, &err, &b);
    else
        bindings_changed(ad, call);
    free(args);
}

static void m_keybindings_remove(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str key;
    if (!ecp_arg_string(call, ecp_call_params(call), "key", &key))
        return;
    ecp_error err;
    int status = session_keybinding_remove(ad->svc, key.ptr, NULL, &err);
    if (status < 0) {
        session_keybinding b = {.key = key.ptr};
        reply_binding_error(call, status, &err, &b);
        return;
    }
    bindings_changed(ad, call);
}

static void m_keybindings_resolve(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), key, context;
    session_keypress press = {0};
    ecp_str name;
    if (!ecp_arg_object(call, params, "key", &key) || !ecp_arg_string(call, key, "key.key", &name) ||
        !ecp_arg_bool_opt(call, key, "key.ctrl", false, &press.ctrl) ||
        !ecp_arg_bool_opt(call, key, "key.shift", false, &press.shift) ||
        !ecp_arg_bool_opt(call, key, "key.alt", false, &press.alt) ||
        !ecp_arg_bool_opt(call, key, "key.meta", false, &press.meta) ||
        !ecp_arg_object_opt(call, params, "context", &context))
        return;
    press.key = name.ptr;
    const json_doc *doc = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    size_t n = json_length(doc, context), k = 0;
    session_context_value *values = arena_calloc(a, (n ? n : 1) * sizeof *values);
    for (json_ref e = json_first(doc, context); e != JSON_NO_REF; e = json_next(doc, e)) {
        session_context_value *v = &values[k];
        json_string(doc, e, a, &v->name, NULL);
        json_ref val = e + 1;
        switch (json_type_of(doc, val)) {
        case JSON_BOOL: json_bool(doc, val, &v->boolean); break;
        case JSON_STRING: json_string(doc, val, a, &v->string, NULL); break;
        case JSON_NUMBER: {
            size_t len;
            const char *raw = json_raw(doc, val, &len);
            v->string = arena_strndup(a, raw, len);
            break;
        }
        case JSON_NULL: v->boolean = false; break;
        default: v->boolean = true; break;
        }
        k++;
    }
    const session_keybinding *b = session_keybinding_resolve(ad->svc, &press, values, k);
    json_writer *w = ecp_call_result_object(call);
    jw_key_string(w, "command", b ? b->command : NULL);
    if (b && b->args_json) {
        jw_key(w, "args");
        jw_raw(w, b->args_json, strlen(b->args_json));
    }
    ecp_call_finish_object(call, w);
}

/* ----- theme methods -------------------------------------------------------------------------------------------- */

static void write_theme(json_writer *w, const session_theme *t)
{
    jw_object_begin(w);
    jw_key_string(w, "id", t->id);
    jw_key_string(w, "name", t->name);
    jw_key_string(w, "type", t->type);
    jw_key(w, "colors");
    jw_object_begin(w);
    for (size_t i = 0; i < SESSION_THEME_COLOR_COUNT; i++)
        jw_key_string(w, t->color_names[i], t->colors[i]);
    jw_object_end(w);
    jw_key(w, "tokenColors");
    jw_array_begin(w);
    for (size_t i = 0; i < t->token_color_count; i++) {
        const session_token_color *c = &t->token_colors[i];
        jw_object_begin(w);
        jw_key_string(w, "scope", c->capture);
        jw_key(w, "settings");
        jw_object_begin(w);
        jw_key_string(w, "foreground", c->foreground);
        if (c->font_style)
            jw_key_string(w, "fontStyle", c->font_style);
        jw_object_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

static void m_theme_list(void *ctx, ecp_call *call)
{
    size_t count;
    const session_theme *themes = session_themes(&count);
    json_writer *w = ecp_call_result_list(call, "themes");
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "id", themes[i].id);
        jw_key_string(w, "name", themes[i].name);
        jw_key_string(w, "type", themes[i].type);
        jw_key_bool(w, "builtin", true);
        jw_object_end(w);
    }
    ecp_call_finish_list(call, w);
}

static void reply_theme(ecp_call *call, const session_theme *t)
{
    json_writer *w = ecp_call_result_key(call, "theme");
    write_theme(w, t);
    ecp_call_finish_key(call, w);
}

static void reply_theme_missing(ecp_call *call, const char *id)
{
    ecp_error err;
    ecp_error_set(&err, ECP_ENOTFOUND, "Theme not found: %s", id);
    char *data = data_one("themeId", id);
    reply_error(call, ECP_ENOTFOUND, &err, data);
    free(data);
}

static void m_theme_get(void *ctx, ecp_call *call)
{
    ecp_str id;
    if (!ecp_arg_string(call, ecp_call_params(call), "themeId", &id))
        return;
    const session_theme *t = session_theme_find(id.ptr);
    if (!t)
        reply_theme_missing(call, id.ptr);
    else
        reply_theme(call, t);
}

static void m_theme_set(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str id;
    if (!ecp_arg_string(call, ecp_call_params(call), "themeId", &id))
        return;
    ecp_error err;
    int status = session_theme_set(ad->svc, id.ptr, &err);
    if (status == ECP_ENOTFOUND)
        reply_theme_missing(call, id.ptr);
    else if (status < 0)
        reply_error(call, status, &err, NULL);
    else
        ecp_call_reply_success(call, true);
}

static void m_theme_current(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    reply_theme(call, session_theme_current(ad->svc));
}

/* ----- secret methods -------------------------------------------------------------------------------------------- */

#define SECRET_KEY_MAX 512

/* A secret's key: a non-empty string of at most SECRET_KEY_MAX bytes without
 * control characters. */
static bool arg_secret_key(ecp_call *call, ecp_str *key)
{
    if (!ecp_arg_string(call, ecp_call_params(call), "key", key))
        return false;
    const char *why = NULL;
    if (!key->len)
        why = "must not be empty";
    else if (key->len > SECRET_KEY_MAX)
        why = "must be at most 512 bytes";
    for (size_t i = 0; i < key->len && !why; i++)
        if ((unsigned char)key->ptr[i] < 0x20 || key->ptr[i] == 0x7f)
            why = "must not contain control characters";
    if (why) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "key: %s", why);
        return false;
    }
    return true;
}

typedef enum secret_reply {
    REPLY_VALUE,
    REPLY_EXISTS,
    REPLY_INFO,
} secret_reply;

typedef struct secret_call {
    ecp_call *call;
    secret_reply kind;
} secret_call;

static void got_secret(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                       const session_secret_info *info)
{
    secret_call *sc = ctx;
    ecp_call *call = sc->call;
    secret_reply kind = sc->kind;
    free(sc);
    if (answered_failure(call, status, err))
        return;
    json_writer *w = ecp_call_result_object(call);
    switch (kind) {
    case REPLY_VALUE:
        jw_key(w, "value");
        if (value)
            jw_string_n(w, value, len);
        else
            jw_null(w);
        break;
    case REPLY_EXISTS: jw_key_bool(w, "exists", value != NULL); break;
    case REPLY_INFO:
        jw_key(w, "info");
        if (!info) {
            jw_null(w);
            break;
        }
        jw_object_begin(w);
        jw_key_string(w, "key", info->key);
        jw_key_string(w, "provider", info->provider);
        if (info->created_at)
            write_iso(w, "createdAt", info->created_at);
        if (info->expires_at)
            write_iso(w, "expiresAt", info->expires_at);
        if (info->description)
            jw_key_string(w, "description", info->description);
        jw_object_end(w);
        break;
    }
    ecp_call_finish_object(call, w);
}

static void secret_get_as(session_adapter *ad, ecp_call *call, secret_reply kind)
{
    ecp_str key;
    if (!arg_secret_key(call, &key))
        return;
    secret_call *sc = xcalloc(1, sizeof *sc);
    sc->call = ecp_call_defer(call);
    sc->kind = kind;
    session_secret_get(ad->svc, key.ptr, got_secret, sc);
}

static void m_secret_get(void *ctx, ecp_call *call) { secret_get_as(ctx, call, REPLY_VALUE); }
static void m_secret_has(void *ctx, ecp_call *call) { secret_get_as(ctx, call, REPLY_EXISTS); }
static void m_secret_info(void *ctx, ecp_call *call) { secret_get_as(ctx, call, REPLY_INFO); }

static void secret_stored(void *ctx, int status, const ecp_error *err)
{
    ecp_call *call = ctx;
    if (status < 0)
        reply_error(call, status, err, NULL);
    else
        ecp_call_reply_success(call, true);
}

static void m_secret_set(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), options;
    ecp_str key, value, expires, description, provider = {0};
    expires.ptr = description.ptr = NULL;
    if (!arg_secret_key(call, &key) || !ecp_arg_string(call, params, "value", &value) ||
        !ecp_arg_object_opt(call, params, "options", &options))
        return;
    session_secret_options o = {0};
    if (options != JSON_NO_REF) {
        if (!ecp_arg_string_opt(call, options, "options.expiresAt", &expires) ||
            !ecp_arg_string_opt(call, options, "options.description", &description) ||
            !ecp_arg_string_opt(call, options, "options.provider", &provider))
            return;
        if (expires.ptr && !session_time_parse_iso(expires.ptr, &o.expires_at)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "options.expiresAt: expected an ISO 8601 time");
            return;
        }
        o.description = description.ptr;
        o.provider = provider.ptr;
    }
    session_secret_set(ad->svc, key.ptr, value.ptr, value.len, &o, secret_stored, ecp_call_defer(call));
}

static void secret_deleted(void *ctx, int status, const ecp_error *err, bool deleted)
{
    ecp_call *call = ctx;
    if (answered_failure(call, status, err))
        return;
    ecp_call_reply_bool(call, "deleted", deleted);
}

static void m_secret_delete(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str key;
    if (!arg_secret_key(call, &key))
        return;
    session_secret_delete(ad->svc, key.ptr, secret_deleted, ecp_call_defer(call));
}

static void secret_listed(void *ctx, int status, const ecp_error *err, const char *const *keys, size_t count)
{
    ecp_call *call = ctx;
    if (answered_failure(call, status, err))
        return;
    json_writer *w = ecp_call_result_list(call, "keys");
    for (size_t i = 0; i < count; i++)
        jw_string(w, keys[i]);
    ecp_call_finish_list(call, w);
}

static void m_secret_list(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str prefix;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "prefix", &prefix))
        return;
    session_secret_list(ad->svc, prefix.ptr, secret_listed, ecp_call_defer(call));
}

static void m_secret_providers(void *ctx, ecp_call *call)
{
    size_t count;
    const session_secret_provider *list = session_secret_providers(&count);
    json_writer *w = ecp_call_result_list(call, "providers");
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "id", list[i].id);
        jw_key_string(w, "name", list[i].name);
        jw_key_int(w, "priority", list[i].priority);
        jw_key_bool(w, "isReadOnly", list[i].read_only);
        jw_object_end(w);
    }
    ecp_call_finish_list(call, w);
}

/* ----- workspace methods ---------------------------------------------------------------------------------------- */

/* The folder a uri names, as an absolute path in path; false when the call
 * was answered -32602. */
static bool folder_arg(ecp_call *call, const ecp_str *uri, buf *path)
{
    ecp_error err;
    if (uri_file_path(uri->ptr, uri->len, path, &err) < 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", err.message);
        return false;
    }
    return true;
}

static void reply_folder_error(ecp_call *call, int status, const ecp_error *err, const ecp_str *uri)
{
    static const char *const names[] = {[-ECP_ENOTFOUND] = "FILE_NOT_FOUND", [-ECP_ENOTDIR] = "NOT_DIRECTORY",
                                        [-ECP_EACCES] = "ACCESS_DENIED"};
    const char *code = -status < (int)COUNT(names) && names[-status] ? names[-status] : "IO_ERROR";
    buf data = BUF_INIT;
    json_writer w;
    jw_init(&w, &data);
    jw_object_begin(&w);
    jw_key_string(&w, "uri", uri->ptr);
    jw_key_string(&w, "code", code);
    jw_object_end(&w);
    reply_error(call, status, err, data.data);
    buf_free(&data);
}

static void m_workspace_trust(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str uri;
    bool trust = false;
    if (!ecp_arg_string(call, params, "uri", &uri))
        return;
    json_ref given = json_get(ecp_call_doc(call), params, "trusted");
    if (given == JSON_NO_REF || json_type_of(ecp_call_doc(call), given) == JSON_NULL) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "trusted: required boolean");
        return;
    }
    if (!ecp_arg_bool_opt(call, params, "trusted", false, &trust))
        return;
    buf path = BUF_INIT;
    if (folder_arg(call, &uri, &path)) {
        ecp_error err;
        bool trusted;
        int status = session_trust_set(ad->svc, path.data, trust, &trusted, &err);
        if (status < 0) {
            reply_folder_error(call, status, &err, &uri);
        } else {
            ecp_call_reply_bool(call, "trusted", trusted);
        }
    }
    buf_free(&path);
}

static void m_workspace_is_trusted(void *ctx, ecp_call *call)
{
    session_adapter *ad = ctx;
    ecp_str uri;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "uri", &uri))
        return;
    bool trusted = false;
    if (uri.ptr) {
        buf path = BUF_INIT;
        if (!folder_arg(call, &uri, &path)) {
            buf_free(&path);
            return;
        }
        ecp_error err;
        int status = session_trust_query(ad->svc, path.data, &trusted, &err);
        buf_free(&path);
        if (status < 0) {
            reply_folder_error(call, status, &err, &uri);
            return;
        }
    } else {
        trusted = session_workspace_trusted(ad->svc);
    }
    json_writer *w = ecp_call_result_object(call);
    jw_key_bool(w, "trusted", trusted);
    if (!uri.ptr) {
        /* what trusting the served workspace would apply: a client asks the user with it */
        size_t count;
        const session_setting_schema *rows = session_settings_schema(&count);
        jw_key(w, "ignoredSettings");
        jw_array_begin(w);
        for (size_t i = 0; i < count; i++)
            if (rows[i].restricted && session_setting_ignored(ad->svc, rows[i].key))
                jw_string(w, rows[i].key);
        jw_array_end(w);
    }
    ecp_call_finish_object(call, w);
}

static void on_setting(void *ctx, const char *key, const char *value)
{
    session_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "config/didChange", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("key", key), ECP_JSON_FIELD("value", value)));
}

static void on_theme(void *ctx, const char *theme_id)
{
    session_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "theme/didChange", ecp_render_fields, ECP_FIELDS(ECP_STRING_FIELD("themeId", theme_id)));
}

static void on_message(void *ctx, session_message_type type, const char *message)
{
    session_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "$/showMessage", ecp_render_fields,
                   ECP_FIELDS(ECP_INT_FIELD("type", type), ECP_STRING_FIELD("message", message)));
}

static void on_trust(void *ctx, const char *path, bool trusted)
{
    session_adapter *ad = ctx;
    buf uri = BUF_INIT;
    uri_from_path(&uri, path, strlen(path));
    ecp_bus_notify(ad->bus, "workspace/didChangeTrust", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("uri", uri.data), ECP_BOOL_FIELD("trusted", trusted)));
    buf_free(&uri);
}

static const session_listener listener = {
    .on_setting = on_setting,
    .on_theme = on_theme,
    .on_message = on_message,
    .on_trust = on_trust,
};

/* ----- the tables ------------------------------------------------------------------------------------------------ */

static const ecp_method config_methods[] = {
    {.name = "config/get",
     .handler = m_config_get,
     .since = "1.0",
     .summary = "The effective value of a setting ({} when it has none); with restricted and workspaceValue when "
                "an untrusted workspace's value is ignored",
     .params = "{key: string}"},
    {.name = "config/set",
     .handler = m_config_set,
     .since = "1.0",
     .summary = "Set a setting (checked against the schema), persisted; emits config/didChange",
     .params = "{key: string, value: any}"},
    {.name = "config/getAll",
     .handler = m_config_get_all,
     .since = "1.0",
     .summary = "Every setting that has a value, by key",
     .params = "{}"},
    {.name = "config/reset",
     .handler = m_config_reset,
     .since = "1.0",
     .summary = "Drop what config/set set for a key (or every key), so the files and defaults show through",
     .params = "{key?: string}"},
    {.name = "config/schema",
     .handler = m_config_schema,
     .since = "1.0",
     .summary = "The settings schema: type, default, enum, range and description of the catalogue's 79 keys and "
                "of the 8 extensions (marked `extension`)",
     .params = "{}"},
};

static const ecp_method session_methods[] = {
    {.name = "session/save",
     .handler = m_session_save,
     .since = "1.0",
     .summary = "Save the open documents (cursors, unsaved text) and the client's state as a named or the workspace's session",
     .params = "{name?: string, state?: object}"},
    {.name = "session/load",
     .handler = m_session_load,
     .since = "1.0",
     .summary = "A saved session's SessionState, with the client's state as it was saved",
     .params = "{sessionId: string}"},
    {.name = "session/list",
     .handler = m_session_list,
     .since = "1.0",
     .summary = "The saved sessions, newest first",
     .params = "{}"},
    {.name = "session/delete",
     .handler = m_session_delete,
     .since = "1.0",
     .summary = "Delete a saved session",
     .params = "{sessionId: string}"},
    {.name = "session/current",
     .handler = m_session_current,
     .since = "1.0",
     .summary = "The current session's SessionState, or null",
     .params = "{}"},
    {.name = "session/restore",
     .handler = m_session_restore,
     .since = "1.0",
     .summary = "Reopen a saved session's documents with their unsaved text and cursors",
     .params = "{sessionId: string}"},
    {.name = "session/recoverable",
     .handler = m_session_recoverable,
     .since = "1.0",
     .summary = "Unsaved text left on this workspace by servers that are no longer running",
     .params = "{}"},
    {.name = "session/recover",
     .handler = m_session_recover,
     .since = "1.0",
     .summary = "Reopen recoverable documents (all, or those named) dirty with their recovered text",
     .params = "{uris?: string[]}"},
    {.name = "session/discardRecovery",
     .handler = m_session_discard_recovery,
     .since = "1.0",
     .summary = "Forget recoverable text (all, or of the uris named)",
     .params = "{uris?: string[]}"},
};

static const ecp_method keybinding_methods[] = {
    {.name = "keybindings/get",
     .handler = m_keybindings_get,
     .since = "1.0",
     .summary = "Every key binding, in order",
     .params = "{}"},
    {.name = "keybindings/set",
     .handler = m_keybindings_set,
     .since = "1.0",
     .summary = "Replace every key binding (all are checked first)",
     .params = "{bindings: {key: string, command: string, when?: string, args?: any}[]}"},
    {.name = "keybindings/add",
     .handler = m_keybindings_add,
     .since = "1.0",
     .summary = "Add a key binding, replacing those of the same key",
     .params = "{binding?: {key: string, command: string, when?: string, args?: any}, key?: string, command?: string, "
               "when?: string, args?: any}"},
    {.name = "keybindings/remove",
     .handler = m_keybindings_remove,
     .since = "1.0",
     .summary = "Remove the bindings of a key",
     .params = "{key: string}"},
    {.name = "keybindings/resolve",
     .handler = m_keybindings_resolve,
     .since = "1.0",
     .summary = "The command a key press runs in a context (the last binding whose key and when match), or null",
     .params = "{key: {key: string, ctrl?: boolean, shift?: boolean, alt?: boolean, meta?: boolean}, context?: object}"},
};

static const ecp_method theme_methods[] = {
    {.name = "theme/list",
     .handler = m_theme_list,
     .since = "1.0",
     .summary = "The built-in themes",
     .params = "{}"},
    {.name = "theme/get",
     .handler = m_theme_get,
     .since = "1.0",
     .summary = "A theme: its UI colours and its token colours by tree-sitter capture",
     .params = "{themeId: string}"},
    {.name = "theme/set",
     .handler = m_theme_set,
     .since = "1.0",
     .summary = "Make a theme current (workbench.colorTheme), persisted; emits theme/didChange",
     .params = "{themeId: string}"},
    {.name = "theme/current",
     .handler = m_theme_current,
     .since = "1.0",
     .summary = "The current theme",
     .params = "{}"},
};

static const ecp_method secret_methods[] = {
    {.name = "secret/get",
     .handler = m_secret_get,
     .since = "1.0",
     .summary = "A secret's value from the first provider that has it, or null",
     .params = "{key: string}"},
    {.name = "secret/set",
     .handler = m_secret_set,
     .since = "1.0",
     .summary = "Store a secret, encrypted (the env provider is read-only)",
     .params = "{key: string, value: string, options?: {expiresAt?: string, description?: string, provider?: string}}"},
    {.name = "secret/delete",
     .handler = m_secret_delete,
     .since = "1.0",
     .summary = "Delete a stored secret",
     .params = "{key: string}"},
    {.name = "secret/list",
     .handler = m_secret_list,
     .since = "1.0",
     .summary = "The keys of every provider, optionally those starting with a prefix",
     .params = "{prefix?: string}"},
    {.name = "secret/has",
     .handler = m_secret_has,
     .since = "1.0",
     .summary = "Whether any provider has a secret",
     .params = "{key: string}"},
    {.name = "secret/info",
     .handler = m_secret_info,
     .since = "1.0",
     .summary = "Where a secret lives and when it was made and expires (never its value), or null",
     .params = "{key: string}"},
    {.name = "secret/providers",
     .handler = m_secret_providers,
     .since = "1.0",
     .summary = "The secret providers, in the order they are asked",
     .params = "{}"},
};

static const ecp_method workspace_methods[] = {
    {.name = "workspace/trust",
     .handler = m_workspace_trust,
     .since = "1.0",
     .summary = "Trust a folder and the folders beneath it (or withdraw it), kept in the data directory; the "
                "workspace's restricted settings follow at once; emits workspace/didChangeTrust",
     .params = "{uri: string, trusted: boolean}"},
    {.name = "workspace/isTrusted",
     .handler = m_workspace_is_trusted,
     .since = "1.0",
     .summary = "Whether a folder (default: the served workspace, then with the ignoredSettings trusting it would "
                "apply) is trusted, itself or through an ancestor",
     .params = "{uri?: string}"},
};

static const char *const config_notifications[] = {"config/didChange", "$/showMessage", NULL};
static const char *const theme_notifications[] = {"theme/didChange", NULL};
static const char *const keybinding_notifications[] = {"keybindings/didChange", NULL};
static const char *const workspace_notifications[] = {"workspace/didChangeTrust", NULL};

static void adapter_destroy(void *ctx)
{
    session_adapter *ad = ctx;
    session_unsubscribe(ad->svc, &listener, ad);
    free(ad);
}

void session_adapter_init(ecp_adapter out[SESSION_ADAPTER_COUNT], session_service *svc, document_service *docs,
                          ecp_bus *bus)
{
    session_adapter *ad = xmalloc(sizeof *ad);
    *ad = (session_adapter){.svc = svc, .docs = docs, .bus = bus};
    session_subscribe(svc, &listener, ad);
    memset(out, 0, SESSION_ADAPTER_COUNT * sizeof *out);
    out[0] = (ecp_adapter){.ns = "config", .methods = config_methods, .method_count = COUNT(config_methods), .ctx = ad,
                           .destroy = adapter_destroy, .notifications = config_notifications};
    out[1] = (ecp_adapter){.ns = "session", .methods = session_methods, .method_count = COUNT(session_methods), .ctx = ad};
    out[2] = (ecp_adapter){.ns = "keybindings", .methods = keybinding_methods, .method_count = COUNT(keybinding_methods),
                           .ctx = ad, .notifications = keybinding_notifications};
    out[3] = (ecp_adapter){.ns = "theme", .methods = theme_methods, .method_count = COUNT(theme_methods), .ctx = ad,
                           .notifications = theme_notifications};
    out[4] = (ecp_adapter){.ns = "secret", .methods = secret_methods, .method_count = COUNT(secret_methods), .ctx = ad};
    out[5] = (ecp_adapter){.ns = "workspace", .methods = workspace_methods, .method_count = COUNT(workspace_methods),
                           .ctx = ad, .notifications = workspace_notifications};
}
