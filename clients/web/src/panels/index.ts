// Everything beside the editor: the git panel and project search in the side
// bar, problems and terminals in the bottom panel, the agent chat in the
// right pane. The shell calls installPanels once at start.
import type { App } from "../app";
import { installChat } from "./chat";
import { installGit } from "./git";
import { installProblems } from "./problems";
import { installSearch } from "./search";
import { installTerminal } from "./terminal";
import "./panels.css";

export function installPanels(app: App): void {
  installGit(app);
  installSearch(app);
  installProblems(app);
  installTerminal(app);
  installChat(app);
}
