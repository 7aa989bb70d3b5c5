// Small DOM builders: the page is plain DOM, so these keep element creation short.

export interface ElementOptions { class?: string; text?: string; title?: string; attrs?: Record<string, string> }

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K, options: ElementOptions = {}, ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (options.class) e.className = options.class;
  if (options.text !== undefined) e.textContent = options.text;
  if (options.title) e.title = options.title;
  for (const [k, v] of Object.entries(options.attrs ?? {})) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

/** Sets an element's text only when it differs: writing the same text still replaces its node, and asks for a frame. */
export function setText(e: HTMLElement, text: string): void {
  if (e.textContent !== text) e.textContent = text;
}

export function byId(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error(`the page has no #${id}`);
  return e;
}

/** The last path component of a file:// URI (or a path), decoded. */
export function basename(uri: string): string {
  const trimmed = uri.replace(/\/+$/, "");
  const name = trimmed.slice(trimmed.lastIndexOf("/") + 1);
  try { return decodeURIComponent(name); } catch { return name; }
}

/** The folder URI that holds a URI. */
export function parentUri(uri: string): string {
  const trimmed = uri.replace(/\/+$/, "");
  return trimmed.slice(0, trimmed.lastIndexOf("/"));
}

/** A file:// URI for an absolute path, percent-encoded as the server writes URIs. */
export function pathToUri(path: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(path)) return path;
  return "file://" + path.split("/").map((s) => encodeURIComponent(s)).join("/");
}

/** The path of a file:// URI; other URIs come back unchanged. */
export function uriToPath(uri: string): string {
  if (!uri.startsWith("file://")) return uri;
  try { return decodeURIComponent(uri.slice("file://".length)); } catch { return uri.slice("file://".length); }
}
