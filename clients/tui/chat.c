/* The agent chat pane: a prompt line, the answer as chat/contentReceived
 * streams it, and the tool calls the agent makes, each shown with what became
 * of it; one that waits for approval takes y (approve) or n (reject), and
 * Escape stops a running turn (chat/promptStop). The chat lives in the
 * server: this pane shows one chat's turns since it was opened here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "arena.h"

static chat_entry *add_entry(chat_pane *c, chat_role role, const char *text)
{
    c->entries = xrealloc(c->entries, (size_t)(c->entry_count + 1) * sizeof *c->entries);
    chat_entry *e = &c->entries[c->entry_count++];
    *e = (chat_entry){.role = role, .text = BUF_INIT};
    if (text)
        buf_append_str(&e->text, text);
    c->scroll = 0; /* something new: show the end */
    return e;
}

static chat_entry *tool_entry(chat_pane *c, const char *id)
{
    for (int i = c->entry_count - 1; id && i >= 0; i--)
        if (c->entries[i].role == CHAT_TOOL && c->entries[i].tool_id && strcmp(c->entries[i].tool_id, id) == 0)
            return &c->entries[i];
    return NULL;
}

static void set_status(chat_entry *e, const char *status)
{
    free(e->status);
    e->status = xstrdup(status);
}

static void clear_waiting(chat_pane *c)
{
    free(c->waiting_id);
    free(c->waiting_label);
    c->waiting_id = c->waiting_label = NULL;
}

void chat_free(app *a)
{
    chat_pane *c = &a->chat;
    for (int i = 0; i < c->entry_count; i++) {
        buf_free(&c->entries[i].text);
        free(c->entries[i].tool_id);
        free(c->entries[i].status);
    }
    free(c->entries);
    c->entries = NULL;
    c->entry_count = 0;
    free(c->chat_id);
    free(c->model);
    c->chat_id = c->model = NULL;
    clear_waiting(c);
    buf_free(&c->input);
}

void chat_layout(app *a)
{
    int rows = a->rows * 2 / 5;
    if (rows < 4)
        rows = 4;
    int room = a->rows - 3 - (a->term.visible ? a->term.rows + 1 : 0);
    if (rows > room)
        rows = room > 2 ? room : 2;
    a->chat.rows = rows;
}

static void editor_height_changed(app *a)
{
    for (int i = 0; i < a->tab_count; i++)
        tab_request_viewport(a, a->tabs[i]);
    a->need_paint = true;
}

void chat_toggle(app *a)
{
    chat_pane *c = &a->chat;
    if (!c->visible) {
        c->visible = c->focused = true;
        chat_layout(a);
        editor_height_changed(a);
    } else {
        c->focused = !c->focused;
    }
    if (c->focused)
        a->term.focused = false;
    a->need_paint = true;
}

void chat_hide(app *a)
{
    a->chat.visible = a->chat.focused = false;
    editor_height_changed(a);
}

static void on_prompted(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    chat_pane *c = &a->chat;
    c->prompting = false;
    a->need_paint = true;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        add_entry(c, CHAT_SYSTEM, msg ? msg : "the prompt failed");
        free(msg);
        c->running = false;
        return;
    }
    char *id = json_dup_string(doc, json_get(doc, result, "chatId"));
    if (id) {
        free(c->chat_id);
        c->chat_id = id;
    }
    char *model = json_dup_string(doc, json_get(doc, result, "model"));
    if (model) {
        free(c->model);
        c->model = model;
    }
}

static void send_prompt(app *a)
{
    chat_pane *c = &a->chat;
    if (!c->input.len)
        return;
    if (c->running || c->prompting) {
        app_message(a, true, "The agent is still answering: Escape stops it");
        return;
    }
    add_entry(c, CHAT_USER, c->input.data);
    bool sent = c->chat_id ? app_call(a, "chat/prompt", on_prompted, 0, "{\"chatId\":%J,\"message\":%N}", c->chat_id,
                                      c->input.data, c->input.len)
                           : app_call(a, "chat/prompt", on_prompted, 0, "{\"message\":%N}", c->input.data, c->input.len);
    if (!sent) {
        add_entry(c, CHAT_SYSTEM, "The server is not running");
        return;
    }
    c->prompting = c->running = true;
    buf_clear(&c->input);
}

static void answer_tool_call(app *a, bool approve)
{
    chat_pane *c = &a->chat;
    if (!c->waiting_id || !c->chat_id)
        return;
    app_call(a, approve ? "chat/toolCallApprove" : "chat/toolCallReject", NULL, 0, "{\"chatId\":%J,\"toolCallId\":%J}",
             c->chat_id, c->waiting_id);
    chat_entry *e = tool_entry(c, c->waiting_id);
    if (e)
        set_status(e, approve ? "approved" : "rejecting");
    clear_waiting(c);
}

void chat_stop(app *a)
{
    chat_pane *c = &a->chat;
    if (!c->chat_id || !c->running) {
        app_message(a, false, "The agent is not answering");
        return;
    }
    app_call(a, "chat/promptStop", NULL, 0, "{\"chatId\":%J}", c->chat_id);
}

void chat_key(app *a, const char *key, wint_t ch, bool printable)
{
    chat_pane *c = &a->chat;
    a->need_paint = true;
    if (key && (strcmp(key, "pageup") == 0 || strcmp(key, "pagedown") == 0)) {
        int page = c->rows > 4 ? c->rows - 3 : 1;
        c->scroll += key[4] == 'u' ? page : -page;
        if (c->scroll < 0)
            c->scroll = 0;
        return;
    }
    if (key && strcmp(key, "escape") == 0) {
        if (c->running)
            chat_stop(a);
        else
            c->focused = false;
        return;
    }
    if (c->waiting_id) {
        /* The question takes the keys that answer it and nothing else. */
        if (printable && (ch == 'y' || ch == 'Y' || ch == 'n' || ch == 'N'))
            answer_tool_call(a, ch == 'y' || ch == 'Y');
        return;
    }
    if (printable) {
        char utf8[8];
        mbstate_t st = {0};
        size_t n = wcrtomb(utf8, (wchar_t)ch, &st);
        if (n != (size_t)-1)
            buf_append(&c->input, utf8, n);
    } else if (key && strcmp(key, "backspace") == 0) {
        while (c->input.len > 0 && ((unsigned char)c->input.data[--c->input.len] & 0xC0) == 0x80) {
        }
        if (c->input.data)
            c->input.data[c->input.len] = 0;
    } else if (key && strcmp(key, "ctrl+u") == 0) {
        buf_clear(&c->input);
    } else if (key && strcmp(key, "enter") == 0) {
        send_prompt(a);
    }
}

/* ---- what the server streams ---- */

static void on_content(app *a, const json_doc *doc, json_ref params)
{
    chat_pane *c = &a->chat;
    json_ref content = json_get(doc, params, "content");
    json_ref type = json_get(doc, content, "type");
    a->need_paint = true;
    if (json_string_eq(doc, type, "text")) {
        char *text = json_dup_string(doc, json_get(doc, content, "text"));
        if (!text)
            return;
        if (json_string_eq(doc, json_get(doc, params, "role"), "system"))
            add_entry(c, CHAT_SYSTEM, text);
        else if (c->entry_count && c->entries[c->entry_count - 1].role == CHAT_ASSISTANT)
            buf_append_str(&c->entries[c->entry_count - 1].text, text), c->scroll = 0;
        else
            add_entry(c, CHAT_ASSISTANT, text);
        free(text);
    } else if (json_string_eq(doc, type, "progress")) {
        c->running = !json_string_eq(doc, json_get(doc, content, "state"), "finished");
        if (!c->running)
            clear_waiting(c);
    } else if (json_string_eq(doc, type, "toolCallRun")) {
        char *id = json_dup_string(doc, json_get(doc, content, "id"));
        char *name = json_dup_string(doc, json_get(doc, content, "name"));
        size_t len = 0;
        const char *args = json_raw(doc, json_get(doc, content, "arguments"), &len);
        buf label = BUF_INIT;
        buf_appendf(&label, "%s ", name ? name : "?");
        if (args)
            buf_append(&label, args, len);
        chat_entry *e = add_entry(c, CHAT_TOOL, label.data);
        e->tool_id = id;
        bool manual = false;
        json_bool(doc, json_get(doc, content, "manualApproval"), &manual);
        set_status(e, manual ? "waits for approval" : "running");
        if (manual) {
            clear_waiting(c);
            c->waiting_id = xstrdup(id ? id : "");
            c->waiting_label = buf_detach(&label);
        }
        buf_free(&label);
        free(name);
    } else if (json_string_eq(doc, type, "toolCallRunning") || json_string_eq(doc, type, "toolCalled") ||
               json_string_eq(doc, type, "toolCallRejected")) {
        char *id = json_dup_string(doc, json_get(doc, content, "id"));
        chat_entry *e = tool_entry(c, id);
        if (e && json_string_eq(doc, type, "toolCallRunning")) {
            set_status(e, "running");
        } else if (e && json_string_eq(doc, type, "toolCalled")) {
            bool failed = false;
            json_bool(doc, json_get(doc, content, "error"), &failed);
            char *out = json_dup_string(doc, json_get(doc, json_array_at(doc, json_get(doc, content, "outputs"), 0), "text"));
            buf status = BUF_INIT;
            buf_appendf(&status, "%s: %s", failed ? "failed" : "done", out ? out : "");
            set_status(e, status.data);
            buf_free(&status);
            free(out);
        } else if (e) {
            char *reason = json_dup_string(doc, json_get(doc, content, "reason"));
            buf status = BUF_INIT;
            buf_appendf(&status, "rejected%s%s", reason ? ": " : "", reason ? reason : "");
            set_status(e, status.data);
            buf_free(&status);
            free(reason);
        }
        if (c->waiting_id && id && strcmp(c->waiting_id, id) == 0)
            clear_waiting(c);
        free(id);
    }
}

void chat_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params)
{
    chat_pane *c = &a->chat;
    json_ref id = json_get(doc, params, "chatId");
    if (!c->chat_id && c->prompting) {
        /* The stream can start before the prompt's answer names the chat. */
        c->chat_id = json_dup_string(doc, id);
    }
    if (!c->chat_id || !json_string_eq(doc, id, c->chat_id))
        return; /* another client's chat */
    if (strcmp(method, "chat/contentReceived") == 0) {
        on_content(a, doc, params);
    } else if (strcmp(method, "chat/statusChanged") == 0) {
        c->running = json_string_eq(doc, json_get(doc, params, "status"), "running");
        a->need_paint = true;
    } else if (strcmp(method, "chat/deleted") == 0) {
        free(c->chat_id);
        c->chat_id = NULL;
        c->running = false;
        clear_waiting(c);
        add_entry(c, CHAT_SYSTEM, "The chat was deleted; the next prompt starts another");
        a->need_paint = true;
    }
}
