#!/usr/bin/node
// A real MCP 2026-07-28 ("modern") client (@modelcontextprotocol/client
// 2.4.0, the v2 SDK) for glove run's in-sandbox endpoints: it reaches Glove
// at $GLOVE_MCP_URL (StreamableHTTPClientTransport) or by spawning
// $GLOVE_MCP_COMMAND (StdioClientTransport), negotiating the era itself.
//
//   node mcp-modern-client.mjs --modules DIR --out FILE STEP...
//
// Steps (each prints one JSON line to FILE; the last line is
// {"step":"end","pass":...}; exit 0 when every step passed, else 1):
//   modern:T,MODE   connect through T (http | command) with version
//                   negotiation MODE (auto: server/discover, then fallback
//                   if legacy; pin: 2026-07-28 or fail): the era is modern at
//                   2026-07-28, discover names Glove, tools/list offers
//                   ev.echo, ev.echo answers, ev.get-sum (not allowed) is
//                   refused with an error
//   legacy:T        the same client in legacy mode (initialize): ev.echo answers
//   changes:T,MODE,TOOL
//                   connect through T with negotiation MODE and a tools
//                   listChanged handler (2026-07-28: the SDK opens
//                   subscriptions/listen), call TOOL (one that adds a tool):
//                   the handler reports a longer list within 10 s
//   call:T,MODE,TOOL,MESSAGE,EXPECT
//                   connect through T with negotiation MODE (legacy | auto |
//                   pin; MODE+elicit also declares elicitation and accepts
//                   every one with {"ok":true}), call TOOL with {message:
//                   MESSAGE}: a result without isError whose text holds
//                   EXPECT; the era is recorded
//   bench:T,MODE,N  N sequential ev.echo calls through T with negotiation MODE
//                   (legacy | auto | pin) after 20 warm-up calls: p50/p99
//                   microseconds and calls per second (measures, asserts nothing)
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const argv = process.argv.slice(2);
let modules = null, outPath = null;
while (argv.length && argv[0].startsWith('--')) {
  const o = argv.shift();
  if (o === '--modules') modules = argv.shift();
  else if (o === '--out') outPath = argv.shift();
  else { process.stderr.write(`unknown option ${o}\n`); process.exit(2); }
}
const pkg = (sub) => import(pathToFileURL(path.join(path.resolve(modules), '@modelcontextprotocol/client/dist', sub)).href);
const { Client, StreamableHTTPClientTransport } = await pkg('index.mjs');
const { StdioClientTransport } = await pkg('stdio.mjs');

const outFd = outPath ? fs.openSync(outPath, 'a') : 2;
let allPass = true;
const emit = (rec) => { if (!rec.pass) allPass = false; fs.writeSync(outFd, JSON.stringify(rec) + '\n'); };

async function connect(kind, mode, elicit = false, listChanged = undefined) {
  const versionNegotiation = mode === 'pin' ? { mode: { pin: '2026-07-28' } } : { mode };
  const client = new Client({ name: `modern-${kind}-${mode}`, version: '1.0.0' },
    { capabilities: elicit ? { elicitation: { form: {} } } : {}, versionNegotiation, listChanged });
  // Every elicitation is accepted with {"ok": true} (a server's request in
  // the legacy era, an input request of an input_required result in 2026).
  if (elicit) client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: true } }));
  let transport;
  if (kind === 'http') transport = new StreamableHTTPClientTransport(new URL(process.env.GLOVE_MCP_URL));
  else if (kind === 'command') transport = new StdioClientTransport({ command: process.env.GLOVE_MCP_COMMAND, args: [], env: {}, stderr: 'inherit' });
  else throw new Error(`unknown transport ${kind}`);
  await client.connect(transport);
  return client;
}

const text = (res) => (res.content || []).map((c) => c.text || '').join('');

async function step(label, fn) {
  try {
    const extra = await fn();
    emit({ step: label, pass: true, ...extra });
  } catch (e) {
    emit({ step: label, pass: false, error: String(e && e.stack || e) });
  }
}

for (const s of argv) {
  const [op, rest = ''] = s.split(':');
  const args = rest.split(',');
  if (op === 'modern') {
    await step(s, async () => {
      const c = await connect(args[0], args[1]);
      const era = c.getProtocolEra(), version = c.getNegotiatedProtocolVersion();
      if (era !== 'modern' || version !== '2026-07-28') throw new Error(`era ${era} version ${version}`);
      const disc = c.getDiscoverResult() || await c.discover();
      if (!disc || !(disc.supportedVersions || []).includes('2026-07-28')) throw new Error(`discover: ${JSON.stringify(disc)}`);
      const tools = (await c.listTools()).tools.map((t) => t.name);
      if (!tools.includes('ev.echo')) throw new Error(`tools/list: ${JSON.stringify(tools)}`);
      const res = await c.callTool({ name: 'ev.echo', arguments: { message: `modern-${s}` } });
      if (!text(res).includes(`modern-${s}`) || res.isError) throw new Error(`echo: ${JSON.stringify(res)}`);
      let refused = null;
      try {
        const r = await c.callTool({ name: 'ev.get-sum', arguments: { a: 1, b: 2 } });
        if (r.isError) refused = { isError: true, text: text(r) };
        else throw new Error(`ev.get-sum was answered: ${JSON.stringify(r)}`);
      } catch (e) {
        if (String(e.message).startsWith('ev.get-sum was answered')) throw e;
        refused = { code: e.code, message: String(e.message) };
      }
      await c.close();
      return { era, version, tools: tools.length, refused };
    });
  } else if (op === 'bench') {
    await step(s, async () => {
      const n = Number(args[2]);
      const c = await connect(args[0], args[1]);
      const echo = () => c.callTool({ name: 'ev.echo', arguments: { message: 'b' } });
      for (let i = 0; i < 20; i++) await echo();
      const us = [];
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await echo();
        us.push((performance.now() - t) * 1000);
      }
      const total = performance.now() - t0;
      const era = c.getProtocolEra();
      await c.close();
      us.sort((a, b) => a - b);
      return { era, p50_us: Math.round(us[Math.floor(n * 0.5)]), p99_us: Math.round(us[Math.floor(n * 0.99)]),
               calls_per_s: Math.round(n / (total / 1000)) };
    });
  } else if (op === 'call') {
    await step(s, async () => {
      const [t, modeSpec, tool, message, expect] = args;
      const [mode, extra] = modeSpec.split('+');
      const c = await connect(t, mode, extra === 'elicit');
      const res = await c.callTool({ name: tool, arguments: { message } });
      const era = c.getProtocolEra(), version = c.getNegotiatedProtocolVersion();
      await c.close();
      if (res.isError || !text(res).includes(expect)) throw new Error(`${tool}: ${JSON.stringify(res)}`);
      return { era, version, tool };
    });
  } else if (op === 'changes') {
    await step(s, async () => {
      const [t, mode, tool] = args;
      let changed = null;
      const c = await connect(t, mode, false, { tools: { debounceMs: 0, onChanged: (err, tools) => { if (!err) changed = tools; } } });
      const before = (await c.listTools()).tools.length;
      await c.callTool({ name: tool, arguments: {} });
      const until = Date.now() + 10000;
      while (!(changed && changed.length > before) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      const era = c.getProtocolEra();
      await c.close();
      if (!changed || changed.length <= before) throw new Error(`no tools list change reported (before ${before}, after ${changed?.length})`);
      return { era, before, after: changed.length };
    });
  } else if (op === 'legacy') {
    await step(s, async () => {
      const c = await connect(args[0], 'legacy');
      const res = await c.callTool({ name: 'ev.echo', arguments: { message: 'legacy' } });
      const era = c.getProtocolEra();
      await c.close();
      if (!text(res).includes('legacy')) throw new Error(`echo: ${JSON.stringify(res)}`);
      return { era, version: c.getNegotiatedProtocolVersion() };
    });
  } else {
    emit({ step: s, pass: false, why: 'unknown step' });
  }
}
emit({ step: 'end', pass: allPass });
process.exit(allPass ? 0 : 1);
