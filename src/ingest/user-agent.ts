// Browser, OS and device contexts derived from the User-Agent request header of an
// event, as Sentry does for events that lack them (browser SDKs send the header in
// `request.headers` but no such contexts). Parsing is ua-parser-js 1.x (MIT; 2.x is
// AGPL). Sentry's rules: each context is added only when the event has none of that
// kind; the OS goes to `os` for JavaScript events and to `client_os` for others (a
// server SDK's `os` is the server's, the header's is its client's); a device is added
// only when the header names one (desktop browsers name none).
import UAParser from 'ua-parser-js';
import { MAX_USER_AGENT } from '../limits.js';

type Obj = Record<string, unknown>;

export interface UserAgentContexts {
  browser?: Obj;
  os?: Obj;
  device?: Obj;
}

/** Parsed user agents by header value: the same few values arrive again and again. */
const parsed = new Map<string, UserAgentContexts>();
const MAX_REMEMBERED = 1000;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The User-Agent of `request.headers` (an object or a list of [name, value] pairs), any case. */
export function userAgentOf(request: unknown): string | null {
  if (!isObject(request)) return null;
  const headers = request.headers;
  if (Array.isArray(headers)) {
    for (const pair of headers) {
      if (
        Array.isArray(pair) &&
        typeof pair[0] === 'string' &&
        pair[0].toLowerCase() === 'user-agent' &&
        typeof pair[1] === 'string'
      )
        return pair[1];
    }
    return null;
  }
  if (!isObject(headers)) return null;
  for (const key of Object.keys(headers)) {
    if (key.length === 10 && key.toLowerCase() === 'user-agent') {
      const v = headers[key];
      return typeof v === 'string' ? v : null;
    }
  }
  return null;
}

/** The contexts a User-Agent value gives (each only when the header says enough). */
export function contextsFromUserAgent(ua: string): UserAgentContexts {
  const known = parsed.get(ua);
  if (known) return known;
  const out: UserAgentContexts = {};
  if (ua.length <= MAX_USER_AGENT && ua.trim() !== '') {
    const result = new UAParser(ua).getResult();
    if (result.browser.name)
      out.browser = {
        type: 'browser',
        name: result.browser.name,
        ...(result.browser.version ? { version: result.browser.version } : {}),
      };
    if (result.os.name)
      out.os = { type: 'os', name: result.os.name, ...(result.os.version ? { version: result.os.version } : {}) };
    const model = result.device.model;
    if (model) {
      out.device = {
        type: 'device',
        family: model,
        model,
        ...(result.device.vendor ? { brand: result.device.vendor } : {}),
        ...(result.device.type ? { device_type: result.device.type } : {}),
      };
    }
  }
  if (parsed.size >= MAX_REMEMBERED) parsed.clear();
  parsed.set(ua, out);
  return out;
}

function hasContext(contexts: Obj, key: string, kind: string): boolean {
  if (isObject(contexts[key])) return true;
  for (const k of Object.keys(contexts)) {
    const c = contexts[k];
    if (isObject(c) && c.type === kind) return true;
  }
  return false;
}

/**
 * `contexts` with the browser, OS and device contexts the event's User-Agent gives and
 * it lacks; the same object when nothing is added.
 */
export function withUserAgentContexts(contexts: Obj, request: unknown, platform: string): Obj {
  const ua = userAgentOf(request);
  if (ua === null) return contexts;
  const derived = contextsFromUserAgent(ua);
  let out: Obj | null = null;
  const add = (key: string, value: Obj | undefined, kind: string) => {
    if (!value || hasContext(out ?? contexts, key, kind)) return;
    out ??= { ...contexts };
    out[key] = value;
  };
  add('browser', derived.browser, 'browser');
  add('device', derived.device, 'device');
  if (platform === 'javascript') add('os', derived.os, 'os');
  else if (derived.os && !isObject(contexts.client_os)) {
    out ??= { ...contexts };
    out.client_os = derived.os;
  }
  return out ?? contexts;
}
