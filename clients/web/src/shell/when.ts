// `when` clauses of key bindings, read as the keybindings service reads them
// (services/session/keybindings.c): names, quoted values, ==, !=, !, &&, ||
// and parentheses, `&&` binding tighter; a condition on a key the page does
// not send counts as true, negated or not; '(' and '!' nest at most 64 deep.

export type WhenContext = Record<string, string | boolean>;

const MAX_DEPTH = 64;

class WhenError extends Error {}

class Parser {
  pos = 0;
  depth = 0;
  constructor(private readonly s: string, private readonly ctx: WhenContext) {}

  private space(): void { while (this.s[this.pos] === " " || this.s[this.pos] === "\t") this.pos++; }
  private at(text: string): boolean { return this.s.startsWith(text, this.pos); }
  private descend(): void { if (++this.depth > MAX_DEPTH) throw new WhenError("nests too deep"); }

  private atom(): { text: string; quoted: boolean } {
    this.space();
    const c = this.s[this.pos];
    if (c === "'" || c === '"') {
      const end = this.s.indexOf(c, this.pos + 1);
      if (end < 0) throw new WhenError("unterminated string");
      const text = this.s.slice(this.pos + 1, end);
      this.pos = end + 1;
      return { text, quoted: true };
    }
    const m = /^[A-Za-z0-9_.:-]+/.exec(this.s.slice(this.pos));
    if (!m) throw new WhenError("expected a name");
    this.pos += m[0].length;
    return { text: m[0], quoted: false };
  }

  /** [value, unknown]: unknown when the condition names a key the page did not send. */
  private primary(): [boolean, boolean] {
    this.space();
    if (this.at("(")) {
      this.descend();
      this.pos++;
      const v = this.or();
      this.space();
      if (!this.at(")")) throw new WhenError("expected ')'");
      this.pos++;
      this.depth--;
      return [v, false];
    }
    const name = this.atom();
    if (name.quoted) throw new WhenError("a quoted value needs a name and '==' before it");
    this.space();
    const eq = this.at("=="), ne = this.at("!=");
    const known = Object.prototype.hasOwnProperty.call(this.ctx, name.text);
    const v = known ? this.ctx[name.text] : undefined;
    if (!eq && !ne) {
      if (name.text === "true" || name.text === "false") return [name.text === "true", false];
      if (!known) return [true, true];
      return [typeof v === "string" ? v !== "" : !!v, false];
    }
    this.pos += 2;
    const rhs = this.atom();
    if (!known) return [true, true];
    const equal = typeof v === "string" ? v === rhs.text : !rhs.quoted && rhs.text === String(v);
    return [eq ? equal : !equal, false];
  }

  private unary(): boolean {
    let negations = 0;
    for (;;) {
      this.space();
      if (!this.at("!") || this.at("!=")) break;
      this.descend();
      this.pos++;
      negations++;
    }
    const [v, unknown] = this.primary();
    this.depth -= negations;
    return !unknown && negations % 2 ? !v : v;
  }

  private and(): boolean {
    let v = this.unary();
    for (;;) {
      this.space();
      if (!this.at("&&")) return v;
      this.pos += 2;
      const rhs = this.unary();
      v = v && rhs;
    }
  }

  or(): boolean {
    let v = this.and();
    for (;;) {
      this.space();
      if (!this.at("||")) return v;
      this.pos += 2;
      const rhs = this.and();
      v = v || rhs;
    }
  }

  whole(): boolean {
    const v = this.or();
    this.space();
    if (this.pos < this.s.length) throw new WhenError("unexpected text");
    return v;
  }
}

/** Whether a clause holds in a context; a clause that does not parse never holds. */
export function whenHolds(clause: string | undefined, ctx: WhenContext): boolean {
  if (clause === undefined || clause === null || clause.trim() === "") return true;
  try { return new Parser(clause, ctx).whole(); } catch { return false; }
}
