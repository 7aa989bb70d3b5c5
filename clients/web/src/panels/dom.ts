// Small DOM and path helpers the panels share: elements built from plain
// objects (no framework), the workspace-relative names the lists show, and
// the text of an error whatever threw it.
import type { App } from "../app";

type Attrs = Record<string, string | number | boolean | undefined | null>;
type Child = Node | string | null | undefined | false;

/** `h("button", {class: "x", title: "..."}, "text")`; `on*` attributes are not supported on purpose. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.className = String(value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

/** A button that runs `action` on click and never submits a form. */
export function button(label: string, title: string, action: (ev: MouseEvent) => void, cls = ""): HTMLButtonElement {
  const b = h("button", { type: "button", class: `pnl-button ${cls}`.trim(), title }, label);
  b.addEventListener("click", (ev) => { ev.stopPropagation(); action(ev); });
  return b;
}

export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && "message" in e) return String((e as { message: unknown }).message);
  return String(e);
}

/** A plain absolute path from a `file://` URI or a path. */
export function uriToPath(uri: string): string {
  if (!uri.startsWith("file://")) return uri;
  try { return decodeURIComponent(uri.slice("file://".length)); } catch { return uri.slice("file://".length); }
}

export function pathToUri(path: string): string {
  if (path.startsWith("file://")) return path;
  return "file://" + path.split("/").map(encodeURIComponent).join("/");
}

/** The name a list shows: relative to the workspace when inside it. */
export function displayPath(app: App, uriOrPath: string): string {
  const path = uriToPath(uriOrPath);
  const root = app.workspaceRoot().replace(/\/+$/, "");
  if (root && path.startsWith(root + "/")) return path.slice(root.length + 1);
  return path;
}

export function baseName(path: string): string {
  const i = path.lastIndexOf("/");
  return i >= 0 ? path.slice(i + 1) : path;
}

/**
 * The workspace folder once the shell has learned it: after a connection is
 * ready the shell asks the server for it, so a panel that starts at the same
 * moment may find it still empty. Empty if it never comes (no workspace).
 */
export async function workspaceRoot(app: App, waitMs = 10000): Promise<string> {
  for (let waited = 0; !app.workspaceRoot() && waited < waitMs; waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  return app.workspaceRoot();
}

/** Runs `fn` once, `ms` after the last of a burst of calls. */
export function debounce(fn: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  return () => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(() => { timer = null; fn(); }, ms);
  };
}

/** Sets the panels' own colour variables on `root` from the current theme. */
export function applyThemeColors(app: App, root: HTMLElement): void {
  const set = (name: string, key: string, fallback: string) => root.style.setProperty(name, app.themeColor(key, fallback));
  set("--pnl-bg", "sideBar.background", "#1e1e1e");
  set("--pnl-fg", "sideBar.foreground", "#d4d4d4");
  set("--pnl-editor-bg", "editor.background", "#1e1e1e");
  set("--pnl-editor-fg", "editor.foreground", "#d4d4d4");
  set("--pnl-border", "panel.border", "#444444");
  set("--pnl-highlight", "editor.lineHighlightBackground", "#2a2d2e");
  set("--pnl-selection", "editor.selectionBackground", "#264f78");
  set("--pnl-muted", "editorLineNumber.foreground", "#858585");
}
