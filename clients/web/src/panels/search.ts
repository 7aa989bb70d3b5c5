// Project search (side bar): a query with regex and case toggles sent to
// `file/grep`, the matching lines grouped by file with the match marked, a
// click opening the file at the match. A pattern the server refuses (a bad
// regex) is shown as the server words it.
import type { App } from "../app";
import { applyThemeColors, debounce, displayPath, errorText, h, pathToUri, workspaceRoot } from "./dom";

interface GrepMatch { uri: string; line: number; column: number; text: string }

const MAX_RESULTS = 2000;

export function installSearch(app: App): void {
  const rpc = app.rpc;
  let generation = 0;

  const root = h("div", { class: "pnl pnl-search", "data-panel": "search" });
  const query = h("input", { class: "pnl-input pnl-search-query", type: "text", placeholder: "Search the project", spellcheck: "false" });
  const regex = toggle(".*", "Regular expression (PCRE2)", "pnl-search-regex");
  const matchCase = toggle("Aa", "Match case", "pnl-search-case");
  const include = h("input", { class: "pnl-input pnl-search-include", type: "text", placeholder: "Files to include (globs, comma-separated)" });
  const summary = h("div", { class: "pnl-muted pnl-search-summary" });
  const error = h("div", { class: "pnl-error pnl-search-error", hidden: true });
  const results = h("div", { class: "pnl-search-results" });
  root.append(h("div", { class: "pnl-row" }, query, regex, matchCase), include, error, summary, results);

  function toggle(label: string, title: string, cls: string): HTMLButtonElement {
    const b = h("button", { type: "button", class: `pnl-toggle ${cls}`, title, "aria-pressed": "false" }, label);
    b.addEventListener("click", () => {
      b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
      void search();
    });
    return b;
  }
  const on = (b: HTMLElement) => b.getAttribute("aria-pressed") === "true";

  async function search(): Promise<void> {
    const mine = ++generation;
    const pattern = query.value;
    error.hidden = true;
    if (!pattern) { results.replaceChildren(); summary.textContent = ""; return; }
    const folder = await workspaceRoot(app, 2000);
    if (mine !== generation) return;
    const params: Record<string, unknown> = {
      pattern, baseUri: folder ? pathToUri(folder) : undefined, regex: on(regex), caseSensitive: on(matchCase), maxResults: MAX_RESULTS,
    };
    if (include.value.trim()) params.include = include.value.trim();
    summary.textContent = "Searching...";
    let answer: { matches: GrepMatch[]; truncated: boolean };
    try {
      answer = await rpc.request("file/grep", params);
    } catch (e) {
      if (mine !== generation) return;
      summary.textContent = "";
      results.replaceChildren();
      error.hidden = false;
      error.textContent = errorText(e);
      return;
    }
    if (mine !== generation) return;
    render(answer.matches, answer.truncated, pattern);
  }

  /** Where the pattern matches in a line, in UTF-16 units, as well as the page can tell. */
  function matchRanges(text: string, pattern: string, column: number): [number, number][] {
    const flags = on(matchCase) ? "g" : "gi";
    let re: RegExp | null = null;
    try {
      re = new RegExp(on(regex) ? pattern : pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), flags + "u");
    } catch {
      re = null; // PCRE2 syntax JavaScript does not read: mark from the server's column only
    }
    const ranges: [number, number][] = [];
    if (re) {
      for (const m of text.matchAll(re)) {
        if (m[0].length === 0) continue;
        ranges.push([m.index!, m.index! + m[0].length]);
        if (ranges.length > 50) break;
      }
    }
    if (ranges.length === 0 && column >= 0 && column < text.length)
      ranges.push([column, Math.min(text.length, column + (on(regex) ? 1 : pattern.length))]);
    return ranges;
  }

  function lineText(text: string, pattern: string, column: number): HTMLElement {
    const out = h("span", { class: "pnl-search-text" });
    // Long lines are shown from a little before the first match.
    const start = column > 40 ? column - 30 : 0;
    const shown = text.slice(start, start + 400);
    let at = 0;
    for (const [from, to] of matchRanges(shown, pattern, column - start)) {
      if (from < at) continue;
      out.append(shown.slice(at, from), h("mark", { class: "pnl-match" }, shown.slice(from, to)));
      at = to;
    }
    out.append(shown.slice(at));
    if (start > 0) out.prepend("…");
    return out;
  }

  function render(matches: GrepMatch[], truncated: boolean, pattern: string): void {
    const byFile = new Map<string, GrepMatch[]>();
    for (const m of matches) {
      let list = byFile.get(m.uri);
      if (!list) { list = []; byFile.set(m.uri, list); }
      list.push(m);
    }
    summary.textContent = matches.length === 0 ? "No results."
      : `${matches.length} line${matches.length === 1 ? "" : "s"} in ${byFile.size} file${byFile.size === 1 ? "" : "s"}` +
        (truncated ? ` (only the first ${MAX_RESULTS})` : "");
    const groups: HTMLElement[] = [];
    for (const [uri, list] of byFile) {
      const group = h("div", { class: "pnl-group pnl-search-file", "data-uri": uri });
      const head = h("div", { class: "pnl-group-head", title: uri },
        h("span", { class: "pnl-group-title" }, displayPath(app, uri)), h("span", { class: "pnl-count" }, String(list.length)));
      head.addEventListener("click", () => group.classList.toggle("pnl-collapsed"));
      group.append(head);
      for (const m of list) {
        const row = h("div", { class: "pnl-item pnl-search-match", "data-line": m.line, "data-column": m.column },
          h("span", { class: "pnl-muted pnl-lineno" }, String(m.line + 1)), lineText(m.text, pattern, m.column));
        row.addEventListener("click", () => {
          for (const r of results.querySelectorAll(".pnl-selected")) r.classList.remove("pnl-selected");
          row.classList.add("pnl-selected");
          void app.openUri(uri, { line: m.line, character: m.column });
        });
        group.append(row);
      }
      groups.push(group);
    }
    results.replaceChildren(...groups);
  }

  const searchSoon = debounce(() => void search(), 250);
  query.addEventListener("input", searchSoon);
  include.addEventListener("input", searchSoon);
  const enter = (ev: KeyboardEvent) => { if (ev.key === "Enter") { ev.preventDefault(); void search(); } };
  query.addEventListener("keydown", enter);
  include.addEventListener("keydown", enter);

  const theme = () => applyThemeColors(app, root);
  theme();
  app.onThemeChange(theme);
  app.addSidebarView("search", "Search", root);
  app.registerCommand("search.project", "Search in the project's files", (args) => {
    app.showSidebarView("search");
    if (typeof args === "string") { query.value = args; void search(); }
    else if (args && typeof args === "object" && typeof (args as { query?: unknown }).query === "string") {
      query.value = (args as { query: string }).query;
      void search();
    }
    query.focus();
    query.select();
  });
}
