// The command palette: with a leading ">" a fuzzy list of the registered
// commands, else the workspace's files (file/search, or file/glob for an empty
// query). Enter runs the command or opens the file.
import type { App } from "../app";
import { el, uriToPath } from "./dom";

export interface PaletteCommand { id: string; title: string; keys: string[] }

/** One choice of a list the palette offers for a moment (themes, ...). */
export interface PaletteChoice { label: string; detail?: string; run: () => void }

interface Item { label: string; detail: string; hint: string; positions: number[]; run: () => void }

/** A subsequence match: its score (higher is better) and the matched positions, or null. */
export function fuzzyMatch(query: string, text: string): { score: number; positions: number[] } | null {
  if (!query) return { score: 0, positions: [] };
  const q = query.toLowerCase(), t = text.toLowerCase();
  const positions: number[] = [];
  let score = 0, from = 0, previous = -2;
  for (const ch of q) {
    if (ch === " ") continue;
    const at = t.indexOf(ch, from);
    if (at < 0) return null;
    positions.push(at);
    score += at === previous + 1 ? 5 : 1;          // runs count more
    if (at === 0 || /[\s.\-_/]/.test(t[at - 1])) score += 3; // word starts too
    previous = at;
    from = at + 1;
  }
  const whole = t.indexOf(q);
  if (whole >= 0) score += whole === 0 ? 30 : 15;
  return { score: score - t.length / 100, positions };
}

export class Palette {
  private readonly input: HTMLInputElement;
  private readonly list: HTMLElement;
  private readonly box: HTMLElement;
  private items: Item[] = [];
  private selectedIndex = 0;
  private query = 0;
  private previousFocus: HTMLElement | null = null;
  private choices: PaletteChoice[] | null = null;

  constructor(private readonly app: App, private readonly commands: () => PaletteCommand[], private readonly rootUri: () => string) {
    this.input = el("input", { class: "palette-input", attrs: { type: "text", spellcheck: "false", "aria-label": "Command palette" } });
    this.list = el("ul", { class: "palette-list", attrs: { role: "listbox" } });
    this.box = el("div", { class: "palette", attrs: { role: "dialog" } }, this.input, this.list);
    this.box.hidden = true;
    document.body.append(this.box);
    this.input.addEventListener("input", () => { void this.update(); });
    this.input.addEventListener("keydown", (e) => this.onKey(e));
    this.input.addEventListener("blur", () => { setTimeout(() => { if (!this.box.contains(document.activeElement)) this.close(false); }, 0); });
  }

  get isOpen(): boolean { return !this.box.hidden; }

  open(initial = ">"): void {
    this.choices = null;
    this.show(initial);
  }

  /** Offers a list of choices, filtered as the user types. */
  choose(choices: PaletteChoice[], placeholder: string): void {
    this.choices = choices;
    this.input.placeholder = placeholder;
    this.show("");
  }

  private show(initial: string): void {
    if (!this.choices) this.input.placeholder = "Type > for commands, or a file name";
    if (!this.isOpen) this.previousFocus = document.activeElement as HTMLElement | null;
    this.box.hidden = false;
    this.input.value = initial;
    this.input.focus();
    this.input.setSelectionRange(initial.length, initial.length);
    void this.update();
  }

  close(restoreFocus = true): void {
    if (!this.isOpen) return;
    this.box.hidden = true;
    this.query++;
    if (restoreFocus) this.previousFocus?.focus?.();
  }

  private onKey(e: KeyboardEvent): void {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (this.items.length) this.select((this.selectedIndex + (e.key === "ArrowDown" ? 1 : -1) + this.items.length) % this.items.length);
    } else if (e.key === "Enter") {
      e.preventDefault();
      const item = this.items[this.selectedIndex];
      this.close(!item);
      item?.run();
    } else if (e.key === "Escape") {
      e.preventDefault();
      this.close();
    }
  }

  private select(i: number): void {
    this.list.children[this.selectedIndex]?.classList.remove("selected");
    this.selectedIndex = i;
    const li = this.list.children[i];
    li?.classList.add("selected");
    li?.scrollIntoView({ block: "nearest" });
  }

  private async update(): Promise<void> {
    const ticket = ++this.query;
    const text = this.input.value;
    let items: Item[];
    if (this.choices) items = this.choiceItems(text.trim(), this.choices);
    else if (text.startsWith(">")) items = this.commandItems(text.slice(1).trim());
    else {
      try { items = await this.fileItems(text.trim()); }
      catch (e: any) { items = []; this.app.showMessage(`File search failed: ${e?.message ?? e}`, "error"); }
      if (ticket !== this.query) return; // typed on meanwhile
    }
    this.render(items);
  }

  private choiceItems(q: string, choices: PaletteChoice[]): Item[] {
    const scored: { item: Item; score: number }[] = [];
    choices.forEach((c, order) => {
      const m = fuzzyMatch(q, c.label);
      if (m) scored.push({ score: q ? m.score : -order, item: { label: c.label, detail: c.detail ?? "", hint: "", positions: m.positions, run: c.run } });
    });
    scored.sort((a, b) => b.score - a.score);
    return scored.map((s) => s.item);
  }

  private commandItems(q: string): Item[] {
    const scored: { item: Item; score: number }[] = [];
    for (const c of this.commands()) {
      const m = fuzzyMatch(q, c.title) ?? fuzzyMatch(q, c.id);
      if (!m) continue;
      const onTitle = !!fuzzyMatch(q, c.title);
      scored.push({ score: m.score, item: {
        label: c.title, detail: c.id, hint: c.keys.join(", "), positions: onTitle ? m.positions : [],
        run: () => { this.app.runCommand(c.id); },
      } });
    }
    scored.sort((a, b) => b.score - a.score || a.item.label.localeCompare(b.item.label));
    return scored.map((s) => s.item);
  }

  private async fileItems(q: string): Promise<Item[]> {
    const root = this.rootUri();
    if (!root) return [];
    let uris: string[];
    if (!q) {
      const r: any = await this.app.rpc.request("file/glob", { pattern: "**/*", baseUri: root, maxResults: 200, excludePatterns: ["**/.git/**", "**/node_modules/**"] });
      uris = Array.isArray(r?.uris) ? r.uris : [];
    } else {
      const r: any = await this.app.rpc.request("file/search", { pattern: q, maxResults: 50, includePatterns: [root] });
      uris = (Array.isArray(r?.results) ? r.results : []).map((x: any) => x?.uri).filter((u: unknown) => typeof u === "string");
    }
    const rootPath = uriToPath(root).replace(/\/$/, "") + "/";
    return uris.slice(0, 200).map((uri) => {
      const path = uriToPath(uri);
      const rel = path.startsWith(rootPath) ? path.slice(rootPath.length) : path;
      const name = rel.slice(rel.lastIndexOf("/") + 1);
      const m = fuzzyMatch(q, name);
      return {
        label: name, detail: rel, hint: "", positions: m?.positions ?? [],
        run: () => { void this.app.openUri(uri).catch((e) => this.app.showMessage(`Cannot open ${rel}: ${e?.message ?? e}`, "error")); },
      };
    });
  }

  private render(items: Item[]): void {
    this.items = items;
    this.selectedIndex = 0;
    const rows = items.slice(0, 200).map((item, i) => {
      const label = el("span", { class: "palette-label" });
      const marked = new Set(item.positions);
      [...item.label].forEach((ch, k) => label.append(marked.has(k) ? el("b", { text: ch }) : ch));
      const li = el("li", { class: i === 0 ? "selected" : "", attrs: { role: "option" } },
        label, el("span", { class: "palette-detail", text: item.detail }), el("span", { class: "palette-hint", text: item.hint }));
      li.addEventListener("mousedown", (e) => { e.preventDefault(); this.select(i); });
      li.addEventListener("click", () => { this.close(false); item.run(); });
      return li;
    });
    if (!rows.length) rows.push(el("li", { class: "palette-empty", text: this.choices ? "Nothing matches" : this.input.value.startsWith(">") ? "No command matches" : "No file matches" }));
    this.list.replaceChildren(...rows);
  }
}
