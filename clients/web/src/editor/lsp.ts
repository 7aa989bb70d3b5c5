// The language server's features inside the editor: hover (on a resting
// mouse or a key) with the diagnostics under the pointer, completion under
// the caret, and going to a definition. Requests name the document by its URI
// and a position in the page's units (UTF-16), sent after every earlier key so
// the core's text is the one shown.
import type { EditorView } from "./view";
import { comparePos, type Pos, type WireRange } from "./model";
import { escapeHtml } from "./render";

interface Item { label: string; detail: string; text: string; range: WireRange | null; sortText: string; filterText: string }

const HOVER_DELAY_MS = 300;
const WORD_CHAR = /[A-Za-z0-9_]/;

export class LspFeatures {
  private hoverEl: HTMLDivElement | null = null;
  private hoverTimer = 0;
  private hoverAsked = 0;
  private hoverAt: { x: number; y: number } | null = null;
  private list: HTMLDivElement | null = null;
  private items: Item[] = [];
  private shown: Item[] = [];
  private selected = 0;
  private completionAsked = 0;
  private completionStart: Pos | null = null;
  private triggers = ".:>";

  constructor(private readonly view: EditorView) {
    view.rpc.request("config/get", { key: "lsp.triggerCharacters" })
      .then((r) => { if (typeof r?.value === "string") this.triggers = r.value; }).catch(() => {});
  }

  dispose(): void {
    clearTimeout(this.hoverTimer);
    this.hideHover();
    this.closeCompletion();
  }

  private position(p: Pos): object { return { uri: this.view.doc.uri, position: { line: p.line, character: p.column } }; }

  private get plain(): boolean { return !this.view.languageId || this.view.languageId === "plaintext"; }

  // ---- hover ----

  mouseAt(x: number, y: number): void {
    if (this.hoverAt && Math.abs(this.hoverAt.x - x) < 4 && Math.abs(this.hoverAt.y - y) < 4) return;
    this.hoverAt = { x, y };
    clearTimeout(this.hoverTimer);
    if (this.hoverEl && !this.hoverEl.matches(":hover")) this.hideHover();
    this.hoverTimer = window.setTimeout(() => void this.hoverAtPoint(x, y), HOVER_DELAY_MS);
  }

  mouseLeft(): void {
    clearTimeout(this.hoverTimer);
    this.hoverAt = null;
    // The mouse's hover goes with it, unless the mouse went into it; one asked for since (a key's) stays.
    const asked = this.hoverAsked;
    window.setTimeout(() => { if (asked === this.hoverAsked && this.hoverEl && !this.hoverEl.matches(":hover")) this.hideHover(); }, 200);
  }

  private async hoverAtPoint(x: number, y: number): Promise<void> {
    const p = this.view.positionAt(x, y);
    const text = this.view.lineText(p.line);
    if (text === undefined || p.column >= text.length && !this.diagnosticsAt(p).length) return;
    const box = this.view.root.getBoundingClientRect();
    await this.hover(p, { x: x - box.left, y: y - box.top });
  }

  async hoverAtCaret(): Promise<void> {
    const c = await this.view.freshCaret();
    const at = this.view.caretPoint(c);
    await this.hover(c, at ?? { x: 40, y: 0 });
  }

  private diagnosticsAt(p: Pos): { message: string; severity?: number; source?: string }[] {
    return this.view.win.diagnostics.filter((d) => comparePos(d.range.start, p) <= 0 &&
      (comparePos(p, d.range.end) < 0 || (comparePos(d.range.start, d.range.end) === 0 && d.range.start.line === p.line)));
  }

  private async hover(p: Pos, at: { x: number; y: number }): Promise<void> {
    const asked = ++this.hoverAsked;
    const diags = this.diagnosticsAt(p);
    let html = diags.map((d) => `<div class="diag ${d.severity === 2 ? "warning" : d.severity && d.severity > 2 ? "info" : "error"}">${escapeHtml(d.message)}${d.source ? ` <span class="source">${escapeHtml(d.source)}</span>` : ""}</div>`).join("");
    if (diags.length) this.showHover(html, at);
    if (!this.plain) {
      try {
        const r = await this.view.rpc.request("lsp/hover", this.position(p));
        if (asked !== this.hoverAsked) return;
        const text = hoverText(r);
        if (text) html += `<pre class="hover-text">${escapeHtml(text)}</pre>`;
      } catch { /* no server: the diagnostics alone */ }
    }
    if (asked !== this.hoverAsked) return;
    if (html) this.showHover(html, at);
  }

  private showHover(html: string, at: { x: number; y: number }): void {
    if (!this.hoverEl) {
      this.hoverEl = document.createElement("div");
      this.hoverEl.className = "ecp-hover ecp-popup";
      this.hoverEl.addEventListener("mouseleave", () => this.hideHover());
      this.view.root.appendChild(this.hoverEl);
    }
    this.hoverEl.innerHTML = html;
    const el = this.hoverEl;
    el.style.left = `${Math.max(0, Math.min(at.x, this.view.root.clientWidth - 420))}px`;
    el.style.top = "0px";
    const h = el.offsetHeight;
    const below = at.y + this.view.lineHeight + 2;
    el.style.top = `${at.y - h - 2 >= 0 ? at.y - h - 2 : below}px`;
  }

  hideHover(): void {
    this.hoverAsked++;
    this.hoverEl?.remove();
    this.hoverEl = null;
  }

  // ---- diagnostics ----

  diagnosticsChanged(): void { /* squiggles are painted with the rows; their messages are read on hover */ }

  // ---- completion ----

  async complete(): Promise<void> {
    if (this.plain) return;
    const asked = ++this.completionAsked;
    try {
      // The caret as the core has it once every earlier key is applied (an Enter's indent is the core's).
      const c = await this.view.freshCaret();
      if (asked !== this.completionAsked) return;
      const text = this.view.lineText(c.line);
      let s = text === undefined ? c.column : Math.min(c.column, text.length);
      while (text !== undefined && s > 0 && WORD_CHAR.test(text[s - 1])) s--;
      const word = { start: { line: c.line, column: s } };
      const r = await this.view.rpc.request("lsp/completion", this.position(c));
      if (asked !== this.completionAsked) return;
      const raw: any[] = Array.isArray(r) ? r : r?.items ?? [];
      this.items = raw.slice(0, 500).map(toItem).filter((i): i is Item => !!i);
      this.completionStart = word.start;
      this.selected = 0;
      this.refilter();
    } catch (e: any) {
      if (asked === this.completionAsked && e?.message) this.view.app.showMessage(`Completion: ${e.message}`);
    }
  }

  /** After a key typed here: a trigger character asks, a word character narrows an open list. */
  typed(text: string): void {
    const last = text[text.length - 1];
    if (this.list && last && WORD_CHAR.test(last)) { this.refilter(); return; }
    if (last && this.triggers.includes(last) && text.length === 1) { this.closeCompletion(); void this.complete(); return; }
    if (this.list && text === "\b") { this.refilter(); return; }
    this.closeCompletion();
  }

  cursorMoved(): void {
    if (!this.list || !this.completionStart) return;
    const c = this.view.cursors[0].position;
    if (c.line !== this.completionStart.line || c.column < this.completionStart.column) this.closeCompletion();
  }

  private refilter(): void {
    const c = this.view.cursors[0].position;
    const start = this.completionStart;
    const text = this.view.lineText(c.line);
    if (!start || text === undefined || c.line !== start.line || c.column < start.column) { this.closeCompletion(); return; }
    const prefix = text.slice(start.column, c.column).toLowerCase();
    this.shown = this.items.filter((i) => fuzzy(i.filterText.toLowerCase(), prefix))
      .sort((a, b) => Number(!a.filterText.toLowerCase().startsWith(prefix)) - Number(!b.filterText.toLowerCase().startsWith(prefix)) ||
        a.sortText.localeCompare(b.sortText))
      .slice(0, 200);
    if (this.shown.length === 0) { this.closeCompletion(); return; }
    this.selected = Math.min(this.selected, this.shown.length - 1);
    this.paintList();
  }

  private paintList(): void {
    if (!this.list) {
      this.list = document.createElement("div");
      this.list.className = "ecp-completion ecp-popup";
      this.list.addEventListener("mousedown", (e) => {
        e.preventDefault();
        const row = (e.target as HTMLElement).closest("[data-i]") as HTMLElement | null;
        if (row) { this.selected = Number(row.dataset.i); this.accept(); }
      });
      this.view.root.appendChild(this.list);
    }
    this.list.innerHTML = this.shown.map((i, k) =>
      `<div class="item${k === this.selected ? " selected" : ""}" data-i="${k}"><span class="label">${escapeHtml(i.label)}</span><span class="detail">${escapeHtml(i.detail)}</span></div>`).join("");
    const at = this.view.caretPoint(this.completionStart ?? this.view.cursors[0].position);
    if (at) {
      this.list.style.left = `${at.x}px`;
      const below = at.y + this.view.lineHeight;
      const h = this.list.offsetHeight;
      this.list.style.top = `${below + h > this.view.root.clientHeight && at.y - h > 0 ? at.y - h : below}px`;
    }
    (this.list.children[this.selected] as HTMLElement | undefined)?.scrollIntoView({ block: "nearest" });
  }

  get completionOpen(): boolean { return !!this.list; }

  closeCompletion(): void {
    this.completionAsked++;
    this.list?.remove();
    this.list = null;
    this.items = [];
    this.shown = [];
  }

  /** Closes the completion list or the hover; false when neither was open. */
  closePopups(): boolean {
    const open = !!this.list || !!this.hoverEl;
    this.closeCompletion();
    this.hideHover();
    return open;
  }

  private accept(): void {
    const item = this.shown[this.selected];
    const c = this.view.cursors[0].position;
    const start = item?.range && item.range.start.line === c.line && item.range.start.column <= c.column
      ? item.range.start : this.completionStart;
    this.closeCompletion();
    if (!item || !start) return;
    if (start.line === c.line && start.column < c.column)
      void this.view.setCursors([{ position: c, selection: { anchor: start, active: c } }]);
    this.view.type(item.text);
  }

  /** The keys an open list takes: arrows choose, Enter or Tab accept, Escape closes. */
  onKey(e: KeyboardEvent): boolean {
    if (e.key === "Escape" && this.hoverEl && !this.list) { this.hideHover(); return true; }
    if (!this.list || e.ctrlKey || e.altKey || e.metaKey) return false;
    const n = this.shown.length;
    switch (e.key) {
      case "ArrowDown": this.selected = (this.selected + 1) % n; this.paintList(); return true;
      case "ArrowUp": this.selected = (this.selected - 1 + n) % n; this.paintList(); return true;
      case "PageDown": this.selected = Math.min(n - 1, this.selected + 8); this.paintList(); return true;
      case "PageUp": this.selected = Math.max(0, this.selected - 8); this.paintList(); return true;
      case "Enter": case "Tab": this.accept(); return true;
      case "Escape": this.closeCompletion(); return true;
    }
    return false;
  }

  // ---- go to definition ----

  async definitionAt(p: Pos): Promise<void> {
    if (this.plain) { this.view.app.showMessage("No language server for this document"); return; }
    try {
      const r = await this.view.rpc.request("lsp/definition", this.position(p));
      const list: any[] = Array.isArray(r) ? r : r?.locations ?? (r?.uri ? [r] : []);
      const loc = list[0];
      if (!loc) { this.view.app.showMessage("No definition found"); return; }
      const uri: string = loc.uri ?? loc.targetUri;
      const range = loc.range ?? loc.targetSelectionRange ?? loc.targetRange;
      const start = { line: range.start.line, column: range.start.character ?? range.start.column ?? 0 };
      this.view.app.rememberPlace();
      if (this.view.sameUri(uri)) await this.view.jumpTo(start);
      else await this.view.app.openUri(uri, { line: start.line, character: start.column });
    } catch (e: any) {
      this.view.app.showMessage(`Definition: ${e?.message ?? e}`, "error");
    }
  }
}

function hoverText(r: any): string {
  if (!r) return "";
  const c = r.contents ?? r;
  const one = (x: any): string => typeof x === "string" ? x : x?.value ?? "";
  const text = Array.isArray(c) ? c.map(one).filter(Boolean).join("\n\n") : one(c);
  // Markdown's code fences and escapes read badly as plain text.
  return text.replace(/^```\w*\n?|\n?```$/gm, "").replace(/\\([_*`#\\[\]()])/g, "$1").trim();
}

function toItem(it: any): Item | null {
  if (!it || typeof it.label !== "string") return null;
  const label = it.label.replace(/^[\s•]+/, "");
  let text: string = it.textEdit?.newText ?? it.insertText ?? label;
  if (it.insertTextFormat === 2) text = text.replace(/\$\{\d+:([^}]*)\}/g, "$1").replace(/\$\{\d+\}|\$\d+/g, "");
  const range = it.textEdit?.range ?? it.textEdit?.replace ?? null;
  const fix = (p: any): Pos => ({ line: p.line, column: p.character ?? p.column ?? 0 });
  return {
    label, detail: it.detail ?? "", text,
    range: range ? { start: fix(range.start), end: fix(range.end) } : null,
    sortText: it.sortText ?? label, filterText: (it.filterText ?? label).trim(),
  };
}

/** Whether a label has the typed letters in order. */
function fuzzy(label: string, typed: string): boolean {
  let i = 0;
  for (const ch of typed) {
    i = label.indexOf(ch, i);
    if (i < 0) return false;
    i++;
  }
  return true;
}
