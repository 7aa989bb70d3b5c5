// The page's frame: implements App (app.ts) over one Rpc. It owns the layout
// (side bar, tabs and editor area, bottom panel, right pane, status bar), the
// tabs and their editor views, the commands and keys, the palette, the theme,
// and what a reconnect must redo. Everything it shows comes from the core.
import type { App, OpenDocument, Position } from "../app";
import type { ConnectionState, Rpc } from "../rpc";
import { ask, promptText } from "./dialog";
import { basename, byId, el, pathToUri, setText, uriToPath } from "./dom";
import { buildKeymap, keyName, keysOf, PANE_COMMANDS, resolveKey, type Keymap, type ServerBinding } from "./keys";
import { Palette } from "./palette";
import { ThemeState } from "./theme";
import { FileTree } from "./tree";
import { TrustBanner } from "./trust";
import { ViewSwitcher } from "./views";

/** What the editor area needs of a view (EditorView from ./editor/view has this shape). */
export interface DocumentView {
  focus(): void;
  dispose(): void;
  reveal(pos: Position): void;
  cursorPosition?(): Position | null;
}
export type ViewFactory<V extends DocumentView> = (app: App, doc: OpenDocument, host: HTMLElement) => V;

interface Tab<V extends DocumentView = DocumentView> {
  doc: OpenDocument;
  languageId: string;
  dirty: boolean;
  tabElement: HTMLElement;
  host: HTMLElement;
  view: V | null;
  infoTicket: number;
  infoTimer: number;  // a document/info asked for after a burst of changes settles
}

interface Command { title: string; run: (args?: unknown) => void }

/** The default clipboard keys are left to the browser: its copy, cut and paste events carry the text. */
/** How many places `nav.back` can go back through. */
const MAX_PLACES = 64;

const NATIVE_CLIPBOARD_KEYS: ReadonlyMap<string, string> = new Map([
  ["ctrl+c", "edit.copy"], ["ctrl+x", "edit.cut"], ["ctrl+v", "edit.paste"],
]);
/** Keys a text field keeps for itself even with a modifier. */
const TEXT_FIELD_KEYS = /^(ctrl\+)?(shift\+)?(a|c|v|x|z|y|left|right|up|down|home|end|backspace|delete)$/;

const TABS_STORAGE_KEY = "ecp-web.tabs";

export class Shell<V extends DocumentView = DocumentView> implements App {
  private rootPath = "";
  private rootUri = "";
  private readonly tabs: Tab<V>[] = [];
  private active: Tab<V> | null = null;
  private readonly opening = new Map<string, Promise<Tab<V>>>();
  private readonly activeHandlers = new Set<(doc: OpenDocument | null) => void>();
  private readonly commands = new Map<string, Command>();
  private keymap: Keymap = buildKeymap([]);
  private readonly theme: ThemeState;
  private readonly sidebar: ViewSwitcher;
  private readonly bottom: ViewSwitcher;
  private readonly tree: FileTree;
  private readonly palette: Palette;
  private readonly trust: TrustBanner;
  private readonly tabBar = byId("tabs");
  private readonly editorArea = byId("editor-area");
  private readonly rightPane = byId("right-pane");
  private readonly status: {
    connection: HTMLElement; message: HTMLElement; others: HTMLElement; language: HTMLElement; position: HTMLElement;
  };
  private readonly otherClients = new Map<number, string>();   // connected since this page came
  private readonly holders = new Map<number, string>();        // holding the active document
  private messageTimer = 0;
  private statusQueued = false;
  /** The places jumped from, newest last. */
  private readonly places: { uri: string; at: Position }[] = [];
  private everOpen = false;
  private readyCount = 0;

  constructor(readonly rpc: Rpc, private readonly createView: ViewFactory<V>) {
    this.theme = new ThemeState(rpc);
    this.status = {
      connection: el("span", { class: "status-connection", text: "connecting..." }),
      message: el("span", { class: "status-message" }),
      others: el("span", { class: "status-others" }),
      language: el("span", { class: "status-language" }),
      position: el("span", { class: "status-position" }),
    };
    byId("status").append(this.status.connection, this.status.message, el("span", { class: "status-fill" }),
      this.status.others, this.status.language, this.status.position);

    this.sidebar = new ViewSwitcher(byId("sidebar-tabs"), byId("sidebar-body"));
    this.bottom = new ViewSwitcher(byId("bottom-tabs"), byId("bottom-body"));
    this.bottom.onShow = () => { byId("bottom").hidden = false; this.layoutChanged(); };
    byId("bottom").hidden = true;
    this.rightPane.hidden = true;
    this.buildSplitters();

    this.trust = new TrustBanner(this);
    byId("center").prepend(this.trust.element);
    this.tree = new FileTree(this);
    this.addSidebarView("explorer", "Files", this.tree.element);
    this.palette = new Palette(this, () => this.paletteCommands(), () => this.rootUri);

    this.registerShellCommands();
    this.followServer();
    window.addEventListener("keydown", (e) => this.onKeyDown(e), true);
    // the view says when the caller's cursor moved, whoever moved it (a key, the core, an undo)
    window.addEventListener("ecp-cursorchange", () => this.scheduleStatus(), true);
  }

  // ---------------------------------------------------------------- App

  workspaceRoot(): string { return this.rootPath; }

  async openUri(uri: string, at?: Position): Promise<void> {
    const target = pathToUri(uri);
    let tab = this.findTab(target);
    if (!tab) {
      let pending = this.opening.get(target);
      if (!pending) {
        pending = this.openTab(target).finally(() => this.opening.delete(target));
        this.opening.set(target, pending);
      }
      tab = await pending;
    }
    this.activate(tab);
    if (at) {
      try {
        await this.rpc.request("document/setCursor", { documentId: tab.doc.documentId, position: { line: at.line, column: at.character } });
      } catch (e) { console.error("document/setCursor failed", e); }
      tab.view?.reveal(at);
    }
    tab.view?.focus();
  }

  rememberPlace(): void {
    const at = this.active?.view?.cursorPosition?.();
    if (!this.active || !at) return;
    this.places.push({ uri: this.active.doc.uri, at });
    if (this.places.length > MAX_PLACES) this.places.shift();
  }

  /** Back to where the caret was before the last jump. */
  private async goBack(): Promise<void> {
    const place = this.places.pop();
    if (!place) { this.showMessage("Nowhere to go back to"); return; }
    await this.openUri(place.uri, place.at);
  }

  async openInBackground(uri: string): Promise<OpenDocument> {
    const target = pathToUri(uri);
    const found = this.findTab(target);
    if (found) return found.doc;
    let pending = this.opening.get(target);
    if (!pending) {
      pending = this.openTab(target).finally(() => this.opening.delete(target));
      this.opening.set(target, pending);
    }
    return (await pending).doc;
  }

  choose(choices: { label: string; detail?: string; run: () => void }[], placeholder: string): void {
    this.palette.choose(choices, placeholder);
  }

  activeDocument(): OpenDocument | null { return this.active?.doc ?? null; }

  /** The active tab's view (what the editor's commands act on). */
  activeView(): V | null { return this.active?.view ?? null; }

  onActiveDocumentChange(handler: (doc: OpenDocument | null) => void): void { this.activeHandlers.add(handler); }

  addSidebarView(id: string, title: string, element: HTMLElement): void { this.sidebar.add(id, title, element); }
  showSidebarView(id: string): void { byId("sidebar").hidden = false; this.sidebar.show(id); this.layoutChanged(); }
  addBottomView(id: string, title: string, element: HTMLElement): void {
    const first = this.bottom.count === 0;
    this.bottom.add(id, title, element);
    // The panel opens when a view is shown, not merely added: the editor keeps the room.
    if (first) byId("bottom").hidden = true;
  }
  showBottomView(id: string): void { this.bottom.show(id); }

  setRightPane(element: HTMLElement): void { this.rightPane.replaceChildren(element); }
  toggleRightPane(show?: boolean): void {
    const visible = show ?? this.rightPane.hidden;
    this.rightPane.hidden = !visible;
    byId("right-splitter").hidden = !visible;
    this.layoutChanged();
  }

  registerCommand(id: string, title: string, run: (args?: unknown) => void): void { this.commands.set(id, { title, run }); }

  runCommand(id: string, args?: unknown): boolean {
    const c = this.commands.get(id);
    if (!c) return false;
    try { c.run(args); } catch (e: any) { this.showMessage(`${c.title}: ${e?.message ?? e}`, "error"); }
    return true;
  }

  themeColor(name: string, fallback: string): string { return this.theme.color(name, fallback); }
  onThemeChange(handler: () => void): () => void { return this.theme.onChange(handler); }

  showMessage(text: string, kind: "info" | "error" = "info"): void {
    if (kind === "error") console.error(text);
    this.status.message.textContent = text;
    this.status.message.classList.toggle("error", kind === "error");
    clearTimeout(this.messageTimer);
    this.messageTimer = window.setTimeout(() => { this.status.message.textContent = ""; }, kind === "error" ? 10000 : 5000);
  }

  // ---------------------------------------------------------------- start and reconnect

  /** Connects; every `initialize` answered (the first and each reconnect) runs ready(). */
  start(): void {
    this.rpc.onState((s) => this.connectionChanged(s));
    this.rpc.onReady((reconnected) => { void this.ready(reconnected); });
    this.rpc.start();
  }

  private connectionChanged(s: ConnectionState): void {
    if (s === "open") this.everOpen = true;
    const text = s === "open" ? "connected" : this.everOpen ? "reconnecting..." : "connecting...";
    this.status.connection.textContent = text;
    this.status.connection.dataset.state = s === "open" ? "open" : "closed";
    document.documentElement.dataset.connection = s;
  }

  private async ready(reconnected: boolean): Promise<void> {
    const generation = ++this.readyCount;
    // A new connection is a new client: whom it saw before is gone with it.
    this.otherClients.clear();
    try {
      await this.learnRoot();
      await Promise.all([
        this.theme.load().catch((e) => console.error("theme failed", e)),
        this.loadKeybindings(),
        this.trust.refresh(),
        this.tree.setRoot(this.rootUri).catch((e) => console.error("tree failed", e)),
      ]);
      if (generation !== this.readyCount) return;
      if (reconnected) await this.reopenTabs();
      else await this.restoreTabs();
      this.refreshHolders();
    } catch (e: any) {
      this.showMessage(`Starting failed: ${e?.message ?? e}`, "error");
    }
  }

  /**
   * The workspace folder, as `initialize` names it (a shared server keeps its
   * own, whatever a client asks for); a server without one shows its working
   * directory.
   */
  private async learnRoot(): Promise<void> {
    const init = this.rpc.serverInfo ?? {};
    let path = typeof init.workspaceRoot === "string" ? init.workspaceRoot : "";
    let uri = typeof init.workspaceUri === "string" ? init.workspaceUri : "";
    if (!path) {
      const r: any = await this.rpc.request("file/pathToUri", { path: "." });
      uri = String(r?.uri ?? "");
      path = uriToPath(uri);
    }
    this.rootPath = path.replace(/(.)\/+$/, "$1");
    this.rootUri = uri || pathToUri(this.rootPath);
    document.title = `${basename(this.rootPath) || this.rootPath} - ecpd`;
  }

  /**
   * Unsaved text a server that went away left (hot exit): the text of the
   * URIs named comes back into their documents here (session/recover); what
   * else is offered is announced, for the "Recover unsaved text" command.
   */
  private async recover(uris: string[]): Promise<void> {
    try {
      const r: any = await this.rpc.request("session/recoverable", {});
      const offered = new Set<string>((Array.isArray(r?.documents) ? r.documents : []).map((d: any) => d?.uri).filter((u: unknown) => typeof u === "string"));
      const mine = uris.filter((u) => offered.has(u));
      if (mine.length) await this.rpc.request("session/recover", { uris: mine });
      const rest = offered.size - mine.length;
      if (rest > 0)
        this.showMessage(`${rest} more file${rest > 1 ? "s have" : " has"} unsaved text from a server that stopped: "Recover unsaved text" reopens ${rest > 1 ? "them" : "it"}`);
    } catch (e) { console.error("recovery failed", e); }
  }

  private async recoverAll(): Promise<void> {
    try {
      const r: any = await this.rpc.request("session/recover", {});
      const docs: any[] = Array.isArray(r?.documents) ? r.documents : [];
      for (const d of docs) if (typeof d?.uri === "string") await this.openUri(d.uri);
      this.showMessage(docs.length ? `Recovered ${docs.length} file${docs.length > 1 ? "s" : ""} with unsaved text` : "Nothing to recover");
    } catch (e: any) { this.showMessage(`Recovery failed: ${e?.message ?? e}`, "error"); }
  }

  /** After a reconnect document ids may have changed: open every tab's URI again and rebind its view. */
  private async reopenTabs(): Promise<void> {
    const activeUri = this.active?.doc.uri;
    // A server that was restarted kept the unsaved text in its journal, not open.
    await this.recover(this.tabs.map((t) => t.doc.uri));
    for (const tab of [...this.tabs]) {
      tab.view?.dispose();
      tab.view = null;
      tab.host.replaceChildren();
      try {
        const r: any = await this.rpc.request("document/open", { uri: tab.doc.uri });
        tab.doc = { documentId: r.documentId, uri: r.info?.uri ?? tab.doc.uri, title: tab.doc.title };
        this.applyInfo(tab, r.info);
        tab.view = this.makeView(tab);
      } catch (e: any) {
        this.showMessage(`${tab.doc.title} could not be opened again: ${e?.message ?? e}`, "error");
        this.removeTab(tab);
      }
    }
    const again = activeUri ? this.findTab(activeUri) : null;
    if (again || this.tabs.length) this.activate(again ?? this.tabs[0], true);
  }

  /** A page loaded anew shows its tabs again, and any unsaved text nobody holds (hot exit kept it). */
  private async restoreTabs(): Promise<void> {
    let saved: { uris?: string[]; active?: string } = {};
    try { saved = JSON.parse(sessionStorage.getItem(TABS_STORAGE_KEY) ?? "{}"); } catch { /* none */ }
    const uris = new Set(Array.isArray(saved.uris) ? saved.uris.filter((u) => typeof u === "string") : []);
    await this.recover([...uris]);
    try {
      const r: any = await this.rpc.request("document/list", {});
      for (const info of Array.isArray(r?.documents) ? r.documents : []) {
        if (!info?.isDirty || typeof info.uri !== "string" || uris.has(info.uri)) continue;
        const held: any = await this.rpc.request("document/clients", { documentId: info.documentId }).catch(() => null);
        if (held && Array.isArray(held.clients) && held.clients.length === 0) uris.add(info.uri);
      }
    } catch (e) { console.error("document/list failed", e); }
    for (const uri of uris) {
      try { if (!this.findTab(uri)) await this.openTab(uri); } catch (e) { console.error(`reopening ${uri} failed`, e); }
    }
    const active = (saved.active && this.findTab(saved.active)) || this.tabs[this.tabs.length - 1];
    if (active) this.activate(active);
  }

  private rememberTabs(): void {
    try {
      sessionStorage.setItem(TABS_STORAGE_KEY, JSON.stringify({ uris: this.tabs.map((t) => t.doc.uri), active: this.active?.doc.uri }));
    } catch { /* storage refused: nothing to keep */ }
  }

  // ---------------------------------------------------------------- tabs

  private findTab(uri: string): Tab<V> | null {
    return this.tabs.find((t) => t.doc.uri === uri || pathToUri(uriToPath(t.doc.uri)) === uri) ?? null;
  }

  private async openTab(uri: string, content?: string): Promise<Tab<V>> {
    const r: any = await this.rpc.request("document/open", content === undefined ? { uri } : { uri, content });
    const realUri: string = r.info?.uri ?? uri;
    const existing = this.findTab(realUri);
    if (existing) return existing;
    const doc: OpenDocument = { documentId: r.documentId, uri: realUri, title: basename(realUri) };
    const close = el("span", { class: "tab-close", text: "×", title: "Close (ctrl+w)" });
    const tabElement = el("div", { class: "tab", title: uriToPath(realUri), attrs: { role: "tab", "data-uri": realUri } },
      el("span", { class: "tab-title", text: doc.title }), el("span", { class: "tab-dirty", text: "●" }), close);
    const host = el("div", { class: "editor-host" });
    host.hidden = true;
    const tab: Tab<V> = { doc, languageId: "", dirty: false, tabElement, host, view: null, infoTicket: 0, infoTimer: 0 };
    tabElement.addEventListener("mousedown", (e) => {
      if (e.button === 1) { e.preventDefault(); void this.closeTab(tab); }
    });
    tabElement.addEventListener("click", (e) => {
      if (e.target === close) void this.closeTab(tab); else { this.activate(tab); tab.view?.focus(); }
    });
    this.tabBar.append(tabElement);
    this.editorArea.append(host);
    this.tabs.push(tab);
    this.applyInfo(tab, r.info);
    tab.view = this.makeView(tab);
    this.rememberTabs();
    return tab;
  }

  private makeView(tab: Tab<V>): V | null {
    try { return this.createView(this, tab.doc, tab.host); }
    catch (e: any) {
      this.showMessage(`The editor failed on ${tab.doc.title}: ${e?.message ?? e}`, "error");
      return null;
    }
  }

  private applyInfo(tab: Tab<V>, info: any): void {
    if (!info || typeof info !== "object") return;
    if (typeof info.languageId === "string") tab.languageId = info.languageId;
    if (typeof info.isDirty === "boolean") this.setDirty(tab, info.isDirty);
    if (tab === this.active) this.scheduleStatus();
  }

  private setDirty(tab: Tab<V>, dirty: boolean): void {
    tab.dirty = dirty;
    tab.tabElement.classList.toggle("dirty", dirty);
  }

  private activate(tab: Tab<V>, force = false): void {
    if (this.active === tab && !force) return;
    this.active = tab;
    for (const t of this.tabs) {
      const on = t === tab;
      t.host.hidden = !on;
      t.tabElement.classList.toggle("active", on);
      t.tabElement.setAttribute("aria-selected", String(on));
    }
    tab.tabElement.scrollIntoView({ block: "nearest", inline: "nearest" });
    this.rememberTabs();
    this.activeChanged();
  }

  private activeChanged(): void {
    const doc = this.active?.doc ?? null;
    for (const h of this.activeHandlers) {
      try { h(doc); } catch (e) { console.error("active document handler failed", e); }
    }
    this.refreshHolders();
    this.scheduleStatus();
  }

  private removeTab(tab: Tab<V>): void {
    const i = this.tabs.indexOf(tab);
    if (i < 0) return;
    tab.view?.dispose();
    tab.view = null;
    tab.tabElement.remove();
    tab.host.remove();
    this.tabs.splice(i, 1);
    if (this.active === tab) {
      this.active = null;
      const next = this.tabs[Math.min(i, this.tabs.length - 1)];
      if (next) { this.activate(next); next.view?.focus(); } else this.activeChanged();
    }
    this.rememberTabs();
  }

  /** Closes a tab, asking first when its document has unsaved edits. */
  private async closeTab(tab: Tab<V>): Promise<void> {
    if (tab.dirty) {
      const choice = await ask(`${tab.doc.title} has unsaved changes.`, [
        { label: "Save", value: "save", primary: true }, { label: "Discard", value: "discard" }, { label: "Cancel", value: "cancel" },
      ], "cancel");
      if (choice === "cancel") return;
      if (choice === "save" && !(await this.save(tab))) return;
    }
    try { await this.rpc.request("document/close", { documentId: tab.doc.documentId }); }
    catch (e) { console.error("document/close failed", e); }
    this.removeTab(tab);
  }

  /** Saves a tab's document (to `uri` for a save as); a document without a file asks where. */
  private async save(tab: Tab<V>, uri?: string, force = false): Promise<boolean> {
    if (!uri && !tab.doc.uri.startsWith("file:")) return this.saveAs(tab);
    try {
      const r: any = await this.rpc.request("document/save", { documentId: tab.doc.documentId, ...(uri ? { uri } : {}), ...(force ? { force } : {}) });
      if (r?.conflict && !force) {
        const choice = await ask(`${tab.doc.title} changed on disk since it was read.`, [
          { label: "Overwrite", value: "overwrite" }, { label: "Cancel", value: "cancel", primary: true },
        ], "cancel");
        return choice === "overwrite" ? this.save(tab, uri, true) : false;
      }
      if (r?.success === false) {
        this.showMessage(`Not saved: ${r.error ?? "the server refused"}`, "error");
        return false;
      }
      if (typeof r?.uri === "string" && r.uri !== tab.doc.uri) {
        // The view holds this object: it follows the new name.
        tab.doc.uri = r.uri;
        tab.doc.title = basename(r.uri);
        tab.tabElement.dataset.uri = r.uri;
        tab.tabElement.title = uriToPath(r.uri);
        tab.tabElement.querySelector(".tab-title")!.textContent = tab.doc.title;
        this.rememberTabs();
      }
      this.setDirty(tab, false);
      this.refreshInfo(tab);
      this.showMessage(`Saved ${tab.doc.title}`);
      return true;
    } catch (e: any) {
      this.showMessage(`Not saved: ${e?.message ?? e}`, "error");
      return false;
    }
  }

  private async saveAs(tab: Tab<V>): Promise<boolean> {
    const initial = tab.doc.uri.startsWith("file:") ? uriToPath(tab.doc.uri) : `${this.rootPath}/`;
    const path = (await promptText("Save as:", initial))?.trim();
    if (!path) return false;
    const absolute = path.startsWith("/") ? path : `${this.rootPath}/${path}`;
    return this.save(tab, pathToUri(absolute));
  }

  private untitledCount = 0;

  /** A new document without a file (untitled:), as the TUI's New file. */
  private async newFile(): Promise<void> {
    const uri = `untitled:web-${this.rpc.clientId}-${Date.now().toString(36)}-${++this.untitledCount}`;
    try {
      const tab = await this.openTab(uri, "");
      tab.doc.title = `Untitled-${this.untitledCount}`;
      tab.tabElement.querySelector(".tab-title")!.textContent = tab.doc.title;
      this.activate(tab);
      tab.view?.focus();
    } catch (e: any) { this.showMessage(`No new file: ${e?.message ?? e}`, "error"); }
  }

  /** Typing changes the document at every key: its info is asked for once the burst settles. */
  private refreshInfoSoon(tab: Tab<V>): void {
    if (tab.infoTimer) return;
    tab.infoTimer = window.setTimeout(() => { tab.infoTimer = 0; this.refreshInfo(tab); }, 150);
  }

  private refreshInfo(tab: Tab<V>): void {
    const ticket = ++tab.infoTicket;
    this.rpc.request("document/info", { documentId: tab.doc.documentId })
      .then((info) => { if (ticket === tab.infoTicket) this.applyInfo(tab, info); })
      .catch(() => { /* closed meanwhile */ });
  }

  // ---------------------------------------------------------------- the server's news

  private followServer(): void {
    const tabOf = (p: any) => this.tabs.find((t) => t.doc.documentId === p?.documentId);
    this.rpc.on("document/didChange", (p) => {
      const tab = tabOf(p);
      if (!tab) return;
      this.setDirty(tab, true);  // at once, then what the core says (an undo back to the saved text is clean)
      this.refreshInfoSoon(tab);
      if (tab === this.active) this.scheduleStatus();
    });
    this.rpc.on("document/didSave", (p) => { const tab = tabOf(p); if (tab) { this.setDirty(tab, false); this.refreshInfo(tab); } });
    this.rpc.on("document/didChangeOnDisk", (p) => {
      const tab = tabOf(p);
      if (tab) this.showMessage(`${tab.doc.title} changed on disk; the tab keeps its unsaved text (saving asks before it overwrites)`);
    });
    this.rpc.on("document/didChangeCursors", (p) => {
      if (p?.documentId !== this.active?.doc.documentId) return;
      if (p.clientId === this.rpc.clientId) this.scheduleStatus();
      else if (typeof p.clientId === "number" && p.clientId !== 0 && !this.holders.has(p.clientId)) this.refreshHolders();
    });
    this.rpc.on("client/didConnect", (p) => {
      if (typeof p?.clientId !== "number") return;
      this.otherClients.set(p.clientId, String(p.name ?? ""));
      this.showOthers();
      // Its documents come a moment after it connects.
      setTimeout(() => this.refreshHolders(), 700);
    });
    this.rpc.on("client/didDisconnect", (p) => {
      this.otherClients.delete(p?.clientId);
      this.holders.delete(p?.clientId);
      this.showOthers();
    });
    this.rpc.on("keybindings/didChange", (p) => {
      this.keymap = buildKeymap(Array.isArray(p?.bindings) ? p.bindings : []);
    });
    this.rpc.on("$/showMessage", (p) => {
      if (typeof p?.message === "string") this.showMessage(p.message, p.type === 1 ? "error" : "info");
    });
  }

  private async loadKeybindings(): Promise<void> {
    try {
      const r: any = await this.rpc.request("keybindings/get", {});
      this.keymap = buildKeymap(Array.isArray(r?.bindings) ? (r.bindings as ServerBinding[]) : []);
    } catch (e) { console.error("keybindings/get failed", e); }
  }

  /** Who else holds the active document (document/clients), for "+N other". */
  private refreshHolders(): void {
    const tab = this.active;
    if (!tab || this.rpc.state !== "open") { this.holders.clear(); this.showOthers(); return; }
    this.rpc.request("document/clients", { documentId: tab.doc.documentId }).then((r: any) => {
      if (this.active !== tab) return;
      this.holders.clear();
      for (const c of Array.isArray(r?.clients) ? r.clients : [])
        if (typeof c?.clientId === "number" && c.clientId !== 0 && c.clientId !== this.rpc.clientId) this.holders.set(c.clientId, String(c.name ?? ""));
      this.showOthers();
    }).catch(() => { /* closed meanwhile */ });
  }

  private showOthers(): void {
    const others = new Map([...this.otherClients, ...this.holders]);
    this.status.others.textContent = others.size ? `+${others.size} other${others.size > 1 ? "s" : ""}` : "";
    this.status.others.title = [...others].map(([id, name]) => `${name || "client"} (${id})${this.holders.has(id) ? ", in this file" : ""}`).join("\n");
  }

  // ---------------------------------------------------------------- status bar

  /**
   * Paints the status bar once for everything that asks during the current
   * event, touching the DOM only where its text changed: news that changes
   * nothing (a document/info answer, our own cursors echoed) must not take a
   * frame that the next key would then have to wait past (see the editor's
   * scheduleRender).
   */
  private scheduleStatus(): void {
    if (this.statusQueued) return;
    this.statusQueued = true;
    queueMicrotask(() => { this.statusQueued = false; this.paintStatus(); });
  }

  private paintStatus(): void {
    const tab = this.active;
    const pos = tab?.view?.cursorPosition?.() ?? null;
    setText(this.status.language, tab?.languageId ?? "");
    setText(this.status.position, pos ? `Ln ${pos.line + 1}, Col ${pos.character + 1}` : "");
  }

  // ---------------------------------------------------------------- commands and keys

  private registerShellCommands(): void {
    this.registerCommand("app.palette", "Command palette", () => this.palette.open(">"));
    this.registerCommand("app.help", "Help: commands and their keys", () => this.palette.open(">"));
    this.registerCommand("file.picker", "Open a file (fuzzy)", () => this.palette.open(""));
    this.registerCommand("nav.back", "Back to where the caret was before the last jump", () => { void this.goBack(); });
    this.registerCommand("file.save", "Save", () => { if (this.active) void this.save(this.active); });
    this.registerCommand("file.saveAs", "Save as...", () => { if (this.active) void this.saveAs(this.active); });
    this.registerCommand("file.new", "New file", () => { void this.newFile(); });
    this.registerCommand("tab.close", "Close the tab", () => { if (this.active) void this.closeTab(this.active); });
    this.registerCommand("tab.next", "Next tab", () => this.cycleTab(1));
    this.registerCommand("tab.previous", "Previous tab", () => this.cycleTab(-1));
    this.registerCommand("theme.choose", "Theme: choose", () => { void this.chooseTheme(); });
    this.registerCommand("theme.reload", "Theme: read the server's current theme again", () => { void this.theme.load(); });
    this.registerCommand("workspace.trust", "Trust this folder", () => {
      this.rpc.request("workspace/trust", { uri: this.rootUri, trusted: true })
        .then(() => this.trust.refresh(), (e) => this.showMessage(`Not trusted: ${e?.message ?? e}`, "error"));
    });
    this.registerCommand("view.sidebar", "Side bar: show or hide", () => {
      const s = byId("sidebar");
      s.hidden = !s.hidden;
      byId("sidebar-splitter").hidden = s.hidden;
      this.layoutChanged();
    });
    this.registerCommand("view.panel", "Bottom panel: show or hide", () => {
      const b = byId("bottom");
      if (b.hidden && this.bottom.current) this.bottom.show(this.bottom.current); else { b.hidden = true; this.layoutChanged(); }
    });
    this.registerCommand("session.recover", "Recover unsaved text left by a server that stopped", () => { void this.recoverAll(); });
    this.registerCommand("explorer.show", "Files: show the workspace's files", () => this.showSidebarView("explorer"));
  }

  private cycleTab(step: number): void {
    if (!this.tabs.length) return;
    const i = this.active ? this.tabs.indexOf(this.active) : -1;
    const next = this.tabs[(i + step + this.tabs.length) % this.tabs.length];
    this.activate(next);
    next.view?.focus();
  }

  private async chooseTheme(): Promise<void> {
    try {
      const r: any = await this.rpc.request("theme/list", {});
      const current = this.theme.current?.id;
      const themes: any[] = Array.isArray(r?.themes) ? r.themes : [];
      this.palette.choose(themes.map((t) => ({
        label: String(t.name ?? t.id), detail: `${t.type ?? ""}${t.id === current ? ", current" : ""}`,
        run: () => {
          this.rpc.request("theme/set", { themeId: t.id }).catch((e) => this.showMessage(`Theme not set: ${e?.message ?? e}`, "error"));
        },
      })), "Choose a theme");
    } catch (e: any) { this.showMessage(`No themes: ${e?.message ?? e}`, "error"); }
  }

  private paletteCommands() {
    return [...this.commands].map(([id, c]) => ({ id, title: c.title, keys: keysOf(this.keymap, id) }));
  }

  /** Where a key press lands decides which bindings apply there (the TUI's scopes). */
  private focusScope(target: EventTarget | null): "editor" | "terminal" | "field" | "other" {
    const t = target instanceof Element ? target : null;
    if (!t || t === document.body || t === document.documentElement) return "editor";
    if (t.closest(".xterm")) return "terminal";
    // In the editor area a textarea is the view's own input; the find bar's fields are fields.
    if (this.editorArea.contains(t)) return t.closest("input, select, button") ? "field" : "editor";
    return t.closest("input, textarea, select, button, [contenteditable=''], [contenteditable='true']") ? "field" : "other";
  }

  /** The context keys the page sends to `when` clauses (any other key counts as true). */
  private whenContext(scope: "editor" | "terminal" | "field" | "other"): Record<string, string | boolean> {
    const tab = this.active;
    const name = tab ? tab.doc.title : "";
    const dot = name.lastIndexOf(".");
    const editor = scope === "editor" && !!tab;
    return {
      editorFocus: editor, editorTextFocus: editor, textInputFocus: editor || scope === "field",
      inputFocus: scope === "field", terminalFocus: scope === "terminal", paletteOpen: this.palette.isOpen,
      editorIsOpen: !!tab, editorLangId: tab?.languageId ?? "", resourceExtname: dot > 0 ? name.slice(dot) : "",
    };
  }

  private onKeyDown(e: KeyboardEvent): void {
    if (e.defaultPrevented || e.isComposing || e.keyCode === 229) return;
    if (document.querySelector(".dialog-backdrop")) return;
    const name = keyName(e);
    if (!name) return;
    const scope = this.focusScope(e.target);
    const binding = resolveKey(this.keymap, name, this.whenContext(scope), (c) => this.commands.has(c));
    if (!binding) return;
    const modified = e.ctrlKey || e.altKey || e.metaKey || /^(shift\+)?f\d+$/.test(name);
    if (scope === "terminal" && !PANE_COMMANDS.has(binding.command)) return;
    if ((scope === "field" || scope === "other") && (!modified || TEXT_FIELD_KEYS.test(name))) return;
    if (NATIVE_CLIPBOARD_KEYS.get(name) === binding.command) return;
    e.preventDefault();
    e.stopPropagation();
    this.runCommand(binding.command, binding.args);
  }

  // ---------------------------------------------------------------- layout

  private layoutChanged(): void {
    // Views that measure themselves (the terminal's fit, the editor's rows) follow a resize event.
    window.dispatchEvent(new Event("resize"));
  }

  private buildSplitters(): void {
    const root = document.documentElement.style;
    const sidebarSplit = el("div", { class: "splitter splitter-v", attrs: { id: "sidebar-splitter", role: "separator", "aria-orientation": "vertical" } });
    byId("sidebar").after(sidebarSplit);
    this.dragSplitter(sidebarSplit, "x", (start, delta) => {
      root.setProperty("--sidebar-width", `${Math.max(120, Math.min(window.innerWidth * 0.6, start + delta))}px`);
    }, () => byId("sidebar").getBoundingClientRect().width);

    const bottomSplit = el("div", { class: "splitter splitter-h", attrs: { id: "bottom-splitter", role: "separator", "aria-orientation": "horizontal" } });
    byId("bottom").before(bottomSplit);
    this.dragSplitter(bottomSplit, "y", (start, delta) => {
      root.setProperty("--bottom-height", `${Math.max(80, Math.min(window.innerHeight * 0.8, start - delta))}px`);
    }, () => byId("bottom").getBoundingClientRect().height);

    const rightSplit = el("div", { class: "splitter splitter-v", attrs: { id: "right-splitter", role: "separator", "aria-orientation": "vertical" } });
    rightSplit.hidden = true;
    this.rightPane.before(rightSplit);
    this.dragSplitter(rightSplit, "x", (start, delta) => {
      root.setProperty("--right-width", `${Math.max(200, Math.min(window.innerWidth * 0.6, start - delta))}px`);
    }, () => this.rightPane.getBoundingClientRect().width);
  }

  private dragSplitter(handle: HTMLElement, axis: "x" | "y", apply: (start: number, delta: number) => void, size: () => number): void {
    handle.addEventListener("pointerdown", (down) => {
      down.preventDefault();
      handle.setPointerCapture(down.pointerId);
      const start = size();
      const origin = axis === "x" ? down.clientX : down.clientY;
      document.body.classList.add(axis === "x" ? "resizing-x" : "resizing-y");
      const move = (e: PointerEvent) => { apply(start, (axis === "x" ? e.clientX : e.clientY) - origin); this.layoutChanged(); };
      const up = () => {
        handle.removeEventListener("pointermove", move);
        handle.removeEventListener("pointerup", up);
        handle.removeEventListener("pointercancel", up);
        document.body.classList.remove("resizing-x", "resizing-y");
      };
      handle.addEventListener("pointermove", move);
      handle.addEventListener("pointerup", up);
      handle.addEventListener("pointercancel", up);
    });
  }
}
