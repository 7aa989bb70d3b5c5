// A keystroke in the browser GUI, from the key to the screen: a real ecpd,
// ecp-web and Chromium (tests/web/harness.js) with a 2 MB C file open; 300
// characters typed at a person's pace (40 to 120 ms apart) at the end of a
// line in the middle of the file. For each, the time from the keydown
// event's timestamp to the first animation frame after which the character is
// in the editor's DOM (its requestAnimationFrame callback), taken in the page
// with performance.now(), the clock event timestamps use; also to the DOM
// change itself and to that frame painted, and the same for a bare textarea
// in the same browser (what the machine allows at all).
//
//   node tests/bench/web_keystroke.js [CHARACTERS]
//
// Prints p50, p99 and max in milliseconds, and a B17 line with the p99 to the
// frame against 16 ms (one frame at 60 Hz); exits non-zero only when the
// document does not hold what was typed.
"use strict";

const path = require("path");
const { run, check, sleep } = require("../web/harness");

const COUNT = Number(process.argv[2] || 300);
const BUDGET_MS = 16;

function bigC() {
  const chunk = (i) => `/* Step ${i} of the pipeline: scales and clamps one sample. */
static int step_${i}(const int *samples, int count, int scale)
{
    int total = 0;
    for (int k = 0; k < count; k++) {
        int v = samples[k] * scale + ${i};
        if (v > 1000)
            v = 1000;
        total += v;
    }
    return total / (count ? count : 1);
}

`;
  const parts = ["#include <stdio.h>\n#include <stdlib.h>\n\n"];
  let size = parts[0].length;
  for (let i = 0; size < 2 * 1024 * 1024; i++) { const c = chunk(i); parts.push(c); size += c.length; }
  return parts.join("");
}

const source = bigC();
const lines = source.split("\n");
const TARGET_LINE = lines.findIndex((l, i) => i > lines.length / 2 && l.startsWith("    int total = 0;"));
// Letters, digits, blanks and C punctuation that asks no completion (no ".", ":" or ">").
const PHRASE = "int x = step_7(samples, count, 3) + 42; /* again */ ";
const TYPED = Array.from({ length: COUNT }, (_, i) => PHRASE[i % PHRASE.length]).join("");

/**
 * Types text into a focused page one key at a time at a person's pace and
 * times each key: to the end of its input event (the DOM changed), to the
 * start of the first frame whose rows show it, and to that frame painted.
 */
async function typeAndMeasure(page, sel, line, base, typed) {
  // The hooks: each keydown's timestamp; each frame checks whether the line
  // now ends with everything typed so far, and a message posted from that
  // frame's callback runs once the frame is painted.
  await page.evaluate(([sel, line, base]) => {
    const w = window;
    w.__keys = [];
    w.__latencies = [];
    const channel = new MessageChannel();
    const done = [];
    channel.port1.onmessage = () => { const f = done.shift(); if (f) f(); };
    w.__handled = [];
    w.__frames = [];
    // The DOM shows a key when a mutation (delivered right after the handler that made it) leaves its row with it.
    const rowText = () => [...document.querySelectorAll(`${sel} .row[data-line="${line}"]`)].map((r) => r.textContent).join("");
    new MutationObserver(() => {
      const k = w.__keys.length - 1;
      if (k < 0 || w.__handled[k] !== undefined) return;
      if (rowText().startsWith(base + w.__typed.slice(0, k + 1))) w.__handled[k] = performance.now() - w.__keys[k];
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
    window.addEventListener("keydown", (e) => {
      if (e.key.length !== 1) return;
      const index = w.__keys.length;
      w.__keys.push(e.timeStamp);
      const expected = base + w.__typed.slice(0, index + 1);
      const frame = () => {
        if (rowText().startsWith(expected)) {
          w.__frames[index] = performance.now() - e.timeStamp;
          done.push(() => { w.__latencies[index] = performance.now() - e.timeStamp; });
          channel.port2.postMessage(0);
        } else {
          requestAnimationFrame(frame);
        }
      };
      requestAnimationFrame(frame);
    }, true);
  }, [sel, line, base]);
  await page.evaluate((t) => { window.__typed = t; }, typed);

  for (const ch of typed) {
    await page.keyboard.type(ch);
    await sleep(40 + Math.floor(Math.random() * 80));
  }
  await sleep(1000);

  const [handled, frames, painted] = await page.evaluate(() => [window.__handled, window.__frames, window.__latencies]);
  return { handled, frames, painted };
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

run({ files: { "big.c": source } }, async (h) => {
  const page = h.page;
  await page.waitForFunction(() => window.ecpApp && window.ecpApp.rpc.state === "open");
  await page.evaluate((f) => window.ecpApp.openUri(f), path.join(h.workspace, "big.c"));
  const visible = "#editor-area .editor-host:not([hidden]) .ecp-editor";
  await page.waitForFunction((sel) => document.querySelector(`${sel} .row:not(.pending)`), visible);
  console.log(`big.c: ${(source.length / 1048576).toFixed(2)} MB, ${lines.length} lines; typing ${COUNT} characters at the end of line ${TARGET_LINE + 1}`);

  // To the line (the shell moves the caret there and reveals it), then to its end.
  await page.evaluate(([f, l]) => window.ecpApp.openUri(f, { line: l, character: 0 }), [path.join(h.workspace, "big.c"), TARGET_LINE]);
  await page.waitForFunction(([sel, l]) => document.querySelector(`${sel} .row[data-line="${l}"]`), [visible, TARGET_LINE]);
  await page.focus(`${visible} textarea`);
  await page.keyboard.press("End");
  await sleep(500);

  const measured = await typeAndMeasure(page, visible, TARGET_LINE, lines[TARGET_LINE], TYPED);
  const { handled, frames, painted } = measured;
  const count = (list) => list.filter((v) => typeof v === "number").length;
  check(`every one of the ${COUNT} characters was shown`, count(frames) === COUNT && count(painted) === COUNT, `${count(frames)} shown`);
  const docId = await page.evaluate((sel) => document.querySelector(sel).dataset.documentId, visible);
  const line = await page.evaluate(([id, l]) => window.ecpApp.rpc.request("document/line", { documentId: id, lineNumber: l }), [docId, TARGET_LINE]);
  const lineText = typeof line === "string" ? line : line.text;
  check("the core holds every character, in the order typed", lineText === lines[TARGET_LINE] + TYPED, JSON.stringify(lineText.slice(-60)));

  // The floor this machine sets: a bare textarea whose input event writes the character into a div,
  // typed and timed the same way in the same browser.
  const bare = await h.context.newPage();
  await bare.setContent('<textarea id="t"></textarea><div class="bare"><div class="row" data-line="0"></div></div>');
  await bare.evaluate(() => {
    const row = document.querySelector(".row");
    document.getElementById("t").addEventListener("input", (e) => { row.textContent += e.data; });
  });
  await bare.focus("#t");
  const floor = await typeAndMeasure(bare, ".bare", 0, "", TYPED.slice(0, 100));
  await bare.close();

  const spread = (list) => {
    const v = list.filter((x) => typeof x === "number").sort((a, b) => a - b);
    const over = v.filter((x) => x > BUDGET_MS).length;
    return `p50 ${percentile(v, 50).toFixed(2)} ms, p99 ${percentile(v, 99).toFixed(2)} ms, max ${v[v.length - 1].toFixed(2)} ms (${over} of ${v.length} over ${BUDGET_MS} ms)`;
  };
  console.log(`key to the first animation frame showing it: ${spread(frames)}`);
  console.log(`  key to the character in the DOM:           ${spread(handled)}`);
  console.log(`  key to that frame painted:                 ${spread(painted)}`);
  console.log(`  a bare textarea, key to the first frame:   ${spread(floor.frames)}`);
  console.log(`  a bare textarea, key to that frame painted: ${spread(floor.painted)}`);
  // Two cores shared with other work stretch the tail: say how busy the machine was.
  const os = require("os");
  console.log(`load average while typing: ${os.loadavg().map((v) => v.toFixed(2)).join(" ")} on ${os.cpus().length} cores`);
  const sorted = frames.filter((x) => typeof x === "number").sort((a, b) => a - b);
  const p99 = percentile(sorted, 99);
  // A benchmark prints its figure and never fails on it (tests/bench/run.sh reads the B17 line).
  console.log(`B17 web_keystroke_to_frame p50_ms=${percentile(sorted, 50).toFixed(1)} p99_ms=${p99.toFixed(1)} ` +
              `target_ms=${BUDGET_MS} ${p99 <= BUDGET_MS ? "met" : "over"}`);
});
