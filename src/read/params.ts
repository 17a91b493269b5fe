// Parsing of the read routes' query parameters shared by several lists: page
// size, offset, enumerations. The limits are in docs/api.md "Conventions".
import { sql, type RawBuilder } from 'kysely';
import { ReadInputError } from '../errors.js';
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET } from '../limits.js';

export const ISSUE_STATUSES = ['unresolved', 'triaged', 'resolved', 'regression', 'ignored'] as const;
export type IssueStatus = (typeof ISSUE_STATUSES)[number];
export { LEVELS } from '../ingest/types.js';

function nonNegativeInteger(name: string, raw: string): number {
  const text = raw.trim();
  if (!/^[0-9]{1,15}$/.test(text))
    throw new ReadInputError(`${name} must be a non-negative integer (got ${JSON.stringify(raw)})`);
  return Number(text);
}

/** Page size: default 50; values above 500 are capped, not refused. */
export function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const n = nonNegativeInteger('limit', raw);
  if (n < 1) throw new ReadInputError(`limit must be an integer from 1 to ${MAX_LIMIT} (larger values are capped)`);
  return Math.min(n, MAX_LIMIT);
}

export function parseOffset(raw: string | undefined): number {
  if (raw === undefined) return 0;
  const n = nonNegativeInteger('offset', raw);
  if (n > MAX_OFFSET) throw new ReadInputError(`offset must be an integer from 0 to ${MAX_OFFSET}`);
  return n;
}

export function parseEnum<T extends string>(
  name: string,
  raw: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ReadInputError(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(raw)})`);
  }
  return raw as T;
}

export function isIssueStatus(v: unknown): v is IssueStatus {
  return typeof v === 'string' && (ISSUE_STATUSES as readonly string[]).includes(v);
}

/** A LIKE pattern matching `text` anywhere, with LIKE's wildcards escaped (use with `escape '\'`). */
function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * `q`: the column contains `text`, ignoring case. The database lowers both sides
 * with the same lower(), so they always fold alike: every letter on PostgreSQL
 * (by the database's LC_CTYPE), ASCII letters only on SQLite.
 */
export function containsText(column: string, text: string): RawBuilder<boolean> {
  return sql<boolean>`lower(${sql.ref(column)}) like lower(cast(${containsPattern(text)} as text)) escape '\\'`;
}

/** The time window's parameters (window.ts), taken by every route with a window. */
export const WINDOW_PARAMETERS = ['days', 'from', 'to'] as const;

/** What each read route takes: names, and name prefixes (`tag.` for the events list's tag filters). */
export interface RouteParameters {
  names: readonly string[];
  prefixes?: readonly string[];
}

/**
 * Refuses a parameter the route does not take, naming those it does, as an unknown body
 * field is refused: a misspelt filter (`?issue=` for `?fingerprint=`) would otherwise
 * answer the unfiltered list as if it were the filtered one.
 */
export function checkParameters(query: Record<string, string | undefined>, allowed: RouteParameters): void {
  for (const name of Object.keys(query)) {
    if (allowed.names.includes(name) || allowed.prefixes?.some((p) => name.startsWith(p))) continue;
    const taken = [...allowed.names, ...(allowed.prefixes ?? []).map((p) => `${p}<key>`)];
    throw new ReadInputError(
      taken.length === 0
        ? `unknown parameter ${JSON.stringify(name)}; this route takes none`
        : `unknown parameter ${JSON.stringify(name)}; allowed: ${taken.join(', ')}`,
    );
  }
}
