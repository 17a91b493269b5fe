// The issue search parser (docs/api.md "Issue search"): a table of queries and what
// they parse to, and of bad tokens and the 400 message naming them. No database.
import { describe, expect, it } from 'vitest';
import {
  emptySearch,
  isEmptySearch,
  parseIssueSearch,
  SearchSyntaxError,
  type IssueSearch,
} from '../../src/read/search-query.js';

const parsed = (over: Partial<IssueSearch>): IssueSearch => ({ ...emptySearch(), ...over });

describe('parseIssueSearch', () => {
  const cases: [string, IssueSearch][] = [
    ['', emptySearch()],
    ['   ', emptySearch()],
    ['is:unresolved', parsed({ statuses: ['unresolved'] })],
    ['is:RESOLVED is:ignored', parsed({ statuses: ['resolved', 'ignored'] })],
    ['is:assigned', parsed({ assigned: true })],
    ['is:unassigned', parsed({ assigned: false })],
    ['assigned:me', parsed({ assignees: ['me'] })],
    ['assigned:Ana@Example.com', parsed({ assignees: ['Ana@Example.com'] })],
    ['level:Fatal', parsed({ levels: ['fatal'] })],
    ['release:app@1.2.0+45', parsed({ releases: ['app@1.2.0+45'] })],
    ['first-release:app@1.0.0', parsed({ firstReleases: ['app@1.0.0'] })],
    ['env:production environment:staging', parsed({ environments: ['production', 'staging'] })],
    ['user:42 user:ana@example.com', parsed({ users: ['42', 'ana@example.com'] })],
    [
      'browser:Chrome os.name:"Mac OS X"',
      parsed({
        tags: [
          { key: 'browser', value: 'Chrome' },
          { key: 'os.name', value: 'Mac OS X' },
        ],
      }),
    ],
    ['cannot read property', parsed({ text: ['cannot read property'] })],
    ['"checkout.js:17"', parsed({ text: ['checkout.js:17'] })],
    ['"say \\"hi\\"" crash', parsed({ text: ['crash', 'say "hi"'] })],
    [
      'is:unresolved  level:error   timeout in  env:prod',
      parsed({ statuses: ['unresolved'], levels: ['error'], environments: ['prod'], text: ['timeout in'] }),
    ],
    ['Échec du paiement', parsed({ text: ['Échec du paiement'] })],
    ['release:"1.0 beta"', parsed({ releases: ['1.0 beta'] })],
    ['url:https://x.example/a?b=c', parsed({ tags: [{ key: 'url', value: 'https://x.example/a?b=c' }] })],
  ];
  for (const [q, want] of cases) {
    it(`parses ${JSON.stringify(q)}`, () => {
      expect(parseIssueSearch(q)).toEqual(want);
    });
  }

  const bad: [string, RegExp][] = [
    [
      'is:open',
      /unknown search token "is:open": is: takes unresolved, triaged, resolved, regression, ignored, assigned, unassigned/,
    ],
    ['level:critical', /unknown search token "level:critical"/],
    ['release:', /malformed search token "release:": release: needs a value/],
    ['is:', /malformed search token "is:"/],
    [':value', /malformed search token ":value"/],
    ['"unterminated', /unterminated quote/],
    ['release:"1.0', /unterminated quote/],
    ['"a"b', /malformed search token/],
    ['ab"c', /malformed search token "ab\\"c"/],
    ['key:a"b', /malformed search token "key:a\\"b"/],
    ['k!y:v', /malformed search token "k!y:v"/],
    ['x'.repeat(1001), /at most 1000 characters/],
    [Array.from({ length: 21 }, (_, i) => `w${i}`).join(' '), /at most 20 tokens/],
  ];
  for (const [q, message] of bad) {
    it(`refuses ${JSON.stringify(q.slice(0, 30))}`, () => {
      expect(() => parseIssueSearch(q)).toThrow(SearchSyntaxError);
      expect(() => parseIssueSearch(q)).toThrow(message);
    });
  }

  it('tells an empty search from one that asks for something', () => {
    expect(isEmptySearch(parseIssueSearch(' '))).toBe(true);
    expect(isEmptySearch(parseIssueSearch('is:unassigned'))).toBe(false);
    expect(isEmptySearch(parseIssueSearch('word'))).toBe(false);
  });
});
