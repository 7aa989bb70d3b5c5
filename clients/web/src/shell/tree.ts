// The file tree: each folder's entries read with file/readDir when it is first
// opened, kept fresh by one recursive file/watch of the workspace (a created,
// deleted or renamed entry re-reads the folder that holds it).
import type { App } from "../app";
import { basename, el, parentUri } from "./dom";

interface Entry { name: string; uri: string; type: string }

/** What files.exclude hides by default, and nobody browses for. */
const HIDDEN_NAMES = new Set([".git", ".DS_Store"]);

interface FolderNode {
  uri: string;
  element: HTMLElement;      // the <ul> of its children
  expanded: boolean;
  loaded: boolean;
  reading: Promise<void> | null;
  again: boolean;            // a change came while it was being read
}

export class FileTree {
  readonly element: HTMLElement;
  private readonly list: HTMLElement;
  private readonly title: HTMLElement;
  private readonly folders = new Map<string, FolderNode>();
  private rootUri = "";
  private readonly pendingFolders = new Set<string>();
  private refreshTimer = 0;
  private selected: HTMLElement | null = null;

  constructor(private readonly app: App) {
    this.title = el("div", { class: "tree-title" });
    this.list = el("ul", { class: "tree", attrs: { role: "tree" } });
    this.element = el("div", { class: "tree-view" }, this.title, this.list);
    for (const m of ["file/didCreate", "file/didDelete", "file/didChange"])
      app.rpc.on(m, (p) => { if (typeof p?.uri === "string") this.changed(p.uri, m !== "file/didChange"); });
    // A rename arrives as a deletion and a creation; a server that names it once is followed too.
    app.rpc.on("file/didRename", (p) => {
      if (typeof p?.oldUri === "string") this.changed(p.oldUri, true);
      if (typeof p?.newUri === "string") this.changed(p.newUri, true);
    });
  }

  /** Shows the workspace folder (again, after a reconnect: watches end with their connection). */
  async setRoot(rootUri: string): Promise<void> {
    this.rootUri = rootUri;
    this.title.textContent = basename(rootUri) || rootUri;
    this.title.title = rootUri;
    const expanded = [...this.folders.values()].filter((f) => f.expanded && f.uri !== rootUri).map((f) => f.uri);
    this.folders.clear();
    this.list.replaceChildren();
    const root: FolderNode = { uri: rootUri, element: this.list, expanded: true, loaded: false, reading: null, again: false };
    this.folders.set(rootUri, root);
    try {
      await this.app.rpc.request("file/watch", { uri: rootUri, recursive: true });
    } catch (e) { console.error("file/watch failed", e); }
    await this.read(root);
    // Reopen what was open, outermost first (each read makes the next folder's node).
    expanded.sort((a, b) => a.length - b.length);
    for (const uri of expanded) {
      const node = this.folders.get(uri);
      if (node) { node.expanded = true; node.element.hidden = false; this.markExpanded(uri, true); await this.read(node); }
    }
  }

  /** Whether the tree lists a URI now (for tests and the palette). */
  has(uri: string): boolean { return !!this.list.querySelector(`[data-uri="${CSS.escape(uri)}"]`); }

  private changed(uri: string, structural: boolean): void {
    if (!structural) return; // a file's content changing does not change the tree
    const parent = parentUri(uri);
    if (!this.folders.get(parent)?.loaded) return;
    this.pendingFolders.add(parent);
    // Many events at once (a checkout, a build) re-read each folder once.
    if (!this.refreshTimer)
      this.refreshTimer = window.setTimeout(() => {
        this.refreshTimer = 0;
        const folders = [...this.pendingFolders];
        this.pendingFolders.clear();
        for (const f of folders) { const node = this.folders.get(f); if (node) void this.read(node); }
      }, 60);
  }

  private read(node: FolderNode): Promise<void> {
    if (node.reading) { node.again = true; return node.reading; }
    node.reading = (async () => {
      do {
        node.again = false;
        try {
          const r: any = await this.app.rpc.request("file/readDir", { uri: node.uri });
          this.render(node, Array.isArray(r?.entries) ? r.entries : []);
          node.loaded = true;
        } catch (e: any) {
          node.element.replaceChildren(el("li", { class: "tree-error", text: e?.message ?? String(e) }));
        }
      } while (node.again);
      node.reading = null;
    })();
    return node.reading;
  }

  private render(node: FolderNode, entries: Entry[]): void {
    // Folders first, then files, each without regard to case (as the server sorts).
    const sorted = [...entries].sort((a, b) => {
      const da = a.type === "directory" ? 0 : 1, db = b.type === "directory" ? 0 : 1;
      if (da !== db) return da - db;
      return a.name.localeCompare(b.name, undefined, { sensitivity: "base" });
    });
    const depth = node.uri === this.rootUri ? 0 : Number(node.element.dataset.depth ?? "0");
    const keep = new Set(sorted.map((e) => e.uri));
    for (const uri of [...this.folders.keys()])
      if (parentUri(uri) === node.uri && !keep.has(uri)) this.forget(uri);
    const items: HTMLElement[] = [];
    for (const entry of sorted) {
      if (HIDDEN_NAMES.has(entry.name)) continue;
      const isDir = entry.type === "directory";
      const row = el("div", { class: "tree-row", attrs: { "data-uri": entry.uri, "data-type": isDir ? "directory" : "file" } },
        el("span", { class: isDir ? "tree-twisty" : "tree-twisty tree-leaf" }), el("span", { class: "tree-name", text: entry.name }));
      row.style.paddingLeft = `${6 + depth * 12}px`;
      row.title = entry.name;
      const li = el("li", { attrs: { role: "treeitem" } }, row);
      if (isDir) {
        let child = this.folders.get(entry.uri);
        if (!child) {
          const ul = el("ul", { attrs: { role: "group" } });
          ul.dataset.depth = String(depth + 1);
          ul.hidden = true;
          child = { uri: entry.uri, element: ul, expanded: false, loaded: false, reading: null, again: false };
          this.folders.set(entry.uri, child);
        }
        li.append(child.element);
        if (child.expanded) row.classList.add("expanded");
        row.addEventListener("click", () => this.toggle(entry.uri));
      } else {
        row.addEventListener("click", () => {
          this.select(row);
          void this.app.openUri(entry.uri).catch((e) => this.app.showMessage(`Cannot open ${entry.name}: ${e?.message ?? e}`, "error"));
        });
      }
      items.push(li);
    }
    node.element.replaceChildren(...items);
  }

  private select(row: HTMLElement): void {
    this.selected?.classList.remove("selected");
    this.selected = row;
    row.classList.add("selected");
  }

  private forget(uri: string): void {
    for (const k of [...this.folders.keys()]) if (k === uri || k.startsWith(uri + "/")) this.folders.delete(k);
  }

  private markExpanded(uri: string, expanded: boolean): void {
    const row = this.list.querySelector(`.tree-row[data-uri="${CSS.escape(uri)}"]`);
    row?.classList.toggle("expanded", expanded);
  }

  private toggle(uri: string): void {
    const node = this.folders.get(uri);
    if (!node) return;
    node.expanded = !node.expanded;
    node.element.hidden = !node.expanded;
    this.markExpanded(uri, node.expanded);
    if (node.expanded) void this.read(node);
  }
}
