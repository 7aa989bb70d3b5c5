// The page: one Rpc to ecp-web's /rpc (which relays to ecpd), the shell that
// frames everything, the editor views in its tabs, and the panels.
import "./app.css";
import { Rpc } from "./rpc";
import { PlaceholderView } from "./shell/placeholder";
import { Shell } from "./shell/shell";

const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc" + location.search;
const rpc = new Rpc(url);
const shell = new Shell(rpc, (app, doc, host) => new PlaceholderView(app, doc, host));
// A handle for the browser's console and the tests: the page's App.
(window as unknown as { ecpApp: Shell }).ecpApp = shell;
shell.start();
