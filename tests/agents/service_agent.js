// service_agent.js: a Node agent that reaches a host service through Glove's
// local-service channel (docs/local-services.md), the way a real agent
// runtime would: with inherited-stream-v1 it adopts the descriptor named in
// GLOVE_LOCAL_SERVICE_FDS_V1 as a net.Socket (libuv classifies it with
// getsockopt(SO_TYPE) and getsockname, the two calls the filter allows);
// with the pathname transport it connects to GLOVE_LOCAL_SERVICE_DIR/ALIAS.
//
//   node service_agent.js ALIAS REQUEST...
//
// Sends each REQUEST as one 4-byte big-endian framed request, waits for its
// response and prints "response N TEXT"; prints "transport inherited FD" or
// "transport pathname" first, and "closed" when the stream ends early.
'use strict';
const net = require('net');

const [alias, ...requests] = process.argv.slice(2);

function frame(text) {
  const body = Buffer.from(text, 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

// Calls next(response) for every whole frame that arrives on sock.
function reader(sock, next) {
  let buf = Buffer.alloc(0);
  sock.on('data', (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 4) {
      const n = buf.readUInt32BE(0);
      if (buf.length < 4 + n) break;
      const body = buf.subarray(4, 4 + n).toString('utf8');
      buf = buf.subarray(4 + n);
      next(body);
    }
  });
}

function inherited(fd) {
  console.log(`transport inherited ${fd}`);
  const sock = new net.Socket({ fd, readable: true, writable: true });
  let i = 0;
  reader(sock, (body) => {
    console.log(`response ${i} ${body}`);
    i += 1;
    if (i < requests.length) sock.write(frame(requests[i]));
    else sock.destroy();
  });
  sock.on('end', () => { if (i < requests.length) console.log('closed'); });
  sock.on('error', (e) => console.log(`error ${e.code}`));
  if (requests.length) sock.write(frame(requests[0]));
  else sock.destroy();
}

function pathname(dir) {
  console.log('transport pathname');
  let i = 0;
  const one = () => {
    if (i >= requests.length) return;
    const sock = net.createConnection(`${dir}/${alias}`);
    sock.on('error', (e) => { console.log(`error ${e.code}`); });
    reader(sock, (body) => {
      console.log(`response ${i} ${body}`);
      i += 1;
      sock.destroy();
      one();
    });
    sock.on('connect', () => sock.write(frame(requests[i])));
  };
  one();
}

const fds = process.env.GLOVE_LOCAL_SERVICE_FDS_V1;
if (fds) inherited(JSON.parse(fds)[alias]);
else if (process.env.GLOVE_LOCAL_SERVICE_DIR) pathname(process.env.GLOVE_LOCAL_SERVICE_DIR);
else console.log('transport none');
