/* Differential fuzzing of incremental reparsing against full parses.
 *
 * The input is a program: a language, an initial text, then edits (insert
 * or delete at an offset). The syntax service's own steps run on it: each
 * edit goes to the tree (ts_tree_edit) and to the line index
 * (line_index_replace) and to the injected languages' layers, the tree is
 * reparsed from the edited one, and the layers are found again from the
 * edited ones (kept where no edit touched them, reparsed from their old
 * trees where one did). After every edit the result
 * is compared with a fresh start from the same text: the line index must be
 * the one line_index_build gives, and when the text and the languages
 * injected into it parse without errors (tree-sitter does not promise the
 * same error recovery from an edited tree) every line's tokens, injected
 * languages included, must be the same.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_TEXT 4096
#define MAX_EDITS 16

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t at;
} input;

static uint8_t next_byte(input *in) { return in->at < in->size ? in->data[in->at++] : 0; }

static size_t next_u16(input *in)
{
    size_t hi = next_byte(in);
    return hi << 8 | next_byte(in);
}

/* Text from the input, with the bytes the grammars care about most likely. */
static size_t next_text(input *in, char *out, size_t len)
{
    static const char common[] = "\n\n  ()[]{};,.=+-*/\"'`#<>!&|:_x1aif ";
    size_t n = 0;
    while (n < len && in->at < in->size) {
        uint8_t b = next_byte(in);
        out[n++] = b < 0x80 ? common[b % (sizeof common - 1)] : (char)(b & 0x7f);
    }
    return n;
}

static TSPoint point_at(const char *text, size_t offset)
{
    TSPoint p = {0, 0};
    for (size_t i = 0; i < offset; i++) {
        if (text[i] == '\n') {
            p.row++;
            p.column = 0;
        } else {
            p.column++;
        }
    }
    return p;
}

static void highlight_all(const syntax_grammar *g, const TSTree *tree, const syntax_layers *layers, const char *text,
                          size_t len, const line_index *lines, raw_line *out)
{
    syntax_highlight_layered(g, tree, layers, text, len, lines, 0, lines->count, out);
}

static void free_lines(raw_line *lines, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(lines[i].tokens);
    free(lines);
}

/* libFuzzer runs every input in one process: the grammars and their
 * compiled queries are made once and kept, as the service keeps them. */
static syntax_grammars *grammars;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    grammars = syntax_grammars_new(ECPD_GRAMMAR_DIR, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const languages[] = {"c", "javascript", "json", "python", "markdown", "html"};
    input in = {data, size, 0};
    syntax_grammar *g = syntax_grammars_find(grammars, languages[next_byte(&in) % 6]);
    if (!g || !syntax_grammar_ready(grammars, g))
        return 0;

    char *text = malloc(MAX_TEXT + 1);
    size_t len = next_text(&in, text, next_u16(&in) % (MAX_TEXT / 2));
    line_index lines;
    line_index_build(&lines, text, len);
    TSTree *tree = syntax_parse(g, NULL, text, len, NULL, NULL);
    REQUIRE(tree);
    syntax_layers layers;
    syntax_layers_build(grammars, g, tree, text, len, NULL, &layers);

    for (int step = 0; step < MAX_EDITS && in.at < in.size; step++) {
        uint8_t op = next_byte(&in);
        size_t at = len ? next_u16(&in) % (len + 1) : 0;
        size_t deleted = 0, inserted = 0;
        char added[64];
        if (op & 1) {
            deleted = len - at < (size_t)(op >> 2) ? len - at : (size_t)(op >> 2);
        } else {
            inserted = next_text(&in, added, (op >> 2) % sizeof added);
            if (len + inserted > MAX_TEXT)
                inserted = MAX_TEXT - len;
        }
        TSInputEdit edit = {
            .start_byte = (uint32_t)at,
            .old_end_byte = (uint32_t)(at + deleted),
            .new_end_byte = (uint32_t)(at + inserted),
            .start_point = point_at(text, at),
            .old_end_point = point_at(text, at + deleted),
        };
        memmove(text + at + inserted, text + at + deleted, len - at - deleted);
        memcpy(text + at, added, inserted);
        len = len - deleted + inserted;
        edit.new_end_point = point_at(text, at + inserted);
        line_index_replace(&lines, text, len, at, deleted, inserted);
        ts_tree_edit(tree, &edit);
        syntax_layers_edit(&layers, &edit);
        TSTree *next = syntax_parse(g, tree, text, len, NULL, NULL);
        REQUIRE(next);
        ts_tree_delete(tree);
        tree = next;
        syntax_layers next_layers;
        syntax_layers_build(grammars, g, tree, text, len, &layers, &next_layers);
        syntax_layers_free(&layers);
        layers = next_layers;

        line_index fresh_lines;
        line_index_build(&fresh_lines, text, len);
        REQUIRE(fresh_lines.count == lines.count);
        REQUIRE(memcmp(fresh_lines.starts, lines.starts, (lines.count + 1) * sizeof *lines.starts) == 0);
        line_index_free(&fresh_lines);

        TSTree *fresh = syntax_parse(g, NULL, text, len, NULL, NULL);
        REQUIRE(fresh);
        syntax_layers fresh_layers;
        syntax_layers_build(grammars, g, fresh, text, len, NULL, &fresh_layers);
        bool clean = !ts_node_has_error(ts_tree_root_node(fresh));
        for (size_t i = 0; clean && i < fresh_layers.count; i++)
            clean = !ts_node_has_error(ts_tree_root_node(fresh_layers.items[i].tree));
        if (clean) {
            raw_line *a = calloc(lines.count, sizeof *a), *b = calloc(lines.count, sizeof *b);
            highlight_all(g, tree, &layers, text, len, &lines, a);
            highlight_all(g, fresh, &fresh_layers, text, len, &lines, b);
            for (size_t l = 0; l < lines.count; l++) {
                REQUIRE(a[l].count == b[l].count);
                for (uint32_t t = 0; t < a[l].count; t++)
                    REQUIRE(a[l].tokens[t].start == b[l].tokens[t].start && a[l].tokens[t].end == b[l].tokens[t].end &&
                            a[l].tokens[t].capture == b[l].tokens[t].capture &&
                            a[l].tokens[t].grammar == b[l].tokens[t].grammar);
            }
            free_lines(a, lines.count);
            free_lines(b, lines.count);
        }
        syntax_layers_free(&fresh_layers);
        ts_tree_delete(fresh);
    }
    syntax_layers_free(&layers);
    ts_tree_delete(tree);
    line_index_free(&lines);
    free(text);
    return 0;
}
