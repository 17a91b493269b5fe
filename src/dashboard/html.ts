// Output helpers of the dashboard: the escaping `html` template (Hono's: every
// interpolated string is escaped, so event data, which senders control, always
// renders as text), links that carry filters in the query string, and number and
// time formatting.
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export { html, raw };
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export type Params = Record<string, string | number | undefined | null>;

/** `path` with the non-empty params as its query string, so empty form fields never reach a filter. */
export function href(path: string, params: Params = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

const ROOT_RELATIVE_ATTRIBUTE = /\b(href|action|src)="\/(?![/\\])/g;

/**
 * A page written for the server's root, moved under `basePath` (PUBLIC_URL's path): every
 * link, form action and asset URL that starts at the root gets the prefix. Only markup
 * the templates wrote can hold `href="/`: an interpolated value has its quotes escaped.
 */
export function underBasePath(page: string, basePath: string): string {
  return basePath === '' ? page : page.replace(ROOT_RELATIVE_ATTRIBUTE, `$1="${basePath}/`);
}

/** A redirect target written for the server's root, moved under `basePath`. */
export function locationUnderBasePath(location: string, basePath: string): string {
  return basePath !== '' && /^\/(?![/\\])/.test(location) ? basePath + location : location;
}

/** A path as the browser saw it (under `basePath`) as this server's routes see it. */
export function pathWithoutBasePath(path: string, basePath: string): string {
  if (basePath === '' || !path.startsWith(basePath)) return path;
  const rest = path.slice(basePath.length);
  return rest === '' ? '/' : rest.startsWith('/') ? rest : path;
}

/** The path of a project page. */
export function projectPath(slug: string, ...rest: string[]): string {
  return ['', encodeURIComponent(slug), ...rest.map(encodeURIComponent)].join('/');
}

/** Query parameters without empty values (a blank form field means "no filter"). */
export function nonEmpty(query: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(query).filter(([, v]) => v.trim() !== ''));
}

/**
 * Text that may wrap after `.`, `@`, `+`, `/`, `:` and `_` (a `<wbr>` after each), so
 * a release like `com.example.shop@1.0.0+100` breaks at its parts in a narrow column
 * rather than at any letter. Every piece is escaped.
 */
export function breakable(text: string): Html {
  const pieces = text.split(/(?<=[.@+/:_])/);
  return html`${pieces.map((piece, i) => (i === 0 ? html`${piece}` : html`${raw('<wbr>')}${piece}`))}`;
}

const numberFormat = new Intl.NumberFormat('en-US');
export const count = (n: number): string => numberFormat.format(n);

export function percent(rate: number | null | undefined, digits = 2): string {
  if (rate === null || rate === undefined) return '–';
  return `${(rate * 100).toFixed(digits)} %`;
}

/** `2026-11-21 13:35 UTC`. */
export function utc(isoTime: string | null | undefined): string {
  if (!isoTime) return '–';
  return `${isoTime.slice(0, 10)} ${isoTime.slice(11, 16)} UTC`;
}

/** `3 h ago`, relative to `now`. */
export function ago(isoTime: string | null | undefined, now: number): string {
  if (!isoTime) return '–';
  const s = Math.max(0, Math.round((now - Date.parse(isoTime)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

/** A time element showing the relative time, the exact UTC time on hover. */
export function when(isoTime: string | null | undefined, now: number): Html {
  if (!isoTime) return html`–`;
  return html`<time datetime="${isoTime}" title="${utc(isoTime)}">${ago(isoTime, now)}</time>`;
}

/** JSON for display, pretty-printed and cut at `max` characters. */
export function prettyJson(value: unknown, max = 200_000): { text: string; cut: boolean } {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.length > max ? { text: text.slice(0, max), cut: true } : { text, cut: false };
}

/** A select's options, the current value selected. */
export function options(values: readonly (string | [string, string])[], current: string | undefined): Html {
  return html`${values.map((v) => {
    const [value, label] = Array.isArray(v) ? v : [v, v];
    return html`<option value="${value}" ${value === (current ?? '') ? raw('selected') : ''}>${label}</option>`;
  })}`;
}

/** Text of a value that may be anything (event data): strings as they are, the rest as JSON. */
export function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}
