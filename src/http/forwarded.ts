// Which forwarding headers are believed. X-Forwarded-Host and X-Forwarded-Proto decide
// the public address when PUBLIC_URL is unset (DSNs, upload URLs, the dashboard's
// origin check and its cookies' Secure flag), and X-Forwarded-For the client address
// that rate limits and the sign-in throttle count by. Only a peer in TRUSTED_PROXIES
// (loopback unless set) may send them: from anyone else Host and Proto are removed
// before any route sees the request, and the peer's own address is the client's. The
// peer is the socket's address on the server edition, CF-Connecting-IP on the Worker.
import type { MiddlewareHandler } from 'hono';
import type { AppDeps } from '../context.js';
import { inAddressRanges } from '../ip-ranges.js';

const FORWARDED_ORIGIN = ['x-forwarded-host', 'x-forwarded-proto'];

type ForwardingDeps = Pick<AppDeps, 'config' | 'clientAddress'>;

/** The peer's address as the edition reports it, an IPv4-mapped IPv6 one as plain IPv4. */
function peerAddress(deps: ForwardingDeps, request: Request, env: unknown): string | undefined {
  const peer = deps.clientAddress?.(request, env);
  return peer?.startsWith('::ffff:') && peer.includes('.') ? peer.slice(7) : peer;
}

/** Removes X-Forwarded-Host and -Proto from requests whose peer is not a trusted proxy. */
export function ignoreUntrustedForwarding(deps: ForwardingDeps): MiddlewareHandler {
  return async (c, next) => {
    const raw = c.req.raw;
    if (
      FORWARDED_ORIGIN.some((name) => raw.headers.has(name)) &&
      !inAddressRanges(peerAddress(deps, raw, c.env), deps.config.trustedProxies)
    ) {
      const headers = new Headers(raw.headers);
      for (const name of FORWARDED_ORIGIN) headers.delete(name);
      c.req.raw = new Request(raw, { headers, duplex: 'half' } as RequestInit);
    }
    return next();
  };
}

/**
 * The client's address: the peer's, or behind trusted proxies the nearest address in
 * X-Forwarded-For that is not one of them (the ones further left were written by the
 * client itself). `unknown` when the edition cannot tell.
 */
export function clientAddressOf(deps: ForwardingDeps, request: Request, env: unknown): string {
  const peer = peerAddress(deps, request, env);
  if (!peer) return 'unknown';
  const ranges = deps.config.trustedProxies;
  if (!inAddressRanges(peer, ranges)) return peer;
  const hops = (request.headers.get('x-forwarded-for') ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  for (let i = hops.length - 1; i >= 0; i--) if (!inAddressRanges(hops[i], ranges)) return hops[i];
  return hops[0] ?? peer;
}
