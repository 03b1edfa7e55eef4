#!/usr/bin/node
// A minimal MCP server over stdio for the glove run benchmark: one tool,
// "echo", answered at once with hand-written JSON and no validation, so the
// upstream's own cost stays small next to what Glove adds. Not an SDK server
// on purpose; bench/mcp/mcp_bench.py also measures the real server-everything.
import readline from 'node:readline';

const out = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const tools = [{
  name: 'echo',
  description: 'Echoes back the input string',
  inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
}];
const versions = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    out({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    return;
  }
  if (m.id === undefined) return; // notifications need no answer
  switch (m.method) {
    case 'initialize': {
      const asked = m.params?.protocolVersion;
      out({ jsonrpc: '2.0', id: m.id, result: {
        protocolVersion: versions.includes(asked) ? asked : versions[0],
        capabilities: { tools: {} },
        serverInfo: { name: 'bench-fast-upstream', version: '1.0.0' },
      } });
      break;
    }
    case 'tools/list':
      out({ jsonrpc: '2.0', id: m.id, result: { tools } });
      break;
    case 'tools/call':
      if (m.params?.name === 'echo') {
        out({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: `Echo: ${m.params.arguments?.message}` }] } });
      } else {
        out({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'unknown tool' } });
      }
      break;
    case 'ping':
      out({ jsonrpc: '2.0', id: m.id, result: {} });
      break;
    default:
      out({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found' } });
  }
});
