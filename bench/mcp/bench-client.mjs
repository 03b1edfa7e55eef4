#!/usr/bin/node
// The client of the glove run benchmark (bench/mcp/mcp_bench.py): tools/call
// round trips over this process's own stdin/stdout, in either protocol era.
//
//   node bench-client.mjs --era legacy|modern --impl sdk|raw --modules DIR --out FILE
//                         [--tool NAME] [--n N] [--warmup W] [--inflight K] [--pause-ms P]
//
// legacy: initialize (2025-11-25) and notifications/initialized, then
//         tools/call.
// modern: MCP 2026-07-28: no initialize; server/discover once, then every
//         tools/call carries params._meta with
//         "io.modelcontextprotocol/protocolVersion":"2026-07-28" and
//         "io.modelcontextprotocol/clientCapabilities":{} (and clientInfo).
// impl sdk: a real SDK client: Client of @modelcontextprotocol/sdk 1.x
//         (legacy) or of @modelcontextprotocol/client 2.x pinned to
//         2026-07-28 (modern), as agents use them.
// impl raw: hand-written JSON-RPC, the same code for both eras but the
//         envelope, so that the client's own cost stays small and the eras
//         differ only on the wire.
//
// It connects, runs W warm-up calls, writes a line, pauses P ms, runs the N
// timed calls (K at a time), writes their figures (latency percentiles in
// microseconds, calls per second), pauses P ms again, and writes an end
// line: the benchmark samples Glove's CPU time in the pauses. Every line is
// JSON: {"op":"bench","label":"warmup"|"timed","pass":...,...} and
// {"op":"end","pass":...}. Exit 0 when every call answered without an
// error, 1 otherwise, 2 on a usage error. Measures; asserts no time.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const opt = { era: null, impl: 'sdk', modules: null, out: null, tool: 'echo', n: 2000, warmup: 200, inflight: 1, pauseMs: 200 };
const argv = process.argv.slice(2);
function usage(why) {
  process.stderr.write(`bench-client: ${why}\nusage: bench-client.mjs --era legacy|modern --impl sdk|raw --modules DIR --out FILE ` +
    '[--tool NAME] [--n N] [--warmup W] [--inflight K] [--pause-ms P]\n');
  process.exit(2);
}
while (argv.length) {
  const o = argv.shift();
  const v = argv.shift();
  if (v === undefined) usage(`${o} needs a value`);
  if (o === '--era') opt.era = v;
  else if (o === '--impl') opt.impl = v;
  else if (o === '--modules') opt.modules = v;
  else if (o === '--out') opt.out = v;
  else if (o === '--tool') opt.tool = v;
  else if (o === '--n') opt.n = Number(v);
  else if (o === '--warmup') opt.warmup = Number(v);
  else if (o === '--inflight') opt.inflight = Number(v);
  else if (o === '--pause-ms') opt.pauseMs = Number(v);
  else usage(`unknown option ${o}`);
}
if (!['legacy', 'modern'].includes(opt.era)) usage('--era is legacy or modern');
if (!['sdk', 'raw'].includes(opt.impl)) usage('--impl is sdk or raw');
if (!opt.out || (opt.impl === 'sdk' && !opt.modules)) usage('--out is required, and --modules with --impl sdk');
for (const k of ['n', 'warmup', 'inflight', 'pauseMs'])
  if (!Number.isInteger(opt[k]) || opt[k] < (k === 'n' || k === 'inflight' ? 1 : 0)) usage(`bad ${k}`);

const outFd = fs.openSync(opt.out, 'a');
const emit = (rec) => fs.writeSync(outFd, JSON.stringify(rec) + '\n');
const clientInfo = { name: 'glove-bench-client', version: '1.0.0' };

// Newline-delimited JSON on stdin/stdout: the SDKs' Transport interface
// (start, send, close, onmessage, onclose, onerror), and the raw client's.
class LineTransport {
  constructor() {
    this.buf = '';
  }
  async start() {
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      this.buf += chunk;
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        if (!line.trim()) continue;
        let msg;
        try {
          msg = JSON.parse(line);
        } catch (e) {
          this.onerror?.(e);
          continue;
        }
        this.onmessage?.(msg);
      }
    });
    process.stdin.on('end', () => this.onclose?.());
  }
  send(msg) {
    return new Promise((resolve) => {
      if (process.stdout.write(JSON.stringify(msg) + '\n')) resolve();
      else process.stdout.once('drain', resolve);
    });
  }
  async close() {
    process.stdin.pause();
  }
}

// connect() resolves to call(), which makes one tools/call and resolves to
// its result, rejecting on an error or an isError result.
async function rawClient() {
  const t = new LineTransport();
  const waiting = new Map();
  let next = 1;
  t.onmessage = (m) => {
    if (m.method !== undefined) return; // notifications (and no requests are expected)
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(`${m.error.code}: ${m.error.message}`));
    else w.resolve(m.result);
  };
  t.onclose = () => {
    for (const w of waiting.values()) w.reject(new Error('the channel closed'));
    waiting.clear();
  };
  await t.start();
  const envelope = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': clientInfo };
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    t.send({ jsonrpc: '2.0', id, method, params });
  });
  if (opt.era === 'legacy') {
    const r = await request('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo });
    if (r.protocolVersion !== LEGACY) throw new Error(`initialize answered ${JSON.stringify(r)}`);
    await t.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  } else {
    const r = await request('server/discover', { _meta: envelope });
    if (!r.supportedVersions?.includes(MODERN)) throw new Error(`server/discover answered ${JSON.stringify(r)}`);
  }
  const params = () => (opt.era === 'modern' ? { _meta: envelope, name: opt.tool, arguments: { message: 'bench' } }
    : { name: opt.tool, arguments: { message: 'bench' } });
  return async () => {
    const r = await request('tools/call', params());
    if (r.isError) throw new Error(`the call failed: ${JSON.stringify(r)}`);
    if (opt.era === 'modern' && r.resultType !== 'complete') throw new Error(`resultType ${r.resultType}`);
    return r;
  };
}

async function sdkClient() {
  const mod = (pkg, file) => import(pathToFileURL(path.join(path.resolve(opt.modules), '@modelcontextprotocol', pkg, file)).href);
  let client;
  if (opt.era === 'legacy') {
    const { Client } = await mod('sdk', 'dist/esm/client/index.js');
    client = new Client(clientInfo, { capabilities: {} });
  } else {
    const { Client } = await mod('client', 'dist/index.mjs');
    client = new Client(clientInfo, { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } });
  }
  await client.connect(new LineTransport());
  if (opt.era === 'modern' && client.getNegotiatedProtocolVersion() !== MODERN)
    throw new Error(`negotiated ${client.getNegotiatedProtocolVersion()}`);
  return async () => {
    const r = await client.callTool({ name: opt.tool, arguments: { message: 'bench' } });
    if (r.isError) throw new Error(`the call failed: ${JSON.stringify(r)}`);
    return r;
  };
}

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// n calls, k at a time: their latencies (µs, sorted) and the wall time (s).
async function run(call, n, k) {
  const lat = [];
  let started = 0;
  const worker = async () => {
    while (started < n) {
      started++;
      const a = process.hrtime.bigint();
      await call();
      lat.push(Number(process.hrtime.bigint() - a) / 1000);
    }
  };
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(k, n) }, worker));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((x, y) => x - y);
  return { lat, wall };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const r1 = (x) => Math.round(x * 10) / 10;
let pass = true;
try {
  const call = await (opt.impl === 'raw' ? rawClient() : sdkClient());
  await run(call, Math.max(1, opt.warmup), opt.inflight);
  emit({ op: 'bench', label: 'warmup', pass: true, n: Math.max(1, opt.warmup) });
  await sleep(opt.pauseMs);
  const { lat, wall } = await run(call, opt.n, opt.inflight);
  emit({ op: 'bench', label: 'timed', pass: true, era: opt.era, impl: opt.impl, tool: opt.tool, n: opt.n,
    inflight: opt.inflight, p50_us: r1(percentile(lat, 50)), p90_us: r1(percentile(lat, 90)),
    p99_us: r1(percentile(lat, 99)), max_us: r1(lat[lat.length - 1]), calls_per_s: r1(opt.n / wall),
    wall_s: Math.round(wall * 1000) / 1000 });
  await sleep(opt.pauseMs);
} catch (e) {
  pass = false;
  emit({ op: 'bench', label: 'failed', pass: false, why: String(e?.stack ?? e) });
}
emit({ op: 'end', pass });
process.exit(pass ? 0 : 1);
