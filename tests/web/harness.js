// Runs the browser GUI for real: an ecpd on a Unix socket in a temporary
// workspace (a git repository with one commit), ecp-web relaying to it, and
// Debian's Chromium through playwright-core showing the page.
//
//   const h = await start({ files: { "a.c": "int main;\n" } });
//   ... h.page ...
//   await h.stop();
//
// Programs come from ECPD, ECP_WEB and ECP_WEB_STATIC (defaults in the
// repository's build/ tree); screenshots go to outDir() ($ECP_WEB_OUT).
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const net = require("net");
const { spawn, execFileSync } = require("child_process");

const repoRoot = path.resolve(__dirname, "..", "..");
const requireFromWeb = (name) => require(require.resolve(name, { paths: [path.join(repoRoot, "clients", "web")] }));

// Absolute, since the programs run in the workspace.
const ECPD = path.resolve(process.env.ECPD || path.join(repoRoot, "build", "server", "ecpd"));
const ECP_WEB = path.resolve(process.env.ECP_WEB || path.join(repoRoot, "build", "clients", "web", "ecp-web"));
const ECP_WEB_STATIC = path.resolve(process.env.ECP_WEB_STATIC || path.join(repoRoot, "build", "clients", "web", "static"));

function outDir() {
  const dir = process.env.ECP_WEB_OUT || path.join(repoRoot, "build", "tests", "web");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Every process and browser a test started, so a failure anywhere still cleans up. */
const running = new Set();

function killProcess(child, signal = "SIGTERM") {
  if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => { try { child.kill("SIGKILL"); } catch { /* gone */ } }, 3000);
    child.once("exit", () => { clearTimeout(timer); resolve(); });
    try { child.kill(signal); } catch { clearTimeout(timer); resolve(); }
  });
}

function socketAnswers(sockPath) {
  return new Promise((resolve) => {
    const c = net.connect(sockPath);
    c.once("connect", () => { c.destroy(); resolve(true); });
    c.once("error", () => resolve(false));
  });
}

/** Asks whatever server answers on a socket to stop (ecp/stop), and waits until it is gone. */
async function stopServerAt(sockPath) {
  if (!(await socketAnswers(sockPath))) return;
  await new Promise((resolve) => {
    const c = net.connect(sockPath);
    const timer = setTimeout(() => { c.destroy(); resolve(); }, 2000);
    c.once("connect", () => {
      const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ecp/stop", params: {} });
      c.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    c.on("data", () => {});
    c.once("close", () => { clearTimeout(timer); resolve(); });
    c.once("error", () => { clearTimeout(timer); resolve(); });
  });
  for (let i = 0; i < 60 && (await socketAnswers(sockPath)); i++) await sleep(50);
}

async function waitFor(what, check, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function writeFiles(root, files) {
  for (const [name, content] of Object.entries(files || {})) {
    const p = path.join(root, name);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, content);
  }
}

function makeWorkspace(root, files) {
  fs.mkdirSync(root, { recursive: true });
  writeFiles(root, files);
  const git = (...args) => execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
    { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "--allow-empty", "-m", "initial");
}

/**
 * Starts ecpd, ecp-web and Chromium. `files`: {"relative/name": "content"}.
 * Options: `width`, `height` (viewport), `trusted` (start ecpd with --trust-workspace).
 */
async function start({ files = {}, width = 1280, height = 800, trusted = false } = {}) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ecp-web-test-"));
  const workspace = path.join(tmp, "ws");
  const home = path.join(tmp, "home");
  const runtime = path.join(tmp, "run");
  for (const d of [home, runtime]) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  makeWorkspace(workspace, files);
  const sock = path.join(runtime, "ecpd.sock");

  // Both programs see the same private home, so an ecpd that ecp-web starts
  // by itself finds the same data (hot exit) as the one started here.
  const env = {
    ...process.env,
    HOME: home,
    XDG_RUNTIME_DIR: runtime,
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
  };

  const h = {
    tmp, workspace, sock, env, url: null, ecpd: null, web: null, browser: null, page: null,
    ecpdLog: "", webLog: "", pageLog: "",
  };

  const startEcpd = async () => {
    const args = ["--socket", sock, "--workspace", workspace];
    if (trusted) args.push("--trust-workspace");
    // In the workspace, as ecp-web starts one: a socket server's working
    // directory is where relative paths (file/pathToUri ".") resolve.
    const child = spawn(ECPD, args, { env, cwd: workspace, stdio: ["ignore", "ignore", "pipe"] });
    child.stderr.on("data", (d) => { h.ecpdLog += d; });
    child.on("error", (e) => { h.ecpdLog += `cannot run ${ECPD}: ${e.message}\n`; });
    running.add(child);
    child.once("exit", () => running.delete(child));
    h.ecpd = child;
    // A server answering is enough: after a kill, ecp-web may have started one
    // itself for a reconnecting page first (then this one finds the socket taken).
    await waitFor("ecpd's socket", async () => {
      if (await socketAnswers(sock)) return true;
      if (child.exitCode !== null || child.pid === undefined) throw new Error(`ecpd exited (${child.exitCode}): ${h.ecpdLog}`);
      return false;
    });
    return child;
  };
  h.startEcpd = startEcpd;
  /** Kills ecpd the hard way (as a crash would), leaving ecp-web and the page running. */
  h.killEcpd = async () => { await killProcess(h.ecpd, "SIGKILL"); };

  const cleanup = async () => {
    if (h.browser) { try { await h.browser.close(); } catch { /* already gone */ } h.browser = null; }
    await killProcess(h.web);
    await killProcess(h.ecpd);
    // A server ecp-web started by itself (detached) is nobody's child here.
    await stopServerAt(sock);
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  h.stop = cleanup;

  try {
    await startEcpd();

    const web = spawn(ECP_WEB, ["--connect", sock, "--workspace", workspace, "--server", ECPD,
      "--static", ECP_WEB_STATIC, "--port", "0"], { env, cwd: workspace, stdio: ["ignore", "pipe", "pipe"] });
    running.add(web);
    web.once("exit", () => running.delete(web));
    h.web = web;
    web.stderr.on("data", (d) => { h.webLog += d; });
    h.url = await new Promise((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`ecp-web printed no URL: ${h.webLog}`)), 15000);
      web.stdout.on("data", (d) => {
        out += d;
        const nl = out.indexOf("\n");
        if (nl >= 0) { clearTimeout(timer); resolve(out.slice(0, nl).trim()); }
      });
      web.once("exit", (code) => { clearTimeout(timer); reject(new Error(`ecp-web exited (${code}): ${h.webLog}`)); });
      web.once("error", (e) => { clearTimeout(timer); reject(new Error(`cannot run ${ECP_WEB}: ${e.message}`)); });
    });
    if (!/^https?:\/\/[^/]+\/\?token=\S+$/.test(h.url)) throw new Error(`not a URL: ${h.url}`);

    const { chromium } = requireFromWeb("playwright-core");
    h.browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
    running.add(h.browser);
    const context = await h.browser.newContext({ viewport: { width, height } });
    h.context = context;
    h.newPage = async () => {
      const page = await context.newPage();
      page.on("pageerror", (e) => { h.pageLog += `page error: ${e.message}\n`; });
      page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") h.pageLog += `console.${m.type()}: ${m.text()}\n`; });
      await page.goto(h.url);
      return page;
    };
    h.page = await h.newPage();
    return h;
  } catch (e) {
    await cleanup();
    throw e;
  }
}

/** Kills whatever is still running (a test's failure path). */
async function killAll() {
  for (const r of [...running]) {
    if (typeof r.close === "function" && typeof r.kill !== "function") { try { await r.close(); } catch { /* gone */ } }
    else await killProcess(r, "SIGKILL");
    running.delete(r);
  }
}

/** One check: prints its name and stops the program at the first failure. */
function check(name, ok, detail) {
  if (!ok) throw new Error(`FAIL ${name}${detail !== undefined ? `: ${detail}` : ""}`);
  console.log(`ok   ${name}`);
}

/** Runs a test body with a started harness, cleaning up on success or failure. */
async function run(options, body) {
  let h = null;
  try {
    h = await start(options);
    await body(h);
    await h.stop();
    process.exit(0);
  } catch (e) {
    console.error(e && e.stack ? e.stack : String(e));
    if (h) {
      if (h.pageLog) console.error(`--- the pages' errors ---\n${h.pageLog.slice(-4000)}`);
      if (h.webLog) console.error(`--- ecp-web stderr ---\n${h.webLog.slice(-4000)}`);
      if (h.ecpdLog) console.error(`--- ecpd stderr ---\n${h.ecpdLog.slice(-4000)}`);
      try { await h.stop(); } catch { /* best effort */ }
    }
    await killAll();
    process.exit(1);
  }
}

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => { killAll().finally(() => process.exit(1)); });
process.on("unhandledRejection", (e) => {
  console.error("unhandled rejection:", e && e.stack ? e.stack : e);
  killAll().finally(() => process.exit(1));
});

module.exports = { start, run, check, outDir, sleep, waitFor, ECPD, ECP_WEB, ECP_WEB_STATIC, repoRoot };
