// The git panel (side bar): the repository's status as the git service has
// it, staged / changed / untracked, with stage, unstage and discard per file
// and for all; a file's diff in a read-only view (bottom panel); the commit
// box; the current branch, switching and creating branches. Every list is
// asked again when `git/didChange` says the repository moved, so nothing here
// outlives the state it shows.
import type { App } from "../app";
import { applyThemeColors, button, debounce, errorText, h, pathToUri, workspaceRoot } from "./dom";

interface FileStatus { path: string; status: string; oldPath?: string }
interface GitStatus { branch: string; ahead: number; behind: number; staged: FileStatus[]; unstaged: FileStatus[]; untracked: string[] }
interface Branch { name: string; current: boolean }
interface DiffLine { type: "context" | "added" | "removed" | string; content: string; oldLineNum?: number; newLineNum?: number }
interface Hunk { oldStart: number; oldCount: number; newStart: number; newCount: number; lines: DiffLine[] }

type Group = "staged" | "unstaged" | "untracked";

export function installGit(app: App): void {
  const rpc = app.rpc;
  let repoRoot: string | null = null;
  let generation = 0;
  /** The file whose discard waits for its confirmation ("group:path", or "all"). */
  let confirming: string | null = null;
  /** What the diff view shows, so a change in the repository shows it again. */
  let shownDiff: { path: string; staged: boolean } | null = null;

  const root = h("div", { class: "pnl pnl-git", "data-panel": "git" });
  const branchSelect = h("select", { class: "pnl-git-branch", title: "Current branch: choose another to switch to it" });
  const newBranchInput = h("input", { class: "pnl-input pnl-git-newbranch", type: "text", placeholder: "New branch name" });
  const aheadBehind = h("span", { class: "pnl-muted pnl-git-ahead" });
  const message = h("textarea", { class: "pnl-input pnl-git-message", rows: 3, placeholder: "Commit message (Ctrl+Enter commits)" });
  const commitError = h("div", { class: "pnl-error pnl-git-error", hidden: true });
  const lists = h("div", { class: "pnl-git-lists" });
  const notice = h("div", { class: "pnl-muted pnl-git-notice" }, "Loading...");

  const showError = (text: string | null) => {
    commitError.hidden = !text;
    commitError.textContent = text ?? "";
  };

  const commitButton = button("Commit", "Commit the staged changes", () => void commit(), "pnl-primary pnl-git-commit");
  root.append(
    h("div", { class: "pnl-row pnl-git-branchrow" }, h("span", { class: "pnl-label" }, "Branch"), branchSelect, aheadBehind),
    h("div", { class: "pnl-row" }, newBranchInput,
      button("Create", "Create a branch at HEAD and switch to it", () => void createBranch(), "pnl-git-create")),
    message,
    h("div", { class: "pnl-row" }, commitButton),
    commitError,
    notice,
    lists,
  );

  // The diff view: read-only lines, added and removed ones coloured.
  const diffRoot = h("div", { class: "pnl pnl-diff", "data-panel": "diff" });
  const diffTitle = h("div", { class: "pnl-diff-title" }, "No file chosen: click a file in the git panel");
  const diffBody = h("div", { class: "pnl-diff-body" });
  diffRoot.append(diffTitle, diffBody);

  const repoArgs = () => ({ uri: repoRoot! });

  async function findRepo(): Promise<boolean> {
    const workspace = await workspaceRoot(app);
    if (!workspace) return false;
    try {
      const r = await rpc.request<{ isRepo: boolean; rootUri?: string }>("git/isRepo", { uri: workspace });
      repoRoot = r.isRepo && r.rootUri ? r.rootUri.replace(/^file:\/\//, "") : null;
    } catch (e) {
      repoRoot = null;
      notice.textContent = `Git: ${errorText(e)}`;
      return false;
    }
    return repoRoot !== null;
  }

  async function refresh(): Promise<void> {
    const mine = ++generation;
    if (rpc.state !== "open") return;
    if (!repoRoot && !(await findRepo())) {
      if (mine !== generation) return;
      if (!notice.textContent?.startsWith("Git:")) notice.textContent = "The workspace is not in a git repository.";
      notice.hidden = false;
      lists.replaceChildren();
      return;
    }
    try {
      const [status, branches] = await Promise.all([
        rpc.request<GitStatus>("git/status", repoArgs()),
        rpc.request<{ branches: Branch[]; current: string }>("git/branches", repoArgs()),
      ]);
      if (mine !== generation) return;
      notice.hidden = true;
      renderBranches(branches.branches, status.branch);
      aheadBehind.textContent = (status.ahead ? ` ↑${status.ahead}` : "") + (status.behind ? ` ↓${status.behind}` : "");
      renderLists(status);
      if (shownDiff) void showDiff(shownDiff.path, shownDiff.staged, false);
    } catch (e) {
      if (mine !== generation) return;
      notice.hidden = false;
      notice.textContent = `Git: ${errorText(e)}`;
    }
  }
  const refreshSoon = debounce(() => void refresh(), 80);

  function renderBranches(branches: Branch[], current: string): void {
    const options = branches.map((b) => h("option", { value: b.name, selected: b.name === current }, b.name));
    if (!branches.some((b) => b.name === current))
      options.unshift(h("option", { value: current, selected: true, disabled: true }, current === "HEAD" ? "(detached HEAD)" : current));
    branchSelect.replaceChildren(...options);
    branchSelect.dataset.current = current;
  }

  function renderLists(status: GitStatus): void {
    const groups: [Group, string, { path: string; status: string; oldPath?: string }[]][] = [
      ["staged", "Staged changes", status.staged],
      ["unstaged", "Changes", status.unstaged],
      ["untracked", "Untracked files", status.untracked.map((p) => ({ path: p, status: "U" }))],
    ];
    const sections: HTMLElement[] = [];
    for (const [group, title, files] of groups) {
      if (files.length === 0) continue;
      const head = h("div", { class: "pnl-group-head" }, h("span", { class: "pnl-group-title" }, `${title} (${files.length})`));
      const actions = h("span", { class: "pnl-actions" });
      if (group === "staged") actions.append(button("Unstage all", "Unstage every staged file", () => void run("git/unstage", { paths: files.map((f) => f.path) })));
      else actions.append(button("Stage all", "Stage every change of this group", () => void run("git/stage", { paths: files.map((f) => f.path) })));
      if (group === "unstaged") actions.append(confirmable(`all:${group}`, "Discard all", `Discard every change in ${files.length} file(s)?`,
        () => void run("git/discard", { paths: files.map((f) => f.path) })));
      head.append(actions);
      const section = h("div", { class: `pnl-group pnl-git-${group}`, "data-group": group }, head);
      for (const f of files) section.append(fileRow(group, f));
      sections.push(section);
    }
    if (sections.length === 0) sections.push(h("div", { class: "pnl-muted pnl-empty" }, "No changes."));
    lists.replaceChildren(...sections);
  }

  function fileRow(group: Group, f: { path: string; status: string; oldPath?: string }): HTMLElement {
    const name = f.path.slice(f.path.lastIndexOf("/") + 1);
    const dir = f.path.slice(0, Math.max(0, f.path.lastIndexOf("/")));
    const row = h("div", { class: "pnl-item pnl-git-file", "data-path": f.path, title: f.oldPath ? `${f.oldPath} → ${f.path}` : f.path },
      h("span", { class: `pnl-git-status pnl-git-status-${f.status}` }, f.status),
      h("span", { class: "pnl-name" }, name),
      dir ? h("span", { class: "pnl-muted pnl-dir" }, dir) : null);
    const actions = h("span", { class: "pnl-actions" });
    if (group === "staged") actions.append(button("−", "Unstage", () => void run("git/unstage", { paths: [f.path] }), "pnl-git-unstage"));
    else actions.append(button("+", "Stage", () => void run("git/stage", { paths: [f.path] }), "pnl-git-stage"));
    if (group === "unstaged") actions.append(confirmable(`${group}:${f.path}`, "↺", `Discard the changes to ${f.path}?`,
      () => void run("git/discard", { paths: [f.path] }), "pnl-git-discard"));
    row.append(actions);
    row.addEventListener("click", () => {
      for (const r of lists.querySelectorAll(".pnl-selected")) r.classList.remove("pnl-selected");
      row.classList.add("pnl-selected");
      if (group === "untracked") void app.openUri(pathToUri(`${repoRoot}/${f.path}`));
      else void showDiff(f.path, group === "staged", true);
    });
    return row;
  }

  /** A button whose action waits for a second click on the question it turns into. */
  function confirmable(key: string, label: string, question: string, action: () => void, cls = ""): HTMLElement {
    if (confirming !== key) return button(label, question.replace(/\?$/, ""), () => { confirming = key; refreshSoon(); }, cls);
    return h("span", { class: "pnl-confirm" }, h("span", {}, question),
      button("Discard", "Discard: this cannot be undone", () => { confirming = null; action(); }, "pnl-danger pnl-confirm-yes"),
      button("Cancel", "Keep the changes", () => { confirming = null; refreshSoon(); }, "pnl-confirm-no"));
  }

  async function run(method: string, params: object): Promise<void> {
    if (!repoRoot) return;
    try {
      await rpc.request(method, { ...repoArgs(), ...params });
    } catch (e) {
      app.showMessage(`${method}: ${errorText(e)}`, "error");
    }
    void refresh();
  }

  async function commit(): Promise<void> {
    if (!repoRoot) return;
    const text = message.value;
    if (!text.trim()) { showError("Write a commit message first."); return; }
    commitButton.disabled = true;
    try {
      const r = await rpc.request<{ success?: boolean; error?: string; message?: string; commitHash?: string; hash?: string }>("git/commit", { ...repoArgs(), message: text });
      if (r && r.success === false) {
        showError(r.error || r.message || "Nothing was committed (is anything staged?)");
      } else {
        showError(null);
        message.value = "";
        const hash = r?.commitHash || r?.hash;
        app.showMessage(hash ? `Committed ${String(hash).slice(0, 8)}` : "Committed");
      }
    } catch (e) {
      showError(errorText(e));
    } finally {
      commitButton.disabled = false;
    }
    void refresh();
  }

  async function createBranch(): Promise<void> {
    const name = newBranchInput.value.trim();
    if (!repoRoot || !name) return;
    try {
      await rpc.request("git/createBranch", { ...repoArgs(), name, checkout: true });
      newBranchInput.value = "";
      showError(null);
    } catch (e) {
      showError(errorText(e));
    }
    void refresh();
  }

  branchSelect.addEventListener("change", async () => {
    const name = branchSelect.value;
    if (!repoRoot || name === branchSelect.dataset.current) return;
    try {
      await rpc.request("git/switchBranch", { ...repoArgs(), name });
      showError(null);
    } catch (e) {
      showError(errorText(e));
    }
    void refresh();
  });
  message.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); void commit(); }
  });
  newBranchInput.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); void createBranch(); }
  });

  async function showDiff(path: string, staged: boolean, reveal: boolean): Promise<void> {
    if (!repoRoot) return;
    shownDiff = { path, staged };
    if (reveal) app.showBottomView("git.diff");
    let hunks: Hunk[];
    try {
      hunks = (await rpc.request<{ hunks: Hunk[] }>("git/diff", { ...repoArgs(), path, staged })).hunks ?? [];
    } catch (e) {
      diffTitle.textContent = `${path}: ${errorText(e)}`;
      diffBody.replaceChildren();
      return;
    }
    if (shownDiff?.path !== path || shownDiff.staged !== staged) return;
    diffTitle.replaceChildren(
      h("span", { class: "pnl-name" }, path),
      h("span", { class: "pnl-muted" }, staged ? " (staged: index against HEAD)" : " (work tree against the index)"),
      button("Open", "Open the file", () => void app.openUri(pathToUri(`${repoRoot}/${path}`))));
    const rows: HTMLElement[] = [];
    for (const hunk of hunks) {
      rows.push(h("div", { class: "pnl-diff-line pnl-diff-hunk" },
        `@@ -${hunk.oldStart},${hunk.oldCount} +${hunk.newStart},${hunk.newCount} @@`));
      for (const l of hunk.lines) {
        const kind = l.type === "added" ? "added" : l.type === "removed" || l.type === "deleted" ? "removed" : "context";
        const sign = kind === "added" ? "+" : kind === "removed" ? "-" : " ";
        rows.push(h("div", { class: `pnl-diff-line pnl-diff-${kind}` },
          h("span", { class: "pnl-diff-num" }, l.oldLineNum !== undefined ? String(l.oldLineNum) : ""),
          h("span", { class: "pnl-diff-num" }, l.newLineNum !== undefined ? String(l.newLineNum) : ""),
          h("span", { class: "pnl-diff-text" }, sign + l.content)));
      }
    }
    if (rows.length === 0) rows.push(h("div", { class: "pnl-muted pnl-empty" }, "No differences."));
    diffBody.replaceChildren(...rows);
  }

  const theme = () => { applyThemeColors(app, root); applyThemeColors(app, diffRoot); };
  theme();
  app.onThemeChange(theme);

  app.addSidebarView("git", "Git", root);
  app.addBottomView("git.diff", "Diff", diffRoot);
  app.registerCommand("git.panel", "Git: status, stage, commit, diff", () => {
    app.showSidebarView("git");
    void refresh();
  });
  rpc.on("git/didChange", () => refreshSoon());
  rpc.onReady(() => { repoRoot = null; void refresh(); });
  if (rpc.state === "open") void refresh();
}
