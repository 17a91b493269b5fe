// The pure parts of rule filters and digests, without a database: which alerts a rule's
// environments and lowest level let through, which channels it sends to, how a PATCH
// body is checked, and what a digest of many held-back alerts says on each channel.
import { describe, expect, it } from 'vitest';
import { telegramText, webhookPayload } from '../../src/alerts/channels.js';
import { DIGEST_LISTED, digestFields, namedIssues } from '../../src/alerts/outbox.js';
import {
  AlertInputError,
  NO_FILTERS,
  parseRulePatch,
  ruleChannels,
  ruleLetsThrough,
  storedRuleFilters,
} from '../../src/alerts/rules.js';

const project = { slug: 'shop-app', name: 'Shop app' };
const at = Date.UTC(2026, 10, 21, 10, 2);

describe('rule filters', () => {
  it('environments: empty lets every environment through, a list only its own', () => {
    expect(ruleLetsThrough(NO_FILTERS, { environment: 'staging', level: 'debug' })).toBe(true);
    const prod = { ...NO_FILTERS, environments: ['production'] };
    expect(ruleLetsThrough(prod, { environment: 'production', level: 'error' })).toBe(true);
    expect(ruleLetsThrough(prod, { environment: 'staging', level: 'error' })).toBe(false);
    expect(ruleLetsThrough(prod, { environment: '', level: 'error' })).toBe(false);
    // A crash spike names no environment or level: no filter holds it back.
    expect(ruleLetsThrough({ environments: ['production'], min_level: 'fatal', channels: [] }, {})).toBe(true);
  });

  it('min_level lets through that level and the ones above it', () => {
    const errors = { ...NO_FILTERS, min_level: 'error' as const };
    expect(['debug', 'info', 'warning', 'error', 'fatal'].map((level) => ruleLetsThrough(errors, { level }))).toEqual([
      false,
      false,
      false,
      true,
      true,
    ]);
  });

  it('channels: empty means all of the project, a list only those that still exist', () => {
    expect(ruleChannels(NO_FILTERS, [3, 5, 8])).toEqual([3, 5, 8]);
    expect(ruleChannels({ ...NO_FILTERS, channels: [8, 5, 42] }, [3, 5, 8])).toEqual([5, 8]);
  });

  it('reads stored filters leniently', () => {
    expect(storedRuleFilters({ environments: '["production"]', min_level: 'warning', channels: '[4]' })).toEqual({
      environments: ['production'],
      min_level: 'warning',
      channels: [4],
    });
    expect(storedRuleFilters({ environments: 'nonsense', min_level: 'loud', channels: null })).toEqual(NO_FILTERS);
  });

  it('PATCH bodies: filters alone are enough, duplicates fold, bad values are refused', () => {
    expect(parseRulePatch({ environments: ['production', 'production'], channels: [2, 2] })).toEqual({
      environments: ['production'],
      channels: [2],
    });
    expect(parseRulePatch({ min_level: null })).toEqual({ min_level: null });
    for (const body of [
      {},
      { min_level: 'loud' },
      { environments: [1] },
      { channels: [-1] },
      { channels: [1.5] },
      { channels: 'all' },
      { environment: ['x'] },
    ]) {
      expect(() => parseRulePatch(body), JSON.stringify(body)).toThrow(AlertInputError);
    }
  });
});

describe('digests', () => {
  const held = Array.from({ length: 23 }, (_, i) => ({
    payload: JSON.stringify({
      title: `Error ${i}`,
      fingerprint: `fp${i}`,
      level: 'error',
      event_count: i + 1,
      release: 'app@2',
      environment: 'production',
    }),
    created_at: at + i * 1000,
  }));

  it('count every held alert and list the first twenty', () => {
    const d = digestFields(held);
    expect(d.count).toBe(23);
    expect(d.since).toBe(at);
    expect(d.items).toHaveLength(DIGEST_LISTED);
    expect(namedIssues(JSON.stringify({ digest: d }))).toHaveLength(20);
    expect(namedIssues(held[0].payload)).toEqual([{ fingerprint: 'fp0', title: 'Error 0' }]);
    expect(namedIssues(JSON.stringify({ recent: 12, baseline: 1 }))).toEqual([]);
  });

  it('webhook: the digest form, with "more" for those not listed', () => {
    const payload = webhookPayload(
      { type: 'new_issue', digest: digestFields(held), triggered_at: at + 3_600_000 },
      project,
      'https://errors.example.com',
    );
    expect(payload).toMatchObject({
      type: 'new_issue',
      digest: true,
      project,
      count: 23,
      more: 3,
      since: '2026-11-21T10:02:00.000Z',
      url: 'https://errors.example.com/shop-app',
      triggered_at: '2026-11-21T11:02:00.000Z',
    });
    expect(payload.issues).toHaveLength(20);
    expect(payload.issues![0]).toEqual({
      title: 'Error 0',
      fingerprint: 'fp0',
      level: 'error',
      event_count: 1,
      release: 'app@2',
      environment: 'production',
      url: 'https://errors.example.com/shop-app/issues/fp0',
    });
    expect(payload.title).toBeUndefined();
  });

  it('Telegram: a headline, one line per listed issue, "and N more", the project link', () => {
    const lines = telegramText(
      { type: 'regression', digest: digestFields(held), triggered_at: at },
      project,
      'https://errors.example.com',
    ).split('\n');
    expect(lines[0]).toBe('23 regressions in Shop app (shop-app) since 2026-11-21 10:02 UTC');
    expect(lines[1]).toBe('- Error 0 (error, 1 event, release app@2)');
    expect(lines).toHaveLength(1 + 20 + 2);
    expect(lines.at(-2)).toBe('and 3 more');
    expect(lines.at(-1)).toBe('https://errors.example.com/shop-app');
    const one = telegramText(
      { type: 'new_issue', digest: digestFields(held.slice(0, 1)), triggered_at: at },
      project,
      null,
    );
    expect(one.split('\n')[0]).toBe('1 new issue in Shop app (shop-app) since 2026-11-21 10:02 UTC');
  });
});
