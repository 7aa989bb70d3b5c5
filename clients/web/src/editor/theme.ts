// Token colours of the current theme: a capture scope takes the colour of its
// longest dotted prefix that the theme names (`function.method` falls back to
// `function`), as the terminal client colours them.
import type { App } from "../app";

export interface TokenStyle { color?: string; italic: boolean; bold: boolean }

export class TokenTheme {
  private readonly byScope = new Map<string, TokenStyle>();
  private readonly resolved = new Map<string, TokenStyle | null>();

  constructor(tokenColors: { scope: string | string[]; settings?: { foreground?: string; fontStyle?: string } }[] = []) {
    for (const entry of tokenColors) {
      const scopes = Array.isArray(entry.scope) ? entry.scope : [entry.scope];
      const fontStyle = entry.settings?.fontStyle ?? "";
      const style: TokenStyle = { color: entry.settings?.foreground, italic: fontStyle.includes("italic"), bold: fontStyle.includes("bold") };
      for (const s of scopes) if (typeof s === "string") this.byScope.set(s, style);
    }
  }

  style(scope: string): TokenStyle | null {
    let hit = this.resolved.get(scope);
    if (hit !== undefined) return hit;
    hit = null;
    for (let s = scope; ; ) {
      const found = this.byScope.get(s);
      if (found) { hit = found; break; }
      const dot = s.lastIndexOf(".");
      if (dot < 0) break;
      s = s.slice(0, dot);
    }
    this.resolved.set(scope, hit);
    return hit;
  }
}

/** The current theme's token colours, read once per theme change and shared by every view of one page. */
const loaded = new WeakMap<App, { theme: Promise<TokenTheme>; listeners: Set<() => void> }>();

export function tokenTheme(app: App, onChange: () => void): { theme: () => Promise<TokenTheme>; unsubscribe: () => void } {
  let entry = loaded.get(app);
  if (!entry) {
    const e = { theme: fetchTheme(app), listeners: new Set<() => void>() };
    const refresh = () => { e.theme = fetchTheme(app); for (const l of e.listeners) l(); };
    app.rpc.on("theme/didChange", refresh);
    app.rpc.onReady(() => refresh());
    loaded.set(app, e);
    entry = e;
  }
  const e = entry;
  e.listeners.add(onChange);
  return { theme: () => e.theme, unsubscribe: () => e.listeners.delete(onChange) };
}

async function fetchTheme(app: App): Promise<TokenTheme> {
  try {
    const current = await app.rpc.request("theme/current", {});
    let theme = current?.theme ?? current;
    if (!Array.isArray(theme?.tokenColors) && theme?.id) theme = await app.rpc.request("theme/get", { themeId: theme.id });
    return new TokenTheme(theme?.theme?.tokenColors ?? theme?.tokenColors ?? []);
  } catch {
    return new TokenTheme([]);
  }
}
