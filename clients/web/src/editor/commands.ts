// The editor's commands, under the ids and keys of the terminal client's
// table (the shell binds the keys). Each acts on the active view.
import type { App } from "../app";
import type { EditorView } from "./view";

export function installCommands(app: App, activeView: () => EditorView | null): void {
  const cmd = (id: string, title: string, run: (v: EditorView, args?: unknown) => void) =>
    app.registerCommand(id, title, (args) => {
      const v = activeView();
      if (v && !v.isDisposed) run(v, args);
    });
  cmd("edit.undo", "Undo", (v) => v.send("document/undo"));
  cmd("edit.redo", "Redo", (v) => v.send("document/redo"));
  cmd("edit.copy", "Copy", (v) => { void copySelection(v); });
  cmd("edit.cut", "Cut", (v) => { void copySelection(v).then((ok) => { if (ok) v.send("document/type", { text: "" }); }); });
  cmd("edit.paste", "Paste", (v) => {
    const clip = navigator.clipboard;
    if (!clip?.readText) { app.showMessage("The browser keeps the clipboard: paste with the keyboard", "error"); return; }
    clip.readText().then((text) => { if (text) v.paste(text); },
      () => app.showMessage("The browser refused to read the clipboard: paste with the keyboard", "error"));
  });
  cmd("edit.selectAll", "Select all", (v) => v.send("document/selectAll"));
  cmd("nav.gotoLine", "Go to line", (v) => v.gotoLine());
  cmd("edit.toggleComment", "Comment or uncomment the lines", (v) => v.send("document/toggleComment"));
  cmd("edit.duplicateLines", "Duplicate the lines", (v) => v.send("document/duplicateLines"));
  cmd("edit.moveLinesUp", "Move the lines up", (v) => v.send("document/moveLines", { direction: "up" }));
  cmd("edit.moveLinesDown", "Move the lines down", (v) => v.send("document/moveLines", { direction: "down" }));
  cmd("find.find", "Find in the document", (v) => v.find.open(false));
  cmd("find.next", "Find the next match", (v) => v.find.step(false));
  cmd("find.previous", "Find the previous match", (v) => v.find.step(true));
  cmd("find.replace", "Replace in the document", (v) => v.find.open(true));
  cmd("cursor.nextOccurrence", "Add a cursor at the next occurrence", (v) => { void v.nextOccurrence(); });
  cmd("cursor.addAbove", "Add a cursor above", (v) => v.addCursorVertical(-1));
  cmd("cursor.addBelow", "Add a cursor below", (v) => v.addCursorVertical(1));
  cmd("cursor.single", "Back to one cursor", (v) => {
    if (!v.lsp.closePopups() && !v.find.close()) v.singleCursor();
  });
  cmd("lsp.complete", "Completions from the language server", (v) => { void v.lsp.complete(); });
  cmd("lsp.hover", "What the language server says of the symbol under the caret", (v) => { void v.lsp.hoverAtCaret(); });
  cmd("lsp.definition", "Go to the definition", (v) => { void v.freshCaret().then((p) => v.lsp.definitionAt(p)); });
  cmd("lsp.references", "Where the symbol under the caret is used", (v) => { void v.refactor.references(); });
  cmd("lsp.rename", "Rename the symbol under the caret everywhere", (v) => { void v.refactor.rename(); });
  cmd("lsp.format", "Format the document with its language server", (v) => { void v.refactor.format(); });
  cmd("lsp.codeActions", "Code actions (quick fixes, refactorings) at the caret or selection", (v) => { void v.refactor.codeActions(); });
  // This view only: the editor.wordWrap setting, when it changes, sets every view.
  cmd("view.toggleWrap", "Soft wrap: long lines continue below (on/off)", (v) => v.setWrap(!v.wrap));
}

async function copySelection(v: EditorView): Promise<boolean> {
  const text = v.cachedSelectionText() ?? await v.selectedText();
  if (!text) return false;
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    v.app.showMessage("The browser refused the clipboard: copy with the keyboard", "error");
    return false;
  }
}
