#!/usr/bin/node
// A small "coding agent" in node: works on the files of its workspace (the
// working directory) the way an agent CLI does, and reports what it saw.
//   notes/*.md        read; word counts written to report.json
//   draft.txt         renamed to final.txt, with a line appended
//   obsolete.txt      deleted
//   build/            created, with build/out.txt
//   a temp file       written and read back under os.tmpdir()
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const notes = fs.readdirSync('notes').filter((f) => f.endsWith('.md')).sort();
const counts = {};
for (const f of notes) {
  const text = fs.readFileSync(path.join('notes', f), 'utf8');
  counts[f] = text.split(/\s+/).filter(Boolean).length;
}
fs.writeFileSync('report.json', JSON.stringify({
  counts,
  cwd: process.cwd(),
  home: os.homedir(),
  tmpdir: os.tmpdir(),
  uid: process.getuid(),
  sandboxed: process.env.GLOVE_SANDBOXED || null,
}, null, 2) + '\n');

fs.renameSync('draft.txt', 'final.txt');
fs.appendFileSync('final.txt', 'reviewed by node agent\n');
fs.unlinkSync('obsolete.txt');
fs.mkdirSync('build', { recursive: true });
fs.writeFileSync(path.join('build', 'out.txt'), notes.join(',') + '\n');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-'));
fs.writeFileSync(path.join(tmp, 'scratch'), 'scratch');
const back = fs.readFileSync(path.join(tmp, 'scratch'), 'utf8');
fs.rmSync(tmp, { recursive: true });

// A child process, as agents run tools.
const { execFileSync } = require('child_process');
const wc = execFileSync('/usr/bin/wc', ['-l', 'final.txt']).toString().trim();

console.log(`node agent done: ${notes.length} notes, scratch=${back}, ${wc}`);
