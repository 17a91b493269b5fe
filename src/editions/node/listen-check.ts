// Whether the server could listen on a host and port, found out before `serve` opens and
// migrates the database: a port already taken or a HOST that is not an address of this
// machine fails at once, with nothing done to the database.
import net from 'node:net';

/** Listens on `host`:`port` and closes again; rejects with the listen error (EADDRINUSE, ENOTFOUND, …). */
export function checkListen(port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
