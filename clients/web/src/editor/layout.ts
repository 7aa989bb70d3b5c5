// Where the characters of one line stand on screen: display columns (a tab
// reaches the next tab stop; a surrogate pair is one character) and, with
// soft wrap, where each visual row of the line begins.

const NEEDS_MAP = /[\t\uD800-\uDFFF]/;

export class LineLayout {
  /** Display column of each UTF-16 index 0..length; null when every unit is one column. */
  private readonly disp: Int32Array | null;
  /** UTF-16 index where each visual row starts (row 0 starts at 0). */
  readonly rowStarts: number[];

  constructor(readonly text: string, tabWidth: number, wrapColumns: number) {
    const n = text.length;
    if (NEEDS_MAP.test(text)) {
      const d = new Int32Array(n + 1);
      let col = 0;
      for (let i = 0; i < n; i++) {
        d[i] = col;
        const c = text.charCodeAt(i);
        if (c === 9) { col += tabWidth - (col % tabWidth); continue; }
        const next = i + 1 < n ? text.charCodeAt(i + 1) : 0;
        if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) d[++i] = col;
        col += 1;
      }
      d[n] = col;
      this.disp = d;
    } else {
      this.disp = null;
    }
    this.rowStarts = [0];
    if (wrapColumns > 0 && this.width > wrapColumns) {
      if (!this.disp) {
        for (let s = wrapColumns; s < n; s += wrapColumns) this.rowStarts.push(s);
      } else {
        let rowDisp = 0;
        for (let i = 0; i < n; i++) {
          if (this.disp[i + 1] - rowDisp > wrapColumns && this.disp[i] > rowDisp && this.disp[i] !== this.disp[i - 1]) {
            this.rowStarts.push(i);
            rowDisp = this.disp[i];
          }
        }
      }
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
