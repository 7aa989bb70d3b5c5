// The HTML of the rows on screen: each visual row's text in token colours
// (tabs expanded to the document's width), and the boxes drawn over text
// (selections, matches, squiggles) in display columns.
import type { Token } from "./model";
import type { LineLayout } from "./layout";
import type { TokenTheme } from "./theme";

/** The scope given to the text of an input method's composition, shown underlined. */
export const COMPOSITION_SCOPE = "\u0000composition";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : "&quot;"));
}

/**
 * Text [from, to) of a line as it shows: tabs become the spaces up to their
 * next stop, and a character two columns wide (with the marks and joined
 * characters drawn on it) sits in a box exactly two columns wide, whatever
 * width the fallback font gives its glyph, so the columns after it line up
 * with the carets and selections drawn over them.
 */
function shown(layout: LineLayout, from: number, to: number): string {
  const text = layout.text.slice(from, to);
  if (!layout.hasWide && text.indexOf("\t") < 0) return escapeHtml(text);
  // Where the character at i ends (a surrogate pair is one), and how many columns it takes.
  const endOf = (i: number) => { const c = layout.text.charCodeAt(i); return c >= 0xd800 && c <= 0xdbff && i + 1 < to ? i + 2 : i + 1; };
  const columns = (i: number) => layout.displayCol(endOf(i)) - layout.displayCol(i);
  let out = "", plain = "";
  for (let i = from; i < to;) {
    if (layout.text[i] === "\t") { plain += " ".repeat(columns(i)); i++; continue; }
    let end = endOf(i);
    if (columns(i) !== 2) { plain += layout.text.slice(i, end); i = end; continue; }
    while (end < to && layout.text[end] !== "\t" && columns(end) === 0) end = endOf(end);
    out += escapeHtml(plain) + `<span class="w2">${escapeHtml(layout.text.slice(i, end))}</span>`;
    plain = "";
    i = end;
  }
  return out + escapeHtml(plain);
}

function styleOf(theme: TokenTheme, tok: Token): string {
  if (tok.scope === COMPOSITION_SCOPE) return ' class="ime"';
  const st = theme.style(tok.scope);
  const color = st?.color ?? tok.color;
  let css = color ? `color:${color}` : "";
  if (st?.italic) css += ";font-style:italic";
  if (st?.bold) css += ";font-weight:bold";
  return css ? ` style="${css}"` : "";
}

/** One visual row's text: the columns [from, to) of a line, in spans of its token colours. */
export function rowHtml(layout: LineLayout, tokens: Token[] | undefined, theme: TokenTheme, from: number, to: number): string {
  if (!tokens || tokens.length === 0) return shown(layout, from, to);
  let out = "";
  let at = from;
  for (const tok of tokens) {
    const s = Math.max(tok.start, at), e = Math.min(tok.end, to);
    if (e <= s) continue;
    if (s > at) out += shown(layout, at, s);
    out += `<span${styleOf(theme, tok)}>${shown(layout, s, e)}</span>`;
    at = e;
    if (at >= to) break;
  }
  if (at < to) out += shown(layout, at, to);
  return out;
}

/** Tokens sorted and without overlaps, as spans need them. */
export function orderTokens(tokens: Token[] | undefined): Token[] | undefined {
  if (!tokens || tokens.length < 2) return tokens;
  let sorted = true;
  for (let i = 1; i < tokens.length; i++) if (tokens[i].start < tokens[i - 1].end) { sorted = false; break; }
  if (sorted) return tokens;
  const out: Token[] = [];
  let end = 0;
  for (const t of [...tokens].sort((a, b) => a.start - b.start || b.end - a.end)) {
    if (t.end <= end) continue;
    out.push(t.start < end ? { ...t, start: end } : t);
    end = t.end;
  }
  return out;
}

/** One absolutely placed element of a layer, as the last paint left it. */
export interface Placed { cls: string; top: number; html: string; line: number }

/**
 * The elements of one layer of rows, kept from paint to paint: each paint
 * touches only what changed (a typed key rewrites one row, not the screen).
 */
export class RowPool {
  private readonly els: HTMLDivElement[] = [];
  private readonly last: Placed[] = [];

  constructor(private readonly parent: HTMLElement) {}

  update(items: Placed[]): void {
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      let el = this.els[i];
      const was = this.last[i];
      if (!el) {
        el = document.createElement("div");
        this.parent.appendChild(el);
        this.els.push(el);
      }
      if (!was || was.cls !== it.cls) el.className = it.cls;
      if (!was || was.line !== it.line) el.dataset.line = String(it.line);
      if (!was || was.top !== it.top) el.style.top = `${it.top}px`;
      if (!was || was.html !== it.html) el.innerHTML = it.html;
      this.last[i] = it;
    }
    while (this.els.length > items.length) {
      this.els.pop()!.remove();
      this.last.pop();
    }
  }
}

/** A layer whose whole HTML is replaced only when it differs from the last paint's. */
export function setLayer(el: HTMLElement, html: string): boolean {
  if ((el as any).__html === html) return false;
  (el as any).__html = html;
  el.innerHTML = html;
  return true;
}
