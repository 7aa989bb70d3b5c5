// What the view knows of its document: the lines of one window around the
// screen as the core last said they are, and the edits typed here that the
// core has not confirmed yet. Positions are the wire's: {line, column} in
// UTF-16 units.

export interface Pos { line: number; column: number }
export interface WireRange { start: Pos; end: Pos }
export interface Cursor { position: Pos; selection?: { anchor: Pos; active: Pos } }
export interface Token { start: number; end: number; scope: string; color?: string }
export interface Diagnostic { range: WireRange; severity?: number; message: string; source?: string }
export interface Change { range: WireRange; rangeLength?: number; text: string }

export function comparePos(a: Pos, b: Pos): number {
  return a.line !== b.line ? a.line - b.line : a.column - b.column;
}

export function samePos(a: Pos, b: Pos): boolean { return a.line === b.line && a.column === b.column; }

/** Where a position ends up after a change made before, around or after it. */
export function transformPos(p: Pos, ch: Change): Pos {
  const { start, end } = ch.range;
  if (comparePos(p, start) < 0) return p;
  if (comparePos(p, end) < 0) return { line: start.line, column: start.column };
  const parts = ch.text.split("\n");
  const added = parts.length - 1;
  const endLine = start.line + added;
  if (p.line === end.line) {
    const base = added === 0 ? start.column + parts[0].length : parts[added].length;
    return { line: endLine, column: base + (p.column - end.column) };
  }
  return { line: p.line + added - (end.line - start.line), column: p.column };
}

export function transformCursor(c: Cursor, ch: Change): Cursor {
  const out: Cursor = { position: transformPos(c.position, ch) };
  if (c.selection) out.selection = { anchor: transformPos(c.selection.anchor, ch), active: transformPos(c.selection.active, ch) };
  return out;
}

/** The ordered ends of a cursor's selection, or null without one. */
export function selectionRange(c: Cursor): WireRange | null {
  const s = c.selection;
  if (!s || samePos(s.anchor, s.active)) return null;
  return comparePos(s.anchor, s.active) <= 0 ? { start: s.anchor, end: s.active } : { start: s.active, end: s.anchor };
}

/**
 * An edit typed here and painted at once: text inserted at (or `deleteCount`
 * units removed before) each of the caller's carets, all on single lines.
 * It stays painted until the core's `document/didChange` for it arrives (or
 * the edit's answer, whichever is first).
 */
export interface Prediction {
  seq: number;
  /** The carets, in the coordinates of the text with every earlier prediction applied, ascending. */
  at: Pos[];
  text: string;
  deleteCount: number;
}

/** Lines [start, start + text.length) of the document, as the core last said. */
export class LineWindow {
  start = 0;
  text: string[] = [];
  tokens: (Token[] | undefined)[] = [];
  diagnostics: Diagnostic[] = [];
  version = 0;
  lineCount = 1;
  /** False until the first answer, and after a change this window cannot follow. */
  valid = false;

  has(line: number): boolean { return this.valid && line >= this.start && line < this.start + this.text.length; }
  line(line: number): string | undefined { return this.has(line) ? this.text[line - this.start] : undefined; }
  lineTokens(line: number): Token[] | undefined { return this.has(line) ? this.tokens[line - this.start] : undefined; }

  replace(answer: { version: number; startLine: number; lineCount: number; lines: { lineNumber: number; text: string }[];
    tokens?: Token[][]; diagnostics?: Diagnostic[] }): void {
    this.version = answer.version;
    this.lineCount = Math.max(1, answer.lineCount);
    this.start = answer.lines.length ? answer.lines[0].lineNumber : answer.startLine;
    this.text = answer.lines.map((l) => l.text);
    this.tokens = answer.lines.map((_, i) => answer.tokens?.[i]);
    // Diagnostics are LSP's, with `character` where the wire's positions have `column`.
    const pos = (p: any): Pos => ({ line: p?.line ?? 0, column: p?.column ?? p?.character ?? 0 });
    this.diagnostics = (answer.diagnostics ?? []).map((d) => ({ ...d, range: { start: pos(d.range?.start), end: pos(d.range?.end) } }));
    this.valid = true;
  }

  /** Applies one change of a `document/didChange`; false when the window can no longer say its lines. */
  apply(ch: Change): boolean {
    const { start, end } = ch.range;
    const parts = ch.text.split("\n");
    const removed = end.line - start.line;
    const added = parts.length - 1;
    this.lineCount = Math.max(1, this.lineCount + added - removed);
    this.diagnostics = this.diagnostics.map((d) => ({ ...d, range: { start: transformPos(d.range.start, ch), end: transformPos(d.range.end, ch) } }));
    if (!this.valid) return false;
    const last = this.start + this.text.length;
    if (end.line < this.start) { this.start += added - removed; return true; }
    if (start.line >= last) return true;
    if (start.line < this.start || end.line >= last) { this.valid = false; return false; }
    const i0 = start.line - this.start, i1 = end.line - this.start;
    if (removed === 0 && added === 0) {
      // Within a line (a key): its tokens follow the edit as a prediction's do, so the echo paints nothing new.
      const t = this.tokens[i0];
      if (t) this.tokens[i0] = editLineTokens(t, this.text[i0], start.column, end.column, ch.text);
      this.text[i0] = this.text[i0].slice(0, start.column) + ch.text + this.text[i0].slice(end.column);
      return true;
    }
    const head = this.text[i0].slice(0, start.column), tail = this.text[i1].slice(end.column);
    const headTokens = (this.tokens[i0] ?? []).filter((t) => t.end <= start.column);
    const shift = (added === 0 ? start.column + parts[0].length : parts[added].length) - end.column;
    const tailTokens = (this.tokens[i1] ?? []).filter((t) => t.start >= end.column)
      .map((t) => ({ ...t, start: t.start + shift, end: t.end + shift }));
    const lines: string[] = [];
    const toks: (Token[] | undefined)[] = [];
    for (let k = 0; k <= added; k++) {
      let s = parts[k];
      if (k === 0) s = head + s;
      if (k === added) s = s + tail;
      lines.push(s);
      toks.push(added === 0 ? [...headTokens, ...tailTokens] : k === 0 ? headTokens : k === added ? tailTokens : []);
    }
    this.text.splice(i0, i1 - i0 + 1, ...lines);
    this.tokens.splice(i0, i1 - i0 + 1, ...toks);
    return true;
  }
}

/**
 * Whether text typed at a token's end carries the token on until the reparse
 * says otherwise: a word going on (an identifier, a keyword, a number), or
 * more of a line comment that runs to the end of the line.
 */
function continuesToken(t: Token, line: string, text: string): boolean {
  if (/^\w+$/.test(text) && /\w/.test(line[t.end - 1] ?? "")) return true;
  return t.end === line.length && /comment/.test(t.scope) && /^(\/\/|#|--)/.test(line.slice(t.start, t.start + 2));
}

/**
 * A line's tokens once [from, to) of it is replaced by text on the same line:
 * tokens before stay, tokens after move, a token the edit falls in grows or
 * shrinks with it, and one that text continues (continuesToken) takes it in.
 */
export function editLineTokens(tokens: Token[], line: string, from: number, to: number, text: string): Token[] {
  const delta = text.length - (to - from);
  const out: Token[] = [];
  for (const t of tokens) {
    const joins = from === to && text !== "" && t.end === from && t.start < from && continuesToken(t, line, text);
    let moved: Token;
    if (t.end < from || (t.end === from && !joins)) moved = t;
    else if (t.start >= to) moved = { ...t, start: t.start + delta, end: t.end + delta };
    else moved = { ...t, start: Math.min(t.start, from), end: Math.max(from, t.end + delta) };
    if (moved.end > moved.start) out.push(moved);
  }
  return out;
}

/** A line's text and tokens with predictions applied (on single lines only). */
export function predictedLine(text: string, tokens: Token[] | undefined, line: number, predictions: Prediction[]):
    { text: string; tokens: Token[] | undefined } {
  for (const p of predictions) {
    const cols = p.at.filter((a) => a.line === line).map((a) => a.column).sort((a, b) => b - a);
    for (const col of cols) {
      const from = Math.max(0, col - p.deleteCount);
      if (tokens) tokens = editLineTokens(tokens, text, from, col, p.text);
      text = text.slice(0, from) + p.text + text.slice(col);
    }
  }
  return { text, tokens };
}

/** The carets after a prediction: each moves by what was typed at it and at every earlier caret on its line. */
export function caretsAfter(at: Pos[], text: string, deleteCount: number): Pos[] {
  const sorted = [...at].sort(comparePos);
  const out: Pos[] = [];
  const step = text.length - deleteCount;
  let line = -1, shift = 0;
  for (const p of sorted) {
    if (p.line !== line) { line = p.line; shift = 0; }
    shift += step;
    out.push({ line: p.line, column: p.column + shift });
  }
  return out;
}
