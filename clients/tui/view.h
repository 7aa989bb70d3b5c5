/* The view: the screen painted from the model, reading it only. ncurses sends
 * the terminal the cells that changed since the last paint. */
#ifndef ECP_TUI_VIEW_H
#define ECP_TUI_VIEW_H

#include "model.h"

/* paint.c */
void paint(app *a);
int color_index(app *a, int rgb);
int pair_of(app *a, int fg_rgb, int bg_rgb);

/* terminfo.c: a terminfo entry for the terminal that names direct colour, or NULL. */
char *direct_colour_terminal(void);

#endif
