// Problems (bottom panel): every document's diagnostics as the language
// servers last published them, grouped by file, with a severity mark; a click
// opens the file at the problem. The list is asked for again
// (`lsp/allDiagnostics`) whenever a server publishes, so it never drifts from
// what the core holds.
import type { App } from "../app";
import { applyThemeColors, debounce, displayPath, errorText, h, workspaceRoot } from "./dom";

interface Diagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  code?: string | number;
  source?: string;
  message: string;
}

const SEVERITIES: Record<number, { name: string; icon: string }> = {
  1: { name: "error", icon: "⊗" },
  2: { name: "warning", icon: "⚠" },
  3: { name: "info", icon: "ℹ" },
  4: { name: "hint", icon: "💡" },
};

export function installProblems(app: App): void {
  const rpc = app.rpc;
  let generation = 0;

  const root = h("div", { class: "pnl pnl-problems", "data-panel": "problems" });
  const summary = h("div", { class: "pnl-muted pnl-problems-summary" }, "No problems have been detected.");
  const list = h("div", { class: "pnl-problems-list" });
  root.append(summary, list);

  async function refresh(): Promise<void> {
    const mine = ++generation;
    if (rpc.state !== "open") return;
    let all: Record<string, Diagnostic[]>;
    try {
      all = (await rpc.request<{ diagnostics: Record<string, Diagnostic[]> }>("lsp/allDiagnostics", {})).diagnostics ?? {};
    } catch (e) {
      if (mine === generation) summary.textContent = `Problems: ${errorText(e)}`;
      return;
    }
    if (mine !== generation) return;
    render(all);
  }
  const refreshSoon = debounce(() => void refresh(), 100);

  function render(all: Record<string, Diagnostic[]>): void {
    const counts = { 1: 0, 2: 0, 3: 0, 4: 0 } as Record<number, number>;
    const files = Object.entries(all).filter(([, d]) => d.length > 0)
      .sort(([a], [b]) => displayPath(app, a).localeCompare(displayPath(app, b)));
    const groups: HTMLElement[] = [];
    for (const [uri, diagnostics] of files) {
      const sorted = [...diagnostics].sort((a, b) =>
        (a.severity ?? 1) - (b.severity ?? 1) || a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
      const group = h("div", { class: "pnl-group pnl-problems-file", "data-uri": uri });
      const head = h("div", { class: "pnl-group-head", title: uri },
        h("span", { class: "pnl-group-title" }, displayPath(app, uri)), h("span", { class: "pnl-count" }, String(sorted.length)));
      head.addEventListener("click", () => group.classList.toggle("pnl-collapsed"));
      group.append(head);
      for (const d of sorted) {
        const severity = SEVERITIES[d.severity ?? 1] ?? SEVERITIES[1];
        counts[d.severity ?? 1] = (counts[d.severity ?? 1] ?? 0) + 1;
        const origin = [d.source, d.code !== undefined && d.code !== null ? String(d.code) : ""].filter(Boolean).join(" ");
        const row = h("div", { class: `pnl-item pnl-problem pnl-sev-${severity.name}`, "data-severity": severity.name },
          h("span", { class: `pnl-sev-icon pnl-sev-${severity.name}`, title: severity.name }, severity.icon),
          h("span", { class: "pnl-problem-message" }, d.message),
          origin ? h("span", { class: "pnl-muted" }, origin) : null,
          h("span", { class: "pnl-muted pnl-lineno" }, `[${d.range.start.line + 1}, ${d.range.start.character + 1}]`));
        row.addEventListener("click", () => void app.openUri(uri, d.range.start));
        group.append(row);
      }
      groups.push(group);
    }
    list.replaceChildren(...groups);
    const total = counts[1] + counts[2] + counts[3] + counts[4];
    summary.textContent = total === 0 ? "No problems have been detected."
      : `${counts[1]} error${counts[1] === 1 ? "" : "s"}, ${counts[2]} warning${counts[2] === 1 ? "" : "s"}` +
        (counts[3] + counts[4] ? `, ${counts[3] + counts[4]} other` : "");
  }

  const theme = () => applyThemeColors(app, root);
  theme();
  app.onThemeChange(theme);
  app.addBottomView("problems", "Problems", root);
  app.registerCommand("problems.show", "Problems: every document's diagnostics", () => {
    app.showBottomView("problems");
    void refresh();
  });
  rpc.on("lsp/didPublishDiagnostics", () => refreshSoon());
  rpc.on("lsp/serverStatusChanged", () => refreshSoon());
  // Names are shown relative to the workspace, which the shell learns once connected.
  rpc.onReady(() => void workspaceRoot(app).then(() => refresh()));
  if (rpc.state === "open") void workspaceRoot(app).then(() => refresh());
}
