// The page's frame, for real: ecpd, ecp-web and Chromium (tests/web/harness.js).
// The file tree, tabs, the palette, themes, key bindings, the trust banner,
// other clients in the status bar, and a restart of ecpd under an open page
// that keeps the unsaved text of its tab.
"use strict";

const fs = require("fs");
const path = require("path");
const { run, check, outDir, sleep } = require("./harness");

const MAIN_C = `#include <stdio.h>

/* Greets whoever runs it. */
static int greet(const char *name)
{
    return printf("hello, %s\\n", name);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        greet(argv[i]);
    return argc > 1 ? 0 : 1;
}
`;

const files = {
  "main.c": MAIN_C,
  "src/util.c": "int util(void) { return 42; }\n",
  "src/util.h": "int util(void);\n",
  "README.md": "# demo\n",
  "Makefile": "all:\n\tcc -o demo main.c src/util.c\n",
};

/** Waits for a condition in the page, failing with what it was waiting for. */
async function until(page, what, fn, arg, timeout = 10000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 50 });
  } catch (e) {
    throw new Error(`FAIL ${what}: timed out`);
  }
}

const call = (page, method, params) => page.evaluate(([m, p]) => window.ecpApp.rpc.request(m, p), [method, params]);
const cssVar = (page, name) => page.evaluate((n) => getComputedStyle(document.documentElement).getPropertyValue(n).trim(), name);
const activeTabTitle = (page) => page.evaluate(() => document.querySelector(".tab.active .tab-title")?.textContent ?? null);
const status = (page, cls) => page.evaluate((c) => document.querySelector(`#status .${c}`)?.textContent ?? "", cls);

run({ files }, async (h) => {
  const page = h.page;
  await until(page, "connected", () => document.querySelector(".status-connection")?.textContent === "connected");
  check("the status bar says connected", true);

  // ---- the file tree
  await until(page, "the tree lists the workspace", () => document.querySelectorAll(".tree-row").length >= 4);
  const rows = await page.$$eval(".tree > li > .tree-row", (rs) => rs.map((r) => [r.dataset.type, r.textContent]));
  check("the tree lists folders first, then files", JSON.stringify(rows) ===
    JSON.stringify([["directory", "src"], ["file", "main.c"], ["file", "Makefile"], ["file", "README.md"]]), JSON.stringify(rows));
  await page.click(".tree-row[data-type=directory]");
  await until(page, "a folder opens lazily", () => [...document.querySelectorAll(".tree-row")].some((r) => r.textContent === "util.c"));
  check("opening a folder reads its entries", true);
  fs.writeFileSync(path.join(h.workspace, "src", "added.c"), "int added;\n");
  await until(page, "a file made on disk appears", () => [...document.querySelectorAll(".tree-row")].some((r) => r.textContent === "added.c"));
  check("the tree follows a file created on disk", true);
  fs.unlinkSync(path.join(h.workspace, "src", "added.c"));
  await until(page, "a file deleted on disk goes", () => ![...document.querySelectorAll(".tree-row")].some((r) => r.textContent === "added.c"));
  check("the tree follows a file deleted on disk", true);

  await page.click(".tree-row[data-uri$='/main.c']");
  await until(page, "a tab for main.c", () => document.querySelector(".tab.active .tab-title")?.textContent === "main.c");
  await until(page, "main.c's text in the editor", () => document.querySelector("#editor-area .editor-host:not([hidden])")?.textContent.includes("greet"));
  check("clicking a file opens it in a tab with its text", true);
  await until(page, "the language in the status bar", () => document.querySelector(".status-language")?.textContent === "c");
  check("the status bar names the language", true);

  // ---- the palette: commands after ">", files without it
  await page.keyboard.press("Control+Shift+P");
  await until(page, "the palette opens on ctrl+shift+p", () => !document.querySelector(".palette").hidden);
  await page.keyboard.type("theme choose");
  await until(page, "the palette finds the command", () => document.querySelector(".palette-list li.selected .palette-label")?.textContent === "Theme: choose");
  const before = await cssVar(page, "--editor-background");
  await page.keyboard.press("Enter");
  await until(page, "the theme list", () => [...document.querySelectorAll(".palette-list li .palette-label")].some((l) => l.textContent === "GitHub Light"));
  check("the palette runs a command (Theme: choose lists the themes)", true);
  await page.keyboard.type("github light");
  await page.keyboard.press("Enter");
  const light = (await call(page, "theme/get", { themeId: "github-light" })).theme.colors["editor.background"];
  await until(page, "the theme's background as a CSS variable", (want) =>
    getComputedStyle(document.documentElement).getPropertyValue("--editor-background").trim() === want, light);
  check("choosing a theme changes --editor-background", before !== light, `${before} -> ${light}`);
  const body = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const rgb = (hex) => { const n = parseInt(hex.slice(1, 7), 16); return `rgb(${n >> 16}, ${(n >> 8) & 255}, ${n & 255})`; };
  check("the page paints with it", body === rgb(light), `${body} for ${light}`);
  // Another client's theme/set repaints the page too (theme/didChange).
  await call(page, "theme/set", { themeId: "catppuccin-mocha" });
  const mocha = (await call(page, "theme/get", { themeId: "catppuccin-mocha" })).theme.colors["editor.background"];
  await until(page, "theme/didChange repaints", (want) =>
    getComputedStyle(document.documentElement).getPropertyValue("--editor-background").trim() === want, mocha);
  check("theme/didChange repaints the page", (await cssVar(page, "--editor-background")) === mocha);

  await page.keyboard.press("Control+Shift+P");
  await until(page, "the palette opens again", () => !document.querySelector(".palette").hidden);
  await page.keyboard.press("Backspace"); // no ">": files
  await page.keyboard.type("util.h");
  await until(page, "the palette lists files", () => document.querySelector(".palette-list li.selected .palette-detail")?.textContent === "src/util.h");
  await page.keyboard.press("Enter");
  await until(page, "util.h opens", () => document.querySelector(".tab.active .tab-title")?.textContent === "util.h");
  check("the palette opens a file", (await activeTabTitle(page)) === "util.h");

  // ---- key bindings: one set now works at once, where its `when` holds
  await call(page, "keybindings/set", { bindings: [{ key: "Ctrl+Alt+J", command: "app.palette", when: "terminalFocus" }] });
  await until(page, "the keymap has the terminal's key", () => window.ecpApp.keymap.get("ctrl+alt+j")?.at(-1)?.when === "terminalFocus");
  await page.keyboard.press("Control+Alt+KeyJ");
  await sleep(300);
  check("a binding whose when does not hold (terminalFocus in the editor) does nothing",
    await page.evaluate(() => document.querySelector(".palette").hidden));
  await call(page, "keybindings/set", { bindings: [{ key: "Ctrl+Alt+J", command: "app.palette", when: "editorTextFocus && resourceExtname == '.h'" }] });
  await until(page, "the keymap has the editor's key", () => window.ecpApp.keymap.get("ctrl+alt+j")?.at(-1)?.when?.startsWith("editorTextFocus"));
  await page.keyboard.press("Control+Alt+KeyJ");
  await until(page, "a binding whose when holds runs", () => !document.querySelector(".palette").hidden);
  check("a binding whose when holds (editorTextFocus && resourceExtname == '.h') runs", true);
  await page.keyboard.press("Escape");
  await until(page, "escape closes the palette", () => document.querySelector(".palette").hidden);
  await call(page, "keybindings/set", { bindings: [{ key: "Ctrl+Alt+J", command: "app.palette" }] });
  await until(page, "the keymap has the new key", () => window.ecpApp.keymap.get("ctrl+alt+j")?.at(-1)?.when === undefined);
  await page.evaluate(() => { window.keysSeen = []; window.addEventListener("keydown", (e) => window.keysSeen.push(`${e.key}/${e.code}/${e.ctrlKey}/${e.altKey}/${document.activeElement?.tagName}.${document.activeElement?.className}`), true); });
  await page.keyboard.press("Control+Alt+KeyJ");
  try {
    await until(page, "the new key opens the palette", () => !document.querySelector(".palette").hidden);
  } catch (e) {
    console.error(await page.evaluate(() => JSON.stringify({ keys: window.keysSeen, active: document.activeElement?.outerHTML.slice(0, 200) })));
    throw e;
  }
  check("keybindings/set of a new key for app.palette works at once", true);
  await page.keyboard.press("Escape");
  await until(page, "escape closes the palette", () => document.querySelector(".palette").hidden);
  await call(page, "keybindings/set", { bindings: [{ key: "ctrl+shift+p", command: "tab.next" }] });
  await sleep(100);
  await page.keyboard.press("Control+Shift+P");
  await until(page, "a rebound key runs its new command", () => document.querySelector(".tab.active .tab-title")?.textContent === "main.c");
  check("a server binding overrides the default key", await page.evaluate(() => document.querySelector(".palette").hidden));
  await call(page, "keybindings/set", { bindings: [] });

  // ---- closing a dirty tab asks
  await page.click(".tab[data-uri$='/util.h']");
  const utilDoc = await page.evaluate(() => window.ecpApp.activeDocument());
  await call(page, "document/insert", { documentId: utilDoc.documentId, position: { line: 0, column: 0 }, text: "// edited\n" });
  await until(page, "the dirty marker", () => document.querySelector(".tab[data-uri$='/util.h']")?.classList.contains("dirty"));
  check("an edit marks the tab dirty", true);
  await page.keyboard.press("Control+w");
  await until(page, "closing a dirty tab (ctrl+w) asks", () => !!document.querySelector(".dialog"));
  await page.click(".dialog button:text('Cancel')");
  check("cancel keeps the tab", await page.evaluate(() => !!document.querySelector(".tab[data-uri$='/util.h']")));
  await page.evaluate(() => window.ecpApp.runCommand("tab.close"));
  await until(page, "it asks again", () => !!document.querySelector(".dialog"));
  await page.click(".dialog button:text('Discard')");
  await until(page, "discard closes the tab", () => !document.querySelector(".tab[data-uri$='/util.h']"));
  check("discard closes the tab and its document", fs.readFileSync(path.join(h.workspace, "src", "util.h"), "utf8") === files["src/util.h"]);

  // ---- a new file, saved as a name in the workspace
  await page.evaluate(() => window.ecpApp.runCommand("file.new"));
  await until(page, "an untitled tab", () => /^Untitled-/.test(document.querySelector(".tab.active .tab-title")?.textContent ?? ""));
  const untitled = await page.evaluate(() => window.ecpApp.activeDocument());
  await call(page, "document/insert", { documentId: untitled.documentId, position: { line: 0, column: 0 }, text: "notes\n" });
  await page.keyboard.press("Control+s");
  await until(page, "saving a new file asks where", () => !!document.querySelector(".dialog-input"));
  await page.fill(".dialog-input", "notes.txt");
  await page.keyboard.press("Enter");
  await until(page, "the tab takes the file's name", () => document.querySelector(".tab.active .tab-title")?.textContent === "notes.txt");
  check("ctrl+s on a new file saves it where asked", fs.readFileSync(path.join(h.workspace, "notes.txt"), "utf8") === "notes\n");
  await until(page, "the saved tab is clean", () => !document.querySelector(".tab.active").classList.contains("dirty"));
  await until(page, "the tree lists the new file", () => !!document.querySelector(".tree-row[data-uri$='/notes.txt']"));
  check("the saved file appears in the tree", true);

  // ---- the splitter resizes the side bar
  const box = await page.locator("#sidebar-splitter").boundingBox();
  const width0 = (await page.locator("#sidebar").boundingBox()).width;
  await page.mouse.move(box.x + 2, box.y + 200);
  await page.mouse.down();
  await page.mouse.move(box.x + 82, box.y + 200, { steps: 4 });
  await page.mouse.up();
  const width1 = (await page.locator("#sidebar").boundingBox()).width;
  check("dragging the splitter widens the side bar", Math.abs(width1 - width0 - 80) <= 2, `${width0} -> ${width1}`);

  // ---- restricted mode
  await until(page, "the trust banner", () => !document.querySelector(".trust-banner").hidden);
  const banner = await page.textContent(".trust-banner");
  check("an untrusted folder shows what is withheld", /language servers/.test(banner) && /shell/.test(banner) && /agent/.test(banner), banner);
  await page.click(".trust-banner button");
  await until(page, "trusting hides the banner", () => document.querySelector(".trust-banner").hidden);
  check("Trust this folder trusts it", (await call(page, "workspace/isTrusted", {})).trusted === true);
  await call(page, "workspace/trust", { uri: h.workspace, trusted: false });
  await until(page, "withdrawn trust shows the banner again", () => !document.querySelector(".trust-banner").hidden);
  check("the banner follows workspace/didChangeTrust", true);

  // ---- two pages: "+1 other"
  await page.click(".tab[data-uri$='/main.c']");
  const second = await h.newPage();
  await until(second, "the second page connects", () => document.querySelector(".status-connection")?.textContent === "connected");
  await second.waitForSelector(".tree-row[data-uri$='/main.c']");
  await second.click(".tree-row[data-uri$='/main.c']");
  await until(second, "main.c in the second page", () => document.querySelector(".tab.active .tab-title")?.textContent === "main.c");
  await until(page, "+1 other in the first page", () => document.querySelector(".status-others")?.textContent === "+1 other");
  await until(second, "+1 other in the second page", () => document.querySelector(".status-others")?.textContent === "+1 other");
  check("two pages each show +1 other", true);
  await second.close();
  await until(page, "the other goes when its page closes", () => document.querySelector(".status-others")?.textContent === "");
  check("a closed page leaves the count", true);

  // ---- a screenshot of the whole page with a C file open
  await page.click(".tab[data-uri$='/main.c']");
  await sleep(300);
  await page.screenshot({ path: path.join(outDir(), "editor.png") });
  check("editor.png written", fs.statSync(path.join(outDir(), "editor.png")).size > 10000);

  // ---- ecpd goes away and comes back: the tab keeps its unsaved text (hot exit)
  const mainDoc = await page.evaluate(() => window.ecpApp.activeDocument());
  const typed = "UNSAVED_EDIT_";
  const hasTextarea = await page.evaluate(() => !!document.querySelector("#editor-area .editor-host:not([hidden]) textarea"));
  if (hasTextarea) {
    await page.evaluate(() => window.ecpApp.rpc.request("document/setCursor",
      { documentId: window.ecpApp.activeDocument().documentId, position: { line: 2, column: 0 } }));
    await page.click("#editor-area .editor-host:not([hidden])");
    await call(page, "document/setCursor", { documentId: mainDoc.documentId, position: { line: 2, column: 0 } });
    await page.keyboard.type(typed);
  } else {
    await call(page, "document/insert", { documentId: mainDoc.documentId, position: { line: 2, column: 0 }, text: typed });
  }
  await until(page, "the typed text shows", (t) => document.querySelector("#editor-area .editor-host:not([hidden])")?.textContent.includes(t), typed);
  await until(page, "main.c dirty", () => document.querySelector(".tab[data-uri$='/main.c']")?.classList.contains("dirty"));
  await sleep(1500); // the journal is written within about a second of an edit
  await h.killEcpd();
  await until(page, "the status bar says reconnecting", () => document.querySelector(".status-connection")?.textContent === "reconnecting...");
  check("the status bar says reconnecting... while ecpd is gone", true);
  await h.startEcpd();
  await until(page, "connected again", () => document.querySelector(".status-connection")?.textContent === "connected", undefined, 20000);
  check("the page reconnects to the restarted ecpd", true);
  // The tab's document is opened anew on the new server (a new id), and its view made again.
  await until(page, "the tab reopened on the new server", (old) =>
    (window.ecpApp.activeDocument()?.documentId ?? old) !== old, mainDoc.documentId, 15000);
  await until(page, "the unsaved text is back in the tab", (t) =>
    document.querySelector("#editor-area .editor-host:not([hidden])")?.textContent.includes(t), typed, 15000);
  const after = await page.evaluate(() => window.ecpApp.activeDocument());
  const content = await call(page, "document/content", { documentId: after.documentId });
  check("the tab's document holds the unsaved edit after the restart", String(content.content ?? content.text ?? "").includes(typed));
  check("the file on disk does not", !fs.readFileSync(path.join(h.workspace, "main.c"), "utf8").includes(typed));
  check("the tab is still marked dirty", await page.evaluate(() => document.querySelector(".tab[data-uri$='/main.c']")?.classList.contains("dirty")));
  await until(page, "the tree is back", () => document.querySelectorAll(".tree-row").length >= 4);
  check("the tree is read again after the restart", true);
});
