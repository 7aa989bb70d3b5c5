/* grammar: the languages the syntax service knows and their queries.
 *
 * A grammar is linked in when CMake found its sources (ECPD_GRAMMAR_<NAME>);
 * its highlight query is read from the grammar directory and compiled the
 * first time a parse needs it. Queries inherit by concatenation: the base
 * language's patterns come first so that, with "last pattern wins", the
 * derived language's own patterns override them (typescript over javascript,
 * cpp over c).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

#define DECLARE(fn) const TSLanguage *fn(void);
#ifdef ECPD_GRAMMAR_C
DECLARE(tree_sitter_c)
#define GRAMMAR_C tree_sitter_c
#else
#define GRAMMAR_C NULL
#endif
#ifdef ECPD_GRAMMAR_CPP
DECLARE(tree_sitter_cpp)
#define GRAMMAR_CPP tree_sitter_cpp
#else
#define GRAMMAR_CPP NULL
#endif
#ifdef ECPD_GRAMMAR_JAVASCRIPT
DECLARE(tree_sitter_javascript)
#define GRAMMAR_JAVASCRIPT tree_sitter_javascript
#else
#define GRAMMAR_JAVASCRIPT NULL
#endif
#ifdef ECPD_GRAMMAR_TYPESCRIPT
DECLARE(tree_sitter_typescript)
#define GRAMMAR_TYPESCRIPT tree_sitter_typescript
#else
#define GRAMMAR_TYPESCRIPT NULL
#endif
#ifdef ECPD_GRAMMAR_TSX
DECLARE(tree_sitter_tsx)
#define GRAMMAR_TSX tree_sitter_tsx
#else
#define GRAMMAR_TSX NULL
#endif
#ifdef ECPD_GRAMMAR_PYTHON
DECLARE(tree_sitter_python)
#define GRAMMAR_PYTHON tree_sitter_python
#else
#define GRAMMAR_PYTHON NULL
#endif
#ifdef ECPD_GRAMMAR_JSON
DECLARE(tree_sitter_json)
#define GRAMMAR_JSON tree_sitter_json
#else
#define GRAMMAR_JSON NULL
#endif
#ifdef ECPD_GRAMMAR_RUST
DECLARE(tree_sitter_rust)
#define GRAMMAR_RUST tree_sitter_rust
#else
#define GRAMMAR_RUST NULL
#endif
#ifdef ECPD_GRAMMAR_GO
DECLARE(tree_sitter_go)
#define GRAMMAR_GO tree_sitter_go
#else
#define GRAMMAR_GO NULL
#endif
#ifdef ECPD_GRAMMAR_BASH
DECLARE(tree_sitter_bash)
#define GRAMMAR_BASH tree_sitter_bash
#else
#define GRAMMAR_BASH NULL
#endif
#ifdef ECPD_GRAMMAR_MARKDOWN
DECLARE(tree_sitter_markdown)
#define GRAMMAR_MARKDOWN tree_sitter_markdown
#else
#define GRAMMAR_MARKDOWN NULL
#endif
#ifdef ECPD_GRAMMAR_MARKDOWN_INLINE
DECLARE(tree_sitter_markdown_inline)
#define GRAMMAR_MARKDOWN_INLINE tree_sitter_markdown_inline
#else
#define GRAMMAR_MARKDOWN_INLINE NULL
#endif
#ifdef ECPD_GRAMMAR_HTML
DECLARE(tree_sitter_html)
#define GRAMMAR_HTML tree_sitter_html
#else
#define GRAMMAR_HTML NULL
#endif
#ifdef ECPD_GRAMMAR_CSS
DECLARE(tree_sitter_css)
#define GRAMMAR_CSS tree_sitter_css
#else
#define GRAMMAR_CSS NULL
#endif
#ifdef ECPD_GRAMMAR_JAVA
DECLARE(tree_sitter_java)
#define GRAMMAR_JAVA tree_sitter_java
#else
#define GRAMMAR_JAVA NULL
#endif
#ifdef ECPD_GRAMMAR_LUA
DECLARE(tree_sitter_lua)
#define GRAMMAR_LUA tree_sitter_lua
#else
#define GRAMMAR_LUA NULL
#endif
#ifdef ECPD_GRAMMAR_YAML
DECLARE(tree_sitter_yaml)
#define GRAMMAR_YAML tree_sitter_yaml
#else
#define GRAMMAR_YAML NULL
#endif
#ifdef ECPD_GRAMMAR_TOML
DECLARE(tree_sitter_toml)
#define GRAMMAR_TOML tree_sitter_toml
#else
#define GRAMMAR_TOML NULL
#endif

#ifdef ECPD_GRAMMAR_PHP
DECLARE(tree_sitter_php)
#define GRAMMAR_PHP tree_sitter_php
#else
#define GRAMMAR_PHP NULL
#endif
#ifdef ECPD_GRAMMAR_RUBY
DECLARE(tree_sitter_ruby)
#define GRAMMAR_RUBY tree_sitter_ruby
#else
#define GRAMMAR_RUBY NULL
#endif
#ifdef ECPD_GRAMMAR_CSHARP
DECLARE(tree_sitter_c_sharp)
#define GRAMMAR_CSHARP tree_sitter_c_sharp
#else
#define GRAMMAR_CSHARP NULL
#endif
#ifdef ECPD_GRAMMAR_SQL
DECLARE(tree_sitter_sql)
#define GRAMMAR_SQL tree_sitter_sql
#else
#define GRAMMAR_SQL NULL
#endif
#ifdef ECPD_GRAMMAR_MAKE
DECLARE(tree_sitter_make)
#define GRAMMAR_MAKE tree_sitter_make
#else
#define GRAMMAR_MAKE NULL
#endif
#ifdef ECPD_GRAMMAR_KOTLIN
DECLARE(tree_sitter_kotlin)
#define GRAMMAR_KOTLIN tree_sitter_kotlin
#else
#define GRAMMAR_KOTLIN NULL
#endif
#ifdef ECPD_GRAMMAR_ZIG
DECLARE(tree_sitter_zig)
#define GRAMMAR_ZIG tree_sitter_zig
#else
#define GRAMMAR_ZIG NULL
#endif
#ifdef ECPD_GRAMMAR_ELIXIR
DECLARE(tree_sitter_elixir)
#define GRAMMAR_ELIXIR tree_sitter_elixir
#else
#define GRAMMAR_ELIXIR NULL
#endif

#define JS_HL "tree-sitter-javascript/queries/highlights.scm"
#define JSX_HL "tree-sitter-javascript/queries/highlights-jsx.scm"
#define TS_HL "tree-sitter-typescript/queries/highlights.scm"
#define C_HL "tree-sitter-c/queries/highlights.scm"

typedef struct grammar_spec {
    const char *name;
    const TSLanguage *(*language)(void);
    const char *query_files[4];
    const char *injection_file;
} grammar_spec;

static const grammar_spec specs[] = {
    {"c", GRAMMAR_C, {C_HL}, NULL},
    {"cpp", GRAMMAR_CPP, {C_HL, "tree-sitter-cpp/queries/highlights.scm"}, NULL},
    {"javascript", GRAMMAR_JAVASCRIPT, {JS_HL, JSX_HL}, NULL},
    {"typescript", GRAMMAR_TYPESCRIPT, {JS_HL, TS_HL}, NULL},
    {"tsx", GRAMMAR_TSX, {JS_HL, JSX_HL, TS_HL}, NULL},
    {"python", GRAMMAR_PYTHON, {"tree-sitter-python/queries/highlights.scm"}, NULL},
    {"json", GRAMMAR_JSON, {"tree-sitter-json/queries/highlights.scm"}, NULL},
    {"rust", GRAMMAR_RUST, {"tree-sitter-rust/queries/highlights.scm"}, NULL},
    {"go", GRAMMAR_GO, {"tree-sitter-go/queries/highlights.scm"}, NULL},
    {"bash", GRAMMAR_BASH, {"tree-sitter-bash/queries/highlights.scm"}, NULL},
    {"markdown", GRAMMAR_MARKDOWN, {"tree-sitter-markdown/tree-sitter-markdown/queries/highlights.scm"},
     "tree-sitter-markdown/tree-sitter-markdown/queries/injections.scm"},
    {"markdown_inline", GRAMMAR_MARKDOWN_INLINE,
     {"tree-sitter-markdown/tree-sitter-markdown-inline/queries/highlights.scm"}, NULL},
    {"html", GRAMMAR_HTML, {"tree-sitter-html/queries/highlights.scm"}, "tree-sitter-html/queries/injections.scm"},
    {"css", GRAMMAR_CSS, {"tree-sitter-css/queries/highlights.scm"}, NULL},
    {"java", GRAMMAR_JAVA, {"tree-sitter-java/queries/highlights.scm"}, NULL},
    {"lua", GRAMMAR_LUA, {"tree-sitter-lua/queries/highlights.scm"}, NULL},
    {"yaml", GRAMMAR_YAML, {"tree-sitter-yaml/queries/highlights.scm"}, NULL},
    {"toml", GRAMMAR_TOML, {"tree-sitter-toml/queries/highlights.scm"}, NULL},
    {"php", GRAMMAR_PHP, {"tree-sitter-php/queries/highlights.scm"}, NULL},
    {"ruby", GRAMMAR_RUBY, {"tree-sitter-ruby/queries/highlights.scm"}, NULL},
    {"csharp", GRAMMAR_CSHARP, {"tree-sitter-c-sharp/queries/highlights.scm"}, NULL},
    {"sql", GRAMMAR_SQL, {"tree-sitter-sql/queries/highlights.scm"}, NULL},
    {"make", GRAMMAR_MAKE, {"tree-sitter-make/queries/highlights.scm"}, NULL},
    {"kotlin", GRAMMAR_KOTLIN, {"tree-sitter-kotlin/queries/highlights.scm"}, NULL},
    {"zig", GRAMMAR_ZIG, {"tree-sitter-zig/queries/highlights.scm"}, NULL},
    {"elixir", GRAMMAR_ELIXIR, {"tree-sitter-elixir/queries/highlights.scm"}, NULL},
};
#define GRAMMAR_COUNT (sizeof specs / sizeof specs[0])

/* The catalogue's language ids, and the grammar that highlights each here. */
static const struct {
    const char *id;
    const char *grammar;
} language_ids[] = {
    {"typescript", "typescript"}, {"typescriptreact", "tsx"}, {"javascript", "javascript"},
    {"javascriptreact", "javascript"}, {"json", "json"}, {"jsonc", "json"}, {"python", "python"},
    {"rust", "rust"}, {"go", "go"}, {"c", "c"}, {"cpp", "cpp"}, {"html", "html"}, {"css", "css"},
    {"scss", NULL}, {"less", NULL}, {"markdown", "markdown"}, {"yaml", "yaml"}, {"toml", "toml"},
    {"shellscript", "bash"}, {"bash", "bash"}, {"sh", "bash"}, {"zsh", "bash"}, {"ruby", "ruby"},
    {"java", "java"}, {"kotlin", "kotlin"}, {"swift", NULL}, {"php", "php"}, {"sql", "sql"}, {"graphql", NULL},
    {"dockerfile", NULL}, {"makefile", "make"}, {"lua", "lua"}, {"perl", NULL}, {"r", NULL}, {"scala", NULL},
    {"elixir", "elixir"}, {"erlang", NULL}, {"haskell", NULL}, {"clojure", NULL}, {"vim", NULL}, {"xml", NULL},
    {"svg", NULL}, {"csharp", "csharp"}, {"zig", "zig"},
};
#define LANGUAGE_ID_COUNT (sizeof language_ids / sizeof language_ids[0])

struct syntax_grammars {
    char *dir;
    ecp_logger *log;
    syntax_grammar items[GRAMMAR_COUNT];
};

syntax_grammars *syntax_grammars_new(const char *query_dir, ecp_logger *log)
{
    syntax_grammars *self = xcalloc(1, sizeof *self);
    self->dir = xstrdup(query_dir);
    self->log = log;
    for (size_t i = 0; i < GRAMMAR_COUNT; i++) {
        syntax_grammar *g = &self->items[i];
        g->name = specs[i].name;
        g->language = specs[i].language;
        memcpy(g->query_files, specs[i].query_files, sizeof g->query_files);
        g->injection_file = specs[i].injection_file;
        uv_mutex_init(&g->lock);
    }
    return self;
}

static void free_predicates(syntax_grammar *g)
{
    if (!g->predicates)
        return;
    uint32_t patterns = ts_query_pattern_count(g->query);
    for (uint32_t p = 0; p < patterns; p++) {
        for (size_t i = 0; i < g->predicates[p].count; i++) {
            predicate *pr = &g->predicates[p].items[i];
            if (pr->regex)
                pcre2_code_free(pr->regex);
            free(pr->choices);
            free(pr->choice_lens);
        }
        free(g->predicates[p].items);
    }
    free(g->predicates);
}

void syntax_grammars_free(syntax_grammars *self)
{
    if (!self)
        return;
    for (size_t i = 0; i < GRAMMAR_COUNT; i++) {
        syntax_grammar *g = &self->items[i];
        if (g->query) {
            free_predicates(g);
            ts_query_delete(g->query);
        }
        if (g->injections)
            ts_query_delete(g->injections);
        free_each(g->injection_language, g->capture_scopes, g->capture_hidden, g->capture_colors, g->capture_color_known);
        uv_mutex_destroy(&g->lock);
    }
    free(self->dir);
    free(self);
}

ecp_logger *syntax_grammars_log(syntax_grammars *self) { return self->log; }

syntax_grammar *syntax_grammars_find(syntax_grammars *self, const char *language_id)
{
    if (!language_id)
        return NULL;
    const char *name = NULL;
    for (size_t i = 0; i < LANGUAGE_ID_COUNT && !name; i++)
        if (strcmp(language_ids[i].id, language_id) == 0)
            name = language_ids[i].grammar;
    if (!name)
        return NULL;
    for (size_t i = 0; i < GRAMMAR_COUNT; i++)
        if (strcmp(self->items[i].name, name) == 0)
            return self->items[i].language ? &self->items[i] : NULL;
    return NULL;
}

syntax_grammar *syntax_grammars_find_injected(syntax_grammars *self, const char *name)
{
    static const struct {
        const char *alias, *grammar;
    } aliases[] = {
        {"js", "javascript"}, {"jsx", "javascript"}, {"mjs", "javascript"}, {"node", "javascript"},
        {"ts", "typescript"}, {"py", "python"}, {"python3", "python"}, {"rs", "rust"}, {"golang", "go"},
        {"sh", "bash"}, {"shell", "bash"}, {"zsh", "bash"}, {"console", "bash"}, {"c++", "cpp"}, {"cc", "cpp"},
        {"cxx", "cpp"}, {"h", "c"}, {"yml", "yaml"}, {"jsonc", "json"}, {"md", "markdown"},
        {"rb", "ruby"}, {"cs", "csharp"}, {"c#", "csharp"}, {"kt", "kotlin"}, {"ex", "elixir"}, {"exs", "elixir"},
        {"makefile", "make"}, {"mk", "make"}, {"postgresql", "sql"}, {"pgsql", "sql"},
    };
    char lower[32];
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof lower)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] - 'A' + 'a' : name[i]);
    const char *grammar = lower;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, lower) == 0)
            grammar = aliases[i].grammar;
    for (size_t i = 0; i < GRAMMAR_COUNT; i++)
        if (strcmp(self->items[i].name, grammar) == 0)
            return self->items[i].language ? &self->items[i] : NULL;
    return syntax_grammars_find(self, lower);
}

const char *const *syntax_catalogue_languages(size_t *count)
{
    static const char *const ids[] = {
        "typescript", "typescriptreact", "javascript", "javascriptreact", "json", "jsonc", "python", "rust",
        "go", "c", "cpp", "html", "css", "scss", "less", "markdown", "yaml", "toml", "shellscript", "bash",
        "sh", "zsh", "ruby", "java", "kotlin", "swift", "php", "sql", "graphql", "dockerfile", "makefile",
        "lua", "perl", "r", "scala", "elixir", "erlang", "haskell", "clojure", "vim", "xml", "svg", "csharp", "zig",
    };
    *count = sizeof ids / sizeof ids[0];
    return ids;
}

/* Markup's captures come in two families (the older text.* names the
 * markdown queries use, the newer markup.* ones); both become the markup.*
 * scopes the themes colour, so a heading is coloured whichever its grammar
 * says. A few older names of code captures (conditional, repeat, field)
 * become the scope now named for them. Every other capture is its own
 * scope. */
const char *syntax_scope_of(const char *capture)
{
    static const struct {
        const char *capture, *scope;
    } markup[] = {
        {"text.title", "markup.heading"},         {"markup.heading", "markup.heading"},
        {"text.emphasis", "markup.italic"},       {"markup.italic", "markup.italic"},
        {"text.strong", "markup.bold"},           {"markup.strong", "markup.bold"},
        {"markup.bold", "markup.bold"},           {"text.uri", "markup.link.url"},
        {"markup.link.url", "markup.link.url"},   {"text.reference", "markup.link"},
        {"markup.link", "markup.link"},           {"markup.link.label", "markup.link"},
        {"text.literal", "markup.raw"},           {"markup.raw", "markup.raw"},
        {"text.strike", "markup.strikethrough"},  {"markup.strikethrough", "markup.strikethrough"},
    };
    for (size_t i = 0; i < sizeof markup / sizeof markup[0]; i++) {
        size_t n = strlen(markup[i].capture);
        /* markup.heading.1 and text.title.2 too */
        if (strncmp(capture, markup[i].capture, n) == 0 && (capture[n] == '\0' || capture[n] == '.'))
            return markup[i].scope;
    }
    /* The older names some queries still use (make's, sql's), for the
     * scopes the themes have. */
    static const struct {
        const char *capture, *scope;
    } older[] = {
        {"conditional", "keyword"}, {"repeat", "keyword"},   {"include", "keyword"},
        {"exception", "keyword"},   {"storageclass", "keyword"}, {"define", "keyword"},
        {"preproc", "keyword"},     {"method", "function.method"}, {"field", "property"},
        {"parameter", "variable.parameter"}, {"namespace", "module"}, {"float", "number"},
        {"character", "string"},
    };
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++)
        if (strcmp(capture, older[i].capture) == 0)
            return older[i].scope;
    return capture;
}

/* ----- predicates ------------------------------------------------------------------------------ */

static bool compile_predicates(syntax_grammar *g, ecp_logger *log)
{
    uint32_t patterns = ts_query_pattern_count(g->query);
    g->predicates = xcalloc(patterns ? patterns : 1, sizeof *g->predicates);
    for (uint32_t p = 0; p < patterns; p++) {
        uint32_t n = 0;
        const TSQueryPredicateStep *steps = ts_query_predicates_for_pattern(g->query, p, &n);
        uint32_t i = 0;
        while (i < n) {
            uint32_t end = i;
            while (end < n && steps[end].type != TSQueryPredicateStepTypeDone)
                end++;
            /* steps[i .. end): name, args */
            if (end > i && steps[i].type == TSQueryPredicateStepTypeString) {
                uint32_t name_len;
                const char *name = ts_query_string_value_for_id(g->query, steps[i].value_id, &name_len);
                bool negated = strncmp(name, "not-", 4) == 0;
                const char *op = negated ? name + 4 : name;
                predicate pr = {.negated = negated};
                bool keep = false;
                uint32_t argc = end - i - 1;
                const TSQueryPredicateStep *a = &steps[i + 1];
                if (strcmp(op, "eq?") == 0 && argc == 2 && a[0].type == TSQueryPredicateStepTypeCapture) {
                    pr.capture = a[0].value_id;
                    if (a[1].type == TSQueryPredicateStepTypeCapture) {
                        pr.kind = PRED_EQ_CAPTURE;
                        pr.other_capture = a[1].value_id;
                    } else {
                        pr.kind = PRED_EQ_STRING;
                        pr.text = ts_query_string_value_for_id(g->query, a[1].value_id, &pr.text_len);
                    }
                    keep = true;
                } else if ((strcmp(op, "match?") == 0 || strcmp(op, "lua-match?") == 0) && argc == 2 &&
                           a[0].type == TSQueryPredicateStepTypeCapture && a[1].type == TSQueryPredicateStepTypeString) {
                    uint32_t len;
                    const char *re = ts_query_string_value_for_id(g->query, a[1].value_id, &len);
                    int code;
                    PCRE2_SIZE at;
                    pr.kind = PRED_MATCH;
                    pr.capture = a[0].value_id;
                    /* A Lua pattern without `%` classes (the ones the pinned
                     * queries use: anchors, sets, `*` and `+`) means the same
                     * as a regex; one with them is not read as one. */
                    bool lua_classes = strcmp(op, "lua-match?") == 0 && memchr(re, '%', len);
                    pr.regex = lua_classes ? NULL
                                           : pcre2_compile((PCRE2_SPTR)re, len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                                           &code, &at, NULL);
                    if (!pr.regex) {
                        ecp_log(log, ECP_LOG_WARN, "syntax: %s: regex /%s/ does not compile; pattern %u never matches",
                                g->name, re, p);
                        pr.kind = PRED_ANY_OF; /* an empty any-of: never true */
                    }
                    keep = true;
                } else if (strcmp(op, "any-of?") == 0 && argc >= 1 &&
                           a[0].type == TSQueryPredicateStepTypeCapture) {
                    pr.kind = PRED_ANY_OF;
                    pr.capture = a[0].value_id;
                    pr.choices = xcalloc(argc, sizeof *pr.choices);
                    pr.choice_lens = xcalloc(argc, sizeof *pr.choice_lens);
                    for (uint32_t k = 1; k < argc; k++)
                        if (a[k].type == TSQueryPredicateStepTypeString) {
                            pr.choices[pr.choice_count] =
                                ts_query_string_value_for_id(g->query, a[k].value_id, &pr.choice_lens[pr.choice_count]);
                            pr.choice_count++;
                        }
                    keep = true;
                }
                /* Other predicates (#is-not? local, #set!) carry no condition
                 * a highlighter without scopes can test: they hold. */
                if (keep) {
                    pattern_predicates *pp = &g->predicates[p];
                    pp->items = xrealloc(pp->items, (pp->count + 1) * sizeof *pp->items);
                    pp->items[pp->count++] = pr;
                }
            }
            i = end + 1;
        }
    }
    return true;
}

/* ----- loading ------------------------------------------------------------------------------------ */

static bool read_file(const char *path, buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char chunk[16384];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(out, chunk, n);
    fclose(f);
    return true;
}

/* The injection query, when the grammar ships one: which captures name the
 * language and the content, and each pattern's #set! injection.language.
 * One that does not load only means nothing is injected. */
static void load_injections(syntax_grammars *self, syntax_grammar *g, const TSLanguage *lang)
{
    g->injection_language_capture = g->injection_content_capture = UINT32_MAX;
    if (!g->injection_file)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", self->dir, g->injection_file);
    buf source = BUF_INIT;
    if (!read_file(path, &source)) {
        ecp_log(self->log, ECP_LOG_WARN, "syntax: cannot read %s; nothing is injected into %s", path, g->name);
        buf_free(&source);
        return;
    }
    uint32_t error_offset = 0;
    TSQueryError error = TSQueryErrorNone;
    g->injections = ts_query_new(lang, source.data, (uint32_t)source.len, &error_offset, &error);
    buf_free(&source);
    if (!g->injections) {
        ecp_log(self->log, ECP_LOG_WARN, "syntax: the %s injection query does not compile (error %d at byte %u)",
                g->name, (int)error, error_offset);
        return;
    }
    for (uint32_t c = 0; c < ts_query_capture_count(g->injections); c++) {
        uint32_t len;
        const char *name = ts_query_capture_name_for_id(g->injections, c, &len);
        if (strcmp(name, "injection.language") == 0)
            g->injection_language_capture = c;
        else if (strcmp(name, "injection.content") == 0)
            g->injection_content_capture = c;
    }
    uint32_t patterns = ts_query_pattern_count(g->injections);
    g->injection_language = xcalloc(patterns ? patterns : 1, sizeof *g->injection_language);
    for (uint32_t p = 0; p < patterns; p++) {
        uint32_t n = 0;
        const TSQueryPredicateStep *steps = ts_query_predicates_for_pattern(g->injections, p, &n);
        for (uint32_t i = 0; i + 2 < n; i++) {
            uint32_t len;
            if (steps[i].type != TSQueryPredicateStepTypeString || steps[i + 1].type != TSQueryPredicateStepTypeString ||
                steps[i + 2].type != TSQueryPredicateStepTypeString)
                continue;
            const char *op = ts_query_string_value_for_id(g->injections, steps[i].value_id, &len);
            const char *key = ts_query_string_value_for_id(g->injections, steps[i + 1].value_id, &len);
            if (strcmp(op, "set!") == 0 && strcmp(key, "injection.language") == 0)
                g->injection_language[p] = ts_query_string_value_for_id(g->injections, steps[i + 2].value_id, &len);
        }
    }
}

static bool load(syntax_grammars *self, syntax_grammar *g)
{
    const TSLanguage *lang = g->language();
    uint32_t abi = ts_language_abi_version(lang);
    if (abi < TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION || abi > TREE_SITTER_LANGUAGE_VERSION) {
        ecp_log(self->log, ECP_LOG_WARN, "syntax: grammar %s has ABI %u, this runtime loads %u..%u; %s stays plain text",
                g->name, abi, TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION, TREE_SITTER_LANGUAGE_VERSION, g->name);
        return false;
    }
    buf source = BUF_INIT;
    for (size_t i = 0; i < 4 && g->query_files[i]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", self->dir, g->query_files[i]);
        if (!read_file(path, &source)) {
            ecp_log(self->log, ECP_LOG_WARN, "syntax: cannot read %s; %s stays plain text", path, g->name);
            buf_free(&source);
            return false;
        }
        buf_push(&source, '\n');
    }
    uint32_t error_offset = 0;
    TSQueryError error = TSQueryErrorNone;
    g->query = ts_query_new(lang, source.data, (uint32_t)source.len, &error_offset, &error);
    buf_free(&source);
    if (!g->query) {
        ecp_log(self->log, ECP_LOG_WARN, "syntax: the %s highlight query does not compile (error %d at byte %u); %s "
                "stays plain text", g->name, (int)error, error_offset, g->name);
        return false;
    }
    uint32_t captures = ts_query_capture_count(g->query);
    g->capture_hidden = xcalloc(captures + 1, sizeof *g->capture_hidden);
    g->capture_scopes = xcalloc(captures + 1, sizeof *g->capture_scopes);
    g->capture_colors = xcalloc(captures + 1, sizeof *g->capture_colors);
    g->capture_color_known = xcalloc(captures + 1, sizeof *g->capture_color_known);
    for (uint32_t c = 0; c < captures; c++) {
        uint32_t len;
        const char *name = ts_query_capture_name_for_id(g->query, c, &len);
        g->capture_scopes[c] = syntax_scope_of(name);
        g->capture_hidden[c] = len == 0 || name[0] == '_' || strcmp(name, "spell") == 0 || strcmp(name, "none") == 0;
    }
    if (!compile_predicates(g, self->log))
        return false;
    load_injections(self, g, lang);
    return true;
}

bool syntax_grammar_ready(syntax_grammars *self, syntax_grammar *g)
{
    if (!g || !g->language)
        return false;
    uv_mutex_lock(&g->lock);
    if (!g->loaded) {
        g->failed = !load(self, g);
        g->loaded = true;
    }
    bool ok = !g->failed;
    uv_mutex_unlock(&g->lock);
    return ok;
}

void syntax_grammars_forget_colors(syntax_grammars *self)
{
    for (size_t i = 0; i < GRAMMAR_COUNT; i++) {
        syntax_grammar *g = &self->items[i];
        uv_mutex_lock(&g->lock);
        if (g->query && g->capture_color_known)
            memset(g->capture_color_known, 0, (ts_query_capture_count(g->query) + 1) * sizeof(bool));
        uv_mutex_unlock(&g->lock);
    }
}

const char *syntax_grammars_dir(syntax_grammars *self) { return self->dir; }
