// Import refuses lines the API would refuse, each reported by its line number with the
// reason: an alert rule of an unknown type or a negative cooldown, a channel of an
// unknown kind or with a config no channel takes, an issue with an unknown status or a
// negative count, a symbol file of an unknown kind, a chunk with a negative sequence
// number, a project the projects API would refuse, a session with an unknown status,
// an event of an unknown level, a monitor with a bad crontab or margin, a check-in of an
// unknown status, text with NUL. Nothing of them is stored: the target
// ends up holding exactly the source's rows. Unknown types named like Object's
// properties are counted like any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, post, sessionUpdate } from '../ingest/helpers.js';
import { bodyLines, emptyStore, exportText, importText, type EmptyStore } from './support.js';

type Line = Record<string, unknown>;

describe.each(dialects)('import checks every line as the API does (%s)', (dialect) => {
  let t: TestServer;
  let target: EmptyStore;
  let source: Line[];

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    expect((await t.api('/api/projects', { method: 'POST', json: { slug: 'demo' } })).status).toBe(201);
    expect(
      (await t.api('/api/projects/demo/alerts/new_issue', { method: 'PATCH', json: { cooldown_minutes: 45 } })).status,
    ).toBe(200);
    const hook = await t.api('/api/projects/demo/alerts/channels', {
      method: 'POST',
      json: { kind: 'webhook', config: { url: 'http://127.0.0.1:9/hook' } },
    });
    expect(hook.status).toBe(201);
    expect(
      (
        await t.api('/api/projects/demo/alerts/regression', {
          method: 'PATCH',
          json: { channels: [(await hook.json()).id] },
        })
      ).status,
    ).toBe(200);
    const form = new FormData();
    form.set('kind', 'sourcemap');
    form.set('release', 'demo@1');
    form.set(
      'file',
      new Blob([JSON.stringify({ version: 3, file: 'app.min.js', sources: ['a.ts'], names: [], mappings: 'AAAA' })]),
      'app.min.js.map',
    );
    expect((await t.api('/api/projects/demo/symbols', { method: 'POST', body: form })).status).toBe(201);
    const project = await t.deps.store.db
      .selectFrom('projects')
      .selectAll()
      .where('slug', '=', 'demo')
      .executeTakeFirstOrThrow();
    const now = t.clock.now();
    const event = errorEvent({ timestamp: now - 60_000, type: 'TypeError', release: 'demo@1' });
    expect(
      (await post(t, project, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))).status,
    ).toBe(200);
    expect(
      (
        await post(
          t,
          project,
          envelope({}, [{ type: 'session', payload: sessionUpdate({ started: now - 3600_000, release: 'demo@1' }) }]),
        )
      ).status,
    ).toBe(200);
    const checkIn = {
      check_in_id: 'a'.repeat(32),
      monitor_slug: 'nightly',
      status: 'ok',
      monitor_config: { schedule: { type: 'crontab', value: '0 3 * * *' } },
    };
    expect((await post(t, project, envelope({}, [{ type: 'check_in', payload: checkIn }]))).status).toBe(200);
    source = bodyLines(await exportText(t.deps.store)).map((l) => JSON.parse(l) as Line);
    target = await emptyStore(dialect);
  }, 60_000);

  afterAll(async () => {
    await target?.close();
    await t?.close();
  });

  const first = (type: string): Line => {
    const line = source.find((l) => l.type === type);
    if (!line) throw new Error(`the source export has no ${type} line`);
    return line;
  };

  it('reports each refused line by number and stores none of them', async () => {
    // Each bad line differs from the source's rows in its key too, so that without the
    // check it would be a new row rather than one the target already has.
    const bad: Array<[Line, RegExp]> = [
      [
        { ...first('alert_rule'), alert: 'bogus' },
        /^alert_rule: alert: must be one of new_issue, regression, crash_spike, monitor$/,
      ],
      [
        { ...first('alert_rule'), alert: 'crash_spike', cooldown_minutes: -5 },
        /^alert_rule: cooldown_minutes must be an integer between 0 and/,
      ],
      [
        { ...first('alert_rule'), alert: 'crash_spike', min_level: 'loud' },
        /^alert_rule: min_level must be one of debug, info, warning, error, fatal/,
      ],
      [
        { ...first('alert_rule'), alert: 'crash_spike', environments: [''] },
        /^alert_rule: environments must be a list/,
      ],
      [
        { ...first('monitor'), slug: 'bad-crontab', schedule_type: 'crontab', schedule: '61 * * * *' },
        /^monitor: monitor_config: schedule.value: "61 \* \* \* \*" is not a crontab/,
      ],
      [
        { ...first('monitor'), slug: 'bad-margin', checkin_margin: -5 },
        /^monitor: monitor_config: checkin_margin must be between 1 and 40320/,
      ],
      [
        { ...first('monitor_checkin'), check_in_id: 'x1', status: 'sleeping' },
        /^monitor_checkin: status: must be one of ok, error, in_progress, missed, timeout/,
      ],
      [
        { ...first('alert_channel'), kind: 'smtp' },
        /^alert_channel: kind must be one of "webhook", "telegram", "email", "slack", "discord", "teams"$/,
      ],
      [
        {
          ...first('alert_channel'),
          kind: 'email',
          config: { to: Array.from({ length: 21 }, (_, i) => `u${i}@example.com`) },
        },
        /^alert_channel: config\.to must be a list of 1 to 20 email addresses$/,
      ],
      [
        { ...first('alert_channel'), kind: 'email', config: { to: ['not-an-address'] } },
        /^alert_channel: config\.to: "not-an-address" is not an email address$/,
      ],
      [
        {
          ...first('alert_channel'),
          kind: 'slack',
          config: { url: 'https://hooks.slack.com/services/T/B/X', secret: 'x' },
        },
        /^alert_channel: unknown field "secret"/,
      ],
      [{ ...first('alert_channel'), config: 'x' }, /^alert_channel: config must be an object/],
      [
        { ...first('alert_channel'), config: { url: 'ftp://example.com/' } },
        /^alert_channel: config\.url must be an absolute http or https URL/,
      ],
      [
        { ...first('issue'), fingerprint: 'f'.repeat(32), status: 'bogus' },
        /^issue: status: must be one of unresolved, triaged/,
      ],
      [
        { ...first('issue'), fingerprint: 'e'.repeat(32), event_count: -5 },
        /^issue: event_count: must not be negative$/,
      ],
      [
        { ...first('issue'), fingerprint: 'd'.repeat(32), title: 'a\u0000b' },
        /^issue: title: holds a NUL character or a lone surrogate$/,
      ],
      [
        { ...first('symbol'), kind: 'exe', filename: 'other.exe' },
        /^symbol: kind: must be one of proguard, sourcemap, dsym, elf, breakpad, dartsymbolmap/,
      ],
      [{ ...first('symbol'), filename: 'neg.map', size: -1 }, /^symbol: size: must not be negative$/],
      [{ ...first('symbol_chunk'), seq: -1 }, /^symbol_chunk: seq: must not be negative$/],
      [{ ...first('symbol_chunk'), part: 7 }, /^symbol_chunk: part: must be 0 \(the file\) or 1 \(its index\)$/],
      [
        { ...first('project'), slug: 'rate', id: 77, dsn_key: 'a'.repeat(32), sample_rate: 5 },
        /^project: sample_rate must be between 0 and 1$/,
      ],
      [{ ...first('project'), slug: 'Bad Slug', id: 78, dsn_key: 'b'.repeat(32) }, /^project: /],
      [
        { ...first('session'), sid: 'c'.repeat(32), status: 'bogus' },
        /^session: status: "bogus" is not a session status$/,
      ],
      [{ ...first('session'), sid: 'b'.repeat(32), errors: -1 }, /^session: errors: must not be negative$/],
      [{ ...first('event'), event_id: 'a'.repeat(32), level: 'bogus' }, /^event: level: must be one of fatal, error/],
      [{ ...first('release'), release: 'x\ud800' }, /: release: holds a NUL character or a lone surrogate$/],
      [
        { ...first('usage_day'), day: '2020-01-01T00:00:00.000Z', events: -3 },
        /^usage_day: events: must not be negative$/,
      ],
      [{ ...first('alert_rule_channel'), alert: 'bogus' }, /^alert_rule_channel: alert: /],
      [
        { ...first('alert_rule_channel'), config: { url: 'http://127.0.0.1:9/elsewhere' } },
        /^the webhook channel it names is not a channel of project "demo"/,
      ],
    ];
    const meta = JSON.stringify({
      type: 'meta',
      format: 1,
      exported_at: new Date(t.clock.now()).toISOString(),
      source: {},
    });
    const good = source.map((l) => JSON.stringify(l));
    const file = [meta, ...good, ...bad.map(([l]) => JSON.stringify(l))];
    const summary = await importText(target.store, file.join('\n') + '\n');
    const firstBad = good.length + 2;
    expect(summary.problems.map((p) => p.line)).toEqual(bad.map((_, i) => firstBad + i));
    summary.problems.forEach((p, i) => expect(p.message, `line ${p.line}`).toMatch(bad[i][1]));
    expect(summary.problemCount).toBe(bad.length);
    expect(bodyLines(await exportText(target.store)).sort()).toEqual(good.slice().sort());
  });

  it('counts unknown types named __proto__ or constructor like any other', async () => {
    const meta = JSON.stringify({
      type: 'meta',
      format: 1,
      exported_at: new Date(t.clock.now()).toISOString(),
      source: {},
    });
    const lines = ['__proto__', 'constructor', 'constructor', 'toString', 'widget'].map((type) =>
      JSON.stringify({ type }),
    );
    const summary = await importText(target.store, [meta, ...lines].join('\n') + '\n');
    expect(Object.entries(summary.unknown)).toEqual([
      ['__proto__', 1],
      ['constructor', 2],
      ['toString', 1],
      ['widget', 1],
    ]);
    expect(JSON.parse(JSON.stringify(summary)).unknown).toEqual(
      JSON.parse('{"__proto__":1,"constructor":2,"toString":1,"widget":1}'),
    );
    expect(summary.problemCount).toBe(0);
  });
});
