#!/usr/bin/node
// An MCP client agent (Client from @modelcontextprotocol/sdk) for the
// client-feature tests of `glove run` (tests/integration/run_client.bats):
// it declares the capabilities it is given, logs every message Glove sends
// it, answers sampling/createMessage, elicitation/create and roots/list
// itself, and runs a scripted scenario.
//
//   node features-agent.mjs --modules DIR --out FILE [--caps JSON]
//        [--version V] SCENARIO
//
// --caps: the client capabilities of its initialize (default {}).
// --version: the protocolVersion its initialize asks for (rewritten on the
// wire; default the SDK's). --no-answer: requests it declared are never
// answered. Every line of FILE is one JSON record:
//   {"rec":"init", "result":{...}}           Glove's initialize result
//   {"rec":"request", "method":M, "id":ID, "params":{...}}   a request Glove sent
//   {"rec":"notification", "method":M, "params":{...}}
//   {"rec":"step", "step":I, "op":..., ...}  a step's outcome
//   {"rec":"end"}
// Steps: {"op":"list"} (tool names), {"op":"call","tool":T,"args":{}}
// (result text, isError, or error; "stall_until": FILE: once the call is
// sent, read nothing until FILE exists, then 300 ms more), {"op":"parallel","n":N,"tool":T,"args":{}}
// (N calls at once; "outcomes" counts "ok" and error codes),
// {"op":"set_level","level":L},
// {"op":"wait","method":M,"timeout_ms":N} (a notification of that method),
// {"op":"roots_changed"}, {"op":"sleep","ms":N}, {"op":"quiet"} (from now
// on notifications/message are only counted), {"op":"count"} (that count).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
let modules = null, outPath = null, caps = {}, version = null, noAnswer = false;
while (argv.length > 1 && argv[0].startsWith('--')) {
  const opt = argv.shift();
  if (opt === '--no-answer') { noAnswer = true; continue; }
  const v = argv.shift();
  if (opt === '--modules') modules = v;
  else if (opt === '--out') outPath = v;
  else if (opt === '--caps') caps = JSON.parse(v);
  else if (opt === '--version') version = v;
  else { process.stderr.write(`features-agent: unknown option ${opt}\n`); process.exit(2); }
}
const scenario = JSON.parse(argv[0] ?? '[]');
const load = (sub) => import(pathToFileURL(path.join(path.resolve(modules), '@modelcontextprotocol/sdk/dist/esm', sub)).href);
const { Client } = await load('client/index.js');
const { ReadBuffer, serializeMessage } = await load('shared/stdio.js');
const types = await load('types.js');

const outFd = fs.openSync(outPath, 'a');
const emit = (rec) => fs.writeSync(outFd, JSON.stringify(rec) + '\n');

const waiters = [];
// Log messages are counted, not logged, once a "quiet" step ran (floods).
let quiet = false, logCount = 0;
const seen = [];
class ProcessStdioTransport {
  constructor() { this.buffer = new ReadBuffer(); }
  async start() {
    process.stdin.on('data', (chunk) => {
      this.buffer.append(chunk);
      for (;;) {
        const msg = this.buffer.readMessage();
        if (msg === null) break;
        if (msg.method !== undefined && msg.id !== undefined)
          emit({ rec: 'request', method: msg.method, id: msg.id, params: msg.params });
        else if (msg.method === 'notifications/message' && quiet) {
          logCount++;
        } else if (msg.method !== undefined) {
          emit({ rec: 'notification', method: msg.method, params: msg.params });
          seen.push(msg);
          for (const w of waiters.splice(0)) w();
        } else if (msg.result?.serverInfo)
          emit({ rec: 'init', result: msg.result });
        this.onmessage?.(msg);
      }
    });
    process.stdin.on('end', () => this.onclose?.());
  }
  send(msg) {
    if (version && msg.method === 'initialize') msg = { ...msg, params: { ...msg.params, protocolVersion: version } };
    return new Promise((resolve) => { if (process.stdout.write(serializeMessage(msg))) resolve(); else process.stdout.once('drain', resolve); });
  }
  async close() { this.onclose?.(); }
}

const client = new Client({ name: 'features-agent', version: '1.0.0' }, { capabilities: caps });
const never = () => new Promise(() => {});
if (caps.sampling)
  client.setRequestHandler(types.CreateMessageRequestSchema, async () => noAnswer ? never() : ({
    role: 'assistant', model: 'agent-model', content: { type: 'text', text: 'sampled by the agent' } }));
if (caps.elicitation)
  client.setRequestHandler(types.ElicitRequestSchema, async () => ({ action: 'decline' }));
if (caps.roots)
  client.setRequestHandler(types.ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///agent-root', name: 'agent-root' }] }));
// Notifications are logged by the transport; the SDK needs no handlers.
client.fallbackNotificationHandler = async () => {};

try {
  await client.connect(new ProcessStdioTransport());
} catch (e) {
  emit({ rec: 'step', step: 0, op: 'connect', error: e.message });
  process.exit(2);
}
const sleep = (n) => new Promise((r) => setTimeout(r, n));
const text = (r) => (r?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

for (const [i, s] of scenario.entries()) {
  const rec = { rec: 'step', step: i + 1, op: s.op };
  try {
    if (s.op === 'list') {
      rec.tools = (await client.listTools()).tools.map((t) => t.name);
    } else if (s.op === 'call') {
      const p = client.callTool({ name: s.tool, arguments: s.args ?? {} }, undefined, { timeout: s.timeout_ms ?? 20000 });
      if (s.stall_until) {
        process.stdin.pause();
        for (let t = 0; t < 1200 && !fs.existsSync(s.stall_until); t++) await sleep(50);
        await sleep(300);
        process.stdin.resume();
      }
      const r = await p;
      rec.text = text(r);
      rec.isError = r.isError === true;
    } else if (s.op === 'parallel') {
      const all = await Promise.allSettled(Array.from({ length: s.n }, () =>
        client.callTool({ name: s.tool, arguments: s.args ?? {} }, undefined, { timeout: s.timeout_ms ?? 20000 })));
      rec.outcomes = {};
      for (const r of all) {
        const k = r.status === 'fulfilled' ? 'ok' : String(r.reason?.code);
        rec.outcomes[k] = (rec.outcomes[k] ?? 0) + 1;
      }
    } else if (s.op === 'set_level') {
      rec.result = await client.setLoggingLevel(s.level);
    } else if (s.op === 'wait') {
      const deadline = Date.now() + (s.timeout_ms ?? 10000);
      let m;
      while (!(m = seen.find((x) => x.method === s.method)) && Date.now() < deadline)
        await Promise.race([new Promise((r) => waiters.push(r)), sleep(100)]);
      rec.found = m ?? null;
    } else if (s.op === 'roots_changed') {
      await client.sendRootsListChanged();
    } else if (s.op === 'quiet') {
      quiet = true;
    } else if (s.op === 'count') {
      rec.log_messages = logCount;
    } else if (s.op === 'sleep') {
      await sleep(s.ms);
    }
  } catch (e) {
    rec.error = { message: e.message, code: e.code, data: e.data };
  }
  emit(rec);
}
emit({ rec: 'end' });
await client.close();
process.exit(0);
