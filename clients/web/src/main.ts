// The page: one Rpc to ecp-web's /rpc (which relays to ecpd), the shell that
// frames everything, an editor view in each of its tabs, and the panels.
import "./app.css";
import { EditorView, installEditorCommands } from "./editor/view";
import { installPanels } from "./panels/index";
import { Rpc } from "./rpc";
import { Shell } from "./shell/shell";

const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc" + location.search;
const rpc = new Rpc(url);
const shell = new Shell<EditorView>(rpc, (app, doc, host) => new EditorView(app, doc, host));
installEditorCommands(shell, () => shell.activeView());
installPanels(shell);
// A handle for the browser's console and the tests: the page's App.
(window as unknown as { ecpApp: Shell<EditorView> }).ecpApp = shell;
shell.start();
