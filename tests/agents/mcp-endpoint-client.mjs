#!/usr/bin/node
// A real MCP client (the SDK's Client with its StreamableHTTPClientTransport
// or StdioClientTransport) for glove run's in-sandbox endpoints
// (--mcp-endpoint command|http): it reaches Glove at $GLOVE_MCP_URL or by
// spawning $GLOVE_MCP_COMMAND, as real agent CLIs do.
//
//   node mcp-endpoint-client.mjs --modules DIR --out FILE STEP...
//
// Steps (each prints one JSON line to FILE; the last line is
// {"step":"end","pass":...}; exit 0 when every step passed, else 1):
//   list:T          tools/list through transport T (http | command): ev.echo is there
//   echo:T          tools/call ev.echo through T, the text comes back
//   progress:T      tools/call ev.trigger-long-running-operation with a
//                   progress callback: the steps' progress arrives (the SDK may
//                   drop the last when it shares a read with the result), then the result
//   two:T1,T2       two sessions at once (their SDK request ids are the same:
//                   each starts at 0), 8 echo calls each in parallel: every
//                   answer is the session's own
//   many:T,N        N sessions at once, one echo each
//   serial:T,N      N sessions one after the other (the command spawned N times)
//   stdin           reads one line from the agent's own stdin, records it
//   bench:T,N       N sequential ev.echo calls through T after 20 warm-up
//                   calls: p50/p99 microseconds and calls per second
//                   (measures, asserts nothing)
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
const sdk = (sub) => import(pathToFileURL(path.join(path.resolve(modules), '@modelcontextprotocol/sdk/dist/esm', sub)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { StdioClientTransport } = await sdk('client/stdio.js');

const outFd = outPath ? fs.openSync(outPath, 'a') : 2;
let allPass = true;
const emit = (rec) => { if (!rec.pass) allPass = false; fs.writeSync(outFd, JSON.stringify(rec) + '\n'); };

async function connect(kind, name) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  let transport;
  if (kind === 'http') {
    transport = new StreamableHTTPClientTransport(new URL(process.env.GLOVE_MCP_URL));
  } else if (kind === 'command') {
    // Spawned with an environment of its own: the command needs none of the agent's.
    transport = new StdioClientTransport({ command: process.env.GLOVE_MCP_COMMAND, args: [], env: {}, stderr: 'inherit' });
  } else {
    throw new Error(`unknown transport ${kind}`);
  }
  await client.connect(transport);
  return { client, transport };
}

const text = (res) => (res.content || []).map((c) => c.text || '').join('');

async function echo(c, msg) {
  const res = await c.client.callTool({ name: 'ev.echo', arguments: { message: msg } });
  return text(res);
}

async function step(name, fn) {
  try {
    const extra = await fn();
    emit({ step: name, pass: true, ...(extra || {}) });
  } catch (e) {
    emit({ step: name, pass: false, why: String(e && e.stack ? e.stack : e) });
  }
}

for (const s of argv) {
  const [op, rest = ''] = s.split(':');
  const args = rest.split(',');
  if (op === 'list') {
    await step(s, async () => {
      const c = await connect(args[0], 'lister');
      const { tools } = await c.client.listTools();
      const names = tools.map((t) => t.name);
      await c.client.close();
      if (!names.includes('ev.echo')) throw new Error(`ev.echo missing from ${names}`);
      return { tools: names.length, session: c.transport.sessionId ?? null };
    });
  } else if (op === 'echo') {
    await step(s, async () => {
      const c = await connect(args[0], 'echoer');
      const t = await echo(c, 'hello through ' + args[0]);
      await c.client.close();
      if (!t.includes('hello through ' + args[0])) throw new Error(`unexpected text ${t}`);
      return { text: t };
    });
  } else if (op === 'progress') {
    await step(s, async () => {
      const c = await connect(args[0], 'progress');
      const seen = [];
      const res = await c.client.callTool({ name: 'ev.trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } },
        undefined, { onprogress: (p) => seen.push(p.progress) });
      await c.client.close();
      // The SDK runs notification handlers a microtask late and drops the
      // progress handler when the response comes: the last progress and the
      // response sent back to back (same read) can lose that one. Two of three
      // prove the routing and the token's restoration.
      if (seen.length < 2 || seen[0] !== 1 || seen[1] !== 2)
        throw new Error(`expected the progress 1, 2[, 3], got ${JSON.stringify(seen)}`);
      if (!text(res).toLowerCase().includes('completed')) throw new Error(`unexpected result ${text(res)}`);
      return { progress: seen };
    });
  } else if (op === 'two') {
    await step(s, async () => {
      const a = await connect(args[0], 'alpha');
      const b = await connect(args[1] || args[0], 'beta');
      const calls = [];
      for (let i = 0; i < 8; i++) {
        calls.push(echo(a, `alpha-${i}`).then((t) => ['alpha', i, t]));
        calls.push(echo(b, `beta-${i}`).then((t) => ['beta', i, t]));
      }
      const got = await Promise.all(calls);
      await a.client.close();
      await b.client.close();
      for (const [who, i, t] of got)
        if (!t.includes(`${who}-${i}`)) throw new Error(`${who} call ${i} got ${t}`);
      return { answers: got.length };
    });
  } else if (op === 'many' || op === 'serial') {
    await step(s, async () => {
      const n = Number(args[1]);
      const one = async (i) => {
        const c = await connect(args[0], `c${i}`);
        const t = await echo(c, `session-${i}`);
        await c.client.close();
        if (!t.includes(`session-${i}`)) throw new Error(`session ${i} got ${t}`);
      };
      if (op === 'many') await Promise.all([...Array(n).keys()].map(one));
      else for (let i = 0; i < n; i++) await one(i);
      return { sessions: n };
    });
  } else if (op === 'bench') {
    await step(s, async () => {
      const n = Number(args[1]);
      const c = await connect(args[0], 'bench');
      for (let i = 0; i < 20; i++) await echo(c, 'warm');
      const us = [];
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await echo(c, 'b');
        us.push((performance.now() - t) * 1000);
      }
      const total = performance.now() - t0;
      await c.client.close();
      us.sort((a, b) => a - b);
      return { p50_us: Math.round(us[Math.floor(n * 0.5)]), p99_us: Math.round(us[Math.floor(n * 0.99)]),
               calls_per_s: Math.round(n / (total / 1000)) };
    });
  } else if (op === 'stdin') {
    await step(s, async () => {
      const buf = Buffer.alloc(4096);
      let line = '';
      for (;;) {
        let n;
        try { n = fs.readSync(0, buf, 0, buf.length, null); } catch (e) { if (e.code === 'EAGAIN') continue; throw e; }
        if (n === 0) break;
        line += buf.subarray(0, n).toString();
        if (line.includes('\n')) break;
      }
      return { line: line.split('\n')[0] };
    });
  } else {
    emit({ step: s, pass: false, why: 'unknown step' });
  }
}
emit({ step: 'end', pass: allPass });
process.exit(allPass ? 0 : 1);
