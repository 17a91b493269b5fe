// The service's public base address, for everything handed to clients that
// must point back at this server (DSNs, upload URLs): PUBLIC_URL when set (its
// path prefix kept), else the address the request came in on, honouring the
// X-Forwarded-Proto / X-Forwarded-Host headers a reverse proxy adds (those reach here
// only from a trusted proxy: src/http/forwarded.ts removes anyone else's).
import type { Context } from 'hono';
import type { Config } from '../config.js';

const HOST_PATTERN = /^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/;

function firstValue(header: string | undefined): string | undefined {
  const v = header?.split(',')[0]?.trim();
  return v ? v : undefined;
}

/** Base URL without a trailing slash, e.g. `https://errors.example.com/faultline`. */
export function publicBaseUrl(c: Context, config: Config): string {
  if (config.publicUrl) {
    const u = new URL(config.publicUrl);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, '')}`;
  }
  const url = new URL(c.req.url);
  const forwardedProto = firstValue(c.req.header('x-forwarded-proto'))?.toLowerCase();
  const protocol = forwardedProto === 'http' || forwardedProto === 'https' ? `${forwardedProto}:` : url.protocol;
  const forwardedHost = firstValue(c.req.header('x-forwarded-host'));
  const host = forwardedHost && HOST_PATTERN.test(forwardedHost) ? forwardedHost : url.host;
  return `${protocol}//${host}`;
}

/**
 * The path PUBLIC_URL puts before every route (`/faultline`), or '' at the root: a
 * reverse proxy that strips it hands this server paths without it, so whatever this
 * server writes for the browser to follow must put it back.
 */
export function publicBasePath(config: Pick<Config, 'publicUrl'>): string {
  return config.publicUrl ? new URL(config.publicUrl).pathname.replace(/\/+$/, '') : '';
}

/** `<scheme>://<key>@<host[:port]><path prefix>/<project id>` */
export function buildDsn(baseUrl: string, dsnKey: string, projectId: number): string {
  const u = new URL(baseUrl);
  return `${u.protocol}//${dsnKey}@${u.host}${u.pathname.replace(/\/+$/, '')}/${projectId}`;
}

/**
 * The URL a client on this machine reaches a server listening on `host`:`port` at: a
 * wildcard address (0.0.0.0, ::) becomes 127.0.0.1, an IPv6 address is bracketed.
 */
export function localBaseUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${shown.includes(':') ? `[${shown}]` : shown}:${port}`;
}
