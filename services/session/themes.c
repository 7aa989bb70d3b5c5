/* themes: the built-in colour themes, as data.
 *
 * Each theme is written as a palette of named roles (background, keyword,
 * string, ...) and expanded into the 15 UI colours and the token colours
 * keyed by tree-sitter capture names, so every theme covers the same
 * captures and the same UI keys. The current theme is the
 * workbench.colorTheme setting.
 */
#include <string.h>

#include "internal.h"

static const char *const color_names[SESSION_THEME_COLOR_COUNT] = {
    "editor.background",
    "editor.foreground",
    "editor.lineHighlightBackground",
    "editor.selectionBackground",
    "editorCursor.foreground",
    "editorLineNumber.foreground",
    "editorLineNumber.activeForeground",
    "editorGutter.background",
    "statusBar.background",
    "statusBar.foreground",
    "tab.activeBackground",
    "tab.inactiveBackground",
    "sideBar.background",
    "sideBar.foreground",
    "panel.border",
};

/* The roles of a palette, in the order THEME takes them:
 * bg panel highlight selection fg muted active cursor border
 * comment keyword string escape number constant function type variable
 * parameter property operator punctuation tag attribute builtin */
#define TOKENS(comment, keyword, string, escape, number, constant, function, type, variable, parameter, property, \
               operator, punctuation, tag, attribute, builtin)                                                   \
    {                                                                                                            \
        {"comment", comment, "italic"},                                                                          \
        {"keyword", keyword, NULL},                                                                              \
        {"string", string, NULL},                                                                                \
        {"string.escape", escape, NULL},                                                                         \
        {"string.special", escape, NULL},                                                                        \
        {"number", number, NULL},                                                                                \
        {"boolean", constant, NULL},                                                                             \
        {"constant", constant, NULL},                                                                            \
        {"constant.builtin", builtin, NULL},                                                                     \
        {"function", function, NULL},                                                                            \
        {"function.builtin", builtin, NULL},                                                                     \
        {"function.method", function, NULL},                                                                     \
        {"constructor", type, NULL},                                                                             \
        {"type", type, NULL},                                                                                    \
        {"type.builtin", type, "italic"},                                                                        \
        {"variable", variable, NULL},                                                                            \
        {"variable.builtin", builtin, "italic"},                                                                 \
        {"variable.parameter", parameter, NULL},                                                                 \
        {"property", property, NULL},                                                                            \
        {"operator", operator, NULL},                                                                            \
        {"punctuation", punctuation, NULL},                                                                      \
        {"tag", tag, NULL},                                                                                      \
        {"attribute", attribute, NULL},                                                                          \
        {"label", tag, NULL},                                                                                    \
        {"module", type, NULL},                                                                                  \
        {"embedded", variable, NULL},                                                                            \
        {"markup.heading", function, "bold"},                                                                    \
        {"markup.bold", constant, "bold"},                                                                       \
        {"markup.italic", keyword, "italic"},                                                                    \
        {"markup.strikethrough", comment, NULL},                                                                 \
        {"markup.link", function, NULL},                                                                         \
        {"markup.link.url", string, NULL},                                                                        \
        {"markup.raw", string, NULL},                                                                            \
    }

#define TOKEN_COUNT 33

#define PALETTE(name, bg, panel, highlight, selection, fg, muted, active, cursor, border, ...)          \
    static const session_token_color name##_tokens[TOKEN_COUNT] = TOKENS(__VA_ARGS__);                    \
    static const char *const name##_ui[SESSION_THEME_COLOR_COUNT] = {                                     \
        bg, fg, highlight, selection, cursor, muted, active, bg, panel, fg, bg, panel, panel, fg, border, \
    };

/*      name                bg         panel      highlight  selection  fg         muted      active     cursor     border
 *      comment    keyword    string     escape     number     constant   function   type       variable   parameter
 *      property   operator   punct      tag        attribute  builtin */
PALETTE(one_dark, "#282c34", "#21252b", "#2c313c", "#3e4451", "#abb2bf", "#495162", "#abb2bf", "#528bff", "#181a1f",
        "#5c6370", "#c678dd", "#98c379", "#56b6c2", "#d19a66", "#d19a66", "#61afef", "#e5c07b", "#e06c75", "#d19a66",
        "#e06c75", "#56b6c2", "#abb2bf", "#e06c75", "#d19a66", "#56b6c2")
PALETTE(one_light, "#fafafa", "#eaeaeb", "#f2f2f2", "#e5e5e6", "#383a42", "#9d9d9f", "#383a42", "#526fff", "#dbdbdc",
        "#a0a1a7", "#a626a4", "#50a14f", "#0184bc", "#986801", "#986801", "#4078f2", "#c18401", "#e45649", "#986801",
        "#e45649", "#0184bc", "#383a42", "#e45649", "#986801", "#0184bc")
PALETTE(catppuccin_frappe, "#303446", "#292c3c", "#414559", "#51576d", "#c6d0f5", "#737994", "#babbf1", "#f2d5cf",
        "#232634", "#737994", "#ca9ee6", "#a6d189", "#f4b8e4", "#ef9f76", "#ef9f76", "#8caaee", "#e5c890", "#c6d0f5",
        "#ea999c", "#babbf1", "#99d1db", "#949cbb", "#8caaee", "#e5c890", "#e78284")
PALETTE(catppuccin_mocha, "#1e1e2e", "#181825", "#313244", "#45475a", "#cdd6f4", "#6c7086", "#b4befe", "#f5e0dc",
        "#11111b", "#6c7086", "#cba6f7", "#a6e3a1", "#f5c2e7", "#fab387", "#fab387", "#89b4fa", "#f9e2af", "#cdd6f4",
        "#eba0ac", "#b4befe", "#89dceb", "#9399b2", "#89b4fa", "#f9e2af", "#f38ba8")
PALETTE(catppuccin_macchiato, "#24273a", "#1e2030", "#363a4f", "#494d64", "#cad3f5", "#6e738d", "#b7bdf8", "#f4dbd6",
        "#181926", "#6e738d", "#c6a0f6", "#a6da95", "#f5bde6", "#f5a97f", "#f5a97f", "#8aadf4", "#eed49f", "#cad3f5",
        "#ee99a0", "#b7bdf8", "#91d7e3", "#939ab7", "#8aadf4", "#eed49f", "#ed8796")
PALETTE(catppuccin_latte, "#eff1f5", "#e6e9ef", "#ccd0da", "#bcc0cc", "#4c4f69", "#9ca0b0", "#7287fd", "#dc8a78",
        "#dce0e8", "#9ca0b0", "#8839ef", "#40a02b", "#ea76cb", "#fe640b", "#fe640b", "#1e66f5", "#df8e1d", "#4c4f69",
        "#e64553", "#7287fd", "#04a5e5", "#7c7f93", "#1e66f5", "#df8e1d", "#d20f39")
PALETTE(github_dark, "#0d1117", "#010409", "#161b22", "#264f78", "#e6edf3", "#6e7681", "#e6edf3", "#2f81f7", "#30363d",
        "#8b949e", "#ff7b72", "#a5d6ff", "#79c0ff", "#79c0ff", "#79c0ff", "#d2a8ff", "#ffa657", "#e6edf3", "#ffa657",
        "#79c0ff", "#ff7b72", "#e6edf3", "#7ee787", "#79c0ff", "#79c0ff")
PALETTE(github_light, "#ffffff", "#f6f8fa", "#f6f8fa", "#add6ff", "#1f2328", "#8c959f", "#1f2328", "#0969da", "#d0d7de",
        "#6e7781", "#cf222e", "#0a3069", "#0550ae", "#0550ae", "#0550ae", "#8250df", "#953800", "#1f2328", "#953800",
        "#0550ae", "#cf222e", "#1f2328", "#116329", "#0550ae", "#0550ae")

static const session_theme themes[] = {
    /* the catalogue's ids for its two built-in themes are their names */
    {"One Dark", "One Dark", "dark", color_names, one_dark_ui, one_dark_tokens, TOKEN_COUNT},
    {"One Light", "One Light", "light", color_names, one_light_ui, one_light_tokens, TOKEN_COUNT},
    {"catppuccin-frappe", "Catppuccin Frappé", "dark", color_names, catppuccin_frappe_ui, catppuccin_frappe_tokens,
     TOKEN_COUNT},
    {"catppuccin-mocha", "Catppuccin Mocha", "dark", color_names, catppuccin_mocha_ui, catppuccin_mocha_tokens,
     TOKEN_COUNT},
    {"catppuccin-macchiato", "Catppuccin Macchiato", "dark", color_names, catppuccin_macchiato_ui,
     catppuccin_macchiato_tokens, TOKEN_COUNT},
    {"catppuccin-latte", "Catppuccin Latte", "light", color_names, catppuccin_latte_ui, catppuccin_latte_tokens,
     TOKEN_COUNT},
    {"github-dark", "GitHub Dark", "dark", color_names, github_dark_ui, github_dark_tokens, TOKEN_COUNT},
    {"github-light", "GitHub Light", "light", color_names, github_light_ui, github_light_tokens, TOKEN_COUNT},
};

#define THEME_COUNT (sizeof themes / sizeof themes[0])

/* Other names a theme is found by: settings files written before the ids
 * were the catalogue's name One Dark and One Light by these slugs. */
static const struct {
    const char *alias, *id;
} theme_aliases[] = {
    {"one-dark", "One Dark"},
    {"one-light", "One Light"},
};

static const session_theme *table(void) { return themes; }

const session_theme *session_themes(size_t *count)
{
    *count = THEME_COUNT;
    return table();
}

const session_theme *session_theme_find(const char *id)
{
    if (!id)
        return NULL;
    for (size_t i = 0; i < sizeof theme_aliases / sizeof theme_aliases[0]; i++)
        if (strcmp(theme_aliases[i].alias, id) == 0)
            id = theme_aliases[i].id;
    const session_theme *t = table();
    for (size_t i = 0; i < THEME_COUNT; i++)
        if (strcmp(t[i].id, id) == 0)
            return &t[i];
    return NULL;
}

const session_theme *session_theme_current(session_service *self)
{
    const session_theme *t = session_theme_find(session_setting_string(self, "workbench.colorTheme", NULL));
    return t ? t : session_theme_find("One Dark");
}

const session_token_color *session_theme_token_color(session_service *self, const char *capture)
{
    const session_theme *t = session_theme_current(self);
    size_t len = strlen(capture);
    for (;;) {
        for (size_t i = 0; i < t->token_color_count; i++)
            if (strlen(t->token_colors[i].capture) == len && strncmp(t->token_colors[i].capture, capture, len) == 0)
                return &t->token_colors[i];
        const char *dot = memrchr(capture, '.', len);
        if (!dot)
            return NULL;
        len = (size_t)(dot - capture);
    }
}

int session_theme_set(session_service *self, const char *id, ecp_error *err)
{
    const session_theme *theme = session_theme_find(id);
    if (!theme)
        return ecp_error_set(err, ECP_ENOTFOUND, "Theme not found: %s", id);
    buf value = BUF_INIT;
    json_writer w;
    jw_init(&w, &value);
    jw_string(&w, theme->id); /* the id, not an alias it was named by */
    int status = session_setting_set(self, "workbench.colorTheme", value.data, value.len, NULL, err);
    buf_free(&value);
    return status;
}
