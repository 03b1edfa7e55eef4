#!/usr/bin/node
// A real MCP client (Client from @modelcontextprotocol/sdk) that runs a
// scripted scenario over its own stdin/stdout: the agent side of `glove run`.
//
//   node mcp-client.mjs [--modules DIR] [--out FILE] SCENARIO
//
// SCENARIO is a JSON array of steps, given inline (starting with "[") or as
// the path of a file holding it. --modules names the node_modules directory
// holding the SDK (default: resolved from this file's location, as node
// does). Each step prints one JSON line (to FILE with --out, else stderr);
// the client exits 0 when every expectation held, 1 when one did not, 2 on a
// usage or connection failure.
//
// Steps:
//   {"op":"list", "expect":[NAMES], "includes":[NAMES], "excludes":[NAMES],
//    "described":true, "count":N, "pages":P}
//       tools/list, every page; expect is the exact set of names; described:
//       every tool carries a description and an object inputSchema; count
//       and pages: how many tools, in how many pages.
//   {"op":"call", "tool":NAME, "args":{...}, "expect":E, ...}
//       tools/call. E is "ok" (a result without isError), "tool_error" (a
//       result with isError), "rpc_error" (any JSON-RPC error), a
//       data.reason such as "policy_denied", or "cancelled" (with
//       cancel_after_ms). Optional: "code" (JSON-RPC error code), "rule"
//       (exact data.rule), "text" (substring of the text content or error
//       message), "text_excludes" (a substring that must not be there), "progress" (N: ask for progress and expect N
//       notifications, relayed with our token), "cancel_after_ms" (abort the
//       call after that long: the SDK sends notifications/cancelled),
//       A call that gets no answer within timeout_ms has the outcome
//       "no_answer", which no expectation accepts.
//       "quiet_ms" (after a cancel, wait that long and expect no response
//       with the cancelled request's id), "timeout_ms" (the SDK's own
//       request timeout, default 20000), "label" (a name for parallel order),
//       "delay_ms" (wait that long first), "detach" (send the call and go on
//       without waiting: the scenario may end with the call in flight).
//   {"op":"parallel", "steps":[...], "order":[LABEL or [LABELS]...]}
//       runs the steps concurrently; order is the expected completion order
//       of the labels it names (an inner array: a group in any order).
//   {"op":"ping"}                 ping, expecting {}
//   {"op":"set_level", "level":L} logging/setLevel L (default info), expecting {}
//   {"op":"instructions", "text":S} or {"op":"instructions", "absent":true}
//       the initialize result's instructions include S, or there are none.
//   {"op":"wire_check"}
//       everything received so far: no response to an id we never sent, at
//       most one response per id, no request from the server (Glove sends
//       the agent none).
//   {"op":"sleep", "ms":N}
//   {"op":"wait_list_changed", "timeout_ms":N}
//       waits for notifications/tools/list_changed.
//   {"op":"bench", "tool":NAME, "args":{...}, "n":N, "warmup":W, "inflight":K}
//       N timed calls (K at a time, default 1); prints latency percentiles
//       in microseconds and calls per second. Measures, asserts nothing.
//
// Every line: {"step":I, "op":..., "pass":true|false, "why":..., ...}.

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
let modules = null;
let outPath = null;
while (argv.length > 0 && argv[0].startsWith('--')) {
  const opt = argv.shift();
  if (opt === '--modules') modules = argv.shift();
  else if (opt === '--out') outPath = argv.shift();
  else if (opt === '--') break;
  else usage(`unknown option ${opt}`);
}
if (argv.length !== 1) usage('expected one SCENARIO');

function usage(why) {
  process.stderr.write(`mcp-client: ${why}\nusage: mcp-client.mjs [--modules DIR] [--out FILE] SCENARIO\n`);
  process.exit(2);
}

let scenario;
try {
  const text = argv[0].trimStart().startsWith('[') ? argv[0] : fs.readFileSync(argv[0], 'utf8');
  scenario = JSON.parse(text);
  if (!Array.isArray(scenario)) throw new Error('the scenario must be a JSON array of steps');
} catch (e) {
  usage(`bad scenario: ${e.message}`);
}

async function load(sub) {
  if (modules) {
    return import(pathToFileURL(path.join(path.resolve(modules), '@modelcontextprotocol/sdk/dist/esm', sub)).href);
  }
  return import(`@modelcontextprotocol/sdk/${sub}`);
}
const { Client } = await load('client/index.js');
const { ReadBuffer, serializeMessage } = await load('shared/stdio.js');
const { ToolListChangedNotificationSchema } = await load('types.js');

const outFd = outPath ? fs.openSync(outPath, 'a') : 2;
function emit(rec) {
  fs.writeSync(outFd, JSON.stringify(rec) + '\n');
}

// The SDK's Transport interface over our own stdin/stdout. The SDK's
// StdioClientTransport spawns a server and StdioServerTransport is meant for
// servers; here the client is the child, so this is the small piece between.
// It also keeps a log of what went each way, to check ids and tokens.
class ProcessStdioTransport {
  constructor(input, output) {
    this.input = input;
    this.output = output;
    this.buffer = new ReadBuffer();
    this.sent = [];
    this.received = [];
    this.closed = false;
  }
  async start() {
    this.input.on('data', (chunk) => {
      try {
        this.buffer.append(chunk);
        for (;;) {
          const msg = this.buffer.readMessage();
          if (msg === null) break;
          this.received.push({ t: performance.now(), msg });
          this.onmessage?.(msg);
        }
      } catch (e) {
        this.onerror?.(e);
      }
    });
    this.input.on('end', () => this.close());
    this.input.on('error', (e) => this.onerror?.(e));
  }
  send(msg) {
    this.sent.push({ t: performance.now(), msg });
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('transport closed'));
      if (this.output.write(serializeMessage(msg))) resolve();
      else this.output.once('drain', resolve);
    });
  }
  async close() {
    if (this.closed) return;
    this.closed = true;
    this.input.pause();
    this.onclose?.();
  }
}

const transport = new ProcessStdioTransport(process.stdin, process.stdout);
// Latency runs keep no message log.
if (scenario.some((s) => s.op === 'bench')) {
  transport.send = function (msg) {
    return new Promise((resolve) => {
      if (this.output.write(serializeMessage(msg))) resolve();
      else this.output.once('drain', resolve);
    });
  };
  const push = () => {};
  transport.sent.push = push;
  transport.received.push = push;
}
const client = new Client({ name: 'glove-test-client', version: '1.0.0' }, { capabilities: {} });
let listChanged = 0;
const listChangedWaiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  listChanged++;
  while (listChangedWaiters.length) listChangedWaiters.shift()();
});

const t0 = performance.now();
const ms = () => Math.round((performance.now() - t0) * 10) / 10;
const sleep = (n) => new Promise((r) => setTimeout(r, n));
let failures = 0;

try {
  await client.connect(transport);
} catch (e) {
  emit({ step: 0, op: 'connect', pass: false, why: `connect failed: ${e.message}` });
  process.exit(2);
}
emit({ step: 0, op: 'connect', pass: true, server: client.getServerVersion(), capabilities: client.getServerCapabilities() });

function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

function sameSet(a, b) {
  const x = [...a].sort();
  const y = [...b].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

async function stepList(s, rec) {
  const names = [];
  const all = [];
  let cursor;
  let pages = 0;
  do {
    const r = await client.listTools(cursor ? { cursor } : {});
    all.push(...r.tools);
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
    pages++;
  } while (cursor);
  rec.tools = names;
  rec.pages = pages;
  if (s.described) {
    const bare = all.filter((t) => !t.description || t.inputSchema?.type !== 'object').map((t) => t.name);
    if (bare.length) return `tools without a description or an object inputSchema: ${JSON.stringify(bare)}`;
  }
  if (s.count !== undefined && names.length !== s.count) return `${names.length} tools, expected ${s.count}`;
  if (s.pages !== undefined && pages !== s.pages) return `${pages} pages, expected ${s.pages}`;
  if (new Set(names).size !== names.length) return 'a tool is listed twice';
  if (s.expect && !sameSet(names, s.expect)) return `tools are ${JSON.stringify(names)}, expected ${JSON.stringify(s.expect)}`;
  for (const n of s.includes ?? []) if (!names.includes(n)) return `tool ${n} is not listed`;
  for (const n of s.excludes ?? []) if (names.includes(n)) return `tool ${n} is listed`;
  return null;
}

function findSent(tool, args, claimed) {
  const want = JSON.stringify(args ?? {});
  for (const { t, msg } of transport.sent) {
    if (msg.method === 'tools/call' && msg.params?.name === tool && JSON.stringify(msg.params.arguments ?? {}) === want &&
        !claimed.has(msg.id)) {
      claimed.add(msg.id);
      return { t, ...msg };
    }
  }
  return null;
}
const claimedIds = new Set();

async function stepCall(s, rec) {
  const expect = s.expect ?? 'ok';
  if (s.delay_ms) await sleep(s.delay_ms);
  if (s.detach) {
    client.callTool({ name: s.tool, arguments: s.args ?? {} }, undefined, { timeout: 600000 }).catch(() => {});
    rec.outcome = 'detached';
    return null;
  }
  const controller = new AbortController();
  const cancelReason = new Error('cancelled by the scenario');
  const progress = [];
  const options = { timeout: s.timeout_ms ?? 20000, signal: controller.signal };
  if (s.progress !== undefined) options.onprogress = (p) => progress.push(p);
  const params = { name: s.tool, arguments: s.args ?? {} };
  const started = performance.now();
  const pending = client.callTool(params, undefined, options);
  let timer;
  if (s.cancel_after_ms !== undefined) timer = setTimeout(() => controller.abort(cancelReason), s.cancel_after_ms);
  let outcome;
  let result;
  let error;
  try {
    result = await pending;
    outcome = result.isError ? 'tool_error' : 'ok';
  } catch (e) {
    error = e;
    // The SDK rejects an aborted request with its own error wrapping our reason.
    const aborted = controller.signal.aborted && (e === cancelReason || String(e?.message).includes(cancelReason.message));
    // The SDK's own timeout is an McpError too; it is no answer from Glove.
    const timedOut = !aborted && e?.data?.timeout !== undefined && /timed out/.test(e?.message);
    outcome = aborted ? 'cancelled' : timedOut ? 'no_answer' : typeof e?.code === 'number' ? 'rpc_error' : 'exception';
  }
  clearTimeout(timer);
  rec.ms = Math.round((performance.now() - started) * 10) / 10;
  const sent = findSent(s.tool, s.args, claimedIds);
  rec.request_id = sent?.id ?? null;
  rec.outcome = outcome;
  if (result) rec.text = textOf(result);
  if (error) {
    rec.code = error.code ?? null;
    rec.message = error.message;
    rec.reason = error.data?.reason ?? null;
    rec.rule = error.data?.rule ?? null;
  }
  if (s.progress !== undefined) {
    // Counted on the wire, before the response: the SDK hands notifications
    // to their handlers a microtask late, so one that arrives in the same
    // read as the response can miss the callback (rec.progress).
    rec.progress = progress.map((p) => p.progress);
    const token = sent?.params?._meta?.progressToken;
    rec.progress_token = token ?? null;
    const end = transport.received.findIndex((r) => r.msg.id === rec.request_id && r.msg.method === undefined);
    const before = transport.received.slice(0, end < 0 ? undefined : end).filter((r) => !sent || r.t >= sent.t);
    const wire = before.filter((r) => r.msg.method === 'notifications/progress').map((r) => r.msg.params.progressToken);
    rec.wire_tokens = [...new Set(wire.map((t) => JSON.stringify(t)))];
    if (token === undefined) return 'the request carried no progressToken';
    const ours = wire.filter((t) => JSON.stringify(t) === JSON.stringify(token)).length;
    rec.wire_progress = ours;
    if (ours !== wire.length) return `progress arrived with tokens ${JSON.stringify(wire)}, ours is ${JSON.stringify(token)}`;
    if (ours !== s.progress) return `${ours} progress notifications with our token, expected ${s.progress}`;
  }
  if (expect === 'cancelled') {
    if (outcome !== 'cancelled') return `outcome ${outcome}, expected cancelled`;
    const note = transport.sent.find((x) => x.msg.method === 'notifications/cancelled' && x.msg.params?.requestId === rec.request_id);
    if (!note) return 'no notifications/cancelled was sent';
    if (s.quiet_ms) {
      await sleep(s.quiet_ms);
      const late = transport.received.find((x) => x.msg.id === rec.request_id && x.t >= note.t);
      if (late) {
        rec.late = late.msg;
        return 'a response to the cancelled request arrived';
      }
    }
    return null;
  }
  if (['ok', 'tool_error', 'rpc_error'].includes(expect)) {
    if (outcome !== expect) return `outcome ${outcome}${error ? ` (${error.message})` : ''}, expected ${expect}`;
  } else if (outcome !== 'rpc_error' || rec.reason !== expect) {
    return `outcome ${outcome} reason ${rec.reason ?? '-'}${result ? ` text ${JSON.stringify(rec.text)}` : ''}, expected reason ${expect}`;
  }
  if (s.code !== undefined && rec.code !== s.code) return `code ${rec.code}, expected ${s.code}`;
  if (s.rule !== undefined && rec.rule !== s.rule) return `rule ${JSON.stringify(rec.rule)}, expected ${JSON.stringify(s.rule)}`;
  if (s.text !== undefined) {
    const hay = result ? rec.text : rec.message;
    if (!hay.includes(s.text)) return `${JSON.stringify(hay)} does not contain ${JSON.stringify(s.text)}`;
  }
  if (s.text_excludes !== undefined) {
    const hay = result ? rec.text : rec.message;
    if (hay.includes(s.text_excludes)) return `${JSON.stringify(hay)} contains ${JSON.stringify(s.text_excludes)}`;
  }
  return null;
}

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

async function stepBench(s, rec) {
  const params = { name: s.tool, arguments: s.args ?? {} };
  const n = s.n ?? 1000;
  const inflight = Math.max(1, s.inflight ?? 1);
  for (let i = 0; i < (s.warmup ?? 100); i++) await client.callTool(params);
  const lat = [];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const a = process.hrtime.bigint();
      const r = await client.callTool(params);
      lat.push(Number(process.hrtime.bigint() - a) / 1000);
      if (r.isError) throw new Error(`the call failed: ${textOf(r)}`);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: inflight }, worker));
  const wall = Number(process.hrtime.bigint() - start) / 1e9;
  lat.sort((x, y) => x - y);
  Object.assign(rec, {
    tool: s.tool,
    n,
    inflight,
    p50_us: Math.round(percentile(lat, 50) * 10) / 10,
    p90_us: Math.round(percentile(lat, 90) * 10) / 10,
    p99_us: Math.round(percentile(lat, 99) * 10) / 10,
    max_us: Math.round(lat[lat.length - 1] * 10) / 10,
    calls_per_s: Math.round((n / wall) * 10) / 10,
    wall_s: Math.round(wall * 1000) / 1000,
  });
  return null;
}

async function runStep(s, index) {
  const rec = { step: index, op: s.op };
  if (s.label) rec.label = s.label;
  if (s.tool) rec.tool = s.tool;
  let why;
  try {
    switch (s.op) {
      case 'list':
        why = await stepList(s, rec);
        break;
      case 'call':
        why = await stepCall(s, rec);
        break;
      case 'ping': {
        const r = await client.ping();
        why = r && Object.keys(r).length === 0 ? null : `ping answered ${JSON.stringify(r)}`;
        break;
      }
      case 'set_level': {
        // logging/setLevel, expecting {} (any error fails the step).
        const r = await client.setLoggingLevel(s.level ?? 'info');
        why = r && Object.keys(r).length === 0 ? null : `logging/setLevel answered ${JSON.stringify(r)}`;
        break;
      }
      case 'wire_check': {
        const asked = new Set(transport.sent.filter((x) => x.msg.method !== undefined && x.msg.id !== undefined)
          .map((x) => JSON.stringify(x.msg.id)));
        const seen = new Map();
        const problems = [];
        for (const { msg } of transport.received) {
          if (msg.method !== undefined && msg.id !== undefined) problems.push(`a request from the server: ${msg.method}`);
          if (msg.method !== undefined) continue;
          const id = JSON.stringify(msg.id);
          if (!asked.has(id)) problems.push(`a response to id ${id}, never sent`);
          seen.set(id, (seen.get(id) ?? 0) + 1);
          if (seen.get(id) === 2) problems.push(`more than one response to id ${id}`);
        }
        rec.received = transport.received.length;
        why = problems.length ? problems.join('; ') : null;
        break;
      }
      case 'instructions': {
        // The initialize result's instructions: text (a substring that must
        // be there) or absent:true (there must be none).
        const text = client.getInstructions();
        rec.instructions = text ?? null;
        if (s.absent) why = text === undefined ? null : 'instructions were given';
        else why = typeof text === 'string' && text.includes(s.text ?? '') ? null : `instructions do not include ${JSON.stringify(s.text)}`;
        break;
      }
      case 'sleep':
        await sleep(s.ms ?? 0);
        why = null;
        break;
      case 'wait_list_changed': {
        if (listChanged === 0) {
          let timer;
          const ok = await Promise.race([
            new Promise((r) => listChangedWaiters.push(() => r(true))),
            new Promise((r) => { timer = setTimeout(() => r(false), s.timeout_ms ?? 5000); }),
          ]);
          clearTimeout(timer);
          why = ok ? null : 'no notifications/tools/list_changed arrived';
        } else why = null;
        listChanged = 0;
        break;
      }
      case 'parallel': {
        const done = [];
        const subs = (s.steps ?? []).map((sub, k) =>
          runStep(sub, `${index}.${k}`).then((r) => {
            done.push(sub.label ?? `${index}.${k}`);
            return r;
          }),
        );
        const results = await Promise.all(subs);
        rec.completed = done;
        why = results.every((r) => r) ? null : 'a parallel step failed';
        if (!why && s.order) {
          // Each group's labels must all complete before any label of a later group.
          const pos = (l) => done.indexOf(l);
          const groups = s.order.map((g) => (Array.isArray(g) ? g : [g]));
          for (let g = 0; g + 1 < groups.length && !why; g++) {
            const latest = Math.max(...groups[g].map(pos));
            const earliest = Math.min(...groups[g + 1].map(pos));
            if (groups[g].some((l) => pos(l) < 0) || latest > earliest)
              why = `completed in order ${JSON.stringify(done)}, expected ${JSON.stringify(s.order)}`;
          }
        }
        break;
      }
      case 'bench':
        why = await stepBench(s, rec);
        break;
      default:
        why = `unknown op ${s.op}`;
    }
  } catch (e) {
    why = `exception: ${e?.message ?? e}`;
  }
  rec.at_ms = ms();
  rec.pass = !why;
  if (why) {
    rec.why = why;
    failures++;
  }
  emit(rec);
  return rec.pass;
}

for (let i = 0; i < scenario.length; i++) await runStep(scenario[i], i + 1);
emit({ step: 'end', op: 'end', pass: failures === 0, failures, list_changed_pending: listChanged });
if (failures > 0) process.stderr.write(`mcp-client: ${failures} step(s) failed\n`);
await client.close().catch(() => {});
process.exit(failures > 0 ? 1 : 0);
