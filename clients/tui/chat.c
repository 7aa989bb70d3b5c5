/* The agent chat pane: a prompt line, the answer as chat/contentReceived
 * streams it, and the tool calls the agent makes, each shown with what became
 * of it; one that waits for approval takes y (approve) or n (reject), and
 * Escape stops a running turn (chat/promptStop). The chat lives in the
 * server: the pane opens on the latest chat (chat/list, chat/open) with its
 * messages, and goes on with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "arena.h"

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

/* The stored messages of the latest chat, unless a prompt of this run came first. */
static void on_chat_opened(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    chat_pane *c = &a->chat;
    bool found = false;
    json_bool(doc, json_get(doc, result, "found"), &found);
    if (error != JSON_NO_REF || !found || c->chat_id || c->entry_count || c->prompting)
        return;
    c->chat_id = json_dup_string(doc, json_get(doc, result, "chatId"));
    char *model = json_dup_string(doc, json_get(doc, json_get(doc, result, "selection"), "model"));
    if (model) {
        free(c->model);
        c->model = model;
    }
    json_ref messages = json_get(doc, result, "messages");
    for (json_ref m = json_first(doc, messages); m != JSON_NO_REF; m = json_next(doc, m)) {
        json_ref role = json_get(doc, m, "role");
        char *text = json_dup_string(doc, json_get(doc, m, "text"));
        if (json_string_eq(doc, role, "user") && text)
            chat_add_entry(c, CHAT_USER, text);
        else if (json_string_eq(doc, role, "assistant") && text && *text)
            chat_add_entry(c, CHAT_ASSISTANT, text);
        else if (json_string_eq(doc, role, "system") && text)
            chat_add_entry(c, CHAT_SYSTEM, text);
        json_ref calls = json_get(doc, m, "toolCalls");
        for (json_ref call = json_first(doc, calls); call != JSON_NO_REF; call = json_next(doc, call)) {
            char *name = json_dup_string(doc, json_get(doc, call, "name"));
            chat_entry *e = chat_add_entry(c, CHAT_TOOL, name ? name : "a tool");
            e->tool_id = json_dup_string(doc, json_get(doc, call, "id"));
            e->status = xstrdup("done");
            free(name);
        }
        free(text);
    }
    a->need_paint = true;
}

static void on_chat_list(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    chat_pane *c = &a->chat;
    char *id = json_dup_string(doc, json_get(doc, json_first(doc, json_get(doc, result, "chats")), "id"));
    if (id && !c->chat_id && !c->entry_count && !c->prompting)
        app_call(a, "chat/open", on_chat_opened, 0, "{\"chatId\":%J}", id);
    free(id);
}

void chat_toggle(app *a)
{
    chat_pane *c = &a->chat;
    if (!c->visible && !c->chat_id && !c->entry_count)
        app_call(a, "chat/list", on_chat_list, 0, "{\"limit\":1}");
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
        chat_add_entry(c, CHAT_SYSTEM, msg ? msg : "the prompt failed");
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
    chat_add_entry(c, CHAT_USER, c->input.data);
    bool sent = c->chat_id ? app_call(a, "chat/prompt", on_prompted, 0, "{\"chatId\":%J,\"message\":%N}", c->chat_id,
                                      c->input.data, c->input.len)
                           : app_call(a, "chat/prompt", on_prompted, 0, "{\"message\":%N}", c->input.data, c->input.len);
    if (!sent) {
        chat_add_entry(c, CHAT_SYSTEM, "The server is not running");
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
    model_chat_tool_answered(c, approve);
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
        model_chat_content_arrived(a, doc, params);
    } else if (strcmp(method, "chat/statusChanged") == 0) {
        c->running = json_string_eq(doc, json_get(doc, params, "status"), "running");
        a->need_paint = true;
    } else if (strcmp(method, "chat/deleted") == 0) {
        free(c->chat_id);
        c->chat_id = NULL;
        c->running = false;
        chat_clear_waiting(c);
        chat_add_entry(c, CHAT_SYSTEM, "The chat was deleted; the next prompt starts another");
        a->need_paint = true;
    }
}
