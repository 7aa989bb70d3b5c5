/* Prints the method list of server/PROTOCOL.md section 10 from the method
 * tables, as a real server answers ecp/methods: one list per namespace, a
 * method a line with its params signature and summary.
 *
 *   methods_markdown                 prints the list
 *   methods_markdown --check FILE    exits 1 when FILE's list (between the
 *                                    markers) differs from the tables'
 *   methods_markdown --write FILE    replaces FILE's list with the tables'
 *   methods_markdown --fill roff|names TEMPLATE OUT
 *                                    writes TEMPLATE to OUT with its line
 *                                    "@METHODS@" replaced by the list as roff
 *                                    (the ecpd-protocol(7) man page) or as
 *                                    the bare names, one a line (what bash
 *                                    completes after ecpctl) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "test_client.h"

#define BEGIN_MARK "<!-- methods:begin -->\n"
#define END_MARK "<!-- methods:end -->\n"
#define REGENERATE "build/tests/methods_markdown --write server/PROTOCOL.md"

typedef enum { LIST_MARKDOWN, LIST_ROFF, LIST_NAMES } list_format;

/* Text as roff reads it on a line of its own: a backslash is the escape
 * character, and a line starting with a dot or a quote would be a request. */
static void roff_text(buf *out, const char *text)
{
    if (text[0] == '.' || text[0] == '\'')
        buf_append_str(out, "\\&");
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            buf_append_str(out, "\\e");
        else if (*p == '-')
            buf_append_str(out, "\\-");
        else
            buf_push(out, *p);
    }
}

static void list_methods(buf *out, list_format format)
{
    test_server *srv = test_server_new(NULL);
    test_client *c = test_client_connect(srv);
    char *list = NULL;
    if (test_client_request(c, "ecp/methods", "{}", &list) != 0) {
        fprintf(stderr, "methods_markdown: ecp/methods failed: %s\n", list ? list : "");
        exit(2);
    }
    if (format == LIST_MARKDOWN)
        buf_append_str(out, "<!-- generated from the method tables by " REGENERATE "; edit the tables, not this -->\n");
    char previous_ns[64] = "\x01";
    long count = test_json_length(list, "methods");
    for (long m = 0; m < count; m++) {
        char path[64];
        snprintf(path, sizeof path, "methods[%ld].name", m);
        char *name = test_json_string(list, path);
        snprintf(path, sizeof path, "methods[%ld].params", m);
        char *params = test_json_string(list, path);
        snprintf(path, sizeof path, "methods[%ld].summary", m);
        char *summary = test_json_string(list, path);
        const char *slash = strchr(name, '/');
        char ns[64];
        snprintf(ns, sizeof ns, "%.*s", slash ? (int)(slash - name) : 0, name);
        if (format == LIST_NAMES) {
            buf_appendf(out, "%s\n", name);
        } else if (format == LIST_ROFF) {
            if (strcmp(ns, previous_ns) != 0) {
                buf_append_str(out, ".SS ");
                roff_text(out, ns[0] ? ns : "Lifecycle (no namespace)");
                buf_append_str(out, ns[0] ? "/*\n" : "\n");
                snprintf(previous_ns, sizeof previous_ns, "%s", ns);
            }
            buf_append_str(out, ".TP\n\\fB");
            roff_text(out, name);
            buf_append_str(out, "\\fR \\fI");
            roff_text(out, params);
            buf_append_str(out, "\\fR\n");
            roff_text(out, summary);
            buf_push(out, '\n');
        } else if (strcmp(ns, previous_ns) != 0) {
            if (ns[0])
                buf_appendf(out, "\n#### `%s/*`\n\n", ns);
            else
                buf_appendf(out, "\n#### Lifecycle (no namespace)\n\n");
            snprintf(previous_ns, sizeof previous_ns, "%s", ns);
        }
        if (format == LIST_MARKDOWN)
            buf_appendf(out, "- `%s` `%s`: %s\n", name, params, summary);
        free(name);
        free(params);
        free(summary);
    }
    free(list);
    test_client_disconnect(c);
    test_server_free(srv);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    buf b = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    buf_push(&b, '\0');
    return b.data;
}

#define FILL_MARK "@METHODS@\n"

/* --fill: TEMPLATE with its line FILL_MARK replaced by the list, into OUT. */
static int fill(const char *format_name, const char *template_path, const char *out_path)
{
    list_format format;
    if (strcmp(format_name, "roff") == 0)
        format = LIST_ROFF;
    else if (strcmp(format_name, "names") == 0)
        format = LIST_NAMES;
    else {
        fprintf(stderr, "methods_markdown: --fill takes roff or names, not %s\n", format_name);
        return 2;
    }
    char *text = read_file(template_path);
    char *mark = strstr(text, FILL_MARK);
    if (!mark || (mark != text && mark[-1] != '\n')) {
        fprintf(stderr, "%s: no line %.*s\n", template_path, (int)strlen(FILL_MARK) - 1, FILL_MARK);
        free(text);
        return 1;
    }
    buf list = BUF_INIT;
    list_methods(&list, format);
    FILE *f = fopen(out_path, "wb");
    if (!f) {
        perror(out_path);
        free(text);
        buf_free(&list);
        return 2;
    }
    fwrite(text, 1, (size_t)(mark - text), f);
    fwrite(list.data, 1, list.len, f);
    fputs(mark + strlen(FILL_MARK), f);
    int rc = fclose(f) == 0 ? 0 : 2;
    free(text);
    buf_free(&list);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--fill") == 0)
        return fill(argv[2], argv[3], argv[4]);
    buf list = BUF_INIT;
    list_methods(&list, LIST_MARKDOWN);
    if (argc == 1) {
        fwrite(list.data, 1, list.len, stdout);
        buf_free(&list);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "--check") != 0 && strcmp(argv[1], "--write") != 0)) {
        fprintf(stderr, "usage: methods_markdown [--check FILE | --write FILE | --fill roff|names TEMPLATE OUT]\n");
        return 2;
    }
    char *text = read_file(argv[2]);
    char *begin = strstr(text, BEGIN_MARK), *end = begin ? strstr(begin, END_MARK) : NULL;
    if (!begin || !end) {
        fprintf(stderr, "%s: no method list between \"%.*s\" and \"%.*s\"\n", argv[2], (int)strlen(BEGIN_MARK) - 1,
                BEGIN_MARK, (int)strlen(END_MARK) - 1, END_MARK);
        return 1;
    }
    char *inside = begin + strlen(BEGIN_MARK);
    int rc = 0;
    if (strcmp(argv[1], "--check") == 0) {
        if ((size_t)(end - inside) != list.len || memcmp(inside, list.data, list.len) != 0) {
            fprintf(stderr,
                    "%s: the method list of section 10 differs from the method tables.\n"
                    "Regenerate it from the build tree's parent: %s\n",
                    argv[2], REGENERATE);
            rc = 1;
        }
    } else {
        FILE *f = fopen(argv[2], "wb");
        if (!f) {
            perror(argv[2]);
            return 2;
        }
        fwrite(text, 1, (size_t)(inside - text), f);
        fwrite(list.data, 1, list.len, f);
        fputs(end, f);
        rc = fclose(f) == 0 ? 0 : 2;
    }
    free(text);
    buf_free(&list);
    return rc;
}
