// Key names as the TUI and the keybindings service write them
// (`ctrl+alt+shift+meta+<key>`, lower case), the default keymap, and how the
// server's bindings override it.
import { whenHolds, type WhenContext } from "./when";

/** The TUI's table (clients/tui/commands.c): command id → its keys, space-separated. */
export const DEFAULT_KEYS: ReadonlyArray<[string, string]> = [
  ["file.save", "ctrl+s"], ["file.saveAs", "alt+s"], ["file.new", "ctrl+n"], ["file.picker", "ctrl+p ctrl+o"],
  ["app.quit", "ctrl+q"], ["edit.undo", "ctrl+z"], ["edit.redo", "ctrl+y"], ["edit.cut", "ctrl+x"],
  ["edit.copy", "ctrl+c"], ["edit.paste", "ctrl+v"], ["edit.selectAll", "ctrl+a"], ["find.find", "ctrl+f"],
  ["find.next", "f3"], ["find.previous", "shift+f3"], ["find.replace", "ctrl+r"], ["search.project", "alt+f f4"],
  ["nav.gotoLine", "ctrl+g"], ["app.help", "f1"],
  // The palette also answers ctrl+shift+p, as browsers' editors have it.
  ["app.palette", "ctrl+e f2 ctrl+shift+p"],
  ["cursor.nextOccurrence", "ctrl+d"], ["cursor.addAbove", "ctrl+alt+up alt+shift+up"],
  ["cursor.addBelow", "ctrl+alt+down alt+shift+down"], ["cursor.single", "escape"], ["tab.close", "ctrl+w"],
  ["tab.next", "ctrl+pagedown alt+right"], ["tab.previous", "ctrl+pageup"], ["terminal.toggle", "ctrl+t"],
  ["chat.toggle", "alt+a f6"], ["git.panel", "alt+g f5"],
  ["cursor.up", "up"], ["cursor.down", "down"], ["cursor.left", "left"], ["cursor.right", "right"],
  ["select.up", "shift+up"], ["select.down", "shift+down"], ["select.left", "shift+left"], ["select.right", "shift+right"],
  ["cursor.wordLeft", "ctrl+left"], ["cursor.wordRight", "ctrl+right"], ["select.wordLeft", "ctrl+shift+left"],
  ["select.wordRight", "ctrl+shift+right"], ["cursor.home", "home"], ["cursor.end", "end"],
  ["select.home", "shift+home"], ["select.end", "shift+end"], ["cursor.top", "ctrl+home"], ["cursor.bottom", "ctrl+end"],
  ["cursor.pageUp", "pageup"], ["cursor.pageDown", "pagedown"], ["select.pageUp", "shift+pageup"],
  ["select.pageDown", "shift+pagedown"], ["edit.newline", "enter"], ["edit.tab", "tab"], ["edit.outdent", "shift+tab"],
  ["edit.deleteWordLeft", "ctrl+backspace alt+backspace"], ["edit.deleteWordRight", "ctrl+delete"],
  ["edit.toggleComment", "ctrl+/ ctrl+_"], ["edit.duplicateLines", "ctrl+shift+d alt+shift+d"],
  ["edit.moveLinesUp", "alt+up"], ["edit.moveLinesDown", "alt+down"], ["edit.backspace", "backspace"],
  ["edit.delete", "delete"], ["lsp.complete", "ctrl+space"], ["lsp.hover", "alt+k"], ["lsp.definition", "f12 ctrl+]"],
  ["nav.back", "alt+left"], ["lsp.references", "shift+f12 f7"], ["lsp.rename", "f9"], ["lsp.format", "f10"],
  ["lsp.codeActions", "f8"], ["view.wrap", "alt+z"], ["view.redraw", "ctrl+l"],
  // The page's name for soft wrap's command.
  ["view.toggleWrap", "alt+z"],
];

/** Commands that keep their keys while a terminal or the chat has the focus (the TUI's IN_PANES). */
export const PANE_COMMANDS: ReadonlySet<string> = new Set(["app.quit", "terminal.toggle", "chat.toggle", "view.redraw"]);

const MODIFIER_NAMES: Record<string, "ctrl" | "alt" | "shift" | "meta"> = {
  ctrl: "ctrl", control: "ctrl", alt: "alt", option: "alt", shift: "shift", meta: "meta", cmd: "meta", super: "meta",
};

/** A written key in the server's canonical form: `Shift+Ctrl+P` is `ctrl+shift+p`. */
export function canonicalKey(written: string): string {
  const parts = written.toLowerCase().split("+");
  const mods = { ctrl: false, alt: false, shift: false, meta: false };
  let i = 0;
  // The last part is the key, "+" itself included (`ctrl++` splits into "ctrl", "", "").
  for (; i < parts.length - 1; i++) {
    const m = MODIFIER_NAMES[parts[i]];
    if (!m) break;
    mods[m] = true;
  }
  let key = parts.slice(i).join("+");
  if (key === "") key = "+";
  return `${mods.ctrl ? "ctrl+" : ""}${mods.alt ? "alt+" : ""}${mods.shift ? "shift+" : ""}${mods.meta ? "meta+" : ""}${key}`;
}

const NAMED_KEYS: Record<string, string> = {
  ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right", PageUp: "pageup", PageDown: "pagedown",
  Home: "home", End: "end", Enter: "enter", Tab: "tab", Backspace: "backspace", Delete: "delete", Escape: "escape",
  Insert: "insert", " ": "space",
};

/** Punctuation by its place too, unshifted (ctrl+shift+/, not ctrl+shift+?), as on a US keyboard. */
const PUNCTUATION_CODES: Record<string, string> = {
  Slash: "/", Backslash: "\\", BracketLeft: "[", BracketRight: "]", Semicolon: ";", Quote: "'", Comma: ",",
  Period: ".", Minus: "-", Equal: "=", Backquote: "`",
};

/** The canonical name of a key press, or null for a lone modifier. */
export function keyName(e: KeyboardEvent): string | null {
  if (["Control", "Shift", "Alt", "Meta", "AltGraph", "CapsLock", "Dead", "Unidentified", "Process"].includes(e.key)) return null;
  let key: string;
  if (NAMED_KEYS[e.key]) key = NAMED_KEYS[e.key];
  else if (/^F([1-9]|1[0-9]|2[0-4])$/.test(e.key)) key = e.key.toLowerCase();
  // Letters and digits by their place on the keyboard, so shift and the layout's
  // other levels do not change the name (ctrl+shift+p, not ctrl+shift+P).
  else if (/^Key[A-Z]$/.test(e.code)) key = e.code.slice(3).toLowerCase();
  else if (/^Digit[0-9]$/.test(e.code)) key = e.code.slice(5);
  else if (e.code === "Space") key = "space";
  else if (PUNCTUATION_CODES[e.code]) key = PUNCTUATION_CODES[e.code];
  else key = e.key.length === 1 ? e.key.toLowerCase() : e.key.toLowerCase();
  return `${e.ctrlKey ? "ctrl+" : ""}${e.altKey ? "alt+" : ""}${e.shiftKey ? "shift+" : ""}${e.metaKey ? "meta+" : ""}${key}`;
}

export interface ServerBinding { key: string; command: string; when?: string; args?: unknown }

export interface Binding { command: string; args?: unknown; when?: string }

/** Every binding of each key, in order: the defaults, then the server's. */
export type Keymap = Map<string, Binding[]>;

/**
 * The keymap: the defaults, then the server's bindings in their order, as the
 * TUI builds it. A key press runs the last binding of its key whose `when`
 * holds and whose command the page has (see resolveKey).
 */
export function buildKeymap(serverBindings: ServerBinding[]): Keymap {
  const map: Keymap = new Map();
  const add = (key: string, b: Binding) => {
    const list = map.get(key);
    if (list) list.push(b); else map.set(key, [b]);
  };
  for (const [command, keys] of DEFAULT_KEYS)
    for (const k of keys.split(" ")) if (k) add(canonicalKey(k), { command });
  for (const b of serverBindings) {
    if (typeof b?.key !== "string" || typeof b?.command !== "string") continue;
    add(canonicalKey(b.key), { command: b.command, args: b.args, when: typeof b.when === "string" ? b.when : undefined });
  }
  return map;
}

/** What a key runs in a context: the last of its bindings that holds there and names a command the page has. */
export function resolveKey(map: Keymap, key: string, ctx: WhenContext, has: (command: string) => boolean): Binding | null {
  const list = map.get(key);
  if (!list) return null;
  for (let i = list.length - 1; i >= 0; i--) {
    const b = list[i];
    if (has(b.command) && whenHolds(b.when, ctx)) return b;
  }
  return null;
}

/** The keys bound to a command, for the palette to show. */
export function keysOf(map: Keymap, command: string): string[] {
  const out: string[] = [];
  for (const [k, list] of map) if (list[list.length - 1].command === command) out.push(k);
  return out;
}
