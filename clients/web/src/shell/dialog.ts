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
