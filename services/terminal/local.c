/* local: terminals on the loop.
 *
 * Each terminal has a thread that reads its pseudo-terminal's master side
 * while its backlog has room (see pty_reader), a poll handle on the master
 * side (writable while input waits) and a
 * timer (the end of a flood's batch, or, after its program exited, the wait
 * for the last output). The service has one check handle, which interprets
 * the backlogs of the terminals that are ready after each poll of the loop,
 * an idle handle that keeps the loop from sleeping while a backlog is left
 * over for the next turn, a SIGCHLD handler that reaps its own children,
 * and a timer for the sessions it is ending (see interface.h).
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "utf.h"

extern char **environ;

/* Below this, output is interpreted in the turn that read it. */
#define QUIET_BYTES ((size_t)16 << 10)
/* What a reader thread may hold for the loop before it waits for the loop
 * to take it. */
#define READER_INBOX_MAX ((size_t)256 << 10)
#define READ_CHUNK ((size_t)64 << 10)
/* After the program exited, how long to wait for the end of its output
 * when another process keeps the terminal open. */
#define EXIT_DRAIN_MS 50
/* How many of those waits a reader that still has output gets: its thread
 * may be slow to run on a busy machine, but a program whose heir never stops
 * writing must not hold its exit back forever. */
#define EXIT_DRAIN_WAITS_MAX 20

typedef struct terminal terminal;

/* Reading a pseudo-terminal's master side costs a wait for the kernel's
 * line discipline worker on every read that finds its 4 KiB buffer empty:
 * tens of milliseconds for each burst of a flood on a busy machine. So a
 * thread of the terminal's own reads it, and the loop only takes what it
 * read (on_reader_async). The thread reads while the loop lets it (reading)
 * and its inbox has room; it ends at end of file or when told to stop. */
typedef struct pty_reader {
    uv_thread_t thread;
    bool started;
    int master;
    int wake[2];        /* a byte in wake[1] interrupts the thread's poll */
    uv_mutex_t lock;
    uv_cond_t cond;
    /* under lock: */
    buf inbox;          /* read, not taken by the loop yet */
    bool reading;       /* the loop wants more */
    bool stop;
    bool eof;           /* end of file (or an error): the thread has ended */
    bool drained;       /* the terminal had nothing more when the inbox was last added to */
} pty_reader;

/* Handles outlive what they belong to until libuv closes them. */
typedef struct term_handles {
    uv_poll_t poll;
    uv_timer_t timer;
    uv_async_t async;   /* the reader thread read something */
    int open;
    pty_reader reader;
} term_handles;

typedef struct svc_handles {
    uv_signal_t sigchld;
    uv_check_t check;
    uv_idle_t idle;
    uv_timer_t reap;
    int open;
} svc_handles;

struct terminal {
    terminal_service *svc;
    terminal *next;
    char *id, *shell, *cwd, *title;
    pid_t pid;
    dev_t tty;        /* the slave side's device: who still has it open is the terminal's */
    int master;
    term_handles *h;
    int poll_events;
    term__screen *screen;
    buf backlog;      /* read from the terminal */
    size_t fed;       /* bytes of backlog given to the screen */
    size_t emitted;   /* bytes of backlog reported as output */
    buf input;        /* for the program */
    size_t input_sent;
    bool paused;      /* backlog full: not reading */
    bool eof;         /* no process has the terminal open any more */
    bool running;
    int exit_code;
    bool exit_reported;
    bool drain_expired;
    unsigned drain_waits; /* EXIT_DRAIN_MS waits for output the reader had not taken yet */
    bool ready;       /* interpret in this turn's check */
    bool batching;    /* the timer ends a batch */
    bool title_changed;
    bool closed;
    unsigned busy;    /* inside a step that emits */
};

/* A session being ended after its terminal closed. */
typedef struct dying {
    pid_t sid;
    dev_t tty;
    int master;       /* kept open until the session has ended, so that tty cannot name another terminal */
    pid_t child;      /* the leader, until reaped (0 then) */
    bool reaped;      /* the leader was reaped (by us, now or before the terminal closed) */
    uint64_t deadline;
    bool killed;
    struct dying *next;
} dying;

struct terminal_service {
    uv_loop_t *loop;
    ecp_logger *log;
    char *shell, *cwd;
    terminal *terminals; /* creation order */
    size_t count;
    unsigned long next_number;
    ecp_listeners listeners;
    svc_handles *h;
    bool idle_on;
    dying *dying;
    unsigned holds;      /* listeners holding output: no terminal is read or reported */
};

static void update_poll(terminal *t);
static void mark_ready(terminal *t);
static void on_reap_timer(uv_timer_t *timer);

/* ----- lookups ------------------------------------------------------------------------ */

static terminal *find(const terminal_service *self, const char *id)
{
    for (terminal *t = self->terminals; t; t = t->next)
        if (!strcmp(t->id, id))
            return t;
    return NULL;
}

static int not_found(ecp_error *err, const char *id)
{
    return ecp_error_set(err, ECP_ENOTFOUND, "Terminal not found: %s", id);
}

static uint64_t now_ms(void) { return uv_hrtime() / 1000000; }

/* ----- ending sessions ------------------------------------------------------------------ */

static void reap_timer_update(terminal_service *self)
{
    uint64_t next = UINT64_MAX;
    for (dying *d = self->dying; d; d = d->next)
        if (!d->killed && d->deadline < next)
            next = d->deadline;
    if (next == UINT64_MAX) {
        uv_timer_stop(&self->h->reap);
        return;
    }
    uint64_t now = now_ms();
    uv_timer_start(&self->h->reap, on_reap_timer, next > now ? next - now : 0, 0);
}

static void dying_remove_done(terminal_service *self)
{
    for (dying **pp = &self->dying; *pp;) {
        dying *d = *pp;
        if (d->killed && !d->child) {
            *pp = d->next;
            close(d->master);
            free(d);
        } else {
            pp = &d->next;
        }
    }
}

static term__session session_of(const dying *d)
{
    return (term__session){.sid = d->sid, .tty = d->tty, .leader_reaped = d->reaped};
}

/* SIGKILL to what is left of a session, until nothing is. */
static void kill_session(const dying *d)
{
    term__session s = session_of(d);
    for (int pass = 0; pass < 5 && term__session_kill(&s, 1); pass++)
        ;
}

static void on_reap_timer(uv_timer_t *timer)
{
    terminal_service *self = timer->data;
    uint64_t now = now_ms();
    for (dying *d = self->dying; d; d = d->next)
        if (!d->killed && d->deadline <= now) {
            kill_session(d);
            d->killed = true;
        }
    dying_remove_done(self);
    reap_timer_update(self);
}

/* Starts ending a terminal's session: SIGHUP now, SIGKILL after the grace
 * period (on_reap_timer). The session keeps the terminal's master until then. */
static void session_end(terminal_service *self, pid_t sid, dev_t tty, bool child_running, int master)
{
    dying *d = xcalloc(1, sizeof *d);
    d->sid = sid;
    d->tty = tty;
    d->master = master;
    d->reaped = !child_running;
    term__session s = session_of(d);
    term__session_hangup(&s, 1);
    d->child = child_running ? sid : 0;
    d->deadline = now_ms() + TERMINAL_KILL_GRACE_MS;
    d->next = self->dying;
    self->dying = d;
    reap_timer_update(self);
}

/* ----- output ------------------------------------------------------------------------------ */

/* The end of the last whole UTF-8 sequence in [from, to), so that no
 * notification cuts a character in two. */
static size_t whole_utf8_end(const char *p, size_t from, size_t to)
{
    for (size_t back = 1; back <= 3 && to - back >= from && to >= back; back++) {
        unsigned char c = (unsigned char)p[to - back];
        if ((c & 0xC0) == 0x80)
            continue;
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return need > back ? to - back : to;
    }
    return to;
}

/* Reports fed bytes as output; all of them when final, else holding back a
 * sequence the next read completes. */
static void emit_output(terminal *t, bool final)
{
    terminal_service *self = t->svc;
    size_t limit = final ? t->fed : whole_utf8_end(t->backlog.data, t->emitted, t->fed);
    while (t->emitted < limit && !t->closed && !self->holds) {
        size_t end = limit;
        if (end - t->emitted > TERMINAL_OUTPUT_CHUNK) {
            end = whole_utf8_end(t->backlog.data, t->emitted, t->emitted + TERMINAL_OUTPUT_CHUNK);
            if (end == t->emitted)
                end = t->emitted + TERMINAL_OUTPUT_CHUNK;
        }
        const char *data = t->backlog.data + t->emitted;
        t->emitted = end;
        ECP_EMIT(&self->listeners, terminal_listener, on_output, t->id, data, (size_t)(t->backlog.data + end - data));
    }
}

static void emit_screen(terminal *t)
{
    unsigned *rows = xmalloc(term__screen_rows(t->screen) * sizeof *rows);
    size_t n = term__screen_take_damage(t->screen, rows);
    if (n)
        ECP_EMIT(&t->svc->listeners, terminal_listener, on_screen, t->id, rows, n);
    free(rows);
}

static void terminal_destroy(terminal *t);
static void on_idle(uv_idle_t *handle) { (void)handle; }

/* Interprets what the backlog holds, for at most the turn's budget, and
 * reports it. */
static void step(terminal *t)
{
    t->busy++;
    t->ready = false;
    if (t->fed < t->backlog.len) {
        uint64_t deadline = uv_hrtime() + (uint64_t)TERMINAL_TURN_BUDGET_MS * 1000000;
        t->fed += term__screen_feed(t->screen, t->backlog.data + t->fed, t->backlog.len - t->fed, deadline);
    }
    bool all_fed = t->fed == t->backlog.len;
    bool ending = !t->running && all_fed && (t->eof || t->drain_expired) && !t->exit_reported;
    emit_output(t, ending);
    if (t->emitted < t->fed)
        ending = false; /* held: the exit follows the rest of the output, on release */
    if (t->title_changed && !t->closed) {
        t->title_changed = false;
        ECP_EMIT(&t->svc->listeners, terminal_listener, on_title, t->id, t->title);
    }
    if (!t->closed)
        emit_screen(t);
    if (ending && !t->closed) {
        t->exit_reported = true;
        ECP_EMIT(&t->svc->listeners, terminal_listener, on_exit, t->id, t->exit_code);
    }
    if (!t->closed) {
        /* forget what is reported, keeping a held-back sequence */
        if (t->emitted == t->backlog.len) {
            buf_clear(&t->backlog);
            t->fed = t->emitted = 0;
        } else if (t->emitted && (t->emitted > t->backlog.len / 2 || t->backlog.len > TERMINAL_BACKLOG_MAX / 2)) {
            buf_consume(&t->backlog, t->emitted);
            t->fed -= t->emitted;
            t->emitted = 0;
        }
        if (t->backlog.cap > 2 * TERMINAL_BACKLOG_MAX && t->backlog.len < TERMINAL_BACKLOG_MAX / 4) {
            buf shrunk = BUF_INIT;
            buf_append(&shrunk, t->backlog.data, t->backlog.len);
            buf_free(&t->backlog);
            t->backlog = shrunk;
        }
        if (t->fed < t->backlog.len)
            t->ready = true; /* the rest next turn */
        if (t->paused && t->backlog.len < TERMINAL_BACKLOG_MAX / 2) {
            t->paused = false;
            update_poll(t);
        }
    }
    t->busy--;
    if (t->closed && !t->busy)
        terminal_destroy(t);
}

static void on_check(uv_check_t *handle)
{
    terminal_service *self = handle->data;
    /* a step may close any terminal: walk a copy of the ready ones */
    size_t n = 0;
    for (terminal *t = self->terminals; t; t = t->next)
        n += t->ready;
    if (!n) {
        if (self->idle_on) {
            uv_idle_stop(&self->h->idle);
            self->idle_on = false;
        }
        return;
    }
    terminal **ready = xmalloc(n * sizeof *ready);
    size_t k = 0;
    for (terminal *t = self->terminals; t && k < n; t = t->next)
        if (t->ready) {
            ready[k++] = t;
            t->busy++; /* keeps it allocated while others step */
        }
    for (size_t i = 0; i < k; i++) {
        terminal *t = ready[i];
        if (!t->closed && t->ready)
            step(t);
    }
    bool more = false;
    for (size_t i = 0; i < k; i++) {
        terminal *t = ready[i];
        t->busy--;
        if (t->closed && !t->busy)
            terminal_destroy(t);
        else
            more |= t->ready;
    }
    free(ready);
    if (more && !self->idle_on) {
        uv_idle_start(&self->h->idle, on_idle);
        self->idle_on = true;
    } else if (!more && self->idle_on) {
        uv_idle_stop(&self->h->idle);
        self->idle_on = false;
    }
}

static void mark_ready(terminal *t)
{
    terminal_service *self = t->svc;
    t->ready = true;
    if (t->batching) {
        uv_timer_stop(&t->h->timer);
        t->batching = false;
    }
    /* marked outside the poll phase (a timer, a signal): the loop must not
     * sleep before the check runs */
    if (!self->idle_on) {
        uv_idle_start(&self->h->idle, on_idle);
        self->idle_on = true;
    }
}

static bool reader_has_more(terminal *t);

static void on_timer(uv_timer_t *timer)
{
    terminal *t = timer->data;
    if (t->batching) {
        t->batching = false;
        mark_ready(t);
    } else if (!t->running) {
        if (reader_has_more(t) && ++t->drain_waits < EXIT_DRAIN_WAITS_MAX) {
            uv_timer_start(&t->h->timer, on_timer, EXIT_DRAIN_MS, 0);
            return;
        }
        t->drain_expired = true;
        mark_ready(t);
    }
}

/* ----- reading and writing the terminal ---------------------------------------------------- */

static void reader_wake(pty_reader *r)
{
    char byte = 1;
    ssize_t n;
    do
        n = write(r->wake[1], &byte, 1);
    while (n < 0 && errno == EINTR); /* full (EAGAIN): it is awake already */
}

static void reader_thread(void *arg)
{
    term_handles *h = arg;
    pty_reader *r = &h->reader;
    char *chunk = xmalloc(READ_CHUNK);
    for (;;) {
        uv_mutex_lock(&r->lock);
        while (!r->stop && (!r->reading || r->inbox.len >= READER_INBOX_MAX))
            uv_cond_wait(&r->cond, &r->lock);
        bool stop = r->stop;
        uv_mutex_unlock(&r->lock);
        if (stop)
            break;
        struct pollfd fds[2] = {{.fd = r->master, .events = POLLIN}, {.fd = r->wake[0], .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            uv_mutex_lock(&r->lock);
            r->eof = true; /* nothing more can be read: as for a terminal nobody has open */
            uv_mutex_unlock(&r->lock);
            uv_async_send(&h->async);
            break;
        }
        if (fds[1].revents & POLLIN) {
            char drain[64];
            while (read(r->wake[0], drain, sizeof drain) > 0) {
            }
            continue; /* look at stop and reading again */
        }
        if (!fds[0].revents)
            continue;
        ssize_t n = read(r->master, chunk, READ_CHUNK);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        /* A flood is handed over a chunk at a time; a pause in it at once. */
        struct pollfd more = {.fd = r->master, .events = POLLIN};
        bool drained = n > 0 && poll(&more, 1, 0) == 0;
        uv_mutex_lock(&r->lock);
        if (n > 0)
            buf_append(&r->inbox, chunk, (size_t)n);
        else
            r->eof = true; /* EIO: every process closed the terminal */
        r->drained = drained;
        bool tell = n <= 0 || drained || r->inbox.len >= READ_CHUNK;
        uv_mutex_unlock(&r->lock);
        if (tell)
            uv_async_send(&h->async);
        if (n <= 0)
            break;
    }
    free(chunk);
}

static int reader_start(term_handles *h, int master)
{
    pty_reader *r = &h->reader;
    r->master = master;
    if (pipe(r->wake) < 0)
        return -errno;
    fcntl(r->wake[0], F_SETFL, fcntl(r->wake[0], F_GETFL) | O_NONBLOCK);
    fcntl(r->wake[1], F_SETFL, fcntl(r->wake[1], F_GETFL) | O_NONBLOCK);
    uv_mutex_init(&r->lock);
    uv_cond_init(&r->cond);
    int rc = uv_thread_create(&r->thread, reader_thread, h);
    if (rc < 0) {
        uv_cond_destroy(&r->cond);
        uv_mutex_destroy(&r->lock);
        close(r->wake[0]);
        close(r->wake[1]);
        return rc;
    }
    r->started = true;
    return 0;
}

/* Ends the thread before its master side can be closed. */
static void reader_stop(pty_reader *r)
{
    if (!r->started)
        return;
    uv_mutex_lock(&r->lock);
    r->stop = true;
    uv_cond_signal(&r->cond);
    uv_mutex_unlock(&r->lock);
    reader_wake(r);
    uv_thread_join(&r->thread);
    r->started = false;
    uv_cond_destroy(&r->cond);
    uv_mutex_destroy(&r->lock);
    close(r->wake[0]);
    close(r->wake[1]);
    buf_free(&r->inbox);
}

/* Whether output the program wrote before it ended may still come: the
 * reader holds some the loop has not taken, or the terminal has some the
 * reader has not read (or its end, which the reader reports). */
static bool reader_has_more(terminal *t)
{
    pty_reader *r = &t->h->reader;
    uv_mutex_lock(&r->lock);
    bool more = r->inbox.len > 0, eof = r->eof;
    uv_mutex_unlock(&r->lock);
    if (more || eof || t->eof)
        return more;
    struct pollfd p = {.fd = t->master, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

/* Tells the thread whether to read. */
static void reader_set_reading(terminal *t, bool reading)
{
    pty_reader *r = &t->h->reader;
    uv_mutex_lock(&r->lock);
    bool changed = r->reading != reading;
    r->reading = reading;
    if (changed && reading)
        uv_cond_signal(&r->cond);
    uv_mutex_unlock(&r->lock);
}

/* Takes what the thread read into the backlog, and decides when to
 * interpret it. */
static void read_some(terminal *t)
{
    pty_reader *r = &t->h->reader;
    uv_mutex_lock(&r->lock);
    bool had_room = r->inbox.len < READER_INBOX_MAX;
    size_t got = r->inbox.len;
    if (got) {
        buf_append(&t->backlog, r->inbox.data, got);
        buf_clear(&r->inbox);
        if (r->inbox.cap > 2 * READER_INBOX_MAX)
            buf_free(&r->inbox);
    }
    if (r->eof)
        t->eof = true;
    bool drained = r->drained;
    if (!had_room)
        uv_cond_signal(&r->cond); /* room again */
    uv_mutex_unlock(&r->lock);
    if (t->backlog.len >= TERMINAL_BACKLOG_MAX && !t->paused) {
        t->paused = true;
        update_poll(t);
    }
    size_t pending = t->backlog.len - t->fed;
    if (!pending && !t->eof)
        return;
    if (t->eof || !t->running || t->paused || (drained && pending <= QUIET_BYTES && !t->batching)) {
        mark_ready(t);
    } else if (!t->batching && !t->ready) {
        t->batching = true;
        uv_timer_start(&t->h->timer, on_timer, TERMINAL_BATCH_MS, 0);
    }
}

static void flush_input(terminal *t)
{
    while (t->input_sent < t->input.len) {
        ssize_t n = write(t->master, t->input.data + t->input_sent, t->input.len - t->input_sent);
        if (n > 0) {
            t->input_sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        t->input_sent = t->input.len; /* nobody reads it any more */
    }
    buf_clear(&t->input);
    t->input_sent = 0;
}

static void on_poll(uv_poll_t *handle, int status, int events)
{
    terminal *t = handle->data;
    if (status < 0) {
        ecp_log(t->svc->log, ECP_LOG_WARN, "terminal %s: %s", t->id, uv_strerror(status));
        t->eof = true;
        mark_ready(t);
    } else {
        if (events & UV_WRITABLE)
            flush_input(t);
    }
    update_poll(t);
}

static void on_reader_async(uv_async_t *handle)
{
    read_some(handle->data); /* a closed handle is not called back */
}

static void update_poll(terminal *t)
{
    if (t->closed)
        return;
    reader_set_reading(t, !t->eof && !t->paused && !t->svc->holds);
    int events = 0;
    if (!t->eof && t->input_sent < t->input.len)
        events |= UV_WRITABLE;
    if (events == t->poll_events)
        return;
    t->poll_events = events;
    if (events)
        uv_poll_start(&t->h->poll, events, on_poll);
    else
        uv_poll_stop(&t->h->poll);
}

static void queue_input(terminal *t, const char *data, size_t len)
{
    buf_append(&t->input, data, len);
    flush_input(t);
    update_poll(t);
}

/* ----- the screen's events ------------------------------------------------------------------ */

static void on_reply(void *ctx, const char *data, size_t len)
{
    terminal *t = ctx;
    if (t->input.len - t->input_sent + len <= TERMINAL_INPUT_MAX)
        queue_input(t, data, len);
}

static void on_title(void *ctx, const char *title)
{
    terminal *t = ctx;
    if (!strcmp(t->title, title))
        return;
    free(t->title);
    t->title = xstrdup(title);
    t->title_changed = true;
}

static const term__screen_events screen_events = {on_reply, on_title};

/* ----- children ------------------------------------------------------------------------------ */

static int exit_code_of(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return -1;
}

/* The program ended: report it once its last output is in. */
static void exited(terminal *t, int wstatus)
{
    t->running = false;
    t->exit_code = exit_code_of(wstatus);
    read_some(t);
    if (!t->eof)
        uv_timer_start(&t->h->timer, on_timer, EXIT_DRAIN_MS, 0);
    t->batching = false;
    mark_ready(t);
}

static void reap(terminal_service *self)
{
    for (terminal *t = self->terminals; t; t = t->next) {
        int wstatus;
        if (t->running && waitpid(t->pid, &wstatus, WNOHANG) == t->pid)
            exited(t, wstatus);
    }
    bool changed = false;
    for (dying *d = self->dying; d; d = d->next) {
        int wstatus;
        if (d->child && waitpid(d->child, &wstatus, WNOHANG) == d->child) {
            d->child = 0;
            d->reaped = true;
            changed = true;
        }
    }
    if (changed)
        dying_remove_done(self);
}

static void on_sigchld(uv_signal_t *handle, int signum)
{
    (void)signum;
    reap(handle->data);
}

/* ----- creating and closing ---------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *handle)
{
    term_handles *h = handle->data;
    if (--h->open == 0)
        free(h);
}

static void terminal_destroy(terminal *t)
{
    term__screen_free(t->screen);
    buf_free(&t->backlog);
    buf_free(&t->input);
    free_each(t->id, t->shell, t->cwd, t->title, t);
}

/* Unlinks t, ends its session and releases it (at once, or when the step
 * that emits for it returns). */
static void terminal_close_one(terminal_service *self, terminal *t)
{
    for (terminal **pp = &self->terminals; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    self->count--;
    t->closed = true;
    t->ready = false;
    /* the handles go first: the fd must not be closed under an active poll */
    reader_stop(&t->h->reader);
    t->h->poll.data = t->h;
    t->h->timer.data = t->h;
    t->h->async.data = t->h;
    uv_close((uv_handle_t *)&t->h->poll, on_handle_closed);
    uv_close((uv_handle_t *)&t->h->timer, on_handle_closed);
    uv_close((uv_handle_t *)&t->h->async, on_handle_closed);
    session_end(self, t->pid, t->tty, t->running, t->master);
    t->master = -1;
    if (!t->busy)
        terminal_destroy(t);
}

static bool is_directory(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* environ, then TERM and COLORTERM, then the caller's variables; a later
 * value of a name replaces an earlier one. */
static char **build_env(const terminal_create_options *o)
{
    size_t base = 0;
    while (environ && environ[base])
        base++;
    size_t cap = base + 3 + o->env_count;
    char **env = xcalloc(cap, sizeof *env);
    size_t n = 0;
    const char *extra[2] = {"TERM=xterm-256color", "COLORTERM=truecolor"};
    for (size_t i = 0; i < base + 2 + o->env_count; i++) {
        const char *v = i < base ? environ[i] : i < base + 2 ? extra[i - base] : o->env[i - base - 2];
        const char *eq = strchr(v, '=');
        size_t name_len = eq ? (size_t)(eq - v) : strlen(v);
        size_t k = 0;
        while (k < n && !(strncmp(env[k], v, name_len) == 0 && env[k][name_len] == '='))
            k++;
        if (k < n) {
            free(env[k]);
            env[k] = xstrdup(v);
        } else {
            env[n++] = xstrdup(v);
        }
    }
    env[n] = NULL;
    return env;
}

static bool wants_login_flags(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return !strcmp(base, "bash") || !strcmp(base, "zsh") || !strcmp(base, "sh");
}

int terminal_create(terminal_service *self, const terminal_create_options *o, char **id_out, ecp_error *err)
{
    terminal_create_options none = {0};
    if (!o)
        o = &none;
    unsigned cols = o->cols ? o->cols : TERMINAL_DEFAULT_COLS;
    unsigned rows = o->rows ? o->rows : TERMINAL_DEFAULT_ROWS;
    if (cols > TERMINAL_MAX_COLS || rows > TERMINAL_MAX_ROWS)
        return ecp_error_set(err, ECP_ERANGE, "Invalid dimensions %ux%u: cols must be 1..%d and rows 1..%d", cols,
                             rows, TERMINAL_MAX_COLS, TERMINAL_MAX_ROWS);
    if (o->scrollback > TERMINAL_SCROLLBACK_MAX_LINES)
        return ecp_error_set(err, ECP_ERANGE, "scrollback: at most %d lines", TERMINAL_SCROLLBACK_MAX_LINES);
    if (self->count >= TERMINAL_MAX_COUNT)
        return ecp_error_set(err, ECP_ETOOBIG, "Too many terminals: at most %d may be open", TERMINAL_MAX_COUNT);

    int status = 0;
    buf path = BUF_INIT;
    char *cwd = NULL;
    char **env = NULL;
    if ((status = term__resolve_program(o->shell ? o->shell : terminal_service_shell(self), &path, err)))
        goto done;
    if (o->cwd) {
        struct stat st;
        if (stat(o->cwd, &st) < 0) {
            status = ecp_error_set(err, errno == ENOENT || errno == ENOTDIR ? ECP_ENOTFOUND : ECP_EACCES,
                                   "Working directory %s: %s", o->cwd, strerror(errno));
            goto done;
        }
        if (!S_ISDIR(st.st_mode)) {
            status = ecp_error_set(err, ECP_ENOTFOUND, "Working directory %s: not a directory", o->cwd);
            goto done;
        }
        cwd = xstrdup(o->cwd);
    } else if (is_directory(self->cwd)) {
        cwd = xstrdup(self->cwd);
    } else {
        cwd = getcwd(NULL, 0);
        if (!cwd)
            cwd = xstrdup("/");
    }
    env = build_env(o);
    char *argv[3] = {path.data, wants_login_flags(path.data) ? "-il" : NULL, NULL};
    term__spawn spec = {path.data, argv, env, cwd, cols, rows};
    int master;
    pid_t pid;
    dev_t tty;
    if ((status = term__spawn_start(&spec, &master, &pid, &tty, err)))
        goto done;

    terminal *t = xcalloc(1, sizeof *t);
    t->svc = self;
    t->shell = buf_detach(&path);
    t->cwd = cwd;
    cwd = NULL;
    t->title = xstrdup(t->shell);
    t->pid = pid;
    t->tty = tty;
    t->master = master;
    t->running = true;
    char id[64];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id, sizeof id, "terminal-%lu-%lld", ++self->next_number,
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    t->id = xstrdup(id);
    t->screen = term__screen_new(rows, cols, o->scrollback, &screen_events, t);
    t->h = xcalloc(1, sizeof *t->h);
    uv_timer_init(self->loop, &t->h->timer);
    t->h->timer.data = t;
    uv_async_init(self->loop, &t->h->async, on_reader_async);
    t->h->async.data = t;
    t->h->open = 3;
    int rc = uv_poll_init(self->loop, &t->h->poll, master);
    t->h->poll.data = t;
    bool polling = rc == 0;
    if (polling)
        rc = reader_start(t->h, master);
    if (rc < 0) {
        /* a poll handle that failed to start is not a handle: it does not close */
        t->h->open = polling ? 3 : 2;
        t->h->timer.data = t->h;
        t->h->async.data = t->h;
        t->h->poll.data = t->h;
        if (polling)
            uv_close((uv_handle_t *)&t->h->poll, on_handle_closed);
        uv_close((uv_handle_t *)&t->h->timer, on_handle_closed);
        uv_close((uv_handle_t *)&t->h->async, on_handle_closed);
        close(master);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        terminal_destroy(t);
        status = ecp_error_set(err, ECP_EIO, "Cannot watch the pseudo-terminal: %s", uv_strerror(rc));
        goto done;
    }
    /* last in the list: creation order */
    terminal **tail = &self->terminals;
    while (*tail)
        tail = &(*tail)->next;
    *tail = t;
    self->count++;
    update_poll(t);
    /* a program that ended at once was reaped by nobody yet */
    int wstatus;
    if (waitpid(pid, &wstatus, WNOHANG) == pid)
        exited(t, wstatus);
    *id_out = xstrdup(t->id);

done:
    buf_free(&path);
    free(cwd);
    free_strv(env);
    return status;
}

int terminal_close(terminal_service *self, const char *id)
{
    terminal *t = find(self, id);
    if (!t)
        return ECP_ENOTFOUND;
    terminal_close_one(self, t);
    return 0;
}

void terminal_close_all(terminal_service *self)
{
    while (self->terminals)
        terminal_close_one(self, self->terminals);
}

/* ----- using a terminal ---------------------------------------------------------------------- */

int terminal_write(terminal_service *self, const char *id, const char *data, size_t len, ecp_error *err)
{
    terminal *t = find(self, id);
    if (!t)
        return not_found(err, id);
    if (!t->running)
        return ecp_error_set(err, ECP_ESTATE, "Terminal %s is not running: its program exited with %d", id,
                             t->exit_code);
    if (t->input.len - t->input_sent + len > TERMINAL_INPUT_MAX)
        return ecp_error_set(err, ECP_ETOOBIG,
                             "Terminal %s: its program is not reading its input (%zu bytes are waiting)", id,
                             t->input.len - t->input_sent);
    queue_input(t, data, len);
    return 0;
}

int terminal_resize(terminal_service *self, const char *id, unsigned cols, unsigned rows, ecp_error *err)
{
    terminal *t = find(self, id);
    if (!t)
        return not_found(err, id);
    if (!cols || !rows || cols > TERMINAL_MAX_COLS || rows > TERMINAL_MAX_ROWS)
        return ecp_error_set(err, ECP_ERANGE, "Invalid dimensions %ux%u: cols must be 1..%d and rows 1..%d", cols,
                             rows, TERMINAL_MAX_COLS, TERMINAL_MAX_ROWS);
    term__screen_resize(t->screen, rows, cols);
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    ioctl(t->master, TIOCSWINSZ, &ws); /* the kernel tells the foreground job (SIGWINCH) */
    mark_ready(t);                     /* reports the repainted rows */
    return 0;
}

int terminal_scroll(terminal_service *self, const char *id, long lines, ecp_error *err)
{
    terminal *t = find(self, id);
    if (!t)
        return not_found(err, id);
    if (term__screen_scroll(t->screen, lines))
        mark_ready(t);
    return 0;
}

int terminal_scroll_to_bottom(terminal_service *self, const char *id, ecp_error *err)
{
    terminal *t = find(self, id);
    if (!t)
        return not_found(err, id);
    size_t offset = term__screen_scroll_offset(t->screen);
    if (offset && term__screen_scroll(t->screen, -(long)offset))
        mark_ready(t);
    return 0;
}

static void info_of(const terminal *t, terminal_info *out)
{
    *out = (terminal_info){
        .id = t->id, .shell = t->shell, .cwd = t->cwd, .title = t->title, .cols = term__screen_cols(t->screen),
        .rows = term__screen_rows(t->screen), .running = t->running, .exit_code = t->running ? 0 : t->exit_code,
        .pid = (int)t->pid,
    };
}

int terminal_get_info(const terminal_service *self, const char *id, terminal_info *out)
{
    const terminal *t = find(self, id);
    if (!t)
        return ECP_ENOTFOUND;
    info_of(t, out);
    return 0;
}

void terminal_list(const terminal_service *self, terminal_info **out, size_t *count)
{
    *count = self->count;
    *out = self->count ? xcalloc(self->count, sizeof **out) : NULL;
    size_t i = 0;
    for (const terminal *t = self->terminals; t; t = t->next)
        info_of(t, &(*out)[i++]);
}

int terminal_get_viewport(const terminal_service *self, const char *id, terminal_viewport *out)
{
    memset(out, 0, sizeof *out);
    const terminal *t = find(self, id);
    if (!t)
        return ECP_ENOTFOUND;
    out->rows = term__screen_rows(t->screen);
    out->cols = term__screen_cols(t->screen);
    out->cells = xmalloc((size_t)out->rows * out->cols * sizeof *out->cells);
    for (unsigned r = 0; r < out->rows; r++)
        term__screen_row(t->screen, r, out->cells + (size_t)r * out->cols);
    term__screen_cursor(t->screen, &out->cursor_row, &out->cursor_col);
    out->scroll_offset = term__screen_scroll_offset(t->screen);
    out->scrollback_size = term__screen_scrollback_size(t->screen);
    return 0;
}

void terminal_viewport_free(terminal_viewport *viewport)
{
    free(viewport->cells);
    viewport->cells = NULL;
}

size_t term__buffered(const terminal_service *self)
{
    size_t n = 0;
    for (const terminal *t = self->terminals; t; t = t->next)
        n += t->backlog.len + t->input.len;
    return n;
}

/* ----- listeners ---------------------------------------------------------------------------- */

void terminal_service_hold_output(terminal_service *self)
{
    if (self->holds++)
        return;
    for (terminal *t = self->terminals; t; t = t->next)
        update_poll(t);
}

void terminal_service_release_output(terminal_service *self)
{
    if (!self->holds || --self->holds)
        return;
    /* Report what was held back, then read again: each terminal's step does
     * the first and update_poll the second. */
    for (terminal *t = self->terminals; t; t = t->next) {
        if (t->closed)
            continue;
        update_poll(t);
        mark_ready(t);
    }
}

bool terminal_service_output_held(const terminal_service *self) { return self->holds > 0; }

void terminal_subscribe(terminal_service *self, const terminal_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

bool terminal_unsubscribe(terminal_service *self, const terminal_listener *listener, void *ctx)
{
    return ecp_listeners_remove(&self->listeners, listener, ctx);
}

/* ----- the service ----------------------------------------------------------------------------- */

terminal_service *terminal_service_new(uv_loop_t *loop, ecp_logger *log, const terminal_service_options *options)
{
    terminal_service *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->log = log;
    if (options && options->shell)
        self->shell = xstrdup(options->shell);
    if (options && options->cwd)
        self->cwd = xstrdup(options->cwd);
    svc_handles *h = xcalloc(1, sizeof *h);
    self->h = h;
    if (uv_signal_init(loop, &h->sigchld) < 0) {
        free_each(h, self->shell, self->cwd, self);
        return NULL;
    }
    uv_check_init(loop, &h->check);
    uv_idle_init(loop, &h->idle);
    uv_timer_init(loop, &h->reap);
    h->open = 4;
    h->sigchld.data = h->check.data = h->idle.data = h->reap.data = self;
    uv_signal_start(&h->sigchld, on_sigchld, SIGCHLD);
    uv_check_start(&h->check, on_check);
    /* waiting for children keeps the loop alive only through the terminals'
     * own handles; ending a session (the reap timer) is work of its own */
    uv_unref((uv_handle_t *)&h->sigchld);
    uv_unref((uv_handle_t *)&h->check);
    return self;
}

static void on_service_handle_closed(uv_handle_t *handle)
{
    svc_handles *h = handle->data;
    if (--h->open == 0)
        free(h);
}

static size_t session_left(const term__session *sessions, size_t n)
{
    term__member *members;
    size_t count;
    term__session_members(sessions, n, &members, &count);
    free(members);
    return count;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

void terminal_service_free(terminal_service *self)
{
    if (!self)
        return;
    terminal_close_all(self);
    /* Every session got its SIGHUP; give them the grace period here, since
     * nothing runs the loop for them afterwards. */
    size_t n = 0;
    for (dying *d = self->dying; d; d = d->next)
        n++;
    term__session *sessions = xcalloc(n ? n : 1, sizeof *sessions);
    uint64_t deadline = now_ms() + TERMINAL_KILL_GRACE_MS;
    /* each look reads every process's descriptors: not too often */
    while (n && now_ms() < deadline) {
        reap(self); /* may end some: count again */
        size_t left = 0;
        for (dying *d = self->dying; d; d = d->next)
            sessions[left++] = session_of(d);
        if (!left || !session_left(sessions, left))
            break;
        sleep_ms(10);
    }
    for (dying *d = self->dying; d; d = d->next)
        kill_session(d);
    /* the leaders are our children: wait for them, a little */
    uint64_t give_up = now_ms() + 1000;
    for (;;) {
        bool waiting = false;
        for (dying *d = self->dying; d; d = d->next) {
            int wstatus;
            if (d->child && waitpid(d->child, &wstatus, WNOHANG) != 0)
                d->child = 0;
            waiting |= d->child != 0;
        }
        if (!waiting || now_ms() >= give_up)
            break;
        sleep_ms(1);
    }
    for (dying *d = self->dying; d; d = d->next)
        if (d->child)
            ecp_log(self->log, ECP_LOG_WARN, "terminal: process %d did not end after SIGKILL", (int)d->child);
    while (self->dying) {
        dying *d = self->dying;
        self->dying = d->next;
        close(d->master);
        free(d);
    }
    free(sessions);
    svc_handles *h = self->h;
    h->sigchld.data = h->check.data = h->idle.data = h->reap.data = h;
    uv_close((uv_handle_t *)&h->sigchld, on_service_handle_closed);
    uv_close((uv_handle_t *)&h->check, on_service_handle_closed);
    uv_close((uv_handle_t *)&h->idle, on_service_handle_closed);
    uv_close((uv_handle_t *)&h->reap, on_service_handle_closed);
    ecp_listeners_free(&self->listeners);
    free_each(self->shell, self->cwd, self);
}

void terminal_service_set_shell(terminal_service *self, const char *shell)
{
    free(self->shell);
    self->shell = shell ? xstrdup(shell) : NULL;
}

const char *terminal_service_shell(const terminal_service *self)
{
    if (self->shell && self->shell[0])
        return self->shell;
    const char *env = getenv("SHELL");
    if (env && env[0])
        return env;
    return "/bin/sh";
}
