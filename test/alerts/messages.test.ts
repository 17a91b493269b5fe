// The message builders of Slack (and Mattermost), Discord, Teams and email, without a
// network: each says project, type, title, level, release, environment, counts, first
// seen and the dashboard link; each matches its provider's documented schema and limits,
// also for huge titles and digests of many issues; user text cannot ping or inject.
import { describe, expect, it } from 'vitest';
import type { AlertContent } from '../../src/alerts/channels.js';
import {
  clip,
  discordMessage,
  emailMessage,
  slackMessage,
  summarize,
  teamsMessage,
} from '../../src/alerts/messages.js';
import { digestFields } from '../../src/alerts/outbox.js';
import { discordSchema, expectValid, slackSchema, teamsSchema } from './provider-schemas.js';

const project = { slug: 'shop-app', name: 'Shop app' };
const base = 'https://errors.example.com';
const at = Date.UTC(2026, 10, 21, 10, 2, 30);
const issueUrl = `${base}/shop-app/issues/abc123`;

const regression: AlertContent = {
  type: 'regression',
  title: 'TypeError: Cannot read properties of undefined (reading "id")',
  fingerprint: 'abc123',
  level: 'error',
  event_count: 42,
  release: 'shop@2.4.1',
  environment: 'production',
  first_seen: Date.UTC(2026, 9, 3, 8, 15),
  triggered_at: at,
};

const held = (n: number, title = (i: number) => `Error number ${i}`) =>
  digestFields(
    Array.from({ length: n }, (_, i) => ({
      payload: JSON.stringify({
        title: title(i),
        fingerprint: `fp${i}`,
        level: 'error',
        event_count: i + 1,
        release: 'shop@2',
        environment: 'production',
      }),
      created_at: at - 3_600_000 + i * 1000,
    })),
  );

const builders = {
  slack: (c: AlertContent) => expectValid(slackSchema, slackMessage(c, project, base)),
  discord: (c: AlertContent) => expectValid(discordSchema, discordMessage(c, project, base)),
  teams: (c: AlertContent) => expectValid(teamsSchema, teamsMessage(c, project, base)),
};

describe('alert summary', () => {
  it('names project, type, level, release, environment, counts, first seen and the link', () => {
    const s = summarize(regression, project, base);
    expect(s.headline).toBe('Regression in Shop app');
    expect(s.title).toBe(regression.title);
    expect(s.url).toBe(issueUrl);
    expect(Object.fromEntries(s.facts.map((f) => [f.name, f.value]))).toEqual({
      Project: 'Shop app (shop-app)',
      Type: 'Regression',
      Level: 'error',
      Release: 'shop@2.4.1',
      Environment: 'production',
      Events: '42',
      'First seen': '2026-10-03 08:15 UTC',
    });
  });

  it('a new issue without a stored first-seen time was first seen when it fired', () => {
    const s = summarize({ ...regression, type: 'new_issue', first_seen: undefined }, project, base);
    expect(s.facts.find((f) => f.name === 'First seen')?.value).toBe('2026-11-21 10:02 UTC');
  });

  it('digests: a headline with the count and start, 20 listed, then "and N more"', () => {
    const s = summarize({ type: 'new_issue', digest: held(23), triggered_at: at }, project, base);
    expect(s.headline).toBe('23 new issues in Shop app since 2026-11-21 09:02 UTC');
    expect(s.items).toHaveLength(20);
    expect(s.more).toBe(3);
    expect(s.items![0]).toEqual({
      text: 'Error number 0',
      url: `${base}/shop-app/issues/fp0`,
      facts: 'error, 1 event, release shop@2, env production',
    });
    expect(s.url).toBe(`${base}/shop-app`);
  });

  it('clips within the limit without splitting a surrogate pair', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('ab😀cd', 4)).toBe('ab…');
    expect(clip('abc', 3)).toBe('abc');
  });
});

describe('Slack / Mattermost', () => {
  it('a header, the linked title, the facts as fields, a button and a notification text', () => {
    const m = builders.slack(regression);
    expect(m.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: 'Regression in Shop app', emoji: false },
    });
    expect(m.blocks[1]).toMatchObject({
      type: 'section',
      text: { type: 'mrkdwn', text: `*<${issueUrl}|TypeError: Cannot read properties of undefined (reading "id")>*` },
    });
    const fields = (m.blocks[2] as { fields: { text: string }[] }).fields.map((f) => f.text);
    expect(fields).toContain('*Release*\nshop@2.4.1');
    expect(fields).toContain('*Environment*\nproduction');
    expect(fields).toContain('*First seen*\n2026-10-03 08:15 UTC');
    expect(m.blocks).toContainEqual({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in Faultline' }, url: issueUrl }],
    });
    // Mattermost ignores blocks and shows `text`: it must stand alone, with no Slack-only *bold*.
    expect(m.text.split('\n')).toEqual([
      'Regression in Shop app',
      `<${issueUrl}|TypeError: Cannot read properties of undefined (reading "id")>`,
      'Type: Regression · Level: error · Release: shop@2.4.1 · Environment: production · Events: 42 · First seen: 2026-10-03 08:15 UTC',
    ]);
  });

  it('escapes &, < and > so a title cannot make links or mentions', () => {
    const m = builders.slack({ ...regression, title: '<!channel> a & b <https://evil.example|click>' });
    expect(JSON.stringify(m)).not.toContain('<!channel>');
    expect(m.text).toContain('&lt;!channel&gt; a &amp; b &lt;https://evil.example¦click&gt;');
  });

  it('stays within the limits for a huge title and a digest of 500', () => {
    const huge = builders.slack({ ...regression, title: 'x'.repeat(10_000), release: 'r'.repeat(5000) });
    expect((huge.blocks[1] as { text: { text: string } }).text.text.length).toBeLessThanOrEqual(3000);
    const d = builders.slack({
      type: 'regression',
      digest: held(500, (i) => `${'long title '.repeat(30)} ${i}`),
      triggered_at: at,
    });
    const list = d.blocks.find((b) => b.type === 'section' && 'text' in b && b.text?.text.startsWith('•')) as {
      text: { text: string };
    };
    expect(list.text.text.length).toBeLessThanOrEqual(3000);
    // Not all 20 fit in 3 000 characters: those left out are counted in "and N more".
    const listed = list.text.text.split('\n').filter((l) => l.startsWith('•')).length;
    expect(list.text.text.split('\n').at(-1)).toBe(`and ${500 - listed} more`);
  });
});

describe('Discord', () => {
  it('one embed: title, description, facts as fields, the link, colour by level, no mentions', () => {
    const m = builders.discord(regression);
    expect(m.embeds).toHaveLength(1);
    const e = m.embeds![0];
    expect(e.title).toBe('Regression in Shop app');
    expect(e.description).toBe('TypeError: Cannot read properties of undefined \\(reading "id"\\)');
    expect(e.url).toBe(issueUrl);
    expect(e.color).toBe(0xd93025);
    expect(e.fields).toContainEqual({ name: 'Release', value: 'shop@2.4.1', inline: true });
    expect(e.fields).toContainEqual({ name: 'Events', value: '42', inline: true });
    expect(e.timestamp).toBe('2026-11-21T10:02:30.000Z');
    expect(m.allowed_mentions).toEqual({ parse: [] });
  });

  it('stays within 256 / 4096 / 6000 for huge input, and a digest lists then says "and N more"', () => {
    const huge = builders.discord({ ...regression, title: '@everyone '.repeat(2000), release: 'r'.repeat(5000) });
    expect(
      builders.discord({ ...regression, type: 'new_issue', digest: held(3) }).embeds![0].title.length,
    ).toBeLessThanOrEqual(256);
    expect(huge.embeds![0].description!.length).toBeLessThanOrEqual(4096);
    expect(huge.embeds![0].description).not.toContain('@everyone');
    const d = builders.discord({ type: 'new_issue', digest: held(23), triggered_at: at });
    const lines = d.embeds![0].description!.split('\n');
    expect(lines).toHaveLength(21);
    expect(lines[0]).toBe(
      `• [Error number 0](${base}/shop-app/issues/fp0) (error, 1 event, release shop@2, env production)`,
    );
    expect(lines.at(-1)).toBe('and 3 more');
    builders.discord({ type: 'new_issue', digest: held(500, (i) => `${'y'.repeat(190)} ${i}`), triggered_at: at });
  });
});

describe('Teams', () => {
  it('an Adaptive Card: headline, title, a FactSet and an Open action', () => {
    const m = builders.teams(regression);
    const card = m.attachments[0].content;
    expect(card.body[0]).toMatchObject({ type: 'TextBlock', text: 'Regression in Shop app', weight: 'Bolder' });
    expect(card.body[1]).toMatchObject({ type: 'TextBlock', text: regression.title, color: 'Attention' });
    expect(card.body[2]).toMatchObject({ type: 'FactSet' });
    expect((card.body[2] as { facts: unknown[] }).facts).toContainEqual({
      title: 'First seen',
      value: '2026-10-03 08:15 UTC',
    });
    expect(card.actions).toEqual([{ type: 'Action.OpenUrl', title: 'Open in Faultline', url: issueUrl }]);
  });

  it('a digest of 500 with long titles stays under 28 KB', () => {
    const m = builders.teams({
      type: 'regression',
      digest: held(500, (i) => `${'z'.repeat(400)} ${i}`),
      triggered_at: at,
    });
    const last = m.attachments[0].content.body.at(-1) as { text: string };
    expect(last.text.split('\n').at(-1)).toBe('and 480 more');
  });
});

describe('email', () => {
  it('a one-line subject, a text part with every fact and the link, an escaped HTML part', () => {
    const m = emailMessage({ ...regression, title: 'Boom <script>alert(1)</script>\r\nBcc: x@y' }, project, base);
    expect(m.subject).toBe('[Faultline] Regression in Shop app: Boom <script>alert(1)</script> Bcc: x@y');
    expect(m.text).toContain('Release: shop@2.4.1');
    expect(m.text).toContain('First seen: 2026-10-03 08:15 UTC');
    expect(m.text.trim().split('\n').at(-1)).toBe(issueUrl);
    expect(m.html).not.toContain('<script>');
    expect(m.html).toContain('&lt;script&gt;');
    expect(m.html).toContain(`<a href="${issueUrl}">Open in Faultline</a>`);
  });

  it('a digest lists 20 and says how many more', () => {
    const m = emailMessage({ type: 'new_issue', digest: held(23), triggered_at: at }, project, base);
    expect(m.subject).toBe(
      "[Faultline] 23 new issues in Shop app since 2026-11-21 09:02 UTC: 23 alerts held back by the rule's cooldown",
    );
    expect(m.text).toContain('- Error number 19 (error, 20 events, release shop@2, env production)');
    expect(m.text).not.toContain('Error number 20');
    expect(m.text).toContain('and 3 more');
  });
});

describe('every kind, every alert type', () => {
  const contents: AlertContent[] = [
    regression,
    { ...regression, type: 'new_issue', release: undefined, environment: undefined, level: 'fatal' },
    { type: 'crash_spike', recent: 40, baseline: 2, triggered_at: at },
    {
      type: 'crash_spike',
      digest: digestFields([{ payload: JSON.stringify({ recent: 12, baseline: 1 }), created_at: at }]),
      triggered_at: at,
    },
    { type: 'test', title: 'Test alert from Faultline', triggered_at: at },
  ];
  it.each(Object.keys(builders))('%s matches its schema without a PUBLIC_URL too', (kind) => {
    for (const c of contents) {
      builders[kind as keyof typeof builders](c);
      const noLink =
        kind === 'slack'
          ? slackMessage(c, project, null)
          : kind === 'discord'
            ? discordMessage(c, project, null)
            : teamsMessage(c, project, null);
      expect(JSON.stringify(noLink)).not.toContain('errors.example.com');
    }
  });
});
