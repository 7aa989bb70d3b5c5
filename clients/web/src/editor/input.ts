// Keys, text and the clipboard reach the view through one hidden textarea that
// follows the caret (so an input method's window opens beside it). Typed text
// and committed compositions go to document/type; the keys that move or edit
// by themselves are handled here; everything else bubbles to the shell's key
// bindings.
import type { EditorView } from "./view";

export class InputHandler {
  readonly textarea: HTMLTextAreaElement;
  private composing = false;
  private chord = false;
  private readonly cleanup: (() => void)[] = [];

  constructor(private readonly view: EditorView) {
    const ta = document.createElement("textarea");
    ta.className = "ecp-input";
    ta.setAttribute("autocomplete", "off");
    ta.setAttribute("autocorrect", "off");
    ta.setAttribute("autocapitalize", "off");
    ta.setAttribute("spellcheck", "false");
    ta.setAttribute("aria-label", `Editor: ${view.doc.title}`);
    ta.wrap = "off";
    view.root.appendChild(ta);
    this.textarea = ta;
    const on = <K extends keyof HTMLElementEventMap>(type: K, h: (e: HTMLElementEventMap[K]) => void) => {
      ta.addEventListener(type, h as EventListener);
      this.cleanup.push(() => ta.removeEventListener(type, h as EventListener));
    };
    on("keydown", (e) => this.onKeyDown(e));
    on("input", (e) => this.onInput(e as InputEvent));
    on("compositionstart", () => { this.composing = true; this.view.setComposition(""); });
    on("compositionupdate", (e) => this.view.setComposition(e.data ?? ""));
    on("compositionend", (e) => this.onCompositionEnd(e));
    on("copy", (e) => this.onCopy(e, false));
    on("cut", (e) => this.onCopy(e, true));
    on("paste", (e) => {
      e.preventDefault();
      const text = e.clipboardData?.getData("text/plain") ?? "";
      if (text) this.view.paste(text);
    });
    on("focus", () => { view.root.classList.add("focused"); view.prefetchSelection(); });
    on("blur", () => view.root.classList.remove("focused"));
  }

  focus(): void { this.textarea.focus({ preventScroll: true }); }

  dispose(): void { for (const c of this.cleanup) c(); }

  /** Keeps the textarea at the caret, so an input method's window opens there. */
  placeTextarea(): void {
    const c = this.view.cursors[0];
    const at = c ? this.view.caretPoint(c.position) : null;
    const left = `${at ? Math.max(0, at.x) : 0}px`, top = `${at ? at.y : 0}px`;
    // Moving the focused field makes the browser tell the input method where it is: only when it moved.
    if (left !== this.textarea.style.left) this.textarea.style.left = left;
    if (top !== this.textarea.style.top) this.textarea.style.top = top;
  }

  private onInput(e: InputEvent): void {
    if (this.composing || e.isComposing) return;
    const text = this.textarea.value;
    this.textarea.value = "";
    if (text) this.view.type(text);
  }

  private onCompositionEnd(e: CompositionEvent): void {
    this.composing = false;
    const text = e.data ?? "";
    this.textarea.value = "";
    this.view.setComposition(null);
    if (text) this.view.type(text);
  }

  private onCopy(e: ClipboardEvent, cut: boolean): void {
    e.preventDefault();
    const text = this.view.cachedSelectionText();
    if (text !== null && e.clipboardData) {
      e.clipboardData.setData("text/plain", text);
    } else {
      // Not fetched yet (a very large selection): the asynchronous clipboard takes it once it arrives.
      void this.view.selectedText().then((t) => navigator.clipboard?.writeText(t)).catch(() => {});
    }
    if (cut) this.view.send("document/type", { text: "" });
  }

  private onKeyDown(e: KeyboardEvent): void {
    const v = this.view;
    if (this.composing || e.isComposing || e.keyCode === 229) return;
    const ctrl = e.ctrlKey || e.metaKey;
    const handled = () => { e.preventDefault(); e.stopPropagation(); };
    if (e.key === "Control" || e.key === "Shift" || e.key === "Alt" || e.key === "Meta") return;
    // ctrl+k ctrl+i: the hover at the caret, as VS Code has it (the first key of the chord waits for the second).
    if (this.chord) {
      this.chord = false;
      if (ctrl && (e.key === "i" || e.key === "I")) { handled(); void v.lsp.hoverAtCaret(); return; }
    }
    if (ctrl && !e.shiftKey && !e.altKey && (e.key === "k" || e.key === "K")) { handled(); this.chord = true; return; }
    if (v.lsp.onKey(e)) { handled(); return; }
    if (v.find.onEditorKey(e)) { handled(); return; }
    // The browser's own copy, cut and paste fire their events here, with the clipboard's data.
    if (ctrl && !e.altKey && !e.shiftKey && (e.key === "c" || e.key === "x" || e.key === "v" || e.key === "C" || e.key === "X" || e.key === "V")) {
      e.stopPropagation();
      return;
    }
    // A printable key is typed here, not by the browser's editing of the textarea (which costs a few
    // milliseconds of its own per key); input methods, dead keys and AltGr's ctrl+alt still come as input events.
    if (e.key.length === 1 || (e.key.length === 2 && /[\uD800-\uDBFF]/.test(e.key[0]))) {
      if (!ctrl && !e.altKey) { handled(); v.type(e.key); }
      return;
    }
    const select = e.shiftKey;
    switch (e.key) {
      case "ArrowLeft": case "ArrowRight":
        if (e.altKey) return;
        handled(); v.move(e.key === "ArrowLeft" ? "left" : "right", ctrl ? "word" : "character", select); return;
      case "ArrowUp": case "ArrowDown":
        if (e.altKey || ctrl) return;
        handled(); v.move(e.key === "ArrowUp" ? "up" : "down", "character", select); return;
      case "Home": case "End":
        if (e.altKey) return;
        handled();
        if (ctrl) v.move(e.key === "Home" ? "up" : "down", "document", select);
        else v.move(e.key === "Home" ? "left" : "right", "line", select);
        return;
      case "PageUp": case "PageDown":
        if (e.altKey || ctrl) return;
        handled(); v.page(e.key === "PageUp" ? -1 : 1, select); return;
      case "Backspace":
        if (e.shiftKey && !ctrl) { handled(); v.deleteBackward(); return; }
        if (e.shiftKey) return;
        handled();
        if (ctrl || e.altKey) v.send("document/deleteWord", { direction: "left" });
        else v.deleteBackward();
        return;
      case "Delete":
        if (e.shiftKey || e.altKey) return;
        handled();
        if (ctrl) v.send("document/deleteWord", { direction: "right" });
        else v.deleteForward();
        return;
      case "Enter":
        if (ctrl || e.altKey) return;
        handled(); v.lsp.closeCompletion(); v.send("document/newline"); return;
      case "Tab":
        if (ctrl || e.altKey) return;
        handled(); v.tabKey(e.shiftKey); return;
      case "Escape":
        if (v.cursors.length > 1) { handled(); v.singleCursor(); }
        return;
    }
  }
}
