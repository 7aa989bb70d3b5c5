// `ecpd --acp` driven by the official ACP client (@agentclientprotocol/sdk,
// ClientSideConnection) over pipes, against the scripted LLM server
// (tests/agent/mock_llm.py).
//
// usage: node --test-reporter=spec acp_test.mjs  (with ECPD, NODE_MODULES, MOCK_LLM and PYTHON3 in the environment)
//
// Every line ecpd writes is checked to be one JSON object; the SDK drops
// messages that fail its schema with only a console.error, so any
// console.error fails the test that caused it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ECPD = process.env.ECPD;
const MOCK_LLM = process.env.MOCK_LLM;
const PYTHON3 = process.env.PYTHON3 || 'python3';
const require = createRequire(path.join(process.env.NODE_MODULES, 'package.json'));
const acp = await import(pathToFileURL(require.resolve('@agentclientprotocol/sdk')).href);

const consoleErrors = [];
const realConsoleError = console.error;
console.error = (...args) => {
  consoleErrors.push(args.map(String).join(' '));
  realConsoleError(...args);
};

function tmpdir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpd-acp-'));
  const ws = path.join(dir, 'ws');
  fs.mkdirSync(path.join(ws, 'src'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'src', 'a.txt'), 'alpha\nbeta\ngamma\n');
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'outside\n');
  return { dir, ws: fs.realpathSync(ws), data: path.join(dir, 'data') };
}

// The scripted LLM as a child process; requests() reads the bodies it received.
async function startMock(dir, script) {
  const scriptFile = path.join(dir, `script-${Date.now()}-${Math.random()}.json`);
  const log = scriptFile + '.requests';
  fs.writeFileSync(scriptFile, JSON.stringify(script));
  const child = spawn(PYTHON3, [MOCK_LLM, scriptFile, log], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/PORT (\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', () => reject(new Error('the mock LLM ended')));
  });
  return {
    port,
    requests: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse) : []),
    close: () => child.kill('SIGKILL'),
  };
}

// ecpd --acp with a ClientSideConnection; `handlers` overrides the client's methods.
function startAgent(t, { data, ws, mock, handlers = {}, env = {} }) {
  const childEnv = { ...process.env, ...env };
  for (const k of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'OLLAMA_HOST', 'ECPD_MODEL'])
    delete childEnv[k];
  if (mock) {
    childEnv.OPENAI_API_KEY = 'sk-test';
    childEnv.OPENAI_BASE_URL = `http://127.0.0.1:${mock.port}/v1`;
  }
  Object.assign(childEnv, env);
  const child = spawn(ECPD, ['--acp', '--data-dir', data], { cwd: ws, env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const raw = []; // every message ecpd wrote, in order
  const [forSdk, forLog] = Readable.toWeb(child.stdout).tee();
  (async () => {
    let pending = '';
    const decoder = new TextDecoder();
    for await (const chunk of forLog) {
      pending += decoder.decode(chunk, { stream: true });
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        raw.push(JSON.parse(line)); // throws (and fails the run) on a line that is not JSON
      }
    }
  })();
  const updates = [];
  const calls = { permission: [], read: [], write: [], terminal: [] };
  const client = {
    async requestPermission(params) {
      calls.permission.push(params);
      if (handlers.requestPermission) return handlers.requestPermission(params);
      return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
    },
    async sessionUpdate(params) {
      updates.push(params);
    },
    async readTextFile(params) {
      calls.read.push(params);
      return handlers.readTextFile(params);
    },
    async writeTextFile(params) {
      calls.write.push(params);
      return handlers.writeTextFile(params);
    },
  };
  if (handlers.terminals) {
    // terminals of our own: child processes, as an editor would run them
    const terms = new Map();
    let next = 0;
    Object.assign(client, {
      async createTerminal(p) {
        calls.terminal.push(['create', p]);
        const id = `term-${++next}`;
        const proc = spawn(p.command, p.args, { cwd: p.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
        const term = { proc, output: '', exit: null };
        proc.stdout.on('data', (d) => (term.output += d));
        proc.stderr.on('data', (d) => (term.output += d));
        term.exited = new Promise((r) => proc.on('exit', (code, signal) => r((term.exit = { exitCode: code, signal }))));
        terms.set(id, term);
        return { terminalId: id };
      },
      async waitForTerminalExit(p) {
        calls.terminal.push(['wait', p.terminalId]);
        return terms.get(p.terminalId).exited;
      },
      async terminalOutput(p) {
        calls.terminal.push(['output', p.terminalId]);
        const term = terms.get(p.terminalId);
        return { output: term.output, truncated: false, exitStatus: term.exit };
      },
      async killTerminal(p) {
        calls.terminal.push(['kill', p.terminalId]);
        terms.get(p.terminalId).proc.kill('SIGKILL');
        return {};
      },
      async releaseTerminal(p) {
        calls.terminal.push(['release', p.terminalId]);
        terms.get(p.terminalId).proc.kill('SIGKILL');
        terms.delete(p.terminalId);
        return {};
      },
    });
  }
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), forSdk);
  const conn = new acp.ClientSideConnection(() => client, stream);
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const errorsBefore = consoleErrors.length;
  const agent = {
    conn, child, raw, updates, calls,
    async close() {
      child.stdin.end();
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('timeout'), 10000))]);
      if (code === 'timeout') child.kill('SIGKILL');
      assert.equal(code, 0, `ecpd ended with ${code}:\n${stderr}`);
      assert.ok(!/Sanitizer|runtime error:/.test(stderr), stderr);
      assert.deepEqual(consoleErrors.slice(errorsBefore), [], 'the SDK refused a message');
    },
  };
  t.after(() => child.kill('SIGKILL'));
  return agent;
}

// Asserts that nothing of a session's turn came after the prompt's response.
function assertNoUpdateAfter(raw, promptIdResult) {
  const at = raw.findIndex((m) => m.id !== undefined && !m.method && m.result && m.result.stopReason === promptIdResult);
  assert.ok(at >= 0, 'the prompt answered');
  const later = raw.slice(at + 1).filter((m) => m.method === 'session/update');
  assert.deepEqual(later, [], 'no session/update after the prompt response');
}

async function eventually(cond, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

const kinds = (updates) => updates.map((u) => u.update.sessionUpdate);
const textOf = (updates, kind = 'agent_message_chunk') =>
  updates.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content.text).join('');

async function init(conn, extra = {}) {
  return conn.initialize({ protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false } }, ...extra });
}

test('initialize answers version 1 and advertises what is implemented; sessions, modes and options', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, []);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  const r = await a.conn.initialize({ protocolVersion: 99, clientCapabilities: {} });
  assert.equal(r.protocolVersion, 1);
  assert.equal(r.agentCapabilities.loadSession, true);
  assert.equal(r.agentCapabilities.promptCapabilities.embeddedContext, true);
  assert.equal(r.agentCapabilities.promptCapabilities.image, false);
  assert.deepEqual(r.authMethods, []);
  const s = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  assert.equal(typeof s.sessionId, 'string');
  assert.equal(s.modes.currentModeId, 'ask');
  assert.deepEqual(s.modes.availableModes.map((m) => m.id), ['ask', 'allow']);
  const byId = Object.fromEntries(s.configOptions.map((o) => [o.id, o]));
  assert.equal(byId.mode.currentValue, 'ask');
  assert.equal(byId.model.currentValue, 'openai/gpt-4.1');
  assert.equal(byId.model.category, 'model');
  const set = await a.conn.setSessionConfigOption({ sessionId: s.sessionId, configId: 'mode', value: 'allow' });
  assert.equal(set.configOptions.find((o) => o.id === 'mode').currentValue, 'allow');
  assert.equal(set.configOptions.length, 2, 'the complete set');
  await assert.rejects(a.conn.setSessionConfigOption({ sessionId: s.sessionId, configId: 'model', value: 'openai/other' }),
    (e) => e.code === -32602);
  await assert.rejects(a.conn.setSessionConfigOption({ sessionId: s.sessionId, configId: 'nope', value: 'x' }),
    (e) => e.code === -32602);
  assert.deepEqual(await a.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'ask' }), {});
  await assert.rejects(a.conn.setSessionMode({ sessionId: s.sessionId, modeId: 'yolo' }), (e) => e.code === -32602);
  await assert.rejects(a.conn.newSession({ cwd: 'relative', mcpServers: [] }), (e) => e.code === -32602);
  await assert.rejects(a.conn.prompt({ sessionId: 'no-such', prompt: [{ type: 'text', text: 'x' }] }), (e) => e.code === -32602);
  await assert.rejects(a.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] }),
    (e) => e.code === -32602);
  assert.deepEqual(mock.requests(), []);
  // the commands a prompt may be, announced once the session exists; one runs without the model
  await eventually(() => a.updates.some((u) => u.update.sessionUpdate === 'available_commands_update'));
  const commands = a.updates.find((u) => u.update.sessionUpdate === 'available_commands_update');
  assert.equal(commands.sessionId, s.sessionId);
  assert.deepEqual(commands.update.availableCommands.map((c) => c.name), ['tools', 'mcp']);
  const announcedAt = a.raw.findIndex((m) => m.params?.update?.sessionUpdate === 'available_commands_update');
  const answeredAt = a.raw.findIndex((m) => m.result?.sessionId === s.sessionId);
  assert.ok(answeredAt < announcedAt, 'after the session/new answer');
  a.updates.length = 0;
  assert.equal((await a.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: '/tools' }] })).stopReason, 'end_turn');
  assert.match(textOf(a.updates), /- read_file: .*\n- write_file: /s);
  assert.deepEqual(mock.requests(), [], 'a command asks no model');
  await a.close();
});

test('a text prompt streams the reasoning and the text exactly and ends the turn before answering', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, [{ reasoning: ['Pondering', '...'], text: ['Hel', 'lo, ', 'wörld'] }]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  const r = await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'say hello' },
    { type: 'resource', resource: { uri: `file://${ws}/src/a.txt`, text: 'alpha\n' } }] });
  assert.equal(r.stopReason, 'end_turn');
  assert.deepEqual(kinds(a.updates).filter((k) => k !== 'available_commands_update'), ['agent_thought_chunk', 'agent_thought_chunk',
    'agent_message_chunk', 'agent_message_chunk', 'agent_message_chunk']);
  assert.equal(textOf(a.updates, 'agent_thought_chunk'), 'Pondering...');
  assert.equal(textOf(a.updates), 'Hello, wörld');
  assertNoUpdateAfter(a.raw, 'end_turn');
  const reqs = mock.requests();
  assert.equal(reqs.length, 1);
  const user = reqs[0].messages.filter((m) => m.role === 'user').pop().content;
  assert.match(user, /say hello/);
  assert.match(user, /alpha/);
  await a.close();
});

test('a write asks permission: allowed it lands with a diff, rejected nothing changes, allow_always holds', async (t) => {
  const { dir, ws, data } = tmpdir();
  const write = (id, p, content) => ({ tools: [{ id, name: 'write_file', arguments: [JSON.stringify({ path: p, content })] }] });
  const mock = await startMock(dir, [
    write('call_1', 'src/a.txt', 'ALPHA\n'), { text: ['written'] },
    write('call_2', 'b.txt', 'nope'), { text: ['ok'] },
    write('call_3', 'c.txt', 'one'), { text: ['1'] },
    write('call_4', 'd.txt', 'two'), { text: ['2'] },
  ]);
  t.after(() => mock.close());
  const answers = ['allow_once', 'reject_once', 'allow_always'];
  const a = startAgent(t, { data, ws, mock, handlers: {
    requestPermission: () => ({ outcome: { outcome: 'selected', optionId: answers.shift() } }),
  } });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });

  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'shout' }] })).stopReason, 'end_turn');
  assert.equal(fs.readFileSync(path.join(ws, 'src/a.txt'), 'utf8'), 'ALPHA\n');
  const p = a.calls.permission[0];
  assert.equal(p.toolCall.toolCallId, 'call_1');
  const optionKinds = p.options.map((o) => o.kind);
  for (const k of ['allow_once', 'allow_always', 'reject_once', 'reject_always']) assert.ok(optionKinds.includes(k), k);
  // the order on the wire: tool_call (pending), the permission request, in_progress, completed
  const wire = a.raw.filter((m) => m.method === 'session/request_permission' ||
    (m.method === 'session/update' && m.params.update.toolCallId === 'call_1'));
  assert.deepEqual(wire.map((m) => m.method === 'session/request_permission' ? 'permission'
    : `${m.params.update.sessionUpdate}:${m.params.update.status}`),
  ['tool_call:pending', 'permission', 'tool_call_update:in_progress', 'tool_call_update:completed']);
  const first = wire[0].params.update;
  assert.equal(first.kind, 'edit');
  assert.deepEqual(first.rawInput, { path: 'src/a.txt', content: 'ALPHA\n' });
  assert.deepEqual(first.locations, [{ path: path.join(ws, 'src/a.txt') }]);
  const done = wire[3].params.update;
  assert.deepEqual(done.content[0], { type: 'diff', path: path.join(ws, 'src/a.txt'), oldText: 'alpha\nbeta\ngamma\n', newText: 'ALPHA\n' });
  assert.equal(textOf(a.updates), 'written');

  a.updates.length = 0;
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'b' }] })).stopReason, 'end_turn');
  assert.ok(!fs.existsSync(path.join(ws, 'b.txt')), 'a rejected write changes nothing');
  const failed = a.updates.find((u) => u.update.toolCallId === 'call_2' && u.update.status === 'failed');
  assert.ok(failed, 'the rejected call ends failed');
  const result = mock.requests()[3].messages.find((m) => m.role === 'tool' && m.tool_call_id === 'call_2');
  assert.match(result.content, /^Error: .*rejected/);

  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'c' }] })).stopReason, 'end_turn');
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'd' }] })).stopReason, 'end_turn');
  assert.equal(fs.readFileSync(path.join(ws, 'd.txt'), 'utf8'), 'two');
  assert.equal(a.calls.permission.length, 3, 'allow_always was remembered for the session');
  await a.close();
});

test("the client's fs serves reads, writes and edits; paths outside the workspace never reach it", async (t) => {
  const { dir, ws, data } = tmpdir();
  const call = (id, name, args) => ({ tools: [{ id, name, arguments: [JSON.stringify(args)] }] });
  const mock = await startMock(dir, [
    call('r1', 'read_file', { path: 'src/a.txt' }), { text: ['read'] },
    call('w1', 'write_file', { path: 'new.txt', content: 'via client' }), { text: ['wrote'] },
    call('e1', 'edit_file', { path: 'src/a.txt', old_string: 'unsaved', new_string: 'edited' }), { text: ['edited'] },
    call('x1', 'read_file', { path: '../secret.txt' }), { text: ['refused'] },
  ]);
  t.after(() => mock.close());
  const buffers = new Map([[path.join(ws, 'src/a.txt'), 'unsaved buffer text\n']]);
  const a = startAgent(t, { data, ws, mock, handlers: {
    readTextFile: ({ path: p }) => {
      if (!buffers.has(p)) throw acp.RequestError.resourceNotFound(p);
      return { content: buffers.get(p) };
    },
    writeTextFile: ({ path: p, content }) => {
      buffers.set(p, content);
      return {};
    },
  } });
  await a.conn.initialize({ protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } });
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  await a.conn.setSessionMode({ sessionId, modeId: 'allow' });

  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'read' }] })).stopReason, 'end_turn');
  assert.deepEqual(a.calls.read[0], { sessionId, path: path.join(ws, 'src/a.txt') });
  const tool = mock.requests()[1].messages.find((m) => m.role === 'tool');
  assert.equal(tool.content, 'unsaved buffer text\n', "the model reads the editor's buffer");

  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'write' }] });
  assert.equal(buffers.get(path.join(ws, 'new.txt')), 'via client');
  assert.ok(!fs.existsSync(path.join(ws, 'new.txt')), 'the client wrote it, not ecpd');
  assert.equal(a.calls.permission.length, 0, 'mode allow asks nothing');

  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'edit' }] });
  assert.equal(buffers.get(path.join(ws, 'src/a.txt')), 'edited buffer text\n');
  assert.equal(fs.readFileSync(path.join(ws, 'src/a.txt'), 'utf8'), 'alpha\nbeta\ngamma\n');

  const reads = a.calls.read.length;
  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'escape' }] });
  assert.equal(a.calls.read.length, reads, 'a path outside the workspace is refused before the client is asked');
  const refused = a.updates.find((u) => u.update.toolCallId === 'x1' && u.update.status === 'failed');
  assert.ok(refused);
  await a.close();
});

test("the client's terminals run shell commands: output, exit status, timeout", async (t) => {
  const { dir, ws, data } = tmpdir();
  const shell = (id, command, extra = {}) => ({ tools: [{ id, name: 'shell_command', arguments: [JSON.stringify({ command, ...extra })] }] });
  const mock = await startMock(dir, [
    shell('s1', 'echo hello; pwd'), { text: ['ran'] },
    shell('s2', 'echo bad >&2; exit 3'), { text: ['failed'] },
    shell('s3', 'sleep 10', { timeout: 300 }), { text: ['timed out'] },
  ]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock, handlers: { terminals: true } });
  await a.conn.initialize({ protocolVersion: 1, clientCapabilities: { terminal: true } });
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });

  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'run' }] });
  assert.equal(a.calls.permission.length, 1, 'a command asks first');
  const [kind, create] = a.calls.terminal[0];
  assert.equal(kind, 'create');
  assert.deepEqual([create.command, create.args, create.cwd], ['/bin/sh', ['-c', 'echo hello; pwd'], ws]);
  // (the client may run its release handler after the prompt's answer: the SDK runs handlers concurrently)
  await eventually(() => a.calls.terminal.length === 4);
  assert.deepEqual(a.calls.terminal.map((c) => c[0]), ['create', 'wait', 'output', 'release']);
  const embedded = a.updates.find((u) => u.update.toolCallId === 's1' && u.update.content?.[0]?.type === 'terminal');
  assert.equal(embedded.update.content[0].terminalId, 'term-1');
  assert.equal(mock.requests()[1].messages.find((m) => m.tool_call_id === 's1').content, `hello\n${ws}\n\nExit code: 0`);

  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'fail' }] });
  assert.equal(mock.requests()[3].messages.find((m) => m.tool_call_id === 's2').content,
    'Error: the command exited with status 3\nbad\n');
  assert.equal(a.updates.filter((u) => u.update.toolCallId === 's2').pop().update.status, 'failed');

  const started = Date.now();
  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'slow' }] });
  assert.ok(Date.now() - started < 5000);
  assert.match(mock.requests()[5].messages.find((m) => m.tool_call_id === 's3').content, /^Error: the command timed out/);
  await eventually(() => a.calls.terminal.filter((c) => c[1] === 'term-3').length === 4);
  const last = a.calls.terminal.filter((c) => c[1] === 'term-3' || c[1]?.terminalId === 'term-3').map((c) => c[0]);
  assert.deepEqual(last, ['wait', 'kill', 'output', 'release']);
  assert.ok(!fs.existsSync(path.join(ws, 'ran')));
  await a.close();
});

test('session/cancel ends a streaming turn and withdraws a pending permission request', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, [
    { text: ['first'], hang: true },
    { tools: [{ id: 'sh', name: 'shell_command', arguments: ['{"command":"touch ran"}'] }] },
    { text: ['after'] },
  ]);
  t.after(() => mock.close());
  let answerPermission;
  const a = startAgent(t, { data, ws, mock, handlers: {
    requestPermission: () => new Promise((resolve) => (answerPermission = resolve)),
  } });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });

  const streaming = a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'talk' }] });
  while (!a.updates.length) await new Promise((r) => setTimeout(r, 10));
  let started = Date.now();
  await a.conn.cancel({ sessionId });
  assert.equal((await streaming).stopReason, 'cancelled');
  assert.ok(Date.now() - started < 1000, 'cancelled within a second');
  assertNoUpdateAfter(a.raw, 'cancelled');

  const asking = a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'run it' }] });
  while (!answerPermission) await new Promise((r) => setTimeout(r, 10));
  started = Date.now();
  await a.conn.cancel({ sessionId });
  assert.equal((await asking).stopReason, 'cancelled');
  assert.ok(Date.now() - started < 1000);
  answerPermission({ outcome: { outcome: 'cancelled' } }); // what a client answers after a cancel
  assert.ok(!fs.existsSync(path.join(ws, 'ran')), 'the command never ran');
  assert.equal(a.updates.filter((u) => u.update.toolCallId === 'sh').pop().update.status, 'failed');

  // the session goes on
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'again' }] })).stopReason, 'end_turn');
  assert.equal(textOf(a.updates.slice(-1)), 'after');
  await a.close();
});

test('stop reasons: max_tokens and refusal from the model, max_turn_requests from the turn limit', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, [
    { text: ['cut'], finish: 'length' },
    { text: ['no'], finish: 'content_filter' },
    { text: ['half'], tools: [{ id: 'x1', name: 'read_file', arguments: ['{"path":"src/a.txt"}'] }], finish: 'length' },
    { text: ['fine'] },
  ]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  const ask = (text) => a.conn.prompt({ sessionId, prompt: [{ type: 'text', text }] });
  assert.equal((await ask('1')).stopReason, 'max_tokens');
  assert.equal((await ask('2')).stopReason, 'refusal');
  assert.equal((await ask('3')).stopReason, 'max_tokens');
  assert.ok(!a.updates.some((u) => u.update.toolCallId === 'x1'), 'a call in a cut answer does not run');
  assert.equal((await ask('4')).stopReason, 'end_turn');
  const result = mock.requests()[3].messages.find((m) => m.role === 'tool' && m.tool_call_id === 'x1');
  assert.match(result.content, /^Error: this call did not run/);
  await a.close();
});

test('a plan the model makes is sent as plan updates, complete each time', async (t) => {
  const { dir, ws, data } = tmpdir();
  const plan = (id, entries) => ({ tools: [{ id, name: 'update_plan', arguments: [JSON.stringify({ entries })] }] });
  const mock = await startMock(dir, [
    plan('p1', [{ content: 'read a.txt', status: 'in_progress', priority: 'high' }, { content: 'answer', status: 'pending' }]),
    plan('p2', [{ content: 'read a.txt', status: 'completed', priority: 'high' }, { content: 'answer', status: 'in_progress' }]),
    { text: ['done'] },
  ]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'plan' }] })).stopReason, 'end_turn');
  const plans = a.updates.filter((u) => u.update.sessionUpdate === 'plan').map((u) => u.update.entries);
  assert.deepEqual(plans, [
    [{ content: 'read a.txt', priority: 'high', status: 'in_progress' }, { content: 'answer', priority: 'medium', status: 'pending' }],
    [{ content: 'read a.txt', priority: 'high', status: 'completed' }, { content: 'answer', priority: 'medium', status: 'in_progress' }],
  ]);
  assert.equal(a.calls.permission.length, 0);
  assert.equal(a.updates.find((u) => u.update.toolCallId === 'p1').update.kind, 'think');
  await a.close();
});

test('session/load replays the stored conversation before answering, after a restart', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, [
    { tools: [{ id: 'r1', name: 'read_file', arguments: ['{"path":"src/a.txt"}'] }] },
    { text: ['it is ', 'alpha'] },
    { text: ['still here'] },
  ]);
  t.after(() => mock.close());
  let a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'what is in a.txt?' }] });
  await a.close();

  a = startAgent(t, { data, ws, mock });
  const r = await a.conn.initialize({ protocolVersion: 1, clientCapabilities: {} });
  assert.equal(r.agentCapabilities.loadSession, true);
  await assert.rejects(a.conn.loadSession({ sessionId: 'never-was', cwd: ws, mcpServers: [] }), (e) => e.code === -32602);
  const loaded = await a.conn.loadSession({ sessionId, cwd: ws, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, 'ask');
  // replayed before the answer: every update precedes the load response on the wire
  const answerAt = a.raw.findIndex((m) => m.id !== undefined && m.result && m.result.modes);
  const replayed = a.raw.slice(0, answerAt).filter((m) => m.method === 'session/update').map((m) => m.params.update);
  assert.deepEqual(replayed.map((u) => u.sessionUpdate),
    ['user_message_chunk', 'tool_call', 'tool_call_update', 'agent_message_chunk']);
  assert.equal(replayed[0].content.text, 'what is in a.txt?');
  assert.equal(replayed[1].toolCallId, 'r1');
  assert.equal(replayed[2].status, 'completed');
  assert.equal(replayed[2].content[0].content.text, 'alpha\nbeta\ngamma\n');
  assert.equal(replayed[3].content.text, 'it is alpha');
  // and it continues with its history
  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'more' }] });
  assert.equal(mock.requests()[2].messages.length, 6);
  await a.close();
});

test('model failures reject the prompt with -32603 naming the cause; no provider is a clear error', async (t) => {
  const { dir, ws, data } = tmpdir();
  const mock = await startMock(dir, [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }, { text: ['ok'] }]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [] });
  await assert.rejects(a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'x' }] }),
    (e) => e.code === -32603 && /500/.test(e.message));
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'y' }] })).stopReason, 'end_turn');
  await a.close();

  const b = startAgent(t, { data, ws, mock: null });
  await init(b.conn);
  const s = await b.conn.newSession({ cwd: ws, mcpServers: [] });
  assert.ok(!s.configOptions.some((o) => o.id === 'model'), 'no model to offer');
  await assert.rejects(b.conn.prompt({ sessionId: s.sessionId, prompt: [{ type: 'text', text: 'x' }] }),
    (e) => e.code === -32603 && /OPENAI_API_KEY/.test(e.message));
  await b.close();
});

// A minimal MCP server that lists one tool and exits (status 3) when it is called.
const CRASHING_MCP = `
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "crash", "version": "1"}}
    elif m.get("method") == "tools/list":
        r = {"tools": [{"name": "boom", "description": "exits", "inputSchema": {"type": "object"},
                        "annotations": {"readOnlyHint": True}}]}
    elif m.get("method") == "tools/call":
        sys.exit(3)
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
`;

test("MCP servers from session/new: a real one's tools are offered and called; a failing one's are withdrawn", async (t) => {
  const { dir, ws, data } = tmpdir();
  const fsServer = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
  const call = (id, name, args) => ({ tools: [{ id, name, arguments: [JSON.stringify(args)] }] });
  const mock = await startMock(dir, [
    call('m1', 'mcp__fs__read_text_file', { path: path.join(ws, 'src/a.txt') }), { text: ['read it'] },
    call('m2', 'mcp__fs__write_file', { path: path.join(ws, 'm.txt'), content: 'by mcp' }), { text: ['wrote it'] },
    call('m3', 'mcp__crash__boom', {}), { text: ['survived'] },
  ]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  await init(a.conn);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [
    { name: 'fs', command: process.execPath, args: [fsServer, ws], env: [{ name: 'MCP_TEST', value: '1' }] },
    { name: 'missing', command: path.join(dir, 'no-such-server'), args: [], env: [] },
    { name: 'crash', command: PYTHON3, args: ['-c', CRASHING_MCP], env: [] },
  ] });

  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'read via mcp' }] })).stopReason, 'end_turn');
  const offered = mock.requests()[0].tools.map((x) => x.function.name);
  assert.ok(offered.includes('mcp__fs__read_text_file'), 'the real server is ready before session/new answers');
  assert.ok(offered.includes('mcp__crash__boom'));
  assert.ok(offered.includes('read_file'), 'our own tools still');
  assert.ok(!offered.some((n) => n.startsWith('mcp__missing__')), 'a server that failed to start offers nothing');
  const readResult = mock.requests()[1].messages.find((m) => m.role === 'tool' && m.tool_call_id === 'm1');
  assert.equal(readResult.content, 'alpha\nbeta\ngamma\n');
  assert.equal(a.calls.permission.length, 0, 'a read-only MCP tool needs no permission');
  const m1 = a.updates.filter((u) => u.update.toolCallId === 'm1').map((u) => u.update.status);
  assert.deepEqual(m1, ['pending', 'in_progress', 'completed']);

  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'write via mcp' }] });
  assert.equal(a.calls.permission.length, 1, 'a tool that is not read-only asks first');
  assert.equal(fs.readFileSync(path.join(ws, 'm.txt'), 'utf8'), 'by mcp');

  const started = Date.now();
  assert.equal((await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'crash it' }] })).stopReason, 'end_turn');
  assert.ok(Date.now() - started < 5000, 'a crash is not a hung turn');
  const crashResult = mock.requests()[5].messages.find((m) => m.role === 'tool' && m.tool_call_id === 'm3');
  assert.match(crashResult.content, /^Error: MCP server crash exited with status 3/);
  assert.ok(!mock.requests()[5].tools.some((x) => x.function.name.startsWith('mcp__crash__')), 'its tools are withdrawn');
  assert.equal(textOf(a.updates.slice(-1)), 'survived');
  await a.close();
});

test('an MCP server over streamable HTTP from session/new; cancel during its slow call', async (t) => {
  const { dir, ws, data } = tmpdir();
  const http = spawn(PYTHON3, [path.join(path.dirname(MOCK_LLM), 'mock_mcp_http.py'), 'secret-token'], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => http.kill('SIGKILL'));
  const port = await new Promise((resolve) => http.stdout.once('data', (d) => resolve(Number(String(d).match(/PORT (\d+)/)[1]))));
  const url = `http://127.0.0.1:${port}/mcp`;
  const call = (id, name, args) => ({ tools: [{ id, name, arguments: [JSON.stringify(args)] }] });
  const mock = await startMock(dir, [
    call('h1', 'mcp__web__echo', { text: 'over http' }), { text: ['ok'] },
    call('h2', 'mcp__web__slow', {}), { text: ['never'] },
  ]);
  t.after(() => mock.close());
  const a = startAgent(t, { data, ws, mock });
  const init1 = await init(a.conn);
  assert.equal(init1.agentCapabilities.mcpCapabilities.http, true);
  const { sessionId } = await a.conn.newSession({ cwd: ws, mcpServers: [
    { type: 'http', name: 'web', url, headers: [{ name: 'X-Token', value: 'secret-token' }] },
  ] });
  await assert.rejects(a.conn.newSession({ cwd: ws, mcpServers: [{ type: 'sse', name: 'old', url, headers: [] }] }),
    (e) => e.code === -32602);
  await a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'echo' }] });
  assert.equal(mock.requests()[1].messages.find((m) => m.tool_call_id === 'h1').content, 'echo: over http');

  const slow = a.conn.prompt({ sessionId, prompt: [{ type: 'text', text: 'slow' }] });
  await eventually(() => a.updates.some((u) => u.update.toolCallId === 'h2' && u.update.status === 'in_progress'));
  const started = Date.now();
  await a.conn.cancel({ sessionId });
  assert.equal((await slow).stopReason, 'cancelled');
  assert.ok(Date.now() - started < 1000);
  await a.close();
});

test('bad lines: -32700 with id null, -32601 for unknown methods, unknown notifications ignored', async (t) => {
  const { ws, data } = tmpdir();
  const child = spawn(ECPD, ['--acp', '--data-dir', data], { cwd: ws, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const lines = [];
  child.stdout.on('data', (d) => {
    out += d;
    let nl;
    while ((nl = out.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(out.slice(0, nl)));
      out = out.slice(nl + 1);
    }
  });
  const next = async (n) => {
    const deadline = Date.now() + 5000;
    while (lines.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    return lines.slice(0, n);
  };
  child.stdin.write('this is not json\n');
  child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"session/set_model","params":{}}\n');
  child.stdin.write('{"jsonrpc":"2.0","method":"_vendor/whatever","params":{}}\n');
  child.stdin.write('[1,2]\n');
  child.stdin.write('\n{"jsonrpc":"2.0","id":"s","method":"initialize","params":{"protocolVersion":1}}\r\n');
  const got = await next(4);
  assert.deepEqual(got[0].id, null);
  assert.equal(got[0].error.code, -32700);
  assert.deepEqual([got[1].id, got[1].error.code], [1, -32601]);
  assert.deepEqual([got[2].id, got[2].error.code], [null, -32600]);
  assert.deepEqual([got[3].id, got[3].result.protocolVersion], ['s', 1]);
  child.stdin.end();
  const code = await new Promise((r) => child.on('exit', r));
  assert.equal(code, 0);
  assert.equal(lines.length, 4, 'nothing else on stdout');
  assert.ok(!/Sanitizer|runtime error:/.test(stderr), stderr);
});
