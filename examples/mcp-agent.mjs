#!/usr/bin/node
// A stand-in for an MCP agent, for the README's glove run quickstart.
//
//   node mcp-agent.mjs FILE
//
// Speaks MCP (newline-delimited JSON-RPC) over its stdin/stdout to Glove,
// which is its MCP server: initializes, lists the tools Glove offers, reads
// FILE with fs.read_text_file, and tries fs.write_file, which the policy of
// the quickstart does not allow. It reports on stderr (stdout is the MCP
// channel) and exits 0 when the read worked and the write was refused.
import readline from 'node:readline';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node mcp-agent.mjs FILE\n');
  process.exit(2);
}
const pending = new Map();
let next = 1;
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  const p = pending.get(msg.id);
  if (p) {
    pending.delete(msg.id);
    p(msg);
  }
});
function request(method, params) {
  const id = next++;
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  return new Promise((resolve) => pending.set(id, resolve));
}
const say = (s) => process.stderr.write(s + '\n');
const timer = setTimeout(() => {
  say('mcp-agent: no answer from Glove in 20 s');
  process.exit(1);
}, 20000);

const init = await request('initialize', {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'mcp-agent', version: '1' },
});
if (!init.result) {
  say('mcp-agent: initialize failed: ' + JSON.stringify(init.error));
  process.exit(1);
}
process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
const list = await request('tools/list', {});
say('tools: ' + (list.result?.tools ?? []).map((t) => t.name).join(' '));
const read = await request('tools/call', { name: 'fs.read_text_file', arguments: { path: file } });
const text = read.result?.content?.[0]?.text;
say('fs.read_text_file ' + file + ': ' + (read.result && !read.result.isError ? JSON.stringify(text) : 'failed'));
const write = await request('tools/call', { name: 'fs.write_file', arguments: { path: file, content: 'x' } });
const reason = write.error?.data?.reason;
say('fs.write_file: ' + (write.error ? 'refused (' + reason + ')' : 'allowed'));
clearTimeout(timer);
rl.close();
process.exit(read.result && !read.result.isError && write.error ? 0 : 1);
