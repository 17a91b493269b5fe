// No-op baseline server for the benchmark: a plain node:http server that reads the
// whole request body and answers 200 with a small JSON body. The same generator is
// run against it and against faultline; the ratio of the two is the headline number.
// Prints `listening <port>` on stdout once ready.
import http from 'node:http';

const server = http.createServer((req, res) => {
  let bytes = 0;
  req.on('data', (chunk) => {
    bytes += chunk.length;
  });
  req.on('end', () => {
    const body = `{"received":${bytes}}`;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
