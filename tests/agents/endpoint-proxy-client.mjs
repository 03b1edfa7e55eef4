#!/usr/bin/node
// A real MCP client (the SDK's Client and StreamableHTTPClientTransport)
// reaching glove run's MCP HTTP endpoint ($GLOVE_MCP_URL) with egress on,
// through undici's proxy dispatchers as Node agents use them
// (docs/egress.md, "The MCP endpoint through the proxy").
//
//   node endpoint-proxy-client.mjs --modules DIR --out FILE STEP...
//
// Steps (each: initialize, tools/list has ev.echo, tools/call ev.echo
// returns its text, close; one JSON line to FILE; the last line is
// {"step":"end","pass":...}; exit 0 when every step passed):
//   tunnel        undici ProxyAgent on $HTTP_PROXY (CONNECT, its default)
//   absolute      ProxyAgent with proxyTunnel: false (absolute-form requests)
//   localhost     ProxyAgent, the URL spelled http://localhost:PORT/mcp
//   env           EnvHttpProxyAgent as the environment says (NO_PROXY names
//                 the endpoint: direct)
//   env-proxied   EnvHttpProxyAgent with noProxy '' (through the proxy)
//   no-proxy-env  NO_PROXY and no_proxy are "127.0.0.1:PORT,localhost:PORT"
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
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
const undici = createRequire(path.join(path.resolve(modules), 'package.json'))('undici');

const outFd = outPath ? fs.openSync(outPath, 'a') : 2;
let allPass = true;
const emit = (rec) => { if (!rec.pass) allPass = false; fs.writeSync(outFd, JSON.stringify(rec) + '\n'); };

const url = new URL(process.env.GLOVE_MCP_URL);
const port = url.port;

async function session(step, target, dispatcher) {
  const client = new Client({ name: `proxy-${step}`, version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(target, {
    fetch: (u, init) => undici.fetch(u, { ...init, dispatcher }),
  });
  await client.connect(transport);
  const tools = await client.listTools();
  const listed = tools.tools.some((t) => t.name === 'ev.echo');
  const r = await client.callTool({ name: 'ev.echo', arguments: { message: `via-${step}` } });
  const text = (r.content || []).map((c) => c.text || '').join('');
  await transport.terminateSession().catch(() => {});
  await client.close();
  await dispatcher.close();
  return { listed, echoed: text.includes(`via-${step}`) };
}

for (const step of argv) {
  try {
    if (step === 'no-proxy-env') {
      const want = `127.0.0.1:${port},localhost:${port}`;
      emit({ step, pass: process.env.NO_PROXY === want && process.env.no_proxy === want,
             NO_PROXY: process.env.NO_PROXY, no_proxy: process.env.no_proxy });
      continue;
    }
    let target = url, dispatcher;
    const proxy = process.env.HTTP_PROXY;
    if (step === 'tunnel') dispatcher = new undici.ProxyAgent({ uri: proxy });
    else if (step === 'absolute') dispatcher = new undici.ProxyAgent({ uri: proxy, proxyTunnel: false });
    else if (step === 'localhost') {
      target = new URL(`http://localhost:${port}/mcp`);
      dispatcher = new undici.ProxyAgent({ uri: proxy });
    } else if (step === 'env') dispatcher = new undici.EnvHttpProxyAgent();
    else if (step === 'env-proxied') dispatcher = new undici.EnvHttpProxyAgent({ noProxy: '' });
    else throw new Error(`unknown step ${step}`);
    const got = await session(step, target, dispatcher);
    emit({ step, pass: got.listed && got.echoed, ...got });
  } catch (e) {
    emit({ step, pass: false, error: String(e && e.stack || e) });
  }
}
emit({ step: 'end', pass: allPass });
process.exit(allPass ? 0 : 1);
