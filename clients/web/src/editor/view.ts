// The editor view: a window onto one document of the core. It shows the
// lines of one screen (fetched with document/viewport), the caller's and the
// other clients' cursors, and sends every edit and move to the core; the only
// text it keeps is the lines it shows. Keys typed here are painted at once and
// confirmed by the core's document/didChange (see model.ts).
import type { App, OpenDocument, Position } from "../app";
import {
  LineWindow, comparePos, caretsAfter, predictedLine, selectionRange, transformCursor, samePos,
  type Change, type Cursor, type Pos, type Prediction, type Token, type WireRange,
} from "./model";
import { LineLayout } from "./layout";
import { COMPOSITION_SCOPE, RowPool, escapeHtml, orderTokens, rowHtml, setLayer, type Placed } from "./render";
import { TokenTheme, tokenTheme } from "./theme";
import { InputHandler } from "./input";
import { FindBar } from "./find";
import { LspFeatures } from "./lsp";
import { Refactor } from "./refactor";
import { installCommands } from "./commands";
import "./editor.css";

/** One visual row on screen: a line, or one part of a wrapped line. */
interface VisualRow { line: number; row: number; from: number; to: number; y: number; layout: LineLayout | null }

const GUTTER_PAD = 12;
const TEXT_PAD = 4;
const SCROLLBAR_WIDTH = 12;
/** Rows longer than this many columns are painted only around what the screen shows. */
const LONG_ROW = 4000;
/** Renders asked for closer together than this wait for the next frame instead (a flood of news). */
const RENDER_SPACING_MS = 4;
/**
 * Tokens that land while the user types wait this long after the last key
 * before they get a frame of their own; a key typed meanwhile paints them
 * with its own text. A frame keeps the browser's compositor ticking for about
 * two vsync intervals after it, and a key typed in that time waits for the
 * next tick (up to 16.7 ms) instead of being painted at once.
 */
const TYPING_PAUSE_MS = 250;
const WORD = /[A-Za-z0-9_]/;

export class EditorView {
  readonly root: HTMLDivElement;
  readonly rpc: App["rpc"];
  readonly win = new LineWindow();
  /** The caller's cursors as shown: the core's, moved by what was typed since (primary first). */
  cursors: Cursor[] = [{ position: { line: 0, column: 0 } }];
  readonly others = new Map<number, { name: string; cursors: Cursor[] }>();
  predictions: Prediction[] = [];
  /** An input method's text being composed at the primary caret, shown but not sent. */
  composition: string | null = null;
  wrap = false;
  tabWidth = 4;
  top = 0;
  left = 0;
  charWidth = 8;
  lineHeight = 19;
  languageId = "";
  indentUnit = "    ";

  private readonly gutter: HTMLDivElement;
  private readonly textArea: HTMLDivElement;
  private readonly textLayer: HTMLDivElement;
  private readonly rowsEl: HTMLDivElement;
  private readonly underlay: HTMLDivElement;
  private readonly overlay: HTMLDivElement;
  private readonly caretLayer: HTMLDivElement;
  private readonly track: HTMLDivElement;
  private readonly thumb: HTMLDivElement;
  readonly input: InputHandler;
  private readonly gutterRows: RowPool;
  private readonly textRows: RowPool;
  private blinkTimer = 0;
  private blinkOff = false;
  private readonly rowCache = new Map<string, { text: string; tokens: Token[] | undefined; from: number; to: number; theme: TokenTheme; html: string; left: number }>();
  /** Sizes as the last resize said (read here, never from the DOM while painting, which would force a layout). */
  private width = 0;
  private height = 0;
  private gutterWidth = 0;
  private get textWidth(): number { return Math.max(0, this.width - this.gutterWidth - SCROLLBAR_WIDTH); }
  private get textHeight(): number { return this.height; }
  readonly find: FindBar;
  readonly lsp: LspFeatures;
  readonly refactor: Refactor;

  private theme = new TokenTheme([]);
  private readonly themeSub: { theme: () => Promise<TokenTheme>; unsubscribe: () => void };
  private readonly unsubscribe: (() => void)[] = [];
  private readonly resize: ResizeObserver;
  private disposed = false;
  private frame = 0;
  private renderQueued = false;
  private lastRender = -Infinity;
  /** When the user last typed or deleted here, and the timer that paints tokens once typing pauses. */
  private lastKeyAt = -Infinity;
  private tokenPaintTimer = 0;
  /** The primary caret the last render drew: the status bar is told when it moves. */
  private paintedCaret: Pos | null = null;
  private opSeq = 0;
  private pendingOps = 0;
  /** The last request whose carets were not predicted, and the last whose carets were read back. */
  private uncertainSeq = 0;
  private cursorsSeq = 0;
  private followCaret = false;
  private viewportInFlight = false;
  private viewportAgain = false;
  private cursorsInFlight = false;
  private othersAsked = false;
  private rows: VisualRow[] = [];
  private layouts = new Map<number, LineLayout>();
  private desiredX: number | null = null;
  private selectionText: string | null = "";
  private selectionAsked = 0;
  private drag: { anchor: Pos; additive: boolean } | null = null;
  private dragTimer = 0;
  private thumbDrag: { startY: number; startTop: number } | null = null;
  /** Find matches to highlight on the lines shown. */
  matches: WireRange[] = [];

  constructor(readonly app: App, readonly doc: OpenDocument, readonly host: HTMLElement) {
    this.rpc = app.rpc;
    const el = (cls: string, parent: HTMLElement, tag = "div") => {
      const e = document.createElement(tag);
      e.className = cls;
      parent.appendChild(e);
      return e as HTMLDivElement;
    };
    this.root = document.createElement("div");
    this.root.className = "ecp-editor";
    this.root.dataset.documentId = doc.documentId;
    this.gutter = el("ecp-gutter", this.root);
    this.textArea = el("ecp-text", this.root);
    this.textLayer = el("ecp-text-layer", this.textArea);
    this.underlay = el("ecp-underlay", this.textLayer);
    this.rowsEl = el("ecp-rows", this.textLayer);
    this.overlay = el("ecp-overlay", this.textLayer);
    this.caretLayer = el("ecp-carets", this.textLayer);
    this.track = el("ecp-scrollbar", this.root);
    this.thumb = el("ecp-thumb", this.track);
    host.appendChild(this.root);
    this.gutterRows = new RowPool(this.gutter);
    this.textRows = new RowPool(this.rowsEl);

    this.input = new InputHandler(this);
    this.find = new FindBar(this);
    this.lsp = new LspFeatures(this);
    this.refactor = new Refactor(this);

    this.themeSub = tokenTheme(app, () => void this.loadTheme());
    void this.loadTheme();
    this.applyColors();
    this.unsubscribe.push(app.onThemeChange(() => { if (!this.disposed) { this.applyColors(); this.scheduleRender(); } }));

    this.listen();
    this.bindMouse();
    // Letting go of a document sends nothing: the others' carets are checked now and then while any are drawn.
    const presence = window.setInterval(() => { if (this.others.size && this.rpc.state === "open") void this.loadOthers(); }, 10000);
    this.unsubscribe.push(() => clearInterval(presence));
    this.resize = new ResizeObserver((entries) => {
      const box = entries[entries.length - 1]?.contentRect;
      if (box) { this.width = box.width; this.height = box.height; }
      this.measure();
      this.ensureWindow();
      this.scheduleRender();
    });
    this.resize.observe(this.root);
    this.measure();
    void this.load();
  }

  // ---- the contract ----

  focus(): void { this.input.focus(); }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const u of this.unsubscribe) u();
    this.themeSub.unsubscribe();
    this.resize.disconnect();
    cancelAnimationFrame(this.frame);
    clearTimeout(this.viewportSoonTimer);
    clearTimeout(this.tokenPaintTimer);
    clearInterval(this.blinkTimer);
    this.lsp.dispose();
    this.input.dispose();
    this.root.remove();
  }

  /** Scrolls so a position shows, with some lines around it. */
  reveal(pos: Position): void {
    const p = { line: pos.line, column: (pos as any).character ?? (pos as any).column ?? 0 };
    this.revealPos(p, true);
    this.scheduleRender();
  }

  cursorPosition(): Position | null {
    const c = this.cursors[0];
    return c ? { line: c.position.line, character: c.position.column } : null;
  }

  get documentId(): string { return this.doc.documentId; }
  get isDisposed(): boolean { return this.disposed; }

  // ---- what the core says ----

  private listen(): void {
    const on = (method: string, h: (p: any) => void) => this.unsubscribe.push(this.rpc.on(method, (p) => { if (!this.disposed) h(p); }));
    const mine = (p: any) => p && p.documentId === this.doc.documentId;
    on("document/didChange", (p) => { if (mine(p)) this.onDidChange(p); });
    on("document/didChangeCursors", (p) => { if (mine(p)) this.onDidChangeCursors(p); });
    on("syntax/didChange", (p) => { if (mine(p)) this.onSyntaxChange(p.ranges ?? []); });
    on("lsp/didPublishDiagnostics", (p) => { if (p && this.sameUri(p.uri)) this.requestViewport(); });
    on("config/didChange", (p) => {
      if (p?.key === "editor.wordWrap") this.setWrap(p.value === "on" || p.value === "bounded" || p.value === "wordWrapColumn" || p.value === true);
      if (p?.key === "editor.tabSize" && typeof p.value === "number") { void this.loadInfo(); }
    });
    on("client/didDisconnect", (p) => { if (p && this.others.delete(p.clientId)) this.scheduleRender(); });
    on("document/didClose", (p) => { if (mine(p)) this.others.clear(); });
    // A reconnect gives documents new ids: the shell makes the views again (onReady keeps no handler of a view).
  }

  sameUri(uri: string): boolean {
    const strip = (u: string) => decodeURIComponent(String(u ?? "").replace(/^file:\/\//, ""));
    return strip(uri) === strip(this.doc.uri);
  }

  private async load(): Promise<void> {
    if (this.rpc.state !== "open") return;
    this.predictions = [];
    this.win.valid = false;
    await Promise.all([this.loadInfo(), this.loadWrap()]);
    this.requestViewport();
    this.requestCursors();
    void this.loadOthers();
  }

  private async loadInfo(): Promise<void> {
    try {
      const [info, tab] = await Promise.all([
        this.rpc.request("document/info", { documentId: this.doc.documentId }),
        this.rpc.request("config/get", { key: "editor.tabSize" }).catch(() => null),
      ]);
      this.languageId = info?.languageId ?? "";
      if (typeof info?.lineCount === "number" && !this.win.valid) this.win.lineCount = info.lineCount;
      // A tab is worth one of the document's indent units (its .editorconfig's, else what its lines show).
      const size = info?.indent?.size > 0 ? info.indent.size : tab?.value;
      if (typeof size === "number" && size > 0 && size <= 32) this.tabWidth = size;
      const unit = info?.indent?.size > 0 && info.indent.size <= 16 ? info.indent.size : 4;
      this.indentUnit = info?.indent?.style === "tabs" ? "\t" : " ".repeat(unit);
      this.layouts.clear();
      this.scheduleRender();
    } catch { /* the document is gone: the shell closes its tab */ }
  }

  private async loadWrap(): Promise<void> {
    try {
      const r = await this.rpc.request("config/get", { key: "editor.wordWrap" });
      this.setWrap(r?.value === "on" || r?.value === "bounded" || r?.value === "wordWrapColumn");
    } catch { /* the setting is optional */ }
  }

  private async loadTheme(): Promise<void> {
    this.theme = await this.themeSub.theme();
    this.scheduleRender();
  }

  private async loadOthers(): Promise<void> {
    try {
      const r = await this.rpc.request("document/clients", { documentId: this.doc.documentId });
      // Whoever no longer holds the document (a closed tab) is no longer drawn.
      const holding = new Set<number>((r?.clients ?? []).map((c: any) => c.clientId));
      for (const id of [...this.others.keys()]) if (!holding.has(id)) this.others.delete(id);
      for (const c of r?.clients ?? []) {
        if (c.clientId === this.rpc.clientId) continue;
        this.others.set(c.clientId, { name: c.name || `client ${c.clientId}`, cursors: c.cursors ?? [] });
      }
      this.scheduleRender();
    } catch { /* presence is a nicety */ }
  }

  private onDidChange(p: { version: number; changes: Change[] }): void {
    const changes = p.changes ?? [];
    const head = this.predictions[0];
    let own = false;
    if (head && head.at.length === changes.length && changes.length > 0 &&
        changes.every((c) => c.text === head.text && (c.rangeLength ?? 0) === head.deleteCount)) {
      own = true;
      this.predictions.shift();
    }
    let ok = true;
    for (const ch of changes) {
      if (!this.win.apply(ch)) ok = false;
      if (!own) {
        for (const o of this.others.values()) o.cursors = o.cursors.map((c) => transformCursor(c, ch));
        for (const pr of this.predictions) pr.at = pr.at.map((a) => transformCursorPos(a, ch));
        if (this.pendingOps === 0) this.cursors = this.cursors.map((c) => transformCursor(c, ch));
        this.matches = [];
      } else {
        for (const o of this.others.values()) o.cursors = o.cursors.map((c) => transformCursor(c, ch));
      }
    }
    this.win.version = Math.max(this.win.version, p.version);
    // The caller's own key changed its lines only; anyone else's edit may move every line.
    if (own && ok) for (const ch of changes) this.layouts.delete(ch.range.start.line);
    else this.layouts.clear();
    if (!ok || !own) this.requestViewport(); else this.requestViewportSoon();
    // Someone else's edit moves the caller's cursors too, and no notification says where.
    if (!own && this.pendingOps === 0) this.requestCursors();
    this.selectionText = null;
    this.find.documentChanged();
    this.scheduleRender();
  }

  /**
   * A reparse landed: the tokens of the lines it names that the window holds
   * are read again (a key's reparse names a line or two, so this is small).
   */
  private onSyntaxChange(ranges: { startLine: number; endLine: number }[]): void {
    const w = this.win;
    if (!w.valid) return;
    const first = w.start, last = w.start + w.text.length - 1;
    let lo = Infinity, hi = -1;
    for (const r of ranges) {
      if (r.endLine < first || r.startLine > last) continue;
      lo = Math.min(lo, Math.max(r.startLine, first));
      hi = Math.max(hi, Math.min(r.endLine, last));
    }
    if (hi < 0) return;
    if (hi - lo > 64) { this.requestViewport(); return; }
    this.tokensWanted = this.tokensWanted ? { lo: Math.min(lo, this.tokensWanted.lo), hi: Math.max(hi, this.tokensWanted.hi) } : { lo, hi };
    if (!this.tokensInFlight) this.requestTokens();
  }

  private tokensWanted: { lo: number; hi: number } | null = null;
  private tokensInFlight = false;

  private requestTokens(): void {
    const want = this.tokensWanted;
    if (!want || this.disposed || this.rpc.state !== "open") return;
    this.tokensWanted = null;
    this.tokensInFlight = true;
    this.rpc.request("syntax/documentTokens", { documentId: this.doc.documentId, startLine: want.lo, endLine: want.hi })
      .then((r) => {
        // Lines are numbered as the core has them now, which is what the window says once every didChange before this answer is applied.
        const lines: Token[][] = r?.lines ?? [];
        lines.forEach((tokens, i) => {
          const line = want.lo + i;
          if (this.win.has(line)) this.win.tokens[line - this.win.start] = tokens;
        });
        this.scheduleTokenPaint();
      })
      .catch(() => this.requestViewport())
      .finally(() => { this.tokensInFlight = false; if (this.tokensWanted) this.requestTokens(); });
  }

  /**
   * Paints tokens that landed: at once when the user is not typing, else with
   * the next key (whose render paints whatever tokens the window holds) or
   * once typing pauses (see TYPING_PAUSE_MS).
   */
  private scheduleTokenPaint(): void {
    const quiet = performance.now() - this.lastKeyAt;
    if (quiet >= TYPING_PAUSE_MS) { this.scheduleRender(); return; }
    if (this.tokenPaintTimer) return;
    this.tokenPaintTimer = window.setTimeout(() => { this.tokenPaintTimer = 0; this.scheduleTokenPaint(); }, TYPING_PAUSE_MS - quiet);
  }

  private onDidChangeCursors(p: { clientId: number; cursors: Cursor[] }): void {
    if (p.clientId === this.rpc.clientId) {
      // Answers to keys still on their way would take the caret back; the last one's cursors follow.
      if (this.pendingOps === 0) this.setOwnCursors(p.cursors, true);
      return;
    }
    const known = this.others.get(p.clientId);
    if (known) known.cursors = p.cursors;
    else {
      this.others.set(p.clientId, { name: `client ${p.clientId}`, cursors: p.cursors });
      if (!this.othersAsked) { this.othersAsked = true; void this.loadOthers().finally(() => { this.othersAsked = false; }); }
    }
    this.scheduleRender();
  }

  private setOwnCursors(cursors: Cursor[] | undefined, follow: boolean): void {
    if (!cursors || cursors.length === 0) return;
    // The core's answer to a key painted ahead usually says what is shown already: nothing to paint.
    if (sameCursors(cursors, this.cursors)) {
      this.followCaret = false;
      if (this.selectionText === null && this.pendingOps === 0) this.prefetchSelection();
      return;
    }
    this.cursors = cursors;
    this.selectionText = null;
    if (follow || this.followCaret) { this.followCaret = false; this.revealPos(cursors[0].position, false); }
    this.input.placeTextarea();
    this.lsp.cursorMoved();
    if (this.pendingOps === 0) this.prefetchSelection();
    this.scheduleRender();
    this.cursorsChanged();
  }

  /** Tells whoever shows the caret's position (the status bar) that it moved; it bubbles from the view's root. */
  private cursorsChanged(): void {
    this.root.dispatchEvent(new CustomEvent("ecp-cursorchange", { bubbles: true }));
  }

  requestCursors(): void {
    if (this.cursorsInFlight) return;
    this.cursorsInFlight = true;
    const seq = this.opSeq;
    this.rpc.request("document/cursors", { documentId: this.doc.documentId })
      .then((r) => { if (seq === this.opSeq && this.pendingOps === 0) this.setOwnCursors(r?.cursors, false); })
      .catch(() => {})
      .finally(() => { this.cursorsInFlight = false; });
  }

  // ---- the window of lines ----

  /** Rows that fit on screen, counting a partly shown one at the bottom. */
  get screenRows(): number { return Math.max(1, Math.ceil(this.textHeight / this.lineHeight) + 1); }
  get fullRows(): number { return Math.max(1, Math.floor(this.textHeight / this.lineHeight)); }
  get lineCount(): number { return this.win.lineCount; }

  private wantedRange(): { first: number; last: number } {
    const first = Math.floor(this.top);
    return { first, last: Math.min(this.lineCount, first + this.screenRows + 1) };
  }

  /** Fetches the lines around the screen when the window does not hold them. */
  ensureWindow(): void {
    // A screen the answers do not cover (the document shrank meanwhile) is asked for a few times, not forever.
    this.refetchBudget = 3;
    if (!this.windowCovers()) this.requestViewport();
  }

  private refetchBudget = 3;

  private viewportSoonTimer = 0;
  /**
   * After the caller's own key the lines shown are right already, and the
   * tokens follow the reparse (syntax/didChange): the lines are read again
   * only once typing pauses, to be sure of them.
   */
  private requestViewportSoon(): void {
    clearTimeout(this.viewportSoonTimer);
    this.viewportSoonTimer = window.setTimeout(() => { this.viewportSoonTimer = 0; this.requestViewport(); }, 400);
  }

  requestViewport(): void {
    if (this.disposed || this.rpc.state !== "open") return;
    if (this.viewportInFlight) { this.viewportAgain = true; return; }
    this.viewportInFlight = true;
    const rows = this.screenRows;
    const margin = Math.max(4, rows >> 1);
    const startLine = Math.max(0, Math.floor(this.top) - margin);
    const lineCount = rows + 2 * margin;
    this.rpc.request("document/viewport", {
      documentId: this.doc.documentId, startLine, lineCount, include: ["tokens", "diagnostics"],
    }).then((r) => {
      if (this.disposed || !r) return;
      if (r.version < this.win.version && this.win.valid) { this.viewportAgain = true; return; }
      this.win.replace(r);
      this.layouts.clear();
      this.clampTop();
      this.lsp.diagnosticsChanged();
      this.find.windowChanged();
      this.scheduleRender();
    }).catch(() => {}).finally(() => {
      this.viewportInFlight = false;
      if (this.viewportAgain) { this.viewportAgain = false; this.requestViewport(); }
      else if (this.refetchBudget > 0 && !this.windowCovers()) { this.refetchBudget--; this.requestViewport(); }
    });
  }

  /** Whether the window holds every line the screen shows. */
  private windowCovers(): boolean {
    const { first, last } = this.wantedRange();
    const w = this.win;
    return w.valid && first >= w.start && Math.min(last, this.lineCount) <= w.start + w.text.length;
  }

  /** Shows (or with null, drops) an input method's composition at the primary caret. */
  setComposition(text: string | null): void {
    this.composition = text;
    const c = this.cursors[0];
    if (c) this.layouts.delete(c.position.line);
    this.renderNow();
  }

  /** A line's text as shown (predictions and composition included), or undefined when not fetched. */
  lineText(line: number): string | undefined {
    const t = this.win.line(line);
    if (t === undefined) return undefined;
    if (this.predictions.length === 0 && this.composition === null) return t;
    return this.shownLine(line)!.text;
  }

  private shownLine(line: number): { text: string; tokens: Token[] | undefined } | undefined {
    const text = this.win.line(line);
    if (text === undefined) return undefined;
    let out = this.predictions.length ? predictedLine(text, this.win.lineTokens(line), line, this.predictions)
      : { text, tokens: this.win.lineTokens(line) };
    const c = this.cursors[0]?.position;
    if (this.composition && c && c.line === line) {
      const col = Math.min(c.column, out.text.length), n = this.composition.length;
      const tokens = (out.tokens ?? []).map((t) => t.end <= col ? t : t.start >= col ? { ...t, start: t.start + n, end: t.end + n } : { ...t, end: t.end + n });
      tokens.push({ start: col, end: col + n, scope: COMPOSITION_SCOPE });
      tokens.sort((a, b) => a.start - b.start);
      out = { text: out.text.slice(0, col) + this.composition + out.text.slice(col), tokens: splitAround(tokens, col, col + n) };
    }
    return out;
  }

  layoutOf(line: number): LineLayout | null {
    let l = this.layouts.get(line);
    if (l) return l;
    const shown = this.shownLine(line);
    if (!shown) return null;
    l = new LineLayout(shown.text, this.tabWidth, this.wrap ? this.wrapColumns() : 0);
    this.layouts.set(line, l);
    return l;
  }

  private wrapColumns(): number {
    return Math.max(8, Math.floor((this.textWidth - TEXT_PAD * 2 - 2) / this.charWidth));
  }

  private rowsOf(line: number): number { return this.wrap ? (this.layoutOf(line)?.rows ?? 1) : 1; }

  // ---- scrolling: a fractional top line, never a tall element ----

  maxTop(): number {
    if (this.wrap) return Math.max(0, this.lineCount - 1);
    return Math.max(0, this.lineCount - this.fullRows + 1);
  }

  private clampTop(): void {
    this.top = Math.max(0, Math.min(this.top, this.maxTop()));
  }

  setTop(top: number): void {
    const old = this.top;
    this.top = top;
    this.clampTop();
    if (this.top !== old) {
      this.ensureWindow();
      this.lsp.hideHover();
      this.scheduleRender();
    }
  }

  /** Scrolls by visual rows (fractions allowed). */
  scrollRows(delta: number): void {
    if (!this.wrap) { this.setTop(this.top + delta); return; }
    let line = Math.floor(this.top);
    let offset = (this.top - line) * this.rowsOf(line) + delta;
    for (let guard = 0; guard < 100000; guard++) {
      const n = this.rowsOf(line);
      if (offset >= n && line < this.lineCount - 1) { offset -= n; line++; continue; }
      if (offset < 0 && line > 0) { line--; offset += this.rowsOf(line); continue; }
      break;
    }
    const n = this.rowsOf(line);
    this.setTop(line + Math.max(0, Math.min(offset, n - 1e-6)) / n);
  }

  scrollLeft(px: number): void {
    const old = this.left;
    this.left = this.wrap ? 0 : Math.max(0, this.left + px);
    if (old !== this.left) this.scheduleRender();
  }

  /** Brings a position on screen: `center` puts a far one in the middle. */
  revealPos(p: Pos, center: boolean): void {
    const rows = this.fullRows;
    const line = p.line;
    if (this.wrap) {
      const row = this.layoutOf(line)?.rowOf(p.column) ?? 0;
      const n = this.rowsOf(line);
      const at = line + row / n;
      if (at < this.top) this.setTop(center ? Math.max(0, line - rows / 2) : at);
      else {
        // Count the rows from the top to the caret's row; scroll when it is below the screen.
        let count = 0;
        for (let l = Math.floor(this.top); l < line && count <= rows; l++) count += this.rowsOf(l);
        count += row - (this.top - Math.floor(this.top)) * this.rowsOf(Math.floor(this.top));
        if (count >= rows) {
          if (center && count > rows * 2) this.setTop(Math.max(0, line - rows / 2));
          else this.scrollRows(count - rows + 1);
        }
      }
    } else if (line < this.top) {
      this.setTop(center && this.top - line > rows ? Math.max(0, line - Math.floor(rows / 2)) : line);
    } else if (line >= this.top + rows) {
      this.setTop(center && line - this.top > rows * 2 ? line - Math.floor(rows / 2) : line - rows + 1);
    }
    if (!this.wrap) {
      const layout = this.layoutOf(line);
      if (layout) {
        const x = layout.displayCol(p.column) * this.charWidth;
        const width = this.textWidth - TEXT_PAD * 2 - this.charWidth * 2;
        if (x < this.left) this.left = Math.max(0, x - this.charWidth * 4);
        else if (x > this.left + width) this.left = x - width + this.charWidth * 4;
      }
    }
  }

  setWrap(on: boolean): void {
    if (on === this.wrap) return;
    this.wrap = on;
    this.left = 0;
    this.layouts.clear();
    this.root.classList.toggle("wrap", on);
    this.top = Math.floor(this.top);
    this.clampTop();
    this.revealPos(this.cursors[0].position, false);
    this.scheduleRender();
  }

  // ---- painting ----

  /** The theme's editor colours as this view's CSS variables. */
  private applyColors(): void {
    const c = (name: string, fallback: string) => this.app.themeColor(name, fallback);
    const vars: Record<string, string> = {
      "--ed-bg": c("editor.background", "#1e1e1e"),
      "--ed-fg": c("editor.foreground", "#d4d4d4"),
      "--ed-line": c("editor.lineHighlightBackground", "#2a2d2e"),
      "--ed-selection": c("editor.selectionBackground", "#264f78"),
      "--ed-caret": c("editorCursor.foreground", "#aeafad"),
      "--ed-ln": c("editorLineNumber.foreground", "#858585"),
      "--ed-ln-active": c("editorLineNumber.activeForeground", "#c6c6c6"),
      "--ed-gutter": c("editorGutter.background", c("editor.background", "#1e1e1e")),
      "--ed-widget": c("editorWidget.background", c("sideBar.background", "#252526")),
      "--ed-border": c("panel.border", "#454545"),
    };
    for (const [k, v] of Object.entries(vars)) this.root.style.setProperty(k, v);
  }

  measure(): void {
    const probe = document.createElement("span");
    probe.className = "ecp-measure";
    probe.textContent = "M".repeat(100);
    this.rowsEl.appendChild(probe);
    const w = probe.getBoundingClientRect().width / 100;
    const lh = parseFloat(getComputedStyle(this.rowsEl).lineHeight);
    probe.remove();
    if (w > 0) { this.charWidth = w; this.root.style.setProperty("--ed-cell", `${w}px`); }
    const box = this.root.getBoundingClientRect();
    if (!this.width && !this.height) { this.width = box.width; this.height = box.height; }
    if (lh > 0) this.lineHeight = Math.round(lh);
    this.layouts.clear();
  }

  /**
   * Renders once for everything that asks during the current event. A render
   * writes only the rows and layers whose HTML changed, so news that changes
   * nothing on screen (the echo of a key already painted, tokens that did not
   * move) asks the browser for no frame at all. Asking through
   * requestAnimationFrame would: the frame it takes is one a key typed a
   * moment later can no longer have, and that key waits for the next one, up
   * to 16.7 ms. Renders asked for faster than RENDER_SPACING_MS (a flood of
   * another client's edits, a scroll) go to the next frame, one per frame.
   */
  scheduleRender(): void {
    if (this.frame || this.renderQueued || this.disposed) return;
    if (performance.now() - this.lastRender < RENDER_SPACING_MS) {
      this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
      return;
    }
    this.renderQueued = true;
    queueMicrotask(() => {
      if (!this.renderQueued) return;  // renderNow got there first
      this.renderQueued = false;
      this.render();
    });
  }

  /** Paints now, in the event that asked (a typed key shows before the next frame). */
  renderNow(): void {
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.renderQueued = false;
    this.render();
  }

  private computeRows(): VisualRow[] {
    const rows: VisualRow[] = [];
    const height = this.textHeight;
    let line = Math.floor(this.top);
    const n0 = this.rowsOf(line);
    let y = -((this.top - line) * n0) * this.lineHeight;
    while (y < height && line < this.lineCount) {
      const layout = this.layoutOf(line);
      const count = layout && this.wrap ? layout.rows : 1;
      for (let r = 0; r < count && y < height; r++) {
        if (y + this.lineHeight > 0) {
          const from = layout ? layout.rowStarts[r] : 0;
          const to = layout ? (this.wrap ? layout.rowEnd(r) : layout.text.length) : 0;
          rows.push({ line, row: r, from, to, y, layout });
        }
        y += this.lineHeight;
      }
      line++;
    }
    return rows;
  }

  private render(): void {
    if (this.disposed) return;
    this.lastRender = performance.now();
    const rows = this.computeRows();
    this.rows = rows;
    const digits = String(Math.max(1, this.lineCount)).length;
    const gutterWidth = Math.ceil(digits * this.charWidth + GUTTER_PAD * 2);
    if (gutterWidth !== this.gutterWidth) {
      this.gutterWidth = gutterWidth;
      this.gutter.style.width = `${gutterWidth}px`;
      this.textArea.style.left = `${gutterWidth}px`;
      this.layouts.clear();
    }
    const primaryLine = this.cursors[0]?.position.line ?? -1;

    const gutter: Placed[] = [], text: Placed[] = [];
    const seen = new Set<string>();
    for (const r of rows) {
      if (r.row === 0) gutter.push({ cls: r.line === primaryLine ? "ln current" : "ln", top: r.y, html: String(r.line + 1), line: r.line });
      const shown = r.layout ? this.shownLine(r.line) : undefined;
      let body = "";
      if (r.layout && shown) {
        // A row whose text and tokens are the ones last painted keeps its HTML (a key changes one row).
        const key = `${r.line}:${r.row}`;
        const hit = this.rowCache.get(key);
        if (hit && hit.text === shown.text && hit.tokens === shown.tokens && hit.from === r.from && hit.to === r.to && hit.theme === this.theme &&
            (r.to - r.from <= LONG_ROW || hit.left === this.left)) {
          body = hit.html;
        } else {
          body = this.rowBody(r, shown.tokens);
          this.rowCache.set(key, { text: shown.text, tokens: shown.tokens, from: r.from, to: r.to, theme: this.theme, html: body, left: this.left });
        }
        seen.add(key);
      }
      text.push({ cls: r.layout ? "row" : "row pending", top: r.y, html: body, line: r.line });
    }
    for (const k of this.rowCache.keys()) if (!seen.has(k)) this.rowCache.delete(k);
    this.gutterRows.update(gutter);
    this.textRows.update(text);
    this.textLayer.style.transform = `translateX(${-this.left}px)`;
    this.paintOverlays();
    this.paintScrollbar();
    this.input.placeTextarea();
    // The status bar shows the caret painted, in this frame: a key's caret is known before the core answers.
    const caret = this.cursors[0]?.position ?? null;
    if (caret && (!this.paintedCaret || !samePos(caret, this.paintedCaret))) {
      this.paintedCaret = caret;
      this.cursorsChanged();
    }
  }

  /**
   * A row's HTML. A very long row (a minified file's line) is painted only
   * where the screen shows it, behind a blank of the width of what is left out.
   */
  private rowBody(r: VisualRow, tokens: Token[] | undefined): string {
    const layout = r.layout!;
    const ordered = orderTokens(tokens);
    if (r.to - r.from <= LONG_ROW) return rowHtml(layout, ordered, this.theme, r.from, r.to);
    const base = layout.displayCol(r.from);
    const firstCol = Math.max(0, Math.floor(this.left / this.charWidth) - 200);
    const lastCol = Math.ceil((this.left + this.textWidth) / this.charWidth) + 200;
    const from = Math.max(r.from, layout.columnAt(r.row, firstCol) - 1);
    const to = Math.min(r.to, layout.columnAt(r.row, lastCol) + 1);
    const skip = (layout.displayCol(from) - base) * this.charWidth;
    return `<span class="skip" style="width:${skip}px"></span>${rowHtml(layout, ordered, this.theme, from, Math.max(from, to))}`;
  }

  /** x of a column on a visual row, in the text layer. */
  private xOf(r: VisualRow, column: number): number {
    if (!r.layout) return TEXT_PAD;
    return TEXT_PAD + (r.layout.displayCol(column) - r.layout.displayCol(r.from)) * this.charWidth;
  }

  /** The visual row that shows a position, if on screen. */
  rowFor(p: Pos): VisualRow | undefined {
    let found: VisualRow | undefined;
    for (const r of this.rows) {
      if (r.line !== p.line) continue;
      if (!found || r.from <= p.column) found = r;
    }
    return found;
  }

  /** Where a caret at a position is drawn, relative to the editor's root, or null off screen. */
  caretPoint(p: Pos): { x: number; y: number } | null {
    const r = this.rowFor(p);
    if (!r) return null;
    return { x: this.gutterWidth + this.xOf(r, p.column) - this.left, y: r.y };
  }

  private boxes(range: WireRange, cls: string, title?: string): string {
    let out = "";
    const attr = title ? ` title="${escapeHtml(title)}"` : "";
    for (const r of this.rows) {
      if (r.line < range.start.line || r.line > range.end.line) continue;
      const from = r.line === range.start.line ? Math.max(range.start.column, r.from) : r.from;
      const lastRow = !r.layout || r.to === r.layout.text.length;
      let to = r.line === range.end.line ? Math.min(range.end.column, r.to) : r.to;
      if (r.line === range.start.line && range.start.column > r.to) continue;
      if (r.line === range.end.line && range.end.column < r.from) continue;
      if (r.line === range.end.line && range.end.column === r.from && r.row > 0) continue;
      to = Math.max(to, from);
      const x0 = this.xOf(r, from);
      let x1 = this.xOf(r, to);
      if (r.line < range.end.line && lastRow) x1 += this.charWidth * 0.6;
      if (x1 <= x0) { if (cls === "squiggle") x1 = x0 + this.charWidth; else continue; }
      out += `<div class="${cls}" style="left:${x0}px;top:${r.y}px;width:${x1 - x0}px"${attr}></div>`;
    }
    return out;
  }

  private paintOverlays(): void {
    let under = "";
    const primary = this.cursors[0];
    if (primary && !selectionRange(primary)) {
      const r = this.rowFor(primary.position);
      if (r) under += `<div class="current-line" style="top:${r.y}px;left:${this.left}px"></div>`;
    }
    const first = this.rows.length ? this.rows[0].line : 0, last = this.rows.length ? this.rows[this.rows.length - 1].line : -1;
    for (const m of this.matches) {
      if (m.end.line < first || m.start.line > last) continue;
      under += this.boxes(m, this.find.isCurrent(m) ? "match current" : "match");
    }
    for (const c of this.cursors) {
      const s = selectionRange(c);
      if (s && s.end.line >= first && s.start.line <= last) under += this.boxes(s, "selection");
    }
    for (const [id, o] of this.others) {
      for (const c of o.cursors) {
        const s = selectionRange(c);
        if (s && s.end.line >= first && s.start.line <= last) under += this.boxes(s, `remote-selection c${id % 6}`);
      }
    }
    setLayer(this.underlay, under);

    let over = "";
    for (const d of this.win.diagnostics) {
      if (d.range.end.line < first || d.range.start.line > last) continue;
      const sev = d.severity === 2 ? "warning" : d.severity === 3 || d.severity === 4 ? "info" : "error";
      over += this.boxes(d.range, `squiggle ${sev}`);
    }
    setLayer(this.overlay, over);

    let carets = "";
    for (const [id, o] of this.others) {
      for (const c of o.cursors) {
        const r = this.rowFor(c.position);
        if (!r) continue;
        carets += `<div class="remote-caret c${id % 6}" data-client="${id}" data-name="${escapeHtml(o.name)}" title="${escapeHtml(o.name)}" style="left:${this.xOf(r, c.position.column)}px;top:${r.y}px"></div>`;
      }
    }
    const compose = this.composition ? this.composition.length : 0;
    this.cursors.forEach((c, i) => {
      const r = this.rowFor(c.position);
      if (!r) return;
      const col = c.position.column + (i === 0 ? compose : 0);
      carets += `<div class="caret${i === 0 ? " primary" : ""}" style="left:${this.xOf(r, col)}px;top:${r.y}px"></div>`;
    });
    // A caret that moved is shown, and blinks again after a while.
    if (setLayer(this.caretLayer, carets)) this.restartBlink();
  }

  /**
   * The caret blinks by a class on its layer, switched from a timer: a CSS
   * animation would give every new caret a compositor layer of its own, a
   * cost each key would pay.
   */
  private restartBlink(): void {
    clearInterval(this.blinkTimer);
    if (this.blinkOff) { this.blinkOff = false; this.caretLayer.classList.remove("off"); }
    this.blinkTimer = window.setInterval(() => {
      if (!this.root.classList.contains("focused") && !this.blinkOff) return;
      this.blinkOff = !this.blinkOff;
      this.caretLayer.classList.toggle("off", this.blinkOff);
    }, 530);
  }

  private paintScrollbar(): void {
    const h = this.height;
    const total = this.lineCount + (this.wrap ? 0 : this.fullRows - 1);
    const visible = this.fullRows;
    // toggle with a force writes the attribute only when it changes (remove writes it every time)
    if (total <= visible || h <= 0 || this.maxTop() === 0) { this.track.classList.toggle("idle", true); this.thumb.style.height = "0px"; return; }
    this.track.classList.toggle("idle", false);
    const thumbH = Math.max(24, h * visible / total);
    const max = this.maxTop();
    this.thumb.style.height = `${thumbH}px`;
    this.thumb.style.top = `${max > 0 ? (this.top / max) * (h - thumbH) : 0}px`;
  }

  // ---- mouse ----

  /** The document position under a point of the page. */
  positionAt(clientX: number, clientY: number): Pos {
    const box = this.textArea.getBoundingClientRect();
    const y = clientY - box.top;
    const x = clientX - box.left + this.left - TEXT_PAD;
    let row: VisualRow | undefined;
    for (const r of this.rows) if (y >= r.y) row = r;
    if (!row) row = this.rows[0];
    if (!row) return { line: 0, column: 0 };
    if (y >= (this.rows[this.rows.length - 1]?.y ?? 0) + this.lineHeight && row.line >= this.lineCount - 1) {
      return { line: row.line, column: row.layout?.text.length ?? 0 };
    }
    if (!row.layout) return { line: row.line, column: 0 };
    return { line: row.line, column: row.layout.columnAt(row.row, Math.max(0, x / this.charWidth)) };
  }

  private bindMouse(): void {
    this.textArea.addEventListener("mousedown", (e) => this.onMouseDown(e));
    this.gutter.addEventListener("mousedown", (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      const p = this.positionAt(this.textArea.getBoundingClientRect().left + 1, e.clientY);
      const next = p.line + 1 < this.lineCount ? { line: p.line + 1, column: 0 } : { line: p.line, column: this.lineText(p.line)?.length ?? 0 };
      this.setCursors([{ position: next, selection: { anchor: { line: p.line, column: 0 }, active: next } }]);
      this.focus();
    });
    this.root.addEventListener("wheel", (e) => {
      if ((e.target as HTMLElement).closest(".ecp-popup")) return;
      e.preventDefault();
      const unit = e.deltaMode === 1 ? this.lineHeight : e.deltaMode === 2 ? this.textHeight : 1;
      let dy = e.deltaY * unit, dx = e.deltaX * unit;
      if (e.shiftKey && dx === 0) { dx = dy; dy = 0; }
      if (dy) this.scrollRows(dy / this.lineHeight);
      if (dx) this.scrollLeft(dx);
    }, { passive: false });
    const move = (e: MouseEvent) => this.onMouseMove(e);
    const up = () => { this.drag = null; this.thumbDrag = null; clearInterval(this.dragTimer); this.dragTimer = 0; };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
    this.unsubscribe.push(() => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); });
    this.track.addEventListener("mousedown", (e) => {
      e.preventDefault();
      const box = this.track.getBoundingClientRect();
      const thumbBox = this.thumb.getBoundingClientRect();
      if (e.target !== this.thumb) {
        // A click in the track puts the thumb's middle there.
        const h = box.height - thumbBox.height;
        const ratio = h > 0 ? (e.clientY - box.top - thumbBox.height / 2) / h : 0;
        this.setTop(Math.max(0, Math.min(1, ratio)) * this.maxTop());
      }
      this.thumbDrag = { startY: e.clientY, startTop: this.top };
    });
    this.textArea.addEventListener("mouseleave", () => this.lsp.mouseLeft());
  }

  private onMouseDown(e: MouseEvent): void {
    if (e.button !== 0) return;
    if ((e.target as HTMLElement).closest(".ecp-popup, .ecp-find")) return;
    e.preventDefault();
    this.focus();
    const p = this.positionAt(e.clientX, e.clientY);
    this.lsp.hideHover();
    this.lsp.closeCompletion();
    if (e.ctrlKey || e.metaKey) {
      void this.setCursors([{ position: p }]);
      void this.lsp.definitionAt(p);
      return;
    }
    if (e.detail === 2) { void this.selectWordAt(p); return; }
    if (e.detail >= 3) {
      const next = p.line + 1 < this.lineCount ? { line: p.line + 1, column: 0 } : { line: p.line, column: this.lineText(p.line)?.length ?? 0 };
      void this.setCursors([{ position: next, selection: { anchor: { line: p.line, column: 0 }, active: next } }]);
      return;
    }
    if (e.altKey) {
      this.cursors = [...this.cursors, { position: p }];
      this.send("document/addCursor", { position: p }, undefined, true);
      this.drag = { anchor: p, additive: true };
      this.scheduleRender();
      return;
    }
    if (e.shiftKey) {
      const c = this.cursors[0];
      const anchor = c.selection ? c.selection.anchor : c.position;
      void this.setCursors([{ position: p, selection: { anchor, active: p } }]);
      this.drag = { anchor, additive: false };
      return;
    }
    void this.setCursors([{ position: p }]);
    this.drag = { anchor: p, additive: false };
  }

  private lastDragPoint = { x: 0, y: 0 };
  private onMouseMove(e: MouseEvent): void {
    if (this.thumbDrag) {
      const h = this.height - this.thumb.offsetHeight;
      const max = this.maxTop();
      if (h > 0) this.setTop(this.thumbDrag.startTop + (e.clientY - this.thumbDrag.startY) / h * max);
      return;
    }
    if (this.drag && (e.buttons & 1)) {
      this.lastDragPoint = { x: e.clientX, y: e.clientY };
      this.dragTo(e.clientX, e.clientY);
      const box = this.textArea.getBoundingClientRect();
      const outside = e.clientY < box.top || e.clientY > box.bottom;
      if (outside && !this.dragTimer) {
        this.dragTimer = window.setInterval(() => {
          const b = this.textArea.getBoundingClientRect();
          const { x, y } = this.lastDragPoint;
          if (y < b.top) this.scrollRows(-Math.max(1, (b.top - y) / this.lineHeight));
          else if (y > b.bottom) this.scrollRows(Math.max(1, (y - b.bottom) / this.lineHeight));
          else { clearInterval(this.dragTimer); this.dragTimer = 0; return; }
          this.renderNow();
          this.dragTo(x, Math.max(b.top + 1, Math.min(b.bottom - 1, y)));
        }, 50);
      }
      return;
    }
    if (e.target instanceof Node && this.textArea.contains(e.target) && !(e.target as HTMLElement).closest(".ecp-popup, .ecp-find"))
      this.lsp.mouseAt(e.clientX, e.clientY);
  }

  private dragSent: Pos | null = null;
  private dragTo(x: number, y: number): void {
    if (!this.drag) return;
    const p = this.positionAt(x, y);
    if (this.dragSent && samePos(this.dragSent, p)) return;
    this.dragSent = p;
    const sel: Cursor = { position: p, selection: { anchor: this.drag.anchor, active: p } };
    if (this.drag.additive) {
      const rest = this.cursors.slice(0, -1);
      void this.setCursors([...rest, sel], { keepPrimary: true });
    } else {
      void this.setCursors([sel]);
    }
  }

  // ---- requests: every edit and move goes to the core, in the order the keys came ----

  /**
   * Sends one edit or move, then asks for the caller's cursors so the caret
   * lands where the core put it (only the last request's answer is taken, so
   * answers to earlier keys never take the caret back).
   */
  send(method: string, params: object = {}, prediction?: Prediction, certain = false): Promise<any> {
    const seq = ++this.opSeq;
    this.pendingOps++;
    // Where this request leaves the carets is known here only if it was predicted.
    if (!prediction && !certain) this.uncertainSeq = seq;
    this.followCaret = true;
    this.desiredX = method === "document/setCursor" || method === "document/setCursors" ? this.desiredX : null;
    const answer = this.rpc.request(method, { documentId: this.doc.documentId, ...params });
    answer.then((r) => {
      if (r && r.success === false && r.error) this.app.showMessage(`${method}: ${r.error}`, "error");
    }, (e) => this.app.showMessage(`${method}: ${e?.message ?? e}`, "error")).finally(() => {
      this.pendingOps--;
      if (prediction) {
        const i = this.predictions.indexOf(prediction);
        if (i >= 0) {
          // The core made another edit than the one painted: show what it holds.
          this.predictions.splice(i, 1);
          this.layouts.clear();
          this.requestViewport();
          this.scheduleRender();
        }
      }
    });
    this.rpc.request("document/cursors", { documentId: this.doc.documentId }).then((r) => {
      if (seq === this.opSeq) this.setOwnCursors(r?.cursors, false);
    }).catch(() => {}).finally(() => { this.cursorsSeq = Math.max(this.cursorsSeq, seq); });
    return answer;
  }

  /** Whether the carets shown are where the core has them once every request sent so far is done. */
  get caretsKnown(): boolean { return this.cursorsSeq >= this.uncertainSeq; }

  /** The primary caret as the core has it after every request sent so far. */
  async freshCaret(): Promise<Pos> {
    try {
      const r = await this.rpc.request("document/cursors", { documentId: this.doc.documentId });
      const p = r?.cursors?.[0]?.position;
      if (p) return p;
    } catch { /* fall back to what is shown */ }
    return this.cursors[0].position;
  }

  /** Sets the caller's cursors, showing them at once. */
  setCursors(cursors: Cursor[], opts: { keepPrimary?: boolean } = {}): Promise<any> {
    this.cursors = opts.keepPrimary ? cursors : cursors;
    this.selectionText = null;
    this.renderNow();
    if (cursors.length === 1) {
      const c = cursors[0];
      return this.send("document/setCursor", c.selection ? { position: c.position, selection: c.selection } : { position: c.position }, undefined, true);
    }
    return this.send("document/setCursors", { cursors }, undefined, true);
  }

  /** Types text at every cursor (replacing selections); painted at once when it can be predicted. */
  type(text: string): void {
    if (!text) return;
    this.lastKeyAt = performance.now();
    text = text.replace(/\r\n?/g, "\n");
    let prediction: Prediction | undefined;
    const simple = this.caretsKnown && text.indexOf("\n") < 0 && this.cursors.every((c) => !selectionRange(c)) &&
      this.cursors.every((c) => this.lineText(c.position.line) !== undefined);
    if (simple) {
      const at = this.cursors.map((c) => c.position).sort(comparePos);
      prediction = { seq: this.opSeq + 1, at, text, deleteCount: 0 };
      this.predictions.push(prediction);
      const after = caretsAfter(at, text, 0);
      const primary = this.cursors[0].position;
      const idx = at.findIndex((p) => samePos(p, primary));
      this.cursors = [after[idx], ...after.filter((_, i) => i !== idx)].map((position) => ({ position }));
      for (const l of new Set(at.map((p) => p.line))) this.layouts.delete(l);
      this.revealPos(this.cursors[0].position, false);
      this.renderNow();
    }
    this.send("document/type", { text }, prediction);
    this.lsp.typed(text);
  }

  /**
   * A paste: with as many lines as there are cursors, one line at each (in
   * document order), as editors spread a column copied from several cursors;
   * otherwise the whole text at every cursor.
   */
  paste(text: string): void {
    text = text.replace(/\r\n?/g, "\n");
    const lines = (text.endsWith("\n") ? text.slice(0, -1) : text).split("\n");
    if (this.cursors.length > 1 && lines.length === this.cursors.length) {
      this.send("document/type", { texts: lines });
      return;
    }
    this.type(text);
  }

  /** Backspace: the selections, else the character before each caret. */
  deleteBackward(): void {
    this.lastKeyAt = performance.now();
    if (this.cursors.some((c) => selectionRange(c))) { this.send("document/type", { text: "" }); return; }
    const at = this.cursors.map((c) => c.position).sort(comparePos);
    const predictable = this.caretsKnown && at.every((p) => {
      const t = this.lineText(p.line);
      if (t === undefined || p.column === 0) return false;
      const c = t.charCodeAt(p.column - 1);
      return c < 0x300 && c !== 9;
    });
    this.send("document/moveCursors", { direction: "left", unit: "character", select: true }, undefined, predictable);
    let prediction: Prediction | undefined;
    if (predictable) {
      prediction = { seq: this.opSeq + 1, at, text: "", deleteCount: 1 };
      this.predictions.push(prediction);
      const after = caretsAfter(at, "", 1);
      const primary = this.cursors[0].position;
      const idx = at.findIndex((p) => samePos(p, primary));
      this.cursors = [after[idx], ...after.filter((_, i) => i !== idx)].map((position) => ({ position }));
      for (const l of new Set(at.map((p) => p.line))) this.layouts.delete(l);
      this.renderNow();
    }
    this.send("document/type", { text: "" }, prediction);
    this.lsp.typed("\b");
  }

  /** Tab indents the lines of a selection, else types an indent at the caret. */
  tabKey(outdent: boolean): void {
    this.lsp.closeCompletion();
    if (outdent) this.send("document/outdent");
    else if (this.cursors.some((c) => selectionRange(c))) this.send("document/indent");
    else this.type(this.indentUnit);
  }

  deleteForward(): void {
    if (!this.cursors.some((c) => selectionRange(c)))
      this.send("document/moveCursors", { direction: "right", unit: "character", select: true });
    this.send("document/type", { text: "" });
  }

  move(direction: "up" | "down" | "left" | "right", unit: string, select: boolean): void {
    this.lsp.closeCompletion();
    if ((direction === "up" || direction === "down") && unit === "character" && this.wrap && this.cursors.length === 1 &&
        this.moveByVisualRow(direction === "up" ? -1 : 1, select)) return;
    if ((direction === "up" || direction === "down") && unit === "character") this.desiredX = null;
    this.send("document/moveCursors", { direction, unit, select });
  }

  /** Up and down in wrapped text go by the rows on screen, keeping the caret's x. */
  private moveByVisualRow(step: number, select: boolean): boolean {
    const c = this.cursors[0];
    const layout = this.layoutOf(c.position.line);
    if (!layout) return false;
    const row = layout.rowOf(c.position.column);
    const x = this.desiredX ?? (layout.displayCol(c.position.column) - layout.displayCol(layout.rowStarts[row]));
    let line = c.position.line, target = row + step;
    let l = layout;
    if (target < 0) {
      if (line === 0) return false;
      line--;
      const prev = this.layoutOf(line);
      if (!prev) return false;
      l = prev; target = prev.rows - 1;
    } else if (target >= layout.rows) {
      if (line + 1 >= this.lineCount) return false;
      line++;
      const next = this.layoutOf(line);
      if (!next) return false;
      l = next; target = 0;
    }
    const p = { line, column: l.columnAt(target, x) };
    const anchor = c.selection ? c.selection.anchor : c.position;
    void this.setCursors([select ? { position: p, selection: { anchor, active: p } } : { position: p }]);
    this.desiredX = x;
    return true;
  }

  page(direction: 1 | -1, select: boolean): void {
    const rows = Math.max(1, this.fullRows - 1);
    const c = this.cursors[0];
    const last = Math.max(0, this.lineCount - 1);
    const line = Math.max(0, Math.min(last, c.position.line + direction * rows));
    const len = this.lineText(line)?.length;
    const column = len === undefined ? 0 : Math.min(c.position.column, len);
    const p = { line, column: line === 0 && direction < 0 && line === c.position.line ? 0 : column };
    this.setTop(this.top + direction * rows);
    const anchor = c.selection ? c.selection.anchor : c.position;
    if (len === undefined) {
      // The target line is not fetched yet: the core moves the caret by its own page.
      this.send("document/moveCursors", { direction: direction < 0 ? "up" : "down", unit: "page", select });
      return;
    }
    void this.setCursors([select ? { position: p, selection: { anchor, active: p } } : { position: p }]);
  }

  async selectWordAt(p: Pos): Promise<void> {
    try {
      const w = await this.rpc.request("document/wordAtPosition", { documentId: this.doc.documentId, position: p });
      if (!w?.range) { void this.setCursors([{ position: p }]); return; }
      void this.setCursors([{ position: w.range.end, selection: { anchor: w.range.start, active: w.range.end } }]);
    } catch { /* gone */ }
  }

  // ---- the selections' text, for the clipboard ----

  /** The selected text, fetched after the cursors settle, so a copy event can answer at once. */
  cachedSelectionText(): string | null { return this.selectionText; }

  async selectedText(): Promise<string> {
    const asked = ++this.selectionAsked;
    try {
      const r = await this.rpc.request("document/selections", { documentId: this.doc.documentId });
      const list: string[] = Array.isArray(r) ? r : r?.selections ?? [];
      const text = list.filter((s) => s !== "").join("\n");
      if (asked === this.selectionAsked) this.selectionText = text;
      return text;
    } catch {
      return "";
    }
  }

  /** Asks for the selections' text whenever the selection settles (a small one only). */
  prefetchSelection(): void {
    const ranges = this.cursors.map(selectionRange).filter((r): r is WireRange => !!r);
    if (ranges.length === 0) { this.selectionText = ""; return; }
    const lines = ranges.reduce((n, r) => n + r.end.line - r.start.line + 1, 0);
    if (lines <= 20000) void this.selectedText();
  }

  get selectionKnown(): boolean { return this.selectionText !== null; }

  // ---- multiple cursors ----

  async nextOccurrence(): Promise<void> {
    const c = this.cursors[0];
    const sel = selectionRange(c);
    if (!sel) { await this.selectWordAt(c.position); return; }
    try {
      const sels = await this.rpc.request("document/selections", { documentId: this.doc.documentId });
      const list: string[] = Array.isArray(sels) ? sels : sels?.selections ?? [];
      const query = list[0];
      if (!query) return;
      const lastEnd = this.cursors.map((k) => selectionRange(k)?.end ?? k.position).sort(comparePos).pop()!;
      const r = await this.rpc.request("document/find", {
        documentId: this.doc.documentId, query, caseSensitive: true, from: lastEnd, limit: 1,
      });
      const m: WireRange | undefined = r?.matches?.[r.current ?? 0];
      if (!m) return;
      if (this.cursors.some((k) => { const s = selectionRange(k); return s && samePos(s.start, m.start); })) {
        this.app.showMessage("Every occurrence has a cursor");
        return;
      }
      const next: Cursor = { position: m.end, selection: { anchor: m.start, active: m.end } };
      await this.setCursors([...this.cursors, next]);
      this.revealPos(m.end, true);
      this.scheduleRender();
    } catch { /* gone */ }
  }

  addCursorVertical(step: 1 | -1): void {
    const added: Cursor[] = [];
    for (const c of this.cursors) {
      const line = c.position.line + step;
      if (line < 0 || line >= this.lineCount) continue;
      const len = this.lineText(line)?.length ?? 0;
      added.push({ position: { line, column: Math.min(c.position.column, len) } });
    }
    if (added.length === 0) return;
    void this.setCursors([...this.cursors, ...added]);
  }

  singleCursor(): void {
    const c = this.cursors[0];
    void this.setCursors([{ position: c.position }]);
  }

  // ---- prompts inside the view (go to line) ----

  prompt(label: string, initial: string, done: (value: string) => void): void {
    const box = document.createElement("div");
    box.className = "ecp-prompt ecp-popup";
    box.innerHTML = `<label>${escapeHtml(label)} <input type="text"></label>`;
    const input = box.querySelector("input")!;
    input.value = initial;
    let open = true;
    const close = () => { if (!open) return; open = false; box.remove(); this.focus(); };
    input.addEventListener("keydown", (e) => {
      e.stopPropagation();
      if (e.key === "Enter") { e.preventDefault(); const v = input.value; close(); done(v); }
      else if (e.key === "Escape") { e.preventDefault(); close(); }
    });
    input.addEventListener("blur", () => { if (open) { open = false; box.remove(); } });
    this.root.appendChild(box);
    input.focus();
    input.select();
  }

  gotoLine(): void {
    this.prompt("Go to line", String((this.cursors[0]?.position.line ?? 0) + 1), (value) => {
      const m = /^\s*(\d+)(?:[:,](\d+))?\s*$/.exec(value);
      if (!m) return;
      const line = Math.max(0, Math.min(this.lineCount - 1, parseInt(m[1], 10) - 1));
      const column = m[2] ? Math.max(0, parseInt(m[2], 10) - 1) : 0;
      this.revealPos({ line, column: 0 }, true);
      this.scheduleRender();
      void this.jumpTo({ line, column });
    });
  }

  /** Moves the caret to a position whose line may not be fetched: the column is clamped by the core's answer. */
  async jumpTo(p: Pos): Promise<void> {
    const len = this.lineText(p.line)?.length;
    let column = p.column;
    if (len === undefined) {
      try {
        const r = await this.rpc.request("document/line", { documentId: this.doc.documentId, lineNumber: p.line });
        const text = typeof r === "string" ? r : r?.text ?? "";
        column = Math.min(column, text.length);
      } catch { column = 0; }
    } else column = Math.min(column, len);
    await this.setCursors([{ position: { line: p.line, column } }]);
    this.revealPos({ line: p.line, column }, true);
    this.scheduleRender();
  }

  /** The word characters before the primary caret on its line (for completion). */
  wordBeforeCaret(): { start: Pos; text: string } | null {
    const c = this.cursors[0]?.position;
    if (!c) return null;
    const t = this.lineText(c.line);
    if (t === undefined) return null;
    let s = Math.min(c.column, t.length);
    while (s > 0 && WORD.test(t[s - 1])) s--;
    return { start: { line: c.line, column: s }, text: t.slice(s, c.column) };
  }
}

function sameCursors(a: Cursor[], b: Cursor[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (!samePos(a[i].position, b[i].position)) return false;
    const x = selectionRange(a[i]), y = selectionRange(b[i]);
    if (!x !== !y || (x && y && (!samePos(x.start, y.start) || !samePos(x.end, y.end)))) return false;
    if (x && y && !samePos(a[i].selection!.anchor, b[i].selection!.anchor)) return false;
  }
  return true;
}

/** A caret position moved by someone else's edit. */
function transformCursorPos(p: Pos, ch: Change): Pos { return transformCursor({ position: p }, ch).position; }

/** Tokens with a span cut out for the composition, so it keeps its own style. */
function splitAround(tokens: Token[], from: number, to: number): Token[] {
  const out: Token[] = [];
  for (const t of tokens) {
    if (t.scope === COMPOSITION_SCOPE || t.end <= from || t.start >= to) { out.push(t); continue; }
    if (t.start < from) out.push({ ...t, end: from });
    if (t.end > to) out.push({ ...t, start: to });
  }
  return out.sort((a, b) => a.start - b.start);
}

export function installEditorCommands(app: App, activeView: () => EditorView | null): void {
  installCommands(app, activeView);
}
