// What the page's parts share. The shell (main.ts) implements it; the editor
// view (editor/) and the panels (panels/) only use it, so each part can be
// read and changed without the others.
import type { Rpc } from "./rpc";

export interface Position { line: number; character: number }
export interface Range { start: Position; end: Position }

/** An open document as the shell tracks it (one tab). */
export interface OpenDocument { documentId: string; uri: string; title: string }

export interface App {
  readonly rpc: Rpc;
  /** The workspace folder's absolute path, from `workspace/get` once connected. */
  workspaceRoot(): string;

  /** Opens (or shows) a file in a tab; `at` moves the caller's cursor there. */
  openUri(uri: string, at?: Position): Promise<void>;
  /** Remembers where the caret is before a jump (a definition, a reference), for `nav.back`. */
  rememberPlace(): void;
  /** Opens a file in a tab behind the one in front (or finds its tab), for edits made to it from elsewhere. */
  openInBackground(uri: string): Promise<OpenDocument>;
  activeDocument(): OpenDocument | null;
  onActiveDocumentChange(handler: (doc: OpenDocument | null) => void): void;

  /** Side bar (left) and bottom panel views, switched by their tabs. */
  addSidebarView(id: string, title: string, element: HTMLElement): void;
  showSidebarView(id: string): void;
  addBottomView(id: string, title: string, element: HTMLElement): void;
  showBottomView(id: string): void;
  /** The agent chat lives in the right-hand pane. */
  setRightPane(element: HTMLElement): void;
  toggleRightPane(show?: boolean): void;

  /** A command the palette lists and key bindings can name (`command` in `keybindings/get`). */
  registerCommand(id: string, title: string, run: (args?: unknown) => void): void;
  runCommand(id: string, args?: unknown): boolean;

  /** The current theme's colours by name (`editor.background`, ...), also set as CSS variables. */
  themeColor(name: string, fallback: string): string;
  /** Returns the unsubscribe function (a closed view lets go of its handler). */
  onThemeChange(handler: () => void): () => void;

  /** Offers a list to pick one from, filtered as the user types (references, code actions, ...). */
  choose(choices: { label: string; detail?: string; run: () => void }[], placeholder: string): void;

  /** A short message in the status bar; errors also go to the browser console. */
  showMessage(text: string, kind?: "info" | "error"): void;
}
