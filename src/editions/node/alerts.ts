// How the Node edition sends alerts: one HTTP(S) POST with node:http, no redirects
// followed, an overall timeout, and the webhook SSRF guard applied where it cannot be
// fooled: the lookup that picks the address the socket connects to refuses the host
// when any address it resolves to is non-public (src/alerts/addresses.ts). Checking
// before fetch() and letting fetch resolve again would let a DNS answer that changes
// in between (rebinding) through.
import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { forbiddenAddressReason, forbiddenHostReason } from '../../alerts/addresses.js';
import { ForbiddenAddressError, type AlertRuntime, type HttpPost } from '../../alerts/transport.js';
import { MAX_ALERT_RESPONSE } from '../../limits.js';
import type { Config } from '../../config.js';
import { nodeMailSender } from './mail.js';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** dns.lookup that fails for a host with any non-public address. */
function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0)
      return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
    for (const a of addresses) {
      const why = forbiddenAddressReason(a.address);
      if (why)
        return callback(new ForbiddenAddressError(`the webhook host ${hostname} resolves to ${a.address}, ${why}`), []);
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  });
}

export const nodeHttpPost: HttpPost = (request) =>
  new Promise((resolve, reject) => {
    const url = new URL(request.url);
    if (request.guardAddresses) {
      // Literal addresses never reach the lookup.
      const reason = forbiddenHostReason(url.hostname);
      if (reason) return reject(new ForbiddenAddressError(`the webhook host ${url.hostname} is ${reason}`));
    }
    const client = url.protocol === 'https:' ? https : http;
    const body = Buffer.from(request.body, 'utf8');
    const req = client.request(url, {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(body.length) },
      // A connection of its own, closed after the answer: nothing lingers between alerts.
      agent: false,
      lookup: request.guardAddresses ? (guardedLookup as unknown as typeof dns.lookup) : undefined,
    });
    const timer = setTimeout(() => {
      req.destroy(Object.assign(new Error(`no answer within ${request.timeoutMs / 1000} s`), { name: 'TimeoutError' }));
    }, request.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size < MAX_ALERT_RESPONSE) chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).subarray(0, MAX_ALERT_RESPONSE).toString('utf8'),
        });
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
    req.end(body);
  });

export const nodeAlertRuntime: AlertRuntime = {
  post: nodeHttpPost,
  mailUnavailable: 'email channels need the server settings SMTP_URL and SMTP_FROM, which are not set',
  async resolveHost(hostname) {
    const addresses = await dns.promises.lookup(hostname, { all: true, verbatim: true });
    return addresses.map((a) => a.address);
  },
};

/** The Node runtime for these settings: with email when SMTP_URL and SMTP_FROM are set. */
export function nodeAlertRuntimeFor(config: Pick<Config, 'smtp'>): AlertRuntime {
  if (!config.smtp) return nodeAlertRuntime;
  const { mailUnavailable: _none, ...rest } = nodeAlertRuntime;
  return { ...rest, mail: nodeMailSender(config.smtp) };
}
