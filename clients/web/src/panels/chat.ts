// The agent chat (right pane). The chat lives in the server: the pane opens
// the latest one (`chat/list`, `chat/open`) with its stored messages, sends
// prompts (`chat/prompt`) and shows the turn as `chat/contentReceived`
// streams it: text deltas appended, the model's reasoning folded, each tool
// call with its arguments and what became of it, and the calls that wait for
// approval with Approve / Reject. A system message (a failed model request)
// is shown as an error.
import type { App } from "../app";
import { applyThemeColors, button, errorText, h } from "./dom";

interface StoredMessage {
  role: string; text?: string; toolCalls?: { id: string; name: string; arguments: unknown }[];
  toolCallId?: string; name?: string; error?: boolean;
}
interface ChatSummary { id: string; title?: string; status?: string; model?: string; updatedAt?: number | string }
interface Content {
  type: string; text?: string; state?: string; id?: string; name?: string; arguments?: unknown; argumentsText?: string;
  manualApproval?: boolean; error?: boolean; outputs?: { type: string; text?: string }[]; reason?: unknown;
  totalTimeMs?: number; sessionTokens?: number;
}

interface ToolView { root: HTMLElement; status: HTMLElement; args: HTMLElement; argsText: string; actions: HTMLElement; output: HTMLElement }

export function installChat(app: App): void {
  const rpc = app.rpc;
  let chatId: string | null = null;
  let running = false;
  let prompting = false;
  let loaded = false;
  /** The assistant text the next delta extends; anything else that arrives ends it. */
  let currentText: HTMLElement | null = null;
  const reasoning = new Map<string, { root: HTMLDetailsElement; summary: HTMLElement; text: HTMLElement }>();
  const tools = new Map<string, ToolView>();

  const root = h("div", { class: "pnl pnl-chat", "data-panel": "chat" });
  const chatSelect = h("select", { class: "pnl-chat-select", title: "Chats kept by the server" });
  const status = h("span", { class: "pnl-muted pnl-chat-status" });
  const usage = h("span", { class: "pnl-muted pnl-chat-usage" });
  const log = h("div", { class: "pnl-chat-log", "aria-live": "polite" });
  const input = h("textarea", { class: "pnl-input pnl-chat-input", rows: 3, placeholder: "Ask the agent (Enter sends, Shift+Enter a new line)" });
  const sendButton = button("Send", "Send the prompt", () => void send(), "pnl-primary pnl-chat-send");
  const stopButton = button("Stop", "Stop the answer", () => void stop(), "pnl-danger pnl-chat-stop");
  stopButton.hidden = true;
  root.append(
    h("div", { class: "pnl-row pnl-chat-head" }, h("span", { class: "pnl-label" }, "Agent"), chatSelect,
      button("New", "Start a new chat", () => newChat(), "pnl-chat-new"), status, usage),
    log,
    h("div", { class: "pnl-chat-prompt" }, input, h("div", { class: "pnl-row" }, sendButton, stopButton)),
  );

  function setRunning(on: boolean): void {
    running = on;
    stopButton.hidden = !on;
    root.classList.toggle("pnl-chat-running", on);
    if (!on) status.textContent = "";
  }

  function scrollToEnd(): void {
    const nearEnd = log.scrollHeight - log.scrollTop - log.clientHeight < 80;
    if (nearEnd) requestAnimationFrame(() => { log.scrollTop = log.scrollHeight; });
  }

  function entry(kind: string, text: string): HTMLElement {
    const el = h("div", { class: `pnl-chat-entry pnl-chat-${kind}` }, text);
    log.append(el);
    currentText = null;
    scrollToEnd();
    return el;
  }

  function appendText(text: string): void {
    if (!currentText) {
      currentText = h("div", { class: "pnl-chat-entry pnl-chat-assistant" });
      log.append(currentText);
    }
    currentText.append(text);
    scrollToEnd();
  }

  function clearLog(): void {
    log.replaceChildren();
    currentText = null;
    reasoning.clear();
    tools.clear();
    usage.textContent = "";
  }

  function formatArgs(args: unknown): string {
    if (args === undefined || args === null) return "";
    if (typeof args === "string") return args;
    try { return JSON.stringify(args, null, 2); } catch { return String(args); }
  }

  function toolView(id: string, name: string): ToolView {
    let v = tools.get(id);
    if (v) return v;
    const statusEl = h("span", { class: "pnl-chat-tool-status" }, "preparing");
    const args = h("pre", { class: "pnl-chat-tool-args" });
    const actions = h("div", { class: "pnl-row pnl-chat-approval", hidden: true });
    const output = h("div", { class: "pnl-chat-tool-output" });
    const rootEl = h("div", { class: "pnl-chat-entry pnl-chat-tool", "data-tool-call-id": id },
      h("div", { class: "pnl-chat-tool-head" }, h("span", { class: "pnl-chat-tool-name" }, `⚙ ${name}`), statusEl),
      args, actions, output);
    log.append(rootEl);
    currentText = null;
    v = { root: rootEl, status: statusEl, args, argsText: "", actions, output };
    tools.set(id, v);
    scrollToEnd();
    return v;
  }

  function setToolStatus(v: ToolView, text: string, cls: string): void {
    v.status.textContent = text;
    v.root.dataset.status = cls;
  }

  function showOutputs(v: ToolView, outputs: { type: string; text?: string }[] | undefined, error: boolean): void {
    const text = (outputs ?? []).map((o) => o.text ?? "").join("\n");
    if (!text) return;
    const details = h("details", { class: `pnl-chat-output ${error ? "pnl-error" : ""}` },
      h("summary", {}, error ? "Error" : "Output"), h("pre", {}, text));
    if (error) details.open = true;
    v.output.replaceChildren(details);
  }

  function askApproval(v: ToolView, toolCallId: string): void {
    const forChat = chatId;
    const answer = async (approve: boolean) => {
      v.actions.hidden = true;
      setToolStatus(v, approve ? "approved" : "rejecting", approve ? "approved" : "rejecting");
      try {
        await rpc.request(approve ? "chat/toolCallApprove" : "chat/toolCallReject", { chatId: forChat, toolCallId });
      } catch (e) {
        setToolStatus(v, errorText(e), "error");
      }
    };
    v.actions.replaceChildren(
      h("span", { class: "pnl-chat-question" }, "Run this?"),
      button("Approve", "Let the agent run this call", () => void answer(true), "pnl-primary pnl-chat-approve"),
      button("Reject", "Refuse this call; the model is told", () => void answer(false), "pnl-danger pnl-chat-reject"));
    v.actions.hidden = false;
    setToolStatus(v, "waiting for approval", "waiting");
    scrollToEnd();
  }

  function onContent(role: string, c: Content): void {
    switch (c.type) {
      case "text":
        if (role === "system") entry("system", c.text ?? "");
        else if (role === "user") entry("user", c.text ?? "");
        else appendText(c.text ?? "");
        break;
      case "progress":
        if (c.state === "running") { setRunning(true); status.textContent = c.text ?? "Working..."; }
        else if (c.state === "finished") { setRunning(false); }
        else if (c.text) status.textContent = c.text;
        break;
      case "usage":
        if (typeof c.sessionTokens === "number") usage.textContent = `${c.sessionTokens} tokens`;
        break;
      case "reasonStarted": {
        const id = c.id ?? "reasoning";
        const summary = h("summary", {}, "Thinking...");
        const text = h("div", { class: "pnl-chat-reasoning-text" });
        const details = h("details", { class: "pnl-chat-entry pnl-chat-reasoning" }, summary, text);
        log.append(details);
        currentText = null;
        reasoning.set(id, { root: details, summary, text });
        scrollToEnd();
        break;
      }
      case "reasonText": {
        let r = reasoning.get(c.id ?? "reasoning");
        if (!r) { onContent(role, { type: "reasonStarted", id: c.id }); r = reasoning.get(c.id ?? "reasoning")!; }
        r.text.append(c.text ?? "");
        break;
      }
      case "reasonFinished": {
        const r = reasoning.get(c.id ?? "reasoning");
        if (r) r.summary.textContent = typeof c.totalTimeMs === "number" ? `Thought for ${(c.totalTimeMs / 1000).toFixed(1)} s` : "Thought";
        break;
      }
      case "toolCallPrepare": {
        const v = toolView(c.id ?? "", c.name ?? "tool");
        v.argsText += c.argumentsText ?? "";
        v.args.textContent = v.argsText;
        break;
      }
      case "toolCallRun": {
        const v = toolView(c.id ?? "", c.name ?? "tool");
        v.args.textContent = formatArgs(c.arguments);
        if (c.manualApproval) askApproval(v, c.id ?? "");
        else setToolStatus(v, "running", "running");
        break;
      }
      case "toolCallRunning": {
        const v = toolView(c.id ?? "", c.name ?? "tool");
        v.actions.hidden = true;
        setToolStatus(v, "running", "running");
        break;
      }
      case "toolCalled": {
        const v = toolView(c.id ?? "", c.name ?? "tool");
        v.actions.hidden = true;
        setToolStatus(v, c.error ? "failed" : "done", c.error ? "failed" : "done");
        showOutputs(v, c.outputs, !!c.error);
        break;
      }
      case "toolCallRejected": {
        const v = toolView(c.id ?? "", c.name ?? "tool");
        v.actions.hidden = true;
        const reason = typeof c.reason === "string" ? c.reason : (c.reason as { code?: string } | undefined)?.code;
        setToolStatus(v, reason ? `rejected (${reason})` : "rejected", "rejected");
        break;
      }
      default:
        break;
    }
  }

  async function refreshList(): Promise<ChatSummary[]> {
    let chats: ChatSummary[] = [];
    try { chats = (await rpc.request<{ chats: ChatSummary[] }>("chat/list", { limit: 30 })).chats ?? []; } catch { /* shown empty */ }
    const options = [h("option", { value: "" }, "New chat")];
    for (const c of chats) options.push(h("option", { value: c.id, selected: c.id === chatId }, c.title || c.id.slice(0, 8)));
    chatSelect.replaceChildren(...options);
    chatSelect.value = chatId ?? "";
    return chats;
  }

  async function openChat(id: string): Promise<void> {
    let r: { found: boolean; chatId: string; status?: string; messages?: StoredMessage[] };
    try { r = await rpc.request("chat/open", { chatId: id }); } catch (e) { entry("system", errorText(e)); return; }
    if (!r.found) return;
    chatId = r.chatId;
    clearLog();
    const toolById = new Map<string, ToolView>();
    for (const m of r.messages ?? []) {
      if (m.role === "user" && m.text) entry("user", m.text);
      else if (m.role === "assistant") {
        if (m.text) entry("assistant", m.text);
        for (const call of m.toolCalls ?? []) {
          const v = toolView(call.id, call.name);
          v.args.textContent = formatArgs(call.arguments);
          setToolStatus(v, "done", "done");
          toolById.set(call.id, v);
        }
      } else if (m.role === "tool" && m.toolCallId) {
        const v = toolById.get(m.toolCallId);
        if (v) { showOutputs(v, [{ type: "text", text: m.text }], !!m.error); if (m.error) setToolStatus(v, "failed", "failed"); }
      } else if (m.role === "system" && m.text) entry("system", m.text);
    }
    currentText = null;
    setRunning(r.status === "running");
    chatSelect.value = chatId ?? "";
    log.scrollTop = log.scrollHeight;
  }

  async function load(): Promise<void> {
    loaded = true;
    const chats = await refreshList();
    if (!chatId && !prompting && log.childElementCount === 0 && chats.length > 0) await openChat(chats[0].id);
  }

  function newChat(): void {
    if (running) { app.showMessage("The agent is still answering: stop it first", "error"); return; }
    chatId = null;
    clearLog();
    chatSelect.value = "";
    input.focus();
  }

  async function send(): Promise<void> {
    const message = input.value;
    if (!message.trim()) return;
    if (running || prompting) { app.showMessage("The agent is still answering: Stop ends it", "error"); return; }
    entry("user", message);
    input.value = "";
    prompting = true;
    setRunning(true);
    status.textContent = "Sending...";
    try {
      const params: Record<string, unknown> = { message };
      if (chatId) params.chatId = chatId;
      const r = await rpc.request<{ chatId: string }>("chat/prompt", params);
      const isNew = chatId !== r.chatId;
      chatId = r.chatId;
      if (isNew) void refreshList();
    } catch (e) {
      entry("system", errorText(e));
      setRunning(false);
    } finally {
      prompting = false;
    }
  }

  async function stop(): Promise<void> {
    if (!chatId) return;
    try { await rpc.request("chat/promptStop", { chatId }); } catch (e) { app.showMessage(`Stop: ${errorText(e)}`, "error"); }
  }

  rpc.on("chat/contentReceived", (p: { chatId: string; role: string; content: Content }) => {
    // The stream can start before the prompt's answer names the chat.
    if (!chatId && prompting) chatId = p.chatId;
    if (p.chatId !== chatId) return;
    onContent(p.role, p.content ?? { type: "" });
  });
  rpc.on("chat/statusChanged", (p: { chatId: string; status: string }) => {
    if (p.chatId === chatId) setRunning(p.status === "running");
  });
  rpc.on("chat/deleted", (p: { chatId: string }) => {
    if (p.chatId === chatId) {
      chatId = null;
      setRunning(false);
      entry("system", "The chat was deleted; the next prompt starts another.");
    }
    if (loaded) void refreshList();
  });
  rpc.onReady((reconnected) => {
    if (!reconnected || !loaded) return;
    // What streamed while the page was away is in the stored messages.
    void refreshList();
    if (chatId) void openChat(chatId);
  });

  chatSelect.addEventListener("change", () => {
    if (chatSelect.value === (chatId ?? "")) return;
    if (running) { app.showMessage("The agent is still answering: stop it first", "error"); chatSelect.value = chatId ?? ""; return; }
    if (chatSelect.value === "") newChat(); else void openChat(chatSelect.value);
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); void send(); }
    else if (ev.key === "Escape" && running) { ev.preventDefault(); void stop(); }
  });

  const theme = () => applyThemeColors(app, root);
  theme();
  app.onThemeChange(theme);
  app.setRightPane(root);
  // However the pane is first shown (the command, or the shell's own control), the chat loads then.
  new ResizeObserver(() => { if (!loaded && root.offsetParent !== null && rpc.state === "open") void load(); }).observe(root);
  app.registerCommand("chat.toggle", "Agent chat: show, focus, back to the editor", () => {
    if (!loaded && rpc.state === "open") void load();
    const shown = root.offsetParent !== null;
    const focused = root.contains(document.activeElement);
    if (shown && !focused) { input.focus(); return; }
    app.toggleRightPane(!shown);
    if (!shown) requestAnimationFrame(() => input.focus());
  });
  app.registerCommand("chat.stop", "Agent chat: stop the running answer", () => {
    if (!chatId || !running) { app.showMessage("The agent is not answering"); return; }
    void stop();
  });
}
