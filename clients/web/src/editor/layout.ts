// Where the characters of one line stand on screen: display columns (a tab
// reaches the next tab stop; a surrogate pair is one character; East Asian
// wide characters and emoji take two columns, combining marks none) and,
// with soft wrap, where each visual row of the line begins: after the last
// blank that fits, as a reader expects, or at the column when a word is
// longer than the row.
import { cellWidth, MAY_NOT_BE_ONE_COLUMN } from "./width";

export class LineLayout {
  /** Display column of each UTF-16 index 0..length; null when every unit is one column. */
  private readonly disp: Int32Array | null;
  /** Whether some character of the line takes two columns (the row paints it in a box of two). */
  readonly hasWide: boolean;
  /** UTF-16 index where each visual row starts (row 0 starts at 0). */
  readonly rowStarts: number[];

  constructor(readonly text: string, tabWidth: number, wrapColumns: number) {
    const n = text.length;
    let wide = false;
    if (MAY_NOT_BE_ONE_COLUMN.test(text)) {
      const d = new Int32Array(n + 1);
      let col = 0;
      for (let i = 0; i < n; i++) {
        d[i] = col;
        const c = text.charCodeAt(i);
        if (c === 9) { col += tabWidth - (col % tabWidth); continue; }
        let cp = c;
        const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
        if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          d[++i] = col;
        }
        // A character joined to the one before (after a zero-width joiner) is part of its picture.
        const w = i > 1 && text.charCodeAt(i - (cp > 0xffff ? 2 : 1)) === 0x200d ? 0 : cellWidth(cp);
        if (w === 2) wide = true;
        col += w;
      }
      d[n] = col;
      this.disp = d;
    } else {
      this.disp = null;
    }
    this.hasWide = wide;
    this.rowStarts = [0];
    if (wrapColumns > 0 && this.width > wrapColumns) this.wrapAt(wrapColumns);
  }

  /** Breaks the line into rows of at most `columns` display columns, after a blank where one fits. */
  private wrapAt(columns: number): void {
    const text = this.text, n = text.length;
    let rowStart = 0, rowDisp = 0, lastBreak = -1;
    const blank = (i: number) => { const c = text.charCodeAt(i); return c === 32 || c === 9; };
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0xdc00 && c <= 0xdfff && i > 0 && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff) continue;
      if (i > 0 && blank(i - 1) && !blank(i)) lastBreak = i;
      const end = c >= 0xd800 && c <= 0xdbff && i + 1 < n ? i + 2 : i + 1;
      const from = this.displayCol(i), to = this.displayCol(end);
      // A character of no width (a mark drawn on the one before) never starts a row.
      if (to === from || to - rowDisp <= columns || from <= rowDisp) continue;
      const at = lastBreak > rowStart ? lastBreak : i;
      this.rowStarts.push(at);
      rowStart = at;
      rowDisp = this.displayCol(at);
      lastBreak = -1;
      if (at < i) i--;  // the word moved down: this character is measured again on its new row
    }
  }

  get width(): number { return this.disp ? this.disp[this.text.length] : this.text.length; }
  get rows(): number { return this.rowStarts.length; }

  displayCol(col: number): number {
    col = Math.max(0, Math.min(col, this.text.length));
    return this.disp ? this.disp[col] : col;
  }

  /** The visual row that shows a column (a column where a row starts belongs to that row). */
  rowOf(col: number): number {
    let r = 0;
    while (r + 1 < this.rowStarts.length && this.rowStarts[r + 1] <= col) r++;
    return r;
  }

  rowEnd(row: number): number { return row + 1 < this.rowStarts.length ? this.rowStarts[row + 1] : this.text.length; }

  /** The column nearest a display position within one visual row. */
  columnAt(row: number, display: number): number {
    const from = this.rowStarts[row], to = this.rowEnd(row);
    const base = this.displayCol(from);
    const target = base + display;
    let best = from;
    if (!this.disp) {
      best = Math.max(from, Math.min(to, Math.round(target)));
    } else {
      for (let i = from; i <= to; i++) {
        if (i > from && i < this.text.length && this.disp[i] === this.disp[i - 1]) continue;
        if (Math.abs(this.disp[i] - target) < Math.abs(this.disp[best] - target)) best = i;
        if (this.disp[i] > target) break;
      }
    }
    // A wrapped row's end is the next row's start, and is shown there.
    if (best === to && to !== this.text.length && to > from) best = to - 1;
    return best;
  }
}
