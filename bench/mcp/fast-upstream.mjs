#!/usr/bin/node
// A minimal MCP server over stdio for the glove run benchmark: one tool,
// "echo", answered at once with hand-written JSON and no validation, so the
// upstream's own cost stays small next to what Glove adds. Not an SDK server
// on purpose; bench/mcp/mcp_bench.py also measures real SDK servers.
//
//   fast-upstream.mjs [--era legacy|modern]
//
// legacy (the default): initialize, revisions up to 2025-11-25.
// modern: MCP 2026-07-28 only, as a server of that revision alone would
//   be: initialize is answered with the unsupported-version error (-32022,
//   naming 2026-07-28), server/discover is served, every request must carry
//   params._meta "io.modelcontextprotocol/protocolVersion" "2026-07-28" and
//   "io.modelcontextprotocol/clientCapabilities" (else -32022 or -32602),
//   and every result has "resultType":"complete" (tools/list also ttlMs and
//   cacheScope).
import readline from 'node:readline';

const MODERN = '2026-07-28';
const args = process.argv.slice(2);
let era = 'legacy';
if (args.length === 2 && args[0] === '--era' && ['legacy', 'modern'].includes(args[1])) era = args[1];
else if (args.length !== 0) {
  process.stderr.write('usage: fast-upstream.mjs [--era legacy|modern]\n');
  process.exit(2);
}
const modern = era === 'modern';

const out = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const tools = [{
  name: 'echo',
  description: 'Echoes back the input string',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
}];
const versions = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const serverInfo = { name: 'bench-fast-upstream', version: '1.0.0' };
const error = (id, code, message, data) => out({ jsonrpc: '2.0', id, error: data ? { code, message, data } : { code, message } });

// The 2026-07-28 checks of a request: true when it was answered here.
function refusedModern(m) {
  const meta = m.params?._meta;
  const v = meta?.['io.modelcontextprotocol/protocolVersion'];
  if (v !== undefined && v !== MODERN) {
    error(m.id, -32022, 'Unsupported protocol version', { supported: [MODERN], requested: String(v) });
    return true;
  }
  if (v === undefined || typeof meta['io.modelcontextprotocol/clientCapabilities'] !== 'object') {
    error(m.id, -32602, 'params._meta needs io.modelcontextprotocol/protocolVersion and clientCapabilities');
    return true;
  }
  return false;
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    error(null, -32700, 'parse error');
    return;
  }
  if (m.id === undefined) return; // notifications need no answer
  if (modern) {
    if (m.method === 'initialize') {
      error(m.id, -32022, 'Unsupported protocol version', { supported: [MODERN], requested: String(m.params?.protocolVersion) });
      return;
    }
    if (refusedModern(m)) return;
  }
  switch (m.method) {
    case 'initialize': {
      const asked = m.params?.protocolVersion;
      out({ jsonrpc: '2.0', id: m.id, result: {
        protocolVersion: versions.includes(asked) ? asked : versions[0],
        capabilities: { tools: {} },
        serverInfo,
      } });
      break;
    }
    case 'server/discover':
      if (!modern) {
        error(m.id, -32601, 'method not found');
        break;
      }
      out({ jsonrpc: '2.0', id: m.id, result: {
        resultType: 'complete', supportedVersions: [MODERN], capabilities: { tools: {} },
        _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo }, ttlMs: 0, cacheScope: 'public',
      } });
      break;
    case 'tools/list':
      out({ jsonrpc: '2.0', id: m.id, result: modern ? { resultType: 'complete', tools, ttlMs: 0, cacheScope: 'public' } : { tools } });
      break;
    case 'tools/call':
      if (m.params?.name === 'echo') {
        const content = [{ type: 'text', text: `Echo: ${m.params.arguments?.message}` }];
        out({ jsonrpc: '2.0', id: m.id, result: modern ? { resultType: 'complete', content } : { content } });
      } else {
        error(m.id, -32602, 'unknown tool');
      }
      break;
    case 'ping':
      if (!modern) {
        out({ jsonrpc: '2.0', id: m.id, result: {} });
        break;
      }
    // falls through: 2026-07-28 has no ping
    default:
      error(m.id, -32601, 'method not found');
  }
});
