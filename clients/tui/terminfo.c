/* The terminfo questions ecp-tui asks before ncurses starts; apart from the
 * rest because <term.h> defines a macro for every capability's name. */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <unistd.h>

#include "buf.h"

char *direct_colour_terminal(void);

/* Whether a terminfo entry paints 24-bit colour (ncurses' RGB extension). */
static bool terminfo_is_direct(const char *name)
{
    int err = 0;
    TERMINAL *saved = cur_term;
    if (setupterm((char *)name, STDOUT_FILENO, &err) != OK)
        return false;
    bool direct = tigetnum("colors") >= 0x1000000 || tigetflag("RGB") > 0;
    del_curterm(cur_term);
    set_curterm(saved);
    return direct;
}

/* The terminfo entry to paint with: $TERM, unless the terminal says it has
 * 24-bit colour (COLORTERM=truecolor or 24bit, as xterm, kitty, tmux with Tc and
 * most others do) while $TERM's entry has only 256; then its -direct sibling
 * (xterm-256color: xterm-direct, tmux-256color: tmux-direct) when installed,
 * so that theme colours are painted exactly. NULL: $TERM as it is. */
char *direct_colour_terminal(void)
{
    const char *term = getenv("TERM"), *colorterm = getenv("COLORTERM");
    if (!term || !*term || !colorterm || (strcmp(colorterm, "truecolor") != 0 && strcmp(colorterm, "24bit") != 0))
        return NULL;
    if (terminfo_is_direct(term))
        return NULL;
    size_t base = strcspn(term, "-");
    buf sibling = BUF_INIT;
    buf_appendf(&sibling, "%.*s-direct", (int)base, term);
    if (terminfo_is_direct(sibling.data))
        return buf_detach(&sibling);
    buf_free(&sibling);
    return NULL;
}

