/* settings: the schema, the four layers and the two watched files.
 *
 * The schema is one table: validation, the defaults, config/schema and
 * config/getAll all read it, so they cannot disagree. Values are kept as
 * canonical JSON text (rewritten by the JSON writer), so "did it change" is a
 * string comparison and every reader gets the same spelling.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ----- the schema ------------------------------------------------------------------------------ */

#define CHOICES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define BOOL(k, d, desc) {.key = k, .type = SESSION_SETTING_BOOLEAN, .default_json = d, .description = desc, .reported_by_default = true}
#define NUM(k, d, lo, hi, desc)                                                                                 \
    {.key = k, .type = SESSION_SETTING_NUMBER, .default_json = d, .has_range = true, .minimum = lo, .maximum = hi, \
     .description = desc, .reported_by_default = true}
#define NUM_ANY(k, d, desc) {.key = k, .type = SESSION_SETTING_NUMBER, .default_json = d, .description = desc, .reported_by_default = true}
#define STR(k, d, desc) {.key = k, .type = SESSION_SETTING_STRING, .default_json = d, .description = desc, .reported_by_default = true}
#define ENUM(k, d, ch, desc) \
    {.key = k, .type = SESSION_SETTING_STRING, .default_json = d, .choices = ch, .description = desc, .reported_by_default = true}
#define OBJ(k, d, desc) {.key = k, .type = SESSION_SETTING_OBJECT, .default_json = d, .description = desc, .reported_by_default = true}
/* A key that names a program, its arguments, environment or a path, or that
 * widens a permission: a workspace's file sets it only once the workspace is
 * trusted (trust.c). */
#define RESTRICTED .restricted = true
#define STR_RESTRICTED(k, d, desc) \
    {.key = k, .type = SESSION_SETTING_STRING, .default_json = d, .description = desc, .reported_by_default = true, RESTRICTED}
/* In the schema but not among the values a fresh server reports (the
 * catalogue's starred keys): they have a value once a layer sets one. */
#define UNREPORTED .reported_by_default = false
/* Extension keys (not in the catalogue; config/schema marks them): an enum,
 * and a whole number in [lo, hi]. */
#define EXTENSION .extension = true
#define EXT_ENUM(k, d, ch, desc)                                                                        \
    {.key = k, .type = SESSION_SETTING_STRING, .default_json = d, .choices = ch, .description = desc, \
     .reported_by_default = true, EXTENSION}
#define EXT_INT(k, d, lo, hi, desc)                                                                             \
    {.key = k, .type = SESSION_SETTING_NUMBER, .default_json = d, .has_range = true, .minimum = lo, .maximum = hi, \
     .integer = true, .description = desc, .reported_by_default = true, EXTENSION}

/* agent.model's form: provider/model, both parts present. */
static bool provider_model_form(const char *value, char *reason, size_t cap)
{
    const char *slash = strchr(value, '/');
    if (slash && slash != value && slash[1])
        return true;
    snprintf(reason, cap, "expected provider/model (openai/..., anthropic/... or ollama/...)");
    return false;
}

bool session_mcp_server_name_valid(const char *name)
{
    if (!name[0] || strlen(name) > 40)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              (*p == '_' && p[1] != '_')))
            return false;
    return true;
}

static bool plain_string(const json_doc *d, json_ref ref, arena *a, const char **out)
{
    size_t len;
    const char *text;
    if (ref == JSON_NO_REF || !json_string(d, ref, a, &text, &len) || strlen(text) != len)
        return false;
    if (out)
        *out = text;
    return true;
}

/* An object whose every value is a string without NUL characters. */
static bool string_map(const json_doc *d, json_ref ref)
{
    if (json_type_of(d, ref) != JSON_OBJECT)
        return false;
    arena a = ARENA_INIT;
    bool fine = true;
    for (json_ref k = json_first(d, ref); k != JSON_NO_REF && fine; k = json_next(d, k))
        fine = plain_string(d, k, &a, NULL) && plain_string(d, k + 1, &a, NULL);
    arena_free(&a);
    return fine;
}

/* One member of an object-valued setting: its name (len bytes as written) and its value. */
typedef bool (*member_check)(const json_doc *d, const char *name, size_t len, json_ref value, arena *a, char *reason,
                             size_t cap);

/* An object-valued setting's form, checked member by member up to the first refused; the reason for anything
 * else than an object says it expected an object of `members`. */
static bool object_form(const char *value, const char *members, member_check check, char *reason, size_t cap)
{
    json_doc d = {0};
    if (json_doc_parse(&d, value, strlen(value), NULL) < 0 || json_type_of(&d, json_root(&d)) != JSON_OBJECT) {
        json_doc_free(&d);
        snprintf(reason, cap, "expected an object of %s", members);
        return false;
    }
    arena a = ARENA_INIT;
    bool fine = true;
    for (json_ref k = json_first(&d, json_root(&d)); k != JSON_NO_REF && fine; k = json_next(&d, k)) {
        const char *name;
        size_t len;
        json_string(&d, k, &a, &name, &len);
        fine = check(&d, name, len, k + 1, &a, reason, cap);
    }
    arena_free(&a);
    json_doc_free(&d);
    return fine;
}

/* One server of agent.mcpServers: {command, args?, env?} or {url, headers?}, as mcp/startServer takes it.
 * The reason names the server and the field, so a typo in a settings file is found at once. */
static bool mcp_server_form(const json_doc *d, const char *name, size_t len, json_ref server, arena *a, char *reason,
                            size_t cap)
{
    if (strlen(name) != len || !session_mcp_server_name_valid(name)) {
        snprintf(reason, cap, "server \"%.40s\": a name is 1 to 40 letters, digits, '-' or single '_'", name);
        return false;
    }
    if (json_type_of(d, server) != JSON_OBJECT) {
        snprintf(reason, cap, "server \"%s\": expected an object with command or url", name);
        return false;
    }
    json_ref command = json_get(d, server, "command"), url = json_get(d, server, "url");
    const char *text;
    bool fine = false;
    if (command != JSON_NO_REF && url != JSON_NO_REF)
        snprintf(reason, cap, "server \"%s\": command and url exclude each other", name);
    else if (command == JSON_NO_REF && url == JSON_NO_REF)
        snprintf(reason, cap, "server \"%s\": command (stdio) or url (HTTP) is needed", name);
    else if (command != JSON_NO_REF && (!plain_string(d, command, a, &text) || !text[0]))
        snprintf(reason, cap, "server \"%s\": command must be a non-empty string", name);
    else if (url != JSON_NO_REF && (!plain_string(d, url, a, &text) ||
                                    (strncmp(text, "http://", 7) != 0 && strncmp(text, "https://", 8) != 0)))
        snprintf(reason, cap, "server \"%s\": url must be an http:// or https:// string", name);
    else
        fine = true;
    for (json_ref f = json_first(d, server); f != JSON_NO_REF && fine; f = json_next(d, f)) {
        const char *field;
        json_string(d, f, a, &field, NULL);
        bool stdio_field = strcmp(field, "args") == 0 || strcmp(field, "env") == 0;
        if (strcmp(field, "command") == 0 || strcmp(field, "url") == 0)
            continue;
        fine = false;
        if (strcmp(field, "args") == 0 && url == JSON_NO_REF) {
            fine = json_type_of(d, f + 1) == JSON_ARRAY;
            for (json_ref e = fine ? json_first(d, f + 1) : JSON_NO_REF; e != JSON_NO_REF && fine;
                 e = json_next(d, e))
                fine = plain_string(d, e, a, NULL);
            if (!fine)
                snprintf(reason, cap, "server \"%s\": args must be an array of strings", name);
        } else if ((strcmp(field, "env") == 0 && url == JSON_NO_REF) ||
                   (strcmp(field, "headers") == 0 && command == JSON_NO_REF)) {
            fine = string_map(d, f + 1);
            if (!fine)
                snprintf(reason, cap, "server \"%s\": %s must be an object of strings", name, field);
        } else if (stdio_field || strcmp(field, "headers") == 0) {
            snprintf(reason, cap, "server \"%s\": %s does not go with %s", name, field, stdio_field ? "url" : "command");
        } else {
            snprintf(reason, cap, "server \"%s\": unknown field \"%.40s\" (command, args, env; or url, headers)",
                     name, field);
        }
    }
    return fine;
}

static bool mcp_servers_form(const char *value, char *reason, size_t cap)
{
    return object_form(value, "servers", mcp_server_form, reason, cap);
}

/* A pattern of files.exclude: it compiles as the file service's globs do, so a value that would fail there (or
 * take it past its limits) is refused here, before any layer holds it. */
static bool glob_form(const json_doc *d, const char *pattern, size_t len, json_ref value, arena *a, char *reason,
                      size_t cap)
{
    (void)d;
    (void)value;
    (void)a;
    ecp_error err;
    if (strlen(pattern) != len) {
        snprintf(reason, cap, "a pattern holds a NUL character");
        return false;
    }
    if (file_glob_check(pattern, &err) < 0) {
        snprintf(reason, cap, "pattern \"%.32s%s\": %s", pattern, len > 32 ? "..." : "", err.message);
        return false;
    }
    return true;
}

static bool glob_map_form(const char *value, char *reason, size_t cap)
{
    return object_form(value, "glob patterns", glob_form, reason, cap);
}

static const session_setting_schema schema[] = {
    NUM("editor.fontSize", "14", 8, 72, "Font size in points"),
    NUM("editor.tabSize", "2", 1, 16, "Spaces a tab is worth"),
    BOOL("editor.insertSpaces", "true", "Insert spaces when Tab is pressed"),
    ENUM("editor.autoIndent", "\"full\"", CHOICES("none", "keep", "full"), "Automatic indentation"),
    ENUM("editor.autoClosingBrackets", "\"always\"", CHOICES("always", "languageDefined", "beforeWhitespace", "never"),
         "Close brackets automatically"),
    ENUM("editor.wordWrap", "\"off\"", CHOICES("off", "on", "wordWrapColumn", "bounded"), "How lines wrap"),
    ENUM("editor.lineNumbers", "\"on\"", CHOICES("on", "off", "relative"), "Line numbers in the gutter"),
    BOOL("editor.folding", "true", "Code folding"),
    BOOL("editor.minimap.enabled", "true", "Show the minimap"),
    NUM("editor.minimap.width", "10", 5, 50, "Minimap width in columns"),
    ENUM("editor.minimap.showSlider", "\"always\"", CHOICES("always", "mouseover"), "When the minimap slider shows"),
    NUM("editor.minimap.maxColumn", "120", 40, 300, "Columns the minimap renders at most"),
    ENUM("editor.minimap.side", "\"right\"", CHOICES("left", "right"), "Side of the minimap"),
    ENUM("editor.renderWhitespace", "\"selection\"", CHOICES("none", "boundary", "selection", "trailing", "all"),
         "Which whitespace is drawn"),
    NUM("editor.mouseWheelScrollSensitivity", "3", 1, 10, "Lines per wheel step"),
    NUM("editor.cursorBlinkRate", "500", 100, 2000, "Cursor blink period in ms"),
    BOOL("editor.scrollBeyondLastLine", "true", "Scroll past the last line"),
    BOOL("editor.diagnostics.curlyUnderline", "true", "Curly underlines for diagnostics"),
    NUM("editor.undoHistoryLimit", "1000", 100, 10000, "Undo steps kept"),
    ENUM("files.autoSave", "\"off\"", CHOICES("off", "afterDelay", "onFocusChange", "onWindowChange"), "Auto save"),
    ENUM("files.watchFiles", "\"onFocus\"", CHOICES("onFocus", "always", "off"), "When files are watched"),
    {.key = "files.exclude", .type = SESSION_SETTING_OBJECT,
     .default_json = "{\"**/node_modules\":true,\"**/.git\":true,\"**/.DS_Store\":true}", .check = glob_map_form,
     .description = "Glob patterns of files to hide", .reported_by_default = true},
    STR("workbench.colorTheme", "\"catppuccin-frappe\"", "The colour theme"),
    STR_RESTRICTED("workbench.startupEditor", "\"~/.ultra/BOOT.md\"", "File opened at start-up"),
    NUM("tui.sidebar.width", "36", 15, 80, "Sidebar width in columns"),
    BOOL("tui.sidebar.visible", "true", "Show the sidebar"),
    ENUM("tui.sidebar.location", "\"left\"", CHOICES("left", "right"), "Side of the sidebar"),
    STR("tui.sidebar.focusedBackground", "\"#2d3139\"", "Background of the focused sidebar"),
    NUM("tui.terminal.height", "10", 4, 50, "Terminal height in rows"),
    NUM("tui.tabBar.scrollAmount", "1", 1, 10, "Tabs scrolled per step"),
    BOOL("tui.outline.autoFollow", "true", "Outline follows the cursor"),
    BOOL("tui.outline.collapsedOnStartup", "true", "Outline starts collapsed"),
    BOOL("tui.outline.showIcons", "true", "Icons in the outline"),
    {.key = "tui.timeline.mode", .type = SESSION_SETTING_STRING, .default_json = "\"file\"",
     .description = "Timeline mode", UNREPORTED},
    {.key = "tui.timeline.commitCount", .type = SESSION_SETTING_NUMBER, .default_json = "50",
     .description = "Commits in the timeline", UNREPORTED},
    {.key = "tui.timeline.collapsedOnStartup", .type = SESSION_SETTING_BOOLEAN, .default_json = "true",
     .description = "Timeline starts collapsed", UNREPORTED},
    STR("ultra.ai.model", "\"claude-sonnet-4-20250514\"", "AI model"),
    STR_RESTRICTED("ultra.ai.apiKey", "\"${env:ANTHROPIC_API_KEY}\"", "AI API key (a reference, not the key)"),
    STR_RESTRICTED("terminal.integrated.shell", "\"/bin/zsh\"", "Shell of new terminals"),
    ENUM("terminal.integrated.position", "\"bottom\"", CHOICES("bottom", "top", "left", "right"), "Terminal position"),
    NUM("terminal.integrated.defaultHeight", "12", 4, 50, "Terminal height in rows"),
    NUM("terminal.integrated.defaultWidth", "40", 20, 200, "Terminal width in columns"),
    BOOL("terminal.integrated.openOnStartup", "true", "Open a terminal at start-up"),
    BOOL("terminal.integrated.spawnOnStartup", "true", "Start the shell at start-up"),
    NUM("git.statusInterval", "100", 50, 5000, "Git status refresh in ms"),
    ENUM("git.panel.location", "\"sidebar-bottom\"", CHOICES("sidebar-bottom", "sidebar-top", "panel"),
         "Where the git panel is"),
    BOOL("git.panel.openOnStartup", "true", "Open the git panel at start-up"),
    NUM("git.diffContextLines", "3", 0, 20, "Context lines in diffs"),
    NUM("git.inlineDiff.maxHeight", "15", 5, 50, "Inline diff height in rows"),
    NUM("git.inlineDiff.contextLines", "3", 0, 10, "Context lines in inline diffs"),
    {.key = "tui.diffViewer.summaryPinned", .type = SESSION_SETTING_BOOLEAN, .default_json = "true",
     .description = "Pin the diff summary", UNREPORTED},
    {.key = "tui.diffViewer.autoRefresh", .type = SESSION_SETTING_BOOLEAN, .default_json = "true",
     .description = "Refresh diffs automatically", UNREPORTED},
    {.key = "tui.diffViewer.showDiagnostics", .type = SESSION_SETTING_BOOLEAN, .default_json = "true",
     .description = "Diagnostics in diffs", UNREPORTED},
    {.key = "tui.diffViewer.defaultViewMode", .type = SESSION_SETTING_STRING, .default_json = "\"unified\"",
     .choices = CHOICES("unified", "side-by-side"), .description = "Diff layout", UNREPORTED},
    {.key = "tui.diffViewer.editMode", .type = SESSION_SETTING_STRING, .default_json = "\"stage-modified\"",
     .choices = CHOICES("stage-modified", "direct-write"), .description = "What editing a diff does", UNREPORTED},
    {.key = "tui.contentBrowser.summaryPinned", .type = SESSION_SETTING_BOOLEAN, .default_json = "true",
     .description = "Pin the content browser summary", UNREPORTED},
    NUM("ai.panel.defaultWidth", "80", 40, 200, "AI panel width in columns"),
    NUM("ai.panel.maxWidthPercent", "50", 20, 80, "AI panel width at most, in percent"),
    BOOL("ai.panel.openOnStartup", "true", "Open the AI panel at start-up"),
    STR("ai.panel.initialPrompt",
        "\"You are a helpful software engineer working with another software engineer on a coding project using the "
        "Ultra IDE\"",
        "First prompt of a chat"),
    BOOL("session.restoreOnStartup", "true", "Restore the last session at start-up"),
    BOOL("session.autoSave", "true", "Save the session periodically"),
    NUM("session.autoSaveInterval", "30000", 5000, 300000, "Session save period in ms"),
    BOOL("session.save.openFiles", "true", "Sessions keep the open files"),
    BOOL("session.save.cursorPositions", "true", "Sessions keep cursor positions"),
    BOOL("session.save.scrollPositions", "true", "Sessions keep scroll positions"),
    BOOL("session.save.foldState", "true", "Sessions keep folds"),
    BOOL("session.save.uiLayout", "true", "Sessions keep the layout"),
    BOOL("session.save.unsavedContent", "true", "Sessions keep unsaved text"),
    BOOL("lsp.enabled", "true",
         "Language servers: a document's opening starts its language's server (in a trusted folder); "
         "false starts none, and lsp/start answers -32409"),
    NUM("lsp.completionDebounceMs", "250", 50, 1000, "Completion delay in ms"),
    STR("lsp.triggerCharacters", "\".:/<@(\"", "Characters that trigger completion"),
    BOOL("lsp.signatureHelp.enabled", "true", "Signature help"),
    ENUM("lsp.signatureHelp.display", "\"popup\"", CHOICES("inline", "statusBar", "popup"), "Where signature help shows"),
    BOOL("lsp.diagnostics.enabled", "true", "Diagnostics"),
    BOOL("lsp.diagnostics.showInGutter", "true", "Diagnostics in the gutter"),
    BOOL("lsp.diagnostics.underlineErrors", "true", "Underline errors"),
    NUM("lsp.diagnostics.delay", "500", 100, 2000, "Diagnostics delay in ms"),
    BOOL("lsp.hover.enabled", "true", "Hover information"),

    /* ----- extensions: keys the catalogue lacks that this server's services read ----- */
    {.key = "agent.model", .type = SESSION_SETTING_STRING, .default_json = "null", .check = provider_model_form,
     .description = "The agent's model as provider/model (openai, anthropic or ollama); --model and ECPD_MODEL "
                    "come first, and unset means the first provider with a key",
     EXTENSION, UNREPORTED},
    {.key = "agent.approval", .type = SESSION_SETTING_STRING, .default_json = "\"ask\"", .choices = CHOICES("ask", "allow"),
     .description = "Whether the agent's writes, edits and shell commands ask first (\"ask\") or run (\"allow\")",
     .reported_by_default = true, EXTENSION, RESTRICTED},
    EXT_INT("agent.maxTurns", "25", 1, 1000, "Model requests one prompt may make at most"),
    EXT_INT("lsp.requestTimeoutMs", "30000", 100, 3600000,
            "How long a language server request may take, in ms (a server's own configuration comes first)"),
    EXT_INT("database.pageSize", "1000", 1, 1000000, "Rows in a query's first page and in each page after"),
    EXT_INT("database.maxResultBytes", "16777216", 1024, 4294967296.0, "Bytes one page of query results may hold"),
    EXT_INT("editor.undoHistoryMaxBytes", "268435456", 65536, 17179869184.0,
            "Memory one document's undo history may hold, in bytes; the oldest steps go first"),
    EXT_INT("server.maxConnections", "64", 1, 100000,
            "Socket clients served at once (--max-connections comes first)"),
    EXT_INT("git.networkTimeoutMs", "60000", 100, 3600000,
            "How long a push, pull or fetch may take before it answers NETWORK_ERROR, in ms"),
    {.key = "agent.mcpServers", .type = SESSION_SETTING_OBJECT, .default_json = "{}", .check = mcp_servers_form,
     .description = "MCP servers the agent runs as tool sources while the setting names them: {name: {command, args?, "
                    "env?}} (stdio) or {name: {url, headers?}} (streamable HTTP)",
     .reported_by_default = true, EXTENSION, RESTRICTED},
};

#define SCHEMA_COUNT (sizeof schema / sizeof schema[0])
#define CATALOGUE_KEYS 79
#define EXTENSION_KEYS 10
_Static_assert(SCHEMA_COUNT == CATALOGUE_KEYS + EXTENSION_KEYS, "the catalogue's 79 keys, then 10 extensions");

const session_setting_schema *session_settings_schema(size_t *count)
{
    *count = SCHEMA_COUNT;
    return schema;
}

static long schema_index(const char *key)
{
    if (!key)
        return -1;
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        if (strcmp(schema[i].key, key) == 0)
            return (long)i;
    return -1;
}

const session_setting_schema *session_setting_find(const char *key)
{
    long i = schema_index(key);
    return i < 0 ? NULL : &schema[i];
}

const char *session_setting_type_name(session_setting_type type)
{
    switch (type) {
    case SESSION_SETTING_BOOLEAN: return "boolean";
    case SESSION_SETTING_NUMBER: return "number";
    case SESSION_SETTING_STRING: return "string";
    case SESSION_SETTING_OBJECT: return "object";
    }
    return "?";
}

/* ----- validation ----------------------------------------------------------------------------------- */

static const char *json_kind(json_type t)
{
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "boolean";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    default: return "nothing";
    }
}

static char *canonical(const json_doc *doc, json_ref ref);

/* Checks the value at ref against row; on refusal writes the reason to
 * reason (cap bytes) and returns false. */
static bool validate(const session_setting_schema *row, const json_doc *doc, json_ref ref, char *reason, size_t cap)
{
    reason[0] = '\0';
    json_type t = json_type_of(doc, ref);
    static const json_type wanted[] = {
        [SESSION_SETTING_BOOLEAN] = JSON_BOOL,
        [SESSION_SETTING_NUMBER] = JSON_NUMBER,
        [SESSION_SETTING_STRING] = JSON_STRING,
        [SESSION_SETTING_OBJECT] = JSON_OBJECT,
    };
    if (t != wanted[row->type]) {
        snprintf(reason, cap, "expected %s, got %s", session_setting_type_name(row->type), json_kind(t));
        return false;
    }
    if (row->type == SESSION_SETTING_NUMBER && row->has_range) {
        double v;
        json_double(doc, ref, &v);
        if (!isfinite(v) || v < row->minimum) {
            snprintf(reason, cap, "must be at least %.15g", row->minimum);
            return false;
        }
        if (v > row->maximum) {
            snprintf(reason, cap, "must be at most %.15g", row->maximum);
            return false;
        }
    }
    if (row->type == SESSION_SETTING_NUMBER && row->integer) {
        double v;
        json_double(doc, ref, &v);
        if (v != floor(v)) {
            snprintf(reason, cap, "must be a whole number");
            return false;
        }
    }
    if (row->type == SESSION_SETTING_STRING && row->check) {
        arena a = ARENA_INIT;
        const char *text;
        size_t len;
        bool fine = json_string(doc, ref, &a, &text, &len) && strlen(text) == len && row->check(text, reason, cap);
        if (!fine && !reason[0])
            snprintf(reason, cap, "expected a string without NUL characters");
        arena_free(&a);
        if (!fine)
            return false;
    }
    if (row->type == SESSION_SETTING_OBJECT && row->check) {
        char *text = canonical(doc, ref);
        bool fine = row->check(text, reason, cap);
        free(text);
        if (!fine)
            return false;
    }
    if (row->type == SESSION_SETTING_STRING && row->choices) {
        for (const char *const *c = row->choices; *c; c++)
            if (json_string_eq(doc, ref, *c))
                return true;
        size_t n = (size_t)snprintf(reason, cap, "must be one of");
        for (const char *const *c = row->choices; *c && n < cap; c++)
            n += (size_t)snprintf(reason + n, cap - n, "%s \"%s\"", c == row->choices ? "" : ",", *c);
        return false;
    }
    return true;
}

static char *canonical(const json_doc *doc, json_ref ref)
{
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    json_write_value(&w, doc, ref);
    return buf_detach(&out);
}

/* ----- layers and the effective values ------------------------------------------------------------- */

static bool same(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Whether the workspace file's value of row i is ignored: the row is
 * restricted and the workspace untrusted. */
static bool ignored_here(const session_service *self, size_t i)
{
    return schema[i].restricted && !self->workspace_trusted;
}

/* Recomputes one key's effective value and tells the listeners when it moved. */
static void recompute(session_service *self, size_t i, bool quiet)
{
    const char *winner = NULL;
    for (int l = LAYER_COUNT - 1; l >= 0 && !winner; l--)
        if (l != LAYER_WORKSPACE || !ignored_here(self, i))
            winner = self->layers[l][i];
    if (same(winner, self->effective[i]))
        return;
    const char *old_theme = session_theme_current(self)->id;
    free(self->effective[i]);
    free(self->effective_strings[i]);
    self->effective[i] = winner ? xstrdup(winner) : NULL;
    self->effective_strings[i] = NULL;
    if (quiet)
        return;
    session__emit_setting(self, schema[i].key, self->effective[i]);
    if (strcmp(schema[i].key, "workbench.colorTheme") == 0) {
        const char *theme = session_theme_current(self)->id;
        if (strcmp(theme, old_theme) != 0)
            session__emit_theme(self, theme);
    }
}

static void recompute_all(session_service *self, bool quiet)
{
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        recompute(self, i, quiet);
}

static void layer_clear(char **layer)
{
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        free(layer[i]), layer[i] = NULL;
}

const char *session_setting_json(session_service *self, const char *key)
{
    long i = schema_index(key);
    return i < 0 ? NULL : self->effective[i];
}

const char *session_setting_ignored(session_service *self, const char *key)
{
    long i = schema_index(key);
    return i < 0 || !ignored_here(self, (size_t)i) ? NULL : self->layers[LAYER_WORKSPACE][i];
}

/* Names the workspace file's restricted keys that are ignored, once per
 * workspace: the user learns why they do not apply and what trusting would do. */
static void notice_ignored(session_service *self)
{
    if (self->workspace_trusted || !self->layer_workspace ||
        (self->noticed_workspace && strcmp(self->noticed_workspace, self->layer_workspace) == 0))
        return;
    buf keys = BUF_INIT;
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        if (ignored_here(self, i) && self->layers[LAYER_WORKSPACE][i])
            buf_appendf(&keys, "%s%s", keys.len ? ", " : "", schema[i].key);
    if (keys.len) {
        free(self->noticed_workspace);
        self->noticed_workspace = xstrdup(self->layer_workspace);
        ecp_log(self->log, ECP_LOG_WARN, "settings: %s is not trusted: its %s ignored", self->layer_workspace,
                keys.data);
        session__emit_message(self, SESSION_MESSAGE_WARNING,
                              "This workspace is not trusted: its settings %s are ignored (they run programs or "
                              "widen permissions). Trust the folder (workspace/trust) to apply them.",
                              keys.data);
    }
    buf_free(&keys);
}

/* The trust of the workspace the layer holds, now; recomputes what it moves. */
static void refresh_trust(session_service *self, bool quiet)
{
    bool trusted = session__path_trusted(self, self->layer_workspace);
    if (trusted == self->workspace_trusted)
        return;
    self->workspace_trusted = trusted;
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        if (schema[i].restricted)
            recompute(self, i, quiet);
}

void session__settings_trust_changed(session_service *self)
{
    refresh_trust(self, false);
    notice_ignored(self);
}

/* Parses the effective value of key (NULL when unset). */
static bool parse_value(session_service *self, const char *key, json_doc *doc)
{
    const char *text = session_setting_json(self, key);
    return text && json_doc_parse(doc, text, strlen(text), NULL) == 0;
}

bool session_setting_bool(session_service *self, const char *key, bool fallback)
{
    const char *text = session_setting_json(self, key);
    if (!text)
        return fallback;
    return strcmp(text, "true") == 0 ? true : strcmp(text, "false") == 0 ? false : fallback;
}

double session_setting_number(session_service *self, const char *key, double fallback)
{
    json_doc doc = {0};
    double v = fallback;
    if (parse_value(self, key, &doc))
        json_double(&doc, json_root(&doc), &v);
    json_doc_free(&doc);
    return v;
}

const char *session_setting_string(session_service *self, const char *key, const char *fallback)
{
    long i = schema_index(key);
    const char *text = i < 0 ? NULL : self->effective[i];
    if (!text || text[0] != '"')
        return fallback;
    if (self->effective_strings[i])
        return self->effective_strings[i];
    json_doc doc = {0};
    const char *out = fallback;
    if (json_doc_parse(&doc, text, strlen(text), NULL) == 0) {
        arena a = ARENA_INIT;
        const char *s;
        size_t slen;
        if (json_string(&doc, json_root(&doc), &a, &s, &slen))
            out = self->effective_strings[i] = xstrndup(s, slen);
        arena_free(&a);
    }
    json_doc_free(&doc);
    return out;
}

void session_settings_each(session_service *self, void (*fn)(void *ctx, const char *key, const char *value_json),
                           void *ctx)
{
    for (size_t i = 0; i < SCHEMA_COUNT; i++)
        if (self->effective[i])
            fn(ctx, schema[i].key, self->effective[i]);
}

/* ----- persistence of the topmost layer ----------------------------------------------------------- */

typedef struct put_op {
    char *key;   /* NULL with value NULL: delete every row */
    char *value; /* NULL: delete the key */
} put_op;

static int put_work(sqlite3 *db, void *data, ecp_error *err)
{
    put_op *op = data;
    sqlite3_stmt *st;
    const char *sql = !op->key     ? "DELETE FROM settings"
                      : op->value ? "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)"
                                  : "DELETE FROM settings WHERE key = ?1";
    int status = store_prepare(db, sql, &st, err);
    if (status < 0)
        return status;
    if (op->key)
        sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
    if (op->value)
        sqlite3_bind_text(st, 2, op->value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "saving a setting");
}

static void put_free(void *data)
{
    put_op *op = data;
    free_each(op->key, op->value, op);
}

static const store_op_type put_type = {
    .name = "settings.put", .transaction = true, .work = put_work, .free_data = put_free,
};

static void persist(session_service *self, const char *key, const char *value)
{
    put_op *op = xcalloc(1, sizeof *op);
    op->key = key ? xstrdup(key) : NULL;
    op->value = value ? xstrdup(value) : NULL;
    store_submit(self->store, &put_type, op);
}

typedef struct load_op {
    session_service *svc;
    buf skipped; /* why each value the schema now refuses was left out, each ending in '\0' */
} load_op;

static int load_work(sqlite3 *db, void *data, ecp_error *err)
{
    load_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db, "SELECT key, value FROM settings", &st, err);
    if (status < 0)
        return status;
    int rc;
    /* The service is not serving yet: its layer is ours to fill. */
    char **layer = op->svc->layers[LAYER_SET];
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        long i = schema_index((const char *)sqlite3_column_text(st, 0));
        const char *value = (const char *)sqlite3_column_text(st, 1);
        if (i < 0 || !value)
            continue; /* a key a later schema dropped */
        json_doc doc = {0};
        char reason[SESSION_REASON_MAX] = "not a JSON value";
        if (json_doc_parse(&doc, value, strlen(value), NULL) == 0 && validate(&schema[i], &doc, json_root(&doc), reason, sizeof reason)) {
            free(layer[i]);
            layer[i] = canonical(&doc, json_root(&doc));
        } else {
            buf_appendf(&op->skipped, "invalid value for setting '%s': %s", schema[i].key, reason);
            buf_push(&op->skipped, '\0');
        }
        json_doc_free(&doc);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "reading the settings");
}

/* On the loop: a saved value that no longer checks is left out, and said so, rather than stop the start. */
static void load_done(void *data, int status, const ecp_error *err)
{
    load_op *op = data;
    if (status < 0)
        ecp_log(op->svc->log, ECP_LOG_ERROR, "settings: %s", err->message);
    for (size_t at = 0; at < op->skipped.len; at += strlen(op->skipped.data + at) + 1) {
        ecp_log(op->svc->log, ECP_LOG_WARN, "settings: saved %s; left out", op->skipped.data + at);
        session__emit_message(op->svc, SESSION_MESSAGE_WARNING, "Saved %s; left out", op->skipped.data + at);
    }
}

static void load_free(void *data)
{
    load_op *op = data;
    buf_free(&op->skipped);
    free(op);
}

static const store_op_type load_type = {
    .name = "settings.load", .work = load_work, .done = load_done, .free_data = load_free,
};

/* ----- setting and resetting -------------------------------------------------------------------- */

int session_setting_set(session_service *self, const char *key, const char *value_json, size_t len,
                        char reason_out[SESSION_REASON_MAX], ecp_error *err)
{
    char reason[SESSION_REASON_MAX] = "";
    int status = 0;
    long i = schema_index(key);
    json_doc doc = {0};
    if (i < 0) {
        snprintf(reason, sizeof reason, "unknown setting");
        status = ecp_error_set(err, ECP_ENOTFOUND, "Unknown setting: %s", key);
    } else if (json_doc_parse(&doc, value_json, len, NULL) < 0) {
        snprintf(reason, sizeof reason, "not a JSON value");
        status = ecp_error_set(err, ECP_EINVAL, "Invalid value for setting '%s': %s", key, reason);
    } else if (!validate(&schema[i], &doc, json_root(&doc), reason, sizeof reason)) {
        status = ecp_error_set(err, ECP_EINVAL, "Invalid value for setting '%s': %s", key, reason);
    }
    if (reason_out)
        memcpy(reason_out, reason, sizeof reason);
    if (status) {
        json_doc_free(&doc);
        return status;
    }
    char *value = canonical(&doc, json_root(&doc));
    json_doc_free(&doc);
    free(self->layers[LAYER_SET][i]);
    self->layers[LAYER_SET][i] = value;
    persist(self, key, value);
    recompute(self, (size_t)i, false);
    return 0;
}

int session_setting_reset(session_service *self, const char *key, ecp_error *err)
{
    if (key) {
        long i = schema_index(key);
        if (i < 0)
            return ecp_error_set(err, ECP_ENOTFOUND, "Unknown setting: %s", key);
        if (self->layers[LAYER_SET][i]) {
            free(self->layers[LAYER_SET][i]);
            self->layers[LAYER_SET][i] = NULL;
            persist(self, key, NULL);
        }
        recompute(self, (size_t)i, false);
        return 0;
    }
    layer_clear(self->layers[LAYER_SET]);
    persist(self, NULL, NULL);
    recompute_all(self, false);
    return 0;
}

/* ----- JSONC ---------------------------------------------------------------------------------------- */

void session__jsonc_strip(const char *s, size_t len, buf *out)
{
    buf_reserve(out, len);
    size_t start = out->len;
    size_t i = 0;
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
        buf_append(out, "   ", 3);
        i = 3;
    }
    while (i < len) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && s[j] != '"' && s[j] != '\n')
                j += s[j] == '\\' && j + 1 < len ? 2 : 1;
            if (j < len && s[j] == '"')
                j++;
            buf_append(out, s + i, j - i);
            i = j;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n')
                buf_push(out, ' '), i++;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            size_t j = i + 2;
            while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
                j++;
            j = j + 1 < len ? j + 2 : len;
            for (; i < j; i++)
                buf_push(out, s[i] == '\n' ? '\n' : ' ');
        } else {
            buf_push(out, c);
            i++;
        }
    }
    /* Trailing commas: a comma followed only by whitespace before } or ]. */
    char *t = out->data + start;
    size_t n = out->len - start;
    bool in_string = false;
    for (size_t k = 0; k < n; k++) {
        if (in_string) {
            if (t[k] == '\\')
                k++;
            else if (t[k] == '"')
                in_string = false;
            continue;
        }
        if (t[k] == '"') {
            in_string = true;
        } else if (t[k] == ',') {
            size_t j = k + 1;
            while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r'))
                j++;
            if (j < n && (t[j] == '}' || t[j] == ']'))
                t[k] = ' ';
        }
    }
}

/* Where an offset is, as "line L, column C" (1-based, for a person). */
static void describe_offset(const char *text, size_t len, const char *message, char *out, size_t cap)
{
    const char *at = strstr(message, "offset ");
    long offset = at ? strtol(at + 7, NULL, 10) : -1;
    if (offset < 0 || (size_t)offset > len) {
        snprintf(out, cap, "%s", message);
        return;
    }
    size_t line = 1, col = 1;
    for (long k = 0; k < offset; k++) {
        if (text[k] == '\n')
            line++, col = 1;
        else
            col++;
    }
    snprintf(out, cap, "%.*s(line %zu, column %zu)", (int)(at - message), message, line, col);
}

/* Reads text as a layer: on success *layer is filled (values the schema
 * refuses are left out and reported) and true is returned; a text that does
 * not parse returns false with *problem describing it. */
static bool parse_file(session_service *self, const char *path, const char *text, size_t len, char **layer,
                       buf *problem)
{
    buf stripped = BUF_INIT;
    session__jsonc_strip(text, len, &stripped);
    json_doc doc = {0};
    ecp_error err = {0};
    bool ok = false;
    if (json_doc_parse(&doc, stripped.data ? stripped.data : "", stripped.len, &err) < 0) {
        char where[600];
        describe_offset(stripped.data ? stripped.data : "", stripped.len, err.message, where, sizeof where);
        buf_appendf(problem, "%s: %s; keeping the settings it had before", path, where);
        goto done;
    }
    json_ref root = json_root(&doc);
    if (json_type_of(&doc, root) != JSON_OBJECT) {
        buf_appendf(problem, "%s: expected an object of settings; keeping the settings it had before", path);
        goto done;
    }
    arena a = ARENA_INIT;
    for (json_ref k = json_first(&doc, root); k != JSON_NO_REF; k = json_next(&doc, k)) {
        const char *key;
        json_string(&doc, k, &a, &key, NULL);
        long i = schema_index(key);
        char reason[SESSION_REASON_MAX];
        if (i < 0) {
            ecp_log(self->log, ECP_LOG_WARN, "settings: %s: unknown setting '%s' ignored", path, key);
            session__emit_message(self, SESSION_MESSAGE_WARNING, "%s: unknown setting '%s' ignored", path, key);
        } else if (!validate(&schema[i], &doc, k + 1, reason, sizeof reason)) {
            ecp_log(self->log, ECP_LOG_WARN, "settings: %s: invalid value for setting '%s': %s", path, key, reason);
            session__emit_message(self, SESSION_MESSAGE_WARNING, "%s: invalid value for setting '%s': %s", path, key,
                                  reason);
        } else {
            free(layer[i]);
            layer[i] = canonical(&doc, k + 1);
        }
    }
    arena_free(&a);
    ok = true;
done:
    json_doc_free(&doc);
    buf_free(&stripped);
    return ok;
}

/* Takes the file's new text (NULL: the file is gone) into its layer. For the
 * workspace's file, workspace is the workspace it was read for: the trust its
 * values are applied with is that workspace's. */
static void file_apply(settings_file *f, const char *workspace, char *text, size_t len, bool quiet)
{
    session_service *self = f->svc;
    if (f->layer == LAYER_WORKSPACE && !same(workspace, self->layer_workspace)) {
        free(self->layer_workspace);
        self->layer_workspace = workspace ? xstrdup(workspace) : NULL;
    }
    if (f->layer == LAYER_WORKSPACE)
        refresh_trust(self, quiet);
    if (same(text, f->last_text) && (!text || len == f->last_len)) {
        free(text);
        return;
    }
    free(f->last_text);
    f->last_text = text;
    f->last_len = len;
    char **layer = self->layers[f->layer];
    if (!text) {
        layer_clear(layer);
        recompute_all(self, quiet);
        return;
    }
    char **fresh = xcalloc(SCHEMA_COUNT, sizeof *fresh);
    buf problem = BUF_INIT;
    if (parse_file(self, f->path, text, len, fresh, &problem)) {
        layer_clear(layer);
        memcpy(layer, fresh, SCHEMA_COUNT * sizeof *fresh);
        free(fresh);
        recompute_all(self, quiet);
        if (f->layer == LAYER_WORKSPACE && !quiet)
            notice_ignored(self);
    } else {
        layer_clear(fresh);
        free(fresh);
        ecp_log(self->log, ECP_LOG_ERROR, "settings: %s", problem.data);
        session__emit_message(self, SESSION_MESSAGE_ERROR, "%s", problem.data);
    }
    buf_free(&problem);
}

#define SETTINGS_FILE_MAX (1u << 20)

/* Reads the file now: start-up, before anyone listens. */
static void file_read_now(settings_file *f)
{
    if (!f->path)
        return;
    char *data = NULL;
    size_t len = 0;
    ecp_error err;
    int status = file_read(f->path, SETTINGS_FILE_MAX, &data, &len, NULL, &err);
    if (status == ECP_ENOTFOUND) {
        file_apply(f, f->svc->workspace, NULL, 0, true);
        return;
    }
    if (status < 0) {
        ecp_log(f->svc->log, ECP_LOG_ERROR, "settings: %s", err.message);
        return;
    }
    file_apply(f, f->svc->workspace, data, len, true);
}

/* ----- watching the files ------------------------------------------------------------------------------ */

typedef struct read_job {
    settings_file *file;
    char *path;
    char *workspace; /* the workspace the file was read for */
    char *data;
    size_t len;
    int status;
    ecp_error err;
} read_job;

static void read_work(ecp_job *job, unsigned item)
{
    read_job *j = ecp_job_data(job);
    j->status = file_read(j->path, SETTINGS_FILE_MAX, &j->data, &j->len, NULL, &j->err);
}

static void start_read(settings_file *f);

static void read_done(ecp_job *job)
{
    read_job *j = ecp_job_data(job);
    settings_file *f = j->file;
    f->reading = false;
    if (j->status == 0) {
        file_apply(f, j->workspace, j->data, j->len, false);
        j->data = NULL;
    } else if (j->status == ECP_ENOTFOUND) {
        file_apply(f, j->workspace, NULL, 0, false);
    } else {
        ecp_log(f->svc->log, ECP_LOG_ERROR, "settings: %s", j->err.message);
        session__emit_message(f->svc, SESSION_MESSAGE_ERROR, "%s", j->err.message);
    }
    if (f->read_again) {
        f->read_again = false;
        start_read(f);
    }
}

static void read_free(void *data)
{
    read_job *j = data;
    free_each(j->path, j->workspace, j->data, j);
}

static const ecp_job_type read_type = {
    .name = "session.settings.read", .lane = ECP_LANE_SHORT, .work = read_work, .done = read_done, .free_data = read_free,
};

static void start_read(settings_file *f)
{
    if (f->reading) {
        f->read_again = true;
        return;
    }
    f->reading = true;
    read_job *j = xcalloc(1, sizeof *j);
    j->file = f;
    j->path = xstrdup(f->path);
    j->workspace = f->svc->workspace ? xstrdup(f->svc->workspace) : NULL;
    ecp_job *job = ecp_job_new(f->svc->jobs, &read_type, j);
    ecp_job_start(job, 1);
}

static void watch_event(void *ctx, const file_change *change);

/* The deepest existing directory on the way to the file. */
static char *existing_dir_of(const char *path)
{
    char *dir = xstrdup(path);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            break;
        if (slash == dir) {
            dir[1] = '\0';
            break;
        }
        *slash = '\0';
        file_info info;
        if (file_stat(dir, &info, NULL) == 0 && info.exists && info.is_directory)
            break;
    }
    return dir;
}

static void unwatch(settings_file *f)
{
    if (f->watching)
        file_watch_remove(f->svc->files, f->watch_id);
    f->watching = false;
    free(f->watched_dir);
    f->watched_dir = NULL;
}

/* Watches the file's directory, or while it does not exist the nearest
 * ancestor that does, to see it appear. */
static void rewatch(settings_file *f)
{
    if (!f->path || !f->svc->files)
        return;
    char *dir = existing_dir_of(f->path);
    if (f->watching && strcmp(dir, f->watched_dir) == 0) {
        free(dir);
        return;
    }
    unwatch(f);
    ecp_error err;
    if (file_watch_add(f->svc->files, dir, false, watch_event, f, &f->watch_id, &err) == 0) {
        f->watching = true;
        f->watched_dir = dir;
    } else {
        ecp_log(f->svc->log, ECP_LOG_WARN, "settings: cannot watch %s: %s", dir, err.message);
        free(dir);
    }
}

static void watch_event(void *ctx, const file_change *change)
{
    settings_file *f = ctx;
    size_t n = strlen(change->path);
    bool is_file = strcmp(change->path, f->path) == 0;
    bool on_the_way = strncmp(f->path, change->path, n) == 0 && f->path[n] == '/';
    if (!is_file && !on_the_way)
        return;
    if (on_the_way)
        rewatch(f);
    start_read(f);
}

/* ----- lifetime ---------------------------------------------------------------------------------------------- */

static void workspace_path(session_service *self, settings_file *f)
{
    free(f->path);
    f->path = NULL;
    if (self->workspace && self->workspace[0] == '/') {
        buf p = BUF_INIT;
        buf_appendf(&p, "%s%s.ecpd/settings.json", self->workspace,
                    self->workspace[strlen(self->workspace) - 1] == '/' ? "" : "/");
        f->path = buf_detach(&p);
    }
}

int session__settings_init(session_service *self, ecp_error *err)
{
    for (int l = 0; l < LAYER_COUNT; l++)
        self->layers[l] = xcalloc(SCHEMA_COUNT, sizeof(char *));
    self->effective = xcalloc(SCHEMA_COUNT, sizeof(char *));
    self->effective_strings = xcalloc(SCHEMA_COUNT, sizeof(char *));
    for (size_t i = 0; i < SCHEMA_COUNT; i++) {
        if (!schema[i].reported_by_default)
            continue;
        if (strcmp(schema[i].key, "terminal.integrated.shell") == 0 && getenv("SHELL") && getenv("SHELL")[0] == '/') {
            /* as the reference's settings: the user's shell, else the schema's */
            buf v = BUF_INIT;
            json_writer w;
            jw_init(&w, &v);
            jw_string(&w, getenv("SHELL"));
            self->layers[LAYER_DEFAULT][i] = buf_detach(&v);
            continue;
        }
        self->layers[LAYER_DEFAULT][i] = xstrdup(schema[i].default_json);
    }

    load_op *op = xcalloc(1, sizeof *op);
    op->svc = self;
    store_submit(self->store, &load_type, op);
    store_flush(self->store);

    self->user_file = (settings_file){.svc = self, .layer = LAYER_USER};
    self->workspace_file = (settings_file){.svc = self, .layer = LAYER_WORKSPACE};
    if (self->config_path)
        self->user_file.path = xstrdup(self->config_path);
    workspace_path(self, &self->workspace_file);
    file_read_now(&self->user_file);
    file_read_now(&self->workspace_file);
    recompute_all(self, true);
    (void)err;
    return 0;
}

/* At start-up nobody listens yet: the notice waits for the loop, when the
 * first clients are connected. */
static void notice_work(ecp_job *job, unsigned item)
{
    (void)job;
    (void)item;
}

static void notice_done(ecp_job *job) { notice_ignored(ecp_job_data(job)); }

static void notice_keep(void *data) { (void)data; }

static const ecp_job_type notice_type = {
    .name = "session.settings.notice", .lane = ECP_LANE_SHORT, .work = notice_work, .done = notice_done,
    .free_data = notice_keep,
};

void session__settings_watch(session_service *self)
{
    if (!self->workspace_trusted && self->layer_workspace)
        ecp_job_start(ecp_job_new(self->jobs, &notice_type, self), 1);
    rewatch(&self->user_file);
    rewatch(&self->workspace_file);
}

void session__settings_workspace_changed(session_service *self)
{
    settings_file *f = &self->workspace_file;
    unwatch(f);
    workspace_path(self, f);
    if (!f->path) {
        file_apply(f, NULL, NULL, 0, false);
        return;
    }
    rewatch(f);
    start_read(f);
}

static void file_free(settings_file *f)
{
    unwatch(f);
    free(f->path);
    free(f->last_text);
    f->path = NULL;
    f->last_text = NULL;
}

void session__settings_free(session_service *self)
{
    file_free(&self->user_file);
    file_free(&self->workspace_file);
    for (int l = 0; l < LAYER_COUNT; l++) {
        if (self->layers[l])
            layer_clear(self->layers[l]);
        free(self->layers[l]);
    }
    if (self->effective)
        layer_clear(self->effective);
    if (self->effective_strings)
        layer_clear(self->effective_strings);
    free(self->effective);
    free(self->effective_strings);
}
