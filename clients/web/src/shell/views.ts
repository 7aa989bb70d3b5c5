// Switchable views in one place (the side bar, the bottom panel): a tab per
// view in a nav, one view's element shown at a time.
import { el } from "./dom";

export class ViewSwitcher {
  private readonly views = new Map<string, { tab: HTMLElement; element: HTMLElement }>();
  current: string | null = null;
  onShow: (id: string) => void = () => {};

  constructor(private readonly nav: HTMLElement, private readonly body: HTMLElement) {}

  get count(): number { return this.views.size; }
  has(id: string): boolean { return this.views.has(id); }

  add(id: string, title: string, element: HTMLElement): void {
    const old = this.views.get(id);
    if (old) { old.tab.remove(); old.element.remove(); }
    const tab = el("button", { class: "view-tab", text: title, title, attrs: { "data-view": id, role: "tab" } });
    tab.addEventListener("click", () => this.show(id));
    element.classList.add("view");
    element.dataset.view = id;
    element.hidden = true;
    this.nav.append(tab);
    this.body.append(element);
    this.views.set(id, { tab, element });
    if (!this.current || this.current === id) this.show(id);
  }

  show(id: string): void {
    if (!this.views.has(id)) return;
    this.current = id;
    for (const [vid, v] of this.views) {
      const on = vid === id;
      v.element.hidden = !on;
      v.tab.classList.toggle("active", on);
      v.tab.setAttribute("aria-selected", String(on));
    }
    this.onShow(id);
  }
}
