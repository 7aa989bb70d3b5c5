// A modal question with buttons; resolves with the chosen button's value
// (Escape or a click outside chooses `cancelValue`).
import { el } from "./dom";

export interface Choice<T> { label: string; value: T; primary?: boolean }

export function ask<T>(message: string, choices: Choice<T>[], cancelValue: T): Promise<T> {
  return new Promise((resolve) => {
    const buttons = el("div", { class: "dialog-buttons" });
    const box = el("div", { class: "dialog", attrs: { role: "dialog", "aria-modal": "true" } },
      el("p", { class: "dialog-message", text: message }), buttons);
    const backdrop = el("div", { class: "dialog-backdrop" }, box);
    const previous = document.activeElement as HTMLElement | null;
    const finish = (v: T) => {
      backdrop.remove();
      document.removeEventListener("keydown", onKey, true);
      previous?.focus?.();
      resolve(v);
    };
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(cancelValue); }
    };
    for (const c of choices) {
      const b = el("button", { text: c.label, class: c.primary ? "primary" : "" });
      b.addEventListener("click", () => finish(c.value));
      buttons.append(b);
    }
    backdrop.addEventListener("mousedown", (e) => { if (e.target === backdrop) finish(cancelValue); });
    document.addEventListener("keydown", onKey, true);
    document.body.append(backdrop);
    (buttons.querySelector("button.primary") as HTMLElement | null ?? buttons.querySelector("button"))?.focus();
  });
}

/** Asks for one line of text; resolves with it, or null when cancelled. */
export function promptText(message: string, initial: string): Promise<string | null> {
  return new Promise((resolve) => {
    const input = el("input", { class: "dialog-input", attrs: { type: "text", spellcheck: "false" } });
    input.value = initial;
    const ok = el("button", { class: "primary", text: "OK" });
    const cancel = el("button", { text: "Cancel" });
    const box = el("div", { class: "dialog", attrs: { role: "dialog", "aria-modal": "true" } },
      el("p", { class: "dialog-message", text: message }), input, el("div", { class: "dialog-buttons" }, ok, cancel));
    const backdrop = el("div", { class: "dialog-backdrop" }, box);
    const previous = document.activeElement as HTMLElement | null;
    const finish = (v: string | null) => { backdrop.remove(); previous?.focus?.(); resolve(v); };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); finish(input.value); }
      else if (e.key === "Escape") { e.preventDefault(); finish(null); }
      e.stopPropagation();
    });
    ok.addEventListener("click", () => finish(input.value));
    cancel.addEventListener("click", () => finish(null));
    backdrop.addEventListener("mousedown", (e) => { if (e.target === backdrop) finish(null); });
    document.body.append(backdrop);
    input.focus();
    input.setSelectionRange(input.value.length, input.value.length);
  });
}
