// Restricted mode: while the workspace folder is not trusted, a banner says
// what the server withholds and offers to trust it (workspace/trust).
import type { App } from "../app";
import { el } from "./dom";

export class TrustBanner {
  readonly element: HTMLElement;
  private readonly text: HTMLElement;
  private ticket = 0;

  constructor(private readonly app: App) {
    this.text = el("span", { class: "trust-text" });
    const trust = el("button", { class: "primary", text: "Trust this folder" });
    trust.addEventListener("click", () => { void this.trust(); });
    this.element = el("div", { class: "trust-banner", attrs: { role: "status" } }, this.text, trust);
    this.element.hidden = true;
    app.rpc.on("workspace/didChangeTrust", () => { void this.refresh(); });
  }

  async refresh(): Promise<void> {
    const ticket = ++this.ticket;
    try {
      const r: any = await this.app.rpc.request("workspace/isTrusted", {});
      if (ticket !== this.ticket) return;
      const trusted = r?.trusted === true;
      this.element.hidden = trusted;
      if (!trusted) {
        const ignored: string[] = Array.isArray(r?.ignoredSettings) ? r.ignoredSettings : [];
        this.text.textContent = "Restricted mode: this folder is not trusted, so its language servers do not start, " +
          "and its own settings that run programs or widen permissions (the terminals' shell, the agent's MCP tools " +
          "and approval, project database passwords) are not applied" +
          (ignored.length ? ` (ignored now: ${ignored.join(", ")}).` : ".");
      }
    } catch (e) { console.error("workspace/isTrusted failed", e); }
  }

  private async trust(): Promise<void> {
    const root = this.app.workspaceRoot();
    if (!root) return;
    try {
      await this.app.rpc.request("workspace/trust", { uri: root, trusted: true });
      this.app.showMessage(`Trusted ${root}`);
      await this.refresh();
    } catch (e: any) { this.app.showMessage(`Not trusted: ${e?.message ?? e}`, "error"); }
  }
}
