// What a language server proposes beyond the caret: where a symbol is used,
// renaming it everywhere, formatting the document, and code actions (quick
// fixes, refactorings). Their edits are applied as the terminal client applies
// them: to each file's document in the core, opened in a tab behind the one in
// front when it is not open, and left unsaved for the user to look at.
import type { EditorView } from "./view";
import { selectionRange, type Pos } from "./model";

interface WireTextEdit { range: { start: { line: number; character?: number; column?: number }; end: { line: number; character?: number; column?: number } }; newText: string }

const column = (p: { character?: number; column?: number }) => p.character ?? p.column ?? 0;

/** LSP's TextEdit[] as document/edit's edits. */
function coreEdits(edits: WireTextEdit[]): object[] {
  return edits.filter((e) => e && e.range && typeof e.newText === "string").map((e) => ({
    range: { start: { line: e.range.start.line, column: column(e.range.start) }, end: { line: e.range.end.line, column: column(e.range.end) } },
    text: e.newText,
  }));
}

/** A WorkspaceEdit (`changes` by uri, or `documentChanges`), applied; the number of files it changed. */
export async function applyWorkspaceEdit(view: EditorView, edit: any): Promise<number> {
  const byUri = new Map<string, WireTextEdit[]>();
  if (edit?.changes && typeof edit.changes === "object")
    for (const [uri, edits] of Object.entries(edit.changes)) if (Array.isArray(edits)) byUri.set(uri, edits as WireTextEdit[]);
  for (const d of Array.isArray(edit?.documentChanges) ? edit.documentChanges : []) {
    // Creating, renaming or deleting files is left to the user: only text edits are applied.
    if (d?.textDocument?.uri && Array.isArray(d.edits)) byUri.set(d.textDocument.uri, [...(byUri.get(d.textDocument.uri) ?? []), ...d.edits]);
  }
  let files = 0;
  for (const [uri, edits] of byUri) {
    const list = coreEdits(edits);
    if (!list.length) continue;
    const documentId = view.sameUri(uri) ? view.doc.documentId : (await view.app.openInBackground(uri)).documentId;
    await view.rpc.request("document/edit", { documentId, edits: list });
    files++;
  }
  return files;
}

export class Refactor {
  constructor(private readonly view: EditorView) {}

  private get plain(): boolean { return !this.view.languageId || this.view.languageId === "plaintext"; }

  private refuseWithoutServer(): boolean {
    if (this.plain) this.view.app.showMessage("No language server for this document");
    return this.plain;
  }

  private fail(what: string, e: any): void { this.view.app.showMessage(`${what}: ${e?.message ?? e}`, "error"); }

  /** Every place the symbol under the caret is used, to pick one from. */
  async references(): Promise<void> {
    if (this.refuseWithoutServer()) return;
    const p = await this.view.freshCaret();
    try {
      const r = await this.view.rpc.request("lsp/references", { uri: this.view.doc.uri, position: { line: p.line, character: p.column }, includeDeclaration: true });
      const list: any[] = Array.isArray(r) ? r : r?.locations ?? [];
      if (!list.length) { this.view.app.showMessage("No references"); return; }
      const root = this.view.app.workspaceRoot();
      this.view.app.choose(list.map((loc) => {
        const path = decodeURIComponent(String(loc.uri ?? "").replace(/^file:\/\//, ""));
        const shown = root && path.startsWith(root + "/") ? path.slice(root.length + 1) : path;
        const start = loc.range?.start ?? { line: 0 };
        return {
          label: `${shown}:${start.line + 1}:${column(start) + 1}`,
          run: () => {
            this.view.app.rememberPlace();
            if (this.view.sameUri(loc.uri)) void this.view.jumpTo({ line: start.line, column: column(start) });
            else void this.view.app.openUri(loc.uri, { line: start.line, character: column(start) });
          },
        };
      }), `References: ${list.length}`);
    } catch (e) { this.fail("References", e); }
  }

  /** Renames the symbol under the caret in every file the server knows it in. */
  async rename(): Promise<void> {
    if (this.refuseWithoutServer()) return;
    const p = await this.view.freshCaret();
    const w = await this.view.rpc.request("document/wordAtPosition", { documentId: this.view.doc.documentId, position: p }).catch(() => null);
    const word: string = typeof w?.word === "string" ? w.word : typeof w?.text === "string" ? w.text : "";
    this.view.prompt("Rename to", word, (name) => {
      if (!name || name === word) return;
      void (async () => {
        try {
          const r = await this.view.rpc.request("lsp/rename", { uri: this.view.doc.uri, position: { line: p.line, character: p.column }, newName: name });
          const files = r?.edit ? await applyWorkspaceEdit(this.view, r.edit) : 0;
          this.view.app.showMessage(files ? `Renamed in ${files} file${files > 1 ? "s" : ""}` : "Nothing to rename here");
        } catch (e) { this.fail("Rename", e); }
      })();
    });
  }

  /** The whole document as the server formats it, one undoable edit. */
  async format(): Promise<void> {
    if (this.refuseWithoutServer()) return;
    try {
      const edits = await this.view.rpc.request("lsp/format", { uri: this.view.doc.uri, options: { tabSize: this.view.tabWidth, insertSpaces: !this.view.indentUnit.includes("\t") } });
      const list = coreEdits(Array.isArray(edits) ? edits : []);
      if (!list.length) { this.view.app.showMessage("Already formatted"); return; }
      await this.view.rpc.request("document/edit", { documentId: this.view.doc.documentId, edits: list });
    } catch (e) { this.fail("Format", e); }
  }

  /** The code actions for the selection (or the caret), with the diagnostics on its lines; the chosen one runs. */
  async codeActions(): Promise<void> {
    if (this.refuseWithoutServer()) return;
    const caret = await this.view.freshCaret();
    const c = this.view.cursors[0];
    const sel = c ? selectionRange(c) : null;
    const range = sel ?? { start: caret, end: caret };
    const wire = (q: Pos) => ({ line: q.line, character: q.column });
    try {
      const all = await this.view.rpc.request("lsp/diagnostics", { uri: this.view.doc.uri }).catch(() => null);
      const diagnostics = (all?.diagnostics ?? []).filter((d: any) => d?.range && d.range.start.line <= range.end.line && d.range.end.line >= range.start.line);
      const list = await this.view.rpc.request("lsp/codeAction", { uri: this.view.doc.uri, range: { start: wire(range.start), end: wire(range.end) }, context: { diagnostics } });
      const actions: any[] = (Array.isArray(list) ? list : []).filter((a) => typeof a?.title === "string" && (a.edit || a.command));
      if (!actions.length) { this.view.app.showMessage("No code actions here"); return; }
      this.view.app.choose(actions.map((a) => ({ label: a.title, detail: a.kind ?? "", run: () => { void this.run(a); } })), "Code actions");
    } catch (e) { this.fail("Code actions", e); }
  }

  /** An action's edit, then its command, run in the server that offered it (its edits come back as applyEdit). */
  private async run(action: any): Promise<void> {
    try {
      if (action.edit) await applyWorkspaceEdit(this.view, action.edit);
      // A Command is {title, command: name, arguments}; a CodeAction's command is a Command.
      const command = typeof action.command === "string" ? action : action.command;
      if (command && typeof command.command === "string")
        await this.view.rpc.request("lsp/executeCommand", { uri: this.view.doc.uri, command: command.command, arguments: Array.isArray(command.arguments) ? command.arguments : [] });
      this.view.app.showMessage(`Applied: ${action.title}`);
    } catch (e) { this.fail(action.title, e); }
  }
}
