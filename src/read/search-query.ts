// The issues list's search syntax (docs/api.md "Issue search"), as a pure parser: `q`
// becomes a structured query that src/read/issues.ts turns into filters. Tokens are
// separated by blanks; `key:value` (the value may be "quoted"), "quoted phrases" and
// bare words (matched in the title or the location). Every token must hold (AND).
import { ISSUE_STATUSES, LEVELS, type IssueStatus } from './params.js';

export class SearchSyntaxError extends Error {}

export interface IssueSearch {
  statuses: IssueStatus[];
  /** `is:assigned` (true) / `is:unassigned` (false). */
  assigned: boolean | null;
  /** `assigned:me` or an email. */
  assignees: string[];
  levels: string[];
  releases: string[];
  firstReleases: string[];
  environments: string[];
  /** `user:` an SDK user id or email. */
  users: string[];
  tags: { key: string; value: string }[];
  /** The bare words (as one text) and each quoted phrase: each is found in the title or the location. */
  text: string[];
}

export function emptySearch(): IssueSearch {
  return {
    statuses: [],
    assigned: null,
    assignees: [],
    levels: [],
    releases: [],
    firstReleases: [],
    environments: [],
    users: [],
    tags: [],
    text: [],
  };
}

/** The longest `q` taken, and the most tokens. */
export const MAX_SEARCH_LENGTH = 1000;
export const MAX_SEARCH_TOKENS = 20;

const KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/** A raw token: a key (null for a word or phrase) and its value. */
interface Token {
  text: string;
  key: string | null;
  value: string;
}

/** Splits `q` into tokens, honouring double quotes (with \" and \\ inside). */
function tokenize(q: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const quoted = (start: number): [string, number] => {
    let out = '';
    let j = start + 1;
    while (j < q.length) {
      const ch = q[j];
      if (ch === '\\' && j + 1 < q.length) {
        out += q[j + 1];
        j += 2;
        continue;
      }
      if (ch === '"') return [out, j + 1];
      out += ch;
      j++;
    }
    throw new SearchSyntaxError(`unterminated quote in search token ${JSON.stringify(q.slice(start))}`);
  };
  while (i < q.length) {
    if (/\s/.test(q[i])) {
      i++;
      continue;
    }
    const start = i;
    if (q[i] === '"') {
      const [value, end] = quoted(i);
      if (end < q.length && !/\s/.test(q[end]))
        throw new SearchSyntaxError(
          `malformed search token ${JSON.stringify(q.slice(start, end + 1))}: put a blank after a quoted phrase`,
        );
      tokens.push({ text: q.slice(start, end), key: null, value });
      i = end;
      continue;
    }
    while (i < q.length && !/\s/.test(q[i]) && q[i] !== ':' && q[i] !== '"') i++;
    if (q[i] === ':') {
      const key = q.slice(start, i);
      i++;
      let value: string;
      if (q[i] === '"') {
        const [v, end] = quoted(i);
        value = v;
        i = end;
        if (i < q.length && !/\s/.test(q[i]))
          throw new SearchSyntaxError(`malformed search token ${JSON.stringify(q.slice(start, i + 1))}`);
      } else {
        const from = i;
        while (i < q.length && !/\s/.test(q[i])) i++;
        value = q.slice(from, i);
        if (value.includes('"'))
          throw new SearchSyntaxError(`malformed search token ${JSON.stringify(q.slice(start, i))}`);
      }
      const text = q.slice(start, i);
      if (!KEY.test(key))
        throw new SearchSyntaxError(
          `malformed search token ${JSON.stringify(text)}: a key is letters, digits, "_", "." or "-"`,
        );
      if (value === '')
        throw new SearchSyntaxError(`malformed search token ${JSON.stringify(text)}: ${key}: needs a value`);
      tokens.push({ text, key, value });
      continue;
    }
    while (i < q.length && !/\s/.test(q[i])) i++;
    const word = q.slice(start, i);
    if (word.includes('"')) throw new SearchSyntaxError(`malformed search token ${JSON.stringify(word)}`);
    tokens.push({ text: word, key: null, value: word });
  }
  return tokens;
}

const IS_VALUES = [...ISSUE_STATUSES, 'assigned', 'unassigned'];

/**
 * Parses the search syntax; throws SearchSyntaxError naming the token it cannot take.
 * The bare words together are one text (joined by a blank), each quoted phrase another.
 */
export function parseIssueSearch(q: string): IssueSearch {
  if (q.length > MAX_SEARCH_LENGTH) throw new SearchSyntaxError(`q must be at most ${MAX_SEARCH_LENGTH} characters`);
  const tokens = tokenize(q);
  if (tokens.length > MAX_SEARCH_TOKENS)
    throw new SearchSyntaxError(`q may hold at most ${MAX_SEARCH_TOKENS} tokens (got ${tokens.length})`);
  const out = emptySearch();
  const words: string[] = [];
  for (const t of tokens) {
    switch (t.key?.toLowerCase() ?? null) {
      case null:
        if (t.text.startsWith('"')) out.text.push(t.value);
        else words.push(t.value);
        break;
      case 'is': {
        const v = t.value.toLowerCase();
        if (v === 'assigned' || v === 'unassigned') out.assigned = v === 'assigned';
        else if ((ISSUE_STATUSES as readonly string[]).includes(v)) out.statuses.push(v as IssueStatus);
        else
          throw new SearchSyntaxError(
            `unknown search token ${JSON.stringify(t.text)}: is: takes ${IS_VALUES.join(', ')}`,
          );
        break;
      }
      case 'assigned':
        out.assignees.push(t.value.toLowerCase() === 'me' ? 'me' : t.value);
        break;
      case 'level': {
        const v = t.value.toLowerCase();
        if (!(LEVELS as readonly string[]).includes(v))
          throw new SearchSyntaxError(
            `unknown search token ${JSON.stringify(t.text)}: level: takes ${LEVELS.join(', ')}`,
          );
        out.levels.push(v);
        break;
      }
      case 'release':
        out.releases.push(t.value);
        break;
      case 'first-release':
        out.firstReleases.push(t.value);
        break;
      case 'env':
      case 'environment':
        out.environments.push(t.value);
        break;
      case 'user':
        out.users.push(t.value);
        break;
      default:
        out.tags.push({ key: t.key!, value: t.value });
    }
  }
  // The bare words are one text, as written (Sentry's free text): `cannot read` finds that phrase.
  if (words.length > 0) out.text.unshift(words.join(' '));
  return out;
}

/** True when the search asks for nothing. */
export function isEmptySearch(s: IssueSearch): boolean {
  return (
    s.statuses.length +
      s.assignees.length +
      s.levels.length +
      s.releases.length +
      s.firstReleases.length +
      s.environments.length +
      s.users.length +
      s.tags.length +
      s.text.length ===
      0 && s.assigned === null
  );
}
