// The current theme as CSS variables on :root: each of the theme's colours
// `a.bC` is `--a-bC` (`editor.background` is `--editor-background`), so the
// page's stylesheets and themeColor() read the same values.
import type { Rpc } from "../rpc";

export interface Theme {
  id: string;
  name: string;
  type: string;
  colors: Record<string, string>;
  tokenColors?: unknown[];
}

export function cssVariableOf(colorKey: string): string { return "--" + colorKey.replace(/\./g, "-"); }

export class ThemeState {
  current: Theme | null = null;
  private readonly handlers = new Set<() => void>();
  private readonly applied = new Set<string>();
  private loading = 0;

  constructor(private readonly rpc: Rpc) {
    rpc.on("theme/didChange", (p) => { void this.load(p?.themeId); });
  }

  onChange(handler: () => void): () => void { this.handlers.add(handler); return () => this.handlers.delete(handler); }

  color(name: string, fallback: string): string {
    const c = this.current?.colors?.[name];
    return typeof c === "string" && c ? c : fallback;
  }

  /** Reads the current theme (or the one named) and repaints. */
  async load(themeId?: string): Promise<void> {
    const ticket = ++this.loading;
    const answer: any = themeId
      ? await this.rpc.request("theme/get", { themeId })
      : await this.rpc.request("theme/current", {});
    if (ticket !== this.loading) return; // a newer change is on its way
    const theme: Theme | undefined = answer?.theme ?? answer;
    if (!theme || typeof theme !== "object" || !theme.colors) return;
    this.apply(theme);
  }

  private apply(theme: Theme): void {
    this.current = theme;
    const style = document.documentElement.style;
    for (const name of this.applied) style.removeProperty(name);
    this.applied.clear();
    for (const [key, value] of Object.entries(theme.colors)) {
      if (typeof value !== "string") continue;
      const name = cssVariableOf(key);
      style.setProperty(name, value);
      this.applied.add(name);
    }
    document.documentElement.dataset.themeType = theme.type === "light" ? "light" : "dark";
    document.documentElement.dataset.themeId = theme.id;
    for (const h of this.handlers) {
      try { h(); } catch (e) { console.error("theme change handler failed", e); }
    }
  }
}
