// Find and replace: a small bar in the view. The core searches
// (document/find) and replaces (document/replace with a query); the bar shows
// the count, and the view highlights the matches on the lines it shows.
import type { EditorView } from "./view";
import { comparePos, samePos, selectionRange, type Pos, type WireRange } from "./model";

export class FindBar {
  private readonly el: HTMLDivElement;
  private readonly query: HTMLInputElement;
  private readonly replacement: HTMLInputElement;
  private readonly count: HTMLSpanElement;
  private readonly toggles: Record<"regex" | "caseSensitive" | "wholeWord", HTMLButtonElement>;
  private opts = { regex: false, caseSensitive: false, wholeWord: false };
  private current: WireRange | null = null;
  private timer = 0;
  private asked = 0;
  private highlightAsked = 0;
  private highlightTimer = 0;

  constructor(private readonly view: EditorView) {
    const el = document.createElement("div");
    el.className = "ecp-find";
    el.hidden = true;
    el.innerHTML = `
      <div class="find-row">
        <input class="find-query" type="text" placeholder="Find" spellcheck="false">
        <button class="toggle" data-opt="regex" title="Regular expression">.*</button>
        <button class="toggle" data-opt="caseSensitive" title="Match case">Aa</button>
        <button class="toggle" data-opt="wholeWord" title="Whole word">ab</button>
        <span class="find-count"></span>
        <button class="find-prev" title="Previous match (Shift+F3)">↑</button>
        <button class="find-next" title="Next match (F3)">↓</button>
        <button class="find-close" title="Close (Escape)">×</button>
      </div>
      <div class="replace-row">
        <input class="find-replacement" type="text" placeholder="Replace" spellcheck="false">
        <button class="replace-one">Replace</button>
        <button class="replace-all">All</button>
      </div>`;
    view.root.appendChild(el);
    this.el = el;
    this.query = el.querySelector(".find-query")!;
    this.replacement = el.querySelector(".find-replacement")!;
    this.count = el.querySelector(".find-count")!;
    const t = (name: string) => el.querySelector(`[data-opt="${name}"]`) as HTMLButtonElement;
    this.toggles = { regex: t("regex"), caseSensitive: t("caseSensitive"), wholeWord: t("wholeWord") };
    for (const [name, button] of Object.entries(this.toggles)) {
      button.addEventListener("click", () => {
        const key = name as keyof typeof this.opts;
        this.opts[key] = !this.opts[key];
        button.classList.toggle("on", this.opts[key]);
        this.search();
      });
    }
    this.query.addEventListener("input", () => { clearTimeout(this.timer); this.timer = window.setTimeout(() => this.search(), 80); });
    const keys = (e: KeyboardEvent) => {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); this.close(); return; }
      if (e.key === "Enter" && e.target instanceof HTMLInputElement) {
        e.preventDefault(); e.stopPropagation();
        if (e.target === this.replacement) void (e.ctrlKey || e.altKey ? this.replaceAll() : this.replaceOne());
        else this.step(e.shiftKey);
        return;
      }
      if (e.key === "F3") { e.preventDefault(); e.stopPropagation(); this.step(e.shiftKey); return; }
      if (!e.ctrlKey && !e.metaKey && !e.altKey) e.stopPropagation();
    };
    el.addEventListener("keydown", keys);
    el.querySelector(".find-prev")!.addEventListener("click", () => this.step(true));
    el.querySelector(".find-next")!.addEventListener("click", () => this.step(false));
    el.querySelector(".find-close")!.addEventListener("click", () => this.close());
    el.querySelector(".replace-one")!.addEventListener("click", () => void this.replaceOne());
    el.querySelector(".replace-all")!.addEventListener("click", () => void this.replaceAll());
  }

  get isOpen(): boolean { return !this.el.hidden; }

  /** Opens the bar with the selection (one line of it) as the query. */
  open(replace: boolean): void {
    this.el.hidden = false;
    this.el.classList.toggle("replacing", replace);
    const sel = selectionRange(this.view.cursors[0]);
    const pick = (text: string | null) => {
      if (text && !text.includes("\n")) { this.query.value = text; this.search(); }
    };
    if (sel && sel.start.line === sel.end.line) {
      const cached = this.view.cachedSelectionText();
      if (cached !== null) pick(cached); else void this.view.selectedText().then(pick);
    }
    if (this.query.value) this.search();
    (replace && this.query.value ? this.replacement : this.query).focus();
    this.query.select();
  }

  /** Closes the bar; false when it was not open. */
  close(): boolean {
    if (!this.isOpen) return false;
    this.el.hidden = true;
    this.view.matches = [];
    this.current = null;
    this.view.scheduleRender();
    this.view.focus();
    return true;
  }

  onEditorKey(e: KeyboardEvent): boolean {
    if (e.key === "Escape" && this.isOpen && this.view.cursors.length <= 1) { this.close(); return true; }
    return false;
  }

  isCurrent(m: WireRange): boolean { return !!this.current && samePos(m.start, this.current.start) && samePos(m.end, this.current.end); }

  documentChanged(): void { if (this.isOpen && this.query.value) this.scheduleHighlights(); }
  windowChanged(): void { if (this.isOpen && this.query.value) this.scheduleHighlights(); }

  private params(): object {
    return { documentId: this.view.documentId, query: this.query.value, ...this.opts };
  }

  private scheduleHighlights(): void {
    if (this.highlightTimer) return;
    this.highlightTimer = window.setTimeout(() => { this.highlightTimer = 0; void this.highlight(); }, 50);
  }

  /** The matches on the lines the view holds, for highlighting. */
  private async highlight(): Promise<void> {
    const w = this.view.win;
    if (!this.query.value || !w.valid) { this.view.matches = []; this.view.scheduleRender(); return; }
    const asked = ++this.highlightAsked;
    const last = Math.min(w.start + w.text.length, this.view.lineCount);
    const end: Pos = last >= this.view.lineCount ? { line: this.view.lineCount, column: 0 } : { line: last, column: 0 };
    try {
      const r = await this.view.rpc.request("document/find", { ...this.params(), range: { start: { line: w.start, column: 0 }, end }, limit: 2000 });
      if (asked !== this.highlightAsked) return;
      this.view.matches = r?.matches ?? [];
    } catch {
      if (asked === this.highlightAsked) this.view.matches = [];
    }
    this.view.scheduleRender();
  }

  /** Counts the matches and highlights the visible ones, as the query or its options change. */
  search(): void {
    const asked = ++this.asked;
    this.query.classList.remove("bad");
    if (!this.query.value) { this.count.textContent = ""; this.view.matches = []; this.current = null; this.view.scheduleRender(); return; }
    const c = this.view.cursors[0];
    const from = selectionRange(c)?.start ?? c.position;
    this.view.rpc.request("document/find", { ...this.params(), from, limit: 1 }).then((r) => {
      if (asked !== this.asked) return;
      const total = r?.total ?? 0;
      this.count.textContent = total === 0 ? "No results" : `${total}${r.totalCapped ? "+" : ""} found`;
      this.current = r?.matches?.[r.current ?? 0] ?? null;
      void this.highlight();
    }, (e) => {
      if (asked !== this.asked) return;
      this.query.classList.add("bad");
      this.count.textContent = String(e?.message ?? e).replace(/^query: /, "");
      this.view.matches = [];
      this.view.scheduleRender();
    });
  }

  /** Selects the next (previous) match from the caret, and says which it is of how many. */
  step(backwards: boolean): void {
    if (!this.query.value) { this.open(false); return; }
    const c = this.view.cursors[0];
    const sel = selectionRange(c);
    const from = backwards ? (sel?.start ?? c.position) : (sel?.end ?? c.position);
    const asked = ++this.asked;
    this.view.rpc.request("document/find", { ...this.params(), from, backwards, limit: 1 }).then(async (r) => {
      if (asked !== this.asked) return;
      const m: WireRange | undefined = r?.matches?.[r.current ?? 0];
      const total = r?.total ?? 0;
      if (!m) { this.count.textContent = "No results"; return; }
      this.current = m;
      await this.view.setCursors([{ position: m.end, selection: { anchor: m.start, active: m.end } }]);
      this.view.revealPos(m.start, true);
      this.view.ensureWindow();
      this.view.scheduleRender();
      void this.highlight();
      // Which match this is: those that start before it, counted by the core.
      const before = comparePos(m.start, { line: 0, column: 0 }) === 0 ? { total: 0 } :
        await this.view.rpc.request("document/find", { ...this.params(), range: { start: { line: 0, column: 0 }, end: m.start }, limit: 1 }).catch(() => null);
      if (asked === this.asked && before) this.count.textContent = `${(before.total ?? 0) + 1} of ${total}${r.totalCapped ? "+" : ""}`;
    }, (e) => { this.count.textContent = String(e?.message ?? e); });
  }

  async replaceOne(): Promise<void> {
    if (!this.query.value) return;
    try {
      const r = await this.view.send("document/replace", { query: this.query.value, replacement: this.replacement.value, ...this.opts });
      if (r?.replaced === 0) this.count.textContent = "No results";
      this.step(false);
    } catch { /* said by send */ }
  }

  async replaceAll(): Promise<void> {
    if (!this.query.value) return;
    try {
      const r = await this.view.send("document/replace", { query: this.query.value, replacement: this.replacement.value, ...this.opts, all: true });
      this.count.textContent = `Replaced ${r?.replaced ?? 0}`;
      this.current = null;
      this.view.app.showMessage(`Replaced ${r?.replaced ?? 0}`);
    } catch { /* said by send */ }
  }
}
