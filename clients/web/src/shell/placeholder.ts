// What a tab shows until the editor view lands: the document's first lines,
// read from the core, without editing. Same shape as EditorView.
import type { App, OpenDocument, Position } from "../app";
import { el } from "./dom";

export class PlaceholderView {
  private readonly pre: HTMLPreElement;
  private readonly unsubscribe: () => void;
  private disposed = false;

  constructor(private readonly app: App, private readonly doc: OpenDocument, host: HTMLElement) {
    this.pre = el("pre", { class: "placeholder-view", attrs: { tabindex: "0" } });
    host.append(this.pre);
    this.unsubscribe = app.rpc.on("document/didChange", (p) => { if (p?.documentId === doc.documentId) void this.refresh(); });
    void this.refresh();
  }

  private async refresh(): Promise<void> {
    try {
      const r: any = await this.app.rpc.request("document/viewport", { documentId: this.doc.documentId, startLine: 0, lineCount: 200 });
      if (this.disposed) return;
      const lines: any[] = r?.lines ?? [];
      this.pre.textContent = lines.map((l) => (typeof l === "string" ? l : l?.text ?? "")).join("\n");
    } catch (e) { if (!this.disposed) console.error("viewport failed", e); }
  }

  focus(): void { this.pre.focus(); }
  reveal(_pos: Position): void { /* nothing to scroll */ }
  cursorPosition(): Position | null { return null; }
  dispose(): void { this.disposed = true; this.unsubscribe(); this.pre.remove(); }
}
