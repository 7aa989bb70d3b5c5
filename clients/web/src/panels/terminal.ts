// The terminal (bottom panel): xterm.js fed by `terminal/output`, typing sent
// as `terminal/write`, its size kept by the fit addon and told to the server
// (`terminal/resize`). Terminals belong to the server, not to the page: they
// are listed at first show and after a reconnect, several as tabs, and one is
// created when none is there.
//
// Flow control: xterm.js parses what it is given over later frames, so a flood
// (`yes`, `cat` of a large file) could queue without bound in the page. Each
// write is counted until xterm's callback says it is parsed; past HIGH_WATER
// characters waiting, output is no longer queued (the server's own flow
// control holds the program only while this connection is backed up, which a
// browser that reads every frame never is). Once the queue has drained to
// LOW_WATER, the screen is painted again from the server's copy
// (`terminal/getBuffer`), so what is shown is right again; only the
// scrollback of the skipped output is missing. An answer may overtake output
// the server sent before it, so that output can land on the repainted screen
// a second time: once the output has been quiet for SETTLE_MS the screen is
// painted from the server's copy once more.
import { Terminal } from "@xterm/xterm";
import { FitAddon } from "@xterm/addon-fit";
import "@xterm/xterm/css/xterm.css";
import type { App } from "../app";
import { applyThemeColors, button, errorText, h, workspaceRoot } from "./dom";

const HIGH_WATER = 512 * 1024;
const LOW_WATER = 64 * 1024;
const SETTLE_MS = 250;
const SCROLLBACK = 5000;

interface Cell { char: string; fg: string | null; bg: string | null; bold?: boolean; italic?: boolean; underline?: boolean; dim?: boolean; inverse?: boolean }
interface ScreenBuffer { cells: Cell[][]; cursor: { x: number; y: number } }
interface TerminalInfo { terminalId: string; shell?: string; title?: string; running?: boolean }

class TerminalTab {
  readonly host: HTMLElement;
  readonly tab: HTMLElement;
  readonly label: HTMLElement;
  readonly term: Terminal;
  readonly fit = new FitAddon();
  opened = false;
  exited = false;
  /** Characters handed to xterm and not parsed yet. */
  pending = 0;
  /** Output is being skipped until the queue drains; then the screen is repainted. */
  skipping = false;
  repainting = false;
  /** Characters not shown because of a flood, and the most ever queued (data-skipped, data-max-queued). */
  skipped = 0;
  maxQueued = 0;
  /** After skipped output: repaint once the output has been quiet for a moment. */
  settleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(readonly id: string, title: string) {
    this.host = h("div", { class: "pnl-term-host", "data-terminal-id": id });
    this.label = h("span", { class: "pnl-term-label" }, title);
    this.tab = h("div", { class: "pnl-term-tab", "data-terminal-id": id, title: id }, this.label);
    this.term = new Terminal({
      scrollback: SCROLLBACK,
      fontFamily: "ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace",
      fontSize: 13,
      cursorBlink: true,
      allowProposedApi: false,
    });
    this.term.loadAddon(this.fit);
  }
}

export function installTerminal(app: App): void {
  const rpc = app.rpc;
  const tabs = new Map<string, TerminalTab>();
  let active: TerminalTab | null = null;
  let started = false;
  let creating = 0;
  let adoptTimer: ReturnType<typeof setTimeout> | null = null;

  const root = h("div", { class: "pnl pnl-terminal", "data-panel": "terminal" });
  const tabBar = h("div", { class: "pnl-term-tabs" });
  const newButton = button("+", "New terminal", () => void createTerminal(), "pnl-term-new");
  const message = h("div", { class: "pnl-error pnl-term-message", hidden: true });
  const body = h("div", { class: "pnl-term-body" });
  root.append(h("div", { class: "pnl-term-bar" }, tabBar, newButton), message, body);

  const showMessage = (text: string | null) => { message.hidden = !text; message.textContent = text ?? ""; };
  const visible = () => body.clientWidth > 0 && body.clientHeight > 0;

  function xtermTheme() {
    return {
      background: app.themeColor("terminal.background", app.themeColor("editor.background", "#1e1e1e")),
      foreground: app.themeColor("terminal.foreground", app.themeColor("editor.foreground", "#d4d4d4")),
      cursor: app.themeColor("terminalCursor.foreground", app.themeColor("editorCursor.foreground", "#aeafad")),
      selectionBackground: app.themeColor("terminal.selectionBackground", app.themeColor("editor.selectionBackground", "#264f78")),
    };
  }

  function addTab(info: TerminalInfo): TerminalTab {
    const existing = tabs.get(info.terminalId);
    if (existing) return existing;
    const t = new TerminalTab(info.terminalId, info.title || shortShell(info.shell) || "terminal");
    t.tab.addEventListener("click", () => activate(t));
    t.tab.append(button("×", "Close the terminal (ends its programs)", () => void closeTerminal(t), "pnl-term-close"));
    t.term.options.theme = xtermTheme();
    t.term.onData((data) => {
      if (t.exited) return;
      rpc.request("terminal/write", { terminalId: t.id, data }).catch((e) => showMessage(errorText(e)));
    });
    t.term.onResize(({ cols, rows }) => {
      if (t.exited) return;
      rpc.request("terminal/resize", { terminalId: t.id, cols, rows }).catch(() => { /* the terminal may be gone */ });
    });
    // The page's own keys (ctrl+t toggles the panel) are not typed into the program.
    t.term.attachCustomKeyEventHandler((ev) => !(ev.ctrlKey && !ev.altKey && !ev.shiftKey && ev.key.toLowerCase() === "t"));
    tabs.set(t.id, t);
    tabBar.append(t.tab);
    body.append(t.host);
    if (info.running === false) markExited(t, null);
    if (!active) activate(t);
    return t;
  }

  function shortShell(shell?: string): string {
    return shell ? shell.slice(shell.lastIndexOf("/") + 1) : "";
  }

  /** Opens xterm in its element once that element can be measured. */
  function ensureOpened(t: TerminalTab): void {
    if (t.opened || !visible()) return;
    t.opened = true;
    t.term.open(t.host);
    fitNow(t);
  }

  function fitNow(t: TerminalTab): void {
    if (!t.opened || t !== active || !visible()) return;
    try { t.fit.fit(); } catch { /* not measurable yet */ }
  }

  function activate(t: TerminalTab): void {
    active = t;
    for (const other of tabs.values()) {
      const on = other === t;
      other.host.hidden = !on;
      other.tab.classList.toggle("pnl-active", on);
    }
    ensureOpened(t);
    fitNow(t);
  }

  function write(t: TerminalTab, data: string): void {
    if (t.settleTimer !== null) settle(t);
    if (t.skipping || t.pending > HIGH_WATER) {
      t.skipping = true;
      t.skipped += data.length;
      t.host.dataset.skipped = String(t.skipped);
      settle(t);
      return;
    }
    t.pending += data.length;
    if (t.pending > t.maxQueued) { t.maxQueued = t.pending; t.host.dataset.maxQueued = String(t.pending); }
    t.term.write(data, () => {
      t.pending -= data.length;
      if (t.skipping && t.pending <= LOW_WATER) void repaint(t);
    });
  }

  /** (Re)starts the wait for quiet output, after which the screen is painted from the server. */
  function settle(t: TerminalTab): void {
    if (t.settleTimer !== null) clearTimeout(t.settleTimer);
    t.settleTimer = setTimeout(() => {
      t.settleTimer = null;
      if (!t.exited && tabs.get(t.id) === t) void repaint(t);
    }, SETTLE_MS);
  }

  /** Paints the server's copy of the screen (after skipped output, or a reconnect). */
  async function repaint(t: TerminalTab): Promise<void> {
    if (t.repainting) return;
    t.repainting = true;
    try {
      const r = await rpc.request<{ buffer: ScreenBuffer | null }>("terminal/getBuffer", { terminalId: t.id });
      if (r.buffer) t.term.write(screenToAnsi(r.buffer));
    } catch { /* gone: the exit or the reconnect says so */ }
    t.repainting = false;
    t.skipping = false;
  }

  function markExited(t: TerminalTab, exitCode: number | null, why?: string): void {
    if (t.exited) return;
    t.exited = true;
    t.tab.classList.add("pnl-exited");
    t.label.textContent = `${t.label.textContent} (exited)`;
    const text = why ?? (exitCode === null ? "The program has exited." : `The program exited with code ${exitCode}.`);
    t.term.write(`\r\n\x1b[2m[${text}]\x1b[0m\r\n`);
  }

  async function createTerminal(): Promise<void> {
    showMessage(null);
    creating++;
    const size = active?.opened ? { cols: active.term.cols, rows: active.term.rows } : { cols: 80, rows: 24 };
    try {
      const params: Record<string, unknown> = { ...size, scrollback: SCROLLBACK };
      const cwd = await workspaceRoot(app, 2000);
      if (cwd) params.cwd = cwd;
      const r = await rpc.request<{ terminalId: string }>("terminal/create", params);
      const t = addTab({ terminalId: r.terminalId, title: "terminal" });
      activate(t);
      t.term.focus();
      // The shell may have started at another size than this tab fits.
      if (t.opened) void rpc.request("terminal/resize", { terminalId: t.id, cols: t.term.cols, rows: t.term.rows }).catch(() => {});
    } catch (e) {
      showMessage(`The terminal could not start: ${errorText(e)}`);
      app.showMessage(`Terminal: ${errorText(e)}`, "error");
    } finally {
      creating--;
    }
  }

  async function closeTerminal(t: TerminalTab): Promise<void> {
    tabs.delete(t.id);
    t.tab.remove();
    t.host.remove();
    t.term.dispose();
    if (active === t) {
      active = null;
      const next = [...tabs.values()].pop();
      if (next) activate(next);
    }
    try { await rpc.request("terminal/close", { terminalId: t.id }); } catch { /* already gone */ }
  }

  /** Shows the server's terminals: those this page lacks become tabs, those gone are marked. */
  async function adopt(createIfNone: boolean): Promise<void> {
    if (rpc.state !== "open") return;
    let list: TerminalInfo[];
    try {
      list = (await rpc.request<{ terminals: TerminalInfo[] }>("terminal/list", {})).terminals ?? [];
    } catch (e) {
      showMessage(errorText(e));
      return;
    }
    const ids = new Set(list.map((i) => i.terminalId));
    for (const t of tabs.values()) if (!ids.has(t.id)) markExited(t, null, "The terminal is gone (the server restarted or closed it).");
    for (const info of list) {
      const known = tabs.get(info.terminalId);
      const t = known ?? addTab(info);
      if (!t.exited && info.running === false) markExited(t, null);
      if (!t.exited) void repaint(t);
    }
    if (createIfNone && ![...tabs.values()].some((t) => !t.exited)) await createTerminal();
  }

  function adoptSoon(): void {
    if (adoptTimer !== null || !started) return;
    adoptTimer = setTimeout(() => {
      adoptTimer = null;
      if (creating > 0) { adoptSoon(); return; }
      void adopt(false);
    }, 200);
  }

  function start(): void {
    if (started) return;
    started = true;
    void adopt(true);
  }

  // Shown for the first time (the panel's tab, or the command): start; and
  // every size change refits the visible terminal.
  new ResizeObserver(() => {
    if (!visible()) return;
    start();
    if (active) { ensureOpened(active); fitNow(active); }
  }).observe(body);

  rpc.on("terminal/output", (p: { terminalId: string; data: string }) => {
    const t = tabs.get(p.terminalId);
    if (t) write(t, p.data);
    else adoptSoon();
  });
  rpc.on("terminal/title", (p: { terminalId: string; title: string }) => {
    const t = tabs.get(p.terminalId);
    if (t && !t.exited) t.label.textContent = p.title || "terminal";
  });
  rpc.on("terminal/exit", (p: { terminalId: string; exitCode: number }) => {
    const t = tabs.get(p.terminalId);
    if (t) markExited(t, p.exitCode ?? null);
  });
  rpc.onReady((reconnected) => { if (reconnected && started) void adopt(false); });

  const theme = () => {
    applyThemeColors(app, root);
    for (const t of tabs.values()) t.term.options.theme = xtermTheme();
  };
  theme();
  app.onThemeChange(theme);

  app.addBottomView("terminal", "Terminal", root);
  app.registerCommand("terminal.toggle", "Terminal: show, focus, hide", () => {
    const focused = active?.opened && active.host.contains(document.activeElement);
    if (visible() && focused) { (document.activeElement as HTMLElement | null)?.blur(); return; }
    app.showBottomView("terminal");
    // The panel is measurable once the view is shown; start and focus then.
    requestAnimationFrame(() => {
      start();
      if (active) { activate(active); active.term.focus(); }
    });
  });
  app.registerCommand("terminal.new", "Terminal: a new terminal", () => {
    app.showBottomView("terminal");
    started = true;
    void createTerminal();
  });
}

/** The server's screen as escape sequences: clear, each cell with its colours, the cursor. */
function screenToAnsi(buffer: ScreenBuffer): string {
  const out: string[] = ["\x1b[0m\x1b[H\x1b[2J"];
  buffer.cells.forEach((row, y) => {
    out.push(`\x1b[${y + 1};1H`);
    let last = "";
    for (const cell of row) {
      if (cell.char === "") continue; // the right half of a wide character
      const sgr = ["0"];
      if (cell.bold) sgr.push("1");
      if (cell.dim) sgr.push("2");
      if (cell.italic) sgr.push("3");
      if (cell.underline) sgr.push("4");
      if (cell.inverse) sgr.push("7");
      const fg = rgb(cell.fg), bg = rgb(cell.bg);
      if (fg) sgr.push(`38;2;${fg}`);
      if (bg) sgr.push(`48;2;${bg}`);
      const code = `\x1b[${sgr.join(";")}m`;
      if (code !== last) { out.push(code); last = code; }
      out.push(cell.char || " ");
    }
  });
  out.push(`\x1b[0m\x1b[${buffer.cursor.y + 1};${buffer.cursor.x + 1}H`);
  return out.join("");
}

function rgb(color: string | null): string | null {
  const m = color && /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color);
  return m ? `${parseInt(m[1], 16)};${parseInt(m[2], 16)};${parseInt(m[3], 16)}` : null;
}
