/* The keys typed while a command waits for the server are replayed when it
 * is done. A replayed key whose command ends at once (its request could not
 * be sent: the connection is gone) must neither replay the queue again from
 * inside the replay nor free a key twice; each key runs once, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editor.h"
#include "input.h"

/* main.c's, which this test does not link: nothing here quits or restarts. */
void app_quit_now(app *a) { a->quitting = true; }
void app_restart_server(app *a) { (void)a; }
void app_ask_trust(app *a, const char *why) { (void)a, (void)why; }

static int failures;

static void check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    app *a = xcalloc(1, sizeof *a);
    commands_bind_defaults(a);
    tab *t = xcalloc(1, sizeof *t);
    t->serial = 1;
    t->doc_id = xstrdup("doc-1");
    t->line_count = 3;
    a->tabs = xcalloc(1, sizeof *a->tabs);
    a->tabs[0] = t;
    a->tab_count = 1;
    a->next_serial = 2;
    /* No connection (a->rpc is NULL): every request fails as it is made, as
     * it does once the server is gone. A command waits; keys wait behind it,
     * each one a command that asks the server first. */
    a->busy = 1;
    queue_push(a, "ctrl+d", 0, false);   /* cursor.nextOccurrence */
    queue_push(a, "alt+down", 0, false); /* cursor.addBelow */
    queue_push(a, "ctrl+c", 0, false);   /* edit.copy */
    queue_push(a, NULL, 'x', true);
    chain_end(a);
    check(a->busy == 0, "nothing waits once every replayed command has ended");
    check(a->queued_count == 0, "every waiting key was replayed");

    queue_drop(a);
    bindings_clear(a);
    for (int i = 0; i < a->tab_count; i++)
        tab_free(a->tabs[i]);
    free(a->tabs);
    free(a->message);
    buf_free(&a->typed);
    buf_free(&a->clipboard);
    free(a);
    if (failures)
        return 1;
    puts("ok");
    return 0;
}
