// Export → import into an empty database → export gives the same lines (meta aside),
// from each database into each (SQLite ↔ PostgreSQL), for the whole instance and for
// one project; a second import adds nothing; the imported instance answers the read
// API as the source does, and the moved project's DSN still takes events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openStore } from '../../src/editions/node/open-store.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, post } from '../ingest/helpers.js';
import { added, bodyLines, emptyStore, exportText, filledSource, importText, typeCounts } from './support.js';

describe.each(dialects)('round trip from %s', (source) => {
  let t: TestServer;
  let file: string;

  beforeAll(async () => {
    ({ t, file } = await filledSource(source));
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('exports every kind of row, with natural keys only', () => {
    const counts = typeCounts(file);
    for (const type of [
      'project',
      'alert_rule',
      'alert_channel',
      'alert_rule_channel',
      'monitor',
      'monitor_checkin',
      'symbol',
      'symbol_chunk',
      'cli_release',
      'release_commit',
      'release_deploy',
      'proguard_release',
      'issue',
      'issue_merge',
      'issue_release',
      'issue_user',
      'issue_change',
      'issue_hour',
      'project_hour',
      'release',
      'release_hour',
      'release_user_hour',
      'usage_day',
      'event',
      'attachment',
      'attachment_chunk',
      'user_feedback',
      'seen_event',
      'session',
    ]) {
      expect(counts[type], type).toBeGreaterThan(0);
    }
    const lines = bodyLines(file).map((l) => JSON.parse(l));
    expect(
      lines
        .filter((l) => l.type === 'symbol')
        .map((l) => l.kind)
        .sort(),
    ).toEqual(['elf', 'proguard', 'sourcebundle', 'sourcemap']);
    const events = lines.filter((l) => l.type === 'event');
    expect(events.filter((e) => e.payload === '' || e.payload_base64 === '')).toEqual([]);
    expect(events.some((e) => e.payload_base64 !== undefined)).toBe(true);
    expect(events.some((e) => Array.isArray(e.symbolicated))).toBe(true);
    expect(events.some((e) => e.detail !== undefined)).toBe(true);
    expect(events.filter((e) => e.first_of_issue).length).toBe(counts.issue);
    expect(
      lines
        .filter((l) => l.type === 'alert_rule' && l.project === 'demo')
        .map((l) => [l.alert, l.environments, l.min_level]),
    ).toEqual([
      ['crash_spike', [], null],
      ['monitor', [], null],
      ['new_issue', [], null],
      ['regression', ['production', 'eu-prod'], 'warning'],
    ]);
    expect(lines.filter((l) => l.type === 'alert_channel' && l.kind === 'slack').map((l) => l.config)).toEqual([
      { url: 'https://93.184.216.34/services/T0/B0/XXXX' },
    ]);
    expect(lines.filter((l) => l.type === 'alert_rule_channel')).toEqual([
      {
        type: 'alert_rule_channel',
        project: 'demo',
        alert: 'regression',
        kind: 'webhook',
        config: { url: 'http://127.0.0.1:9/hook', secret: 's3cret' },
      },
    ]);
    expect(new Set(lines.filter((l) => l.type === 'issue').map((l) => l.status))).toEqual(
      new Set(['resolved', 'ignored', 'triaged', 'unresolved']),
    );
    // Only projects carry an id; nothing else names a database id.
    for (const l of lines) {
      if (l.type !== 'project')
        expect(
          Object.keys(l).filter((k) => k === 'id' || (k.endsWith('_id') && typeof l[k] === 'number')),
          l.type,
        ).toEqual([]);
    }
  });

  it('reads in small pages exactly what it reads in large ones', async () => {
    expect(bodyLines(await exportText(t.deps.store, { pageRows: 7 }))).toEqual(bodyLines(file));
  });

  it.each(dialects)(
    'into an empty %s database and out again gives the same lines; a second import adds nothing',
    async (target) => {
      const empty = await emptyStore(target);
      try {
        const first = await importText(empty.store, file, { batchLines: 50 });
        expect(first.problems).toEqual([]);
        expect(first.unknown).toEqual({});
        expect(added(first)).toEqual(
          Object.fromEntries(Object.keys(first.types).map((type) => [type, typeCounts(file)[type] ?? 0])),
        );
        const again = await exportText(empty.store);
        expect(bodyLines(again)).toEqual(bodyLines(file));

        const second = await importText(empty.store, file);
        expect(Object.values(added(second)).every((n) => n === 0)).toBe(true);
        expect(Object.values(second.types).reduce((s, c) => s + c.kept, 0)).toBe(bodyLines(file).length);
        expect(bodyLines(await exportText(empty.store))).toEqual(bodyLines(file));
      } finally {
        await empty.close();
      }
    },
    60_000,
  );

  it('a symbol file is invisible until all its chunks are in, and an interrupted import finishes it', async () => {
    const target = await emptyStore(source);
    try {
      const lines = file.split('\n');
      const firstChunk = lines.findIndex((l) => l.startsWith('{"type":"symbol_chunk"'));
      expect(firstChunk).toBeGreaterThan(0);
      await importText(target.store, lines.slice(0, firstChunk).join('\n') + '\n');
      const states = async () =>
        (await target.store.db.selectFrom('symbol_files').select('state').orderBy('id').execute()).map((r) => r.state);
      expect(await states()).toEqual(['importing', 'importing', 'importing', 'importing']);
      const summary = await importText(target.store, file);
      expect(summary.types.symbol).toEqual({ added: 0, kept: 4, failed: 0 });
      expect(await states()).toEqual(['ready', 'ready', 'ready', 'ready']);
      expect(bodyLines(await exportText(target.store))).toEqual(bodyLines(file));
    } finally {
      await target.close();
    }
  }, 60_000);

  it('one project moves alone, and its export round-trips', async () => {
    const web = await exportText(t.deps.store, { project: 'web' });
    const lines = bodyLines(web).map((l) => JSON.parse(l));
    expect(lines.every((l) => (l.type === 'project' ? l.slug === 'web' : l.project === 'web'))).toBe(true);
    expect(lines.filter((l) => l.type === 'seen_event').length).toBeGreaterThan(0);
    expect(bodyLines(web)).toEqual(
      bodyLines(file).filter((l) => JSON.parse(l).project === 'web' || JSON.parse(l).slug === 'web'),
    );
    const empty = await emptyStore(source);
    try {
      await importText(empty.store, web);
      expect(bodyLines(await exportText(empty.store))).toEqual(bodyLines(web));
    } finally {
      await empty.close();
    }
  }, 60_000);

  it('a project whose id or DSN key is taken in the target gets new ones, named on standard error', async () => {
    const target = await emptyStore(source);
    try {
      const demo = bodyLines(file)
        .map((l) => JSON.parse(l))
        .find((l) => l.type === 'project' && l.slug === 'demo');
      await target.store.db
        .insertInto('projects')
        .values({
          id: demo.id,
          slug: 'squatter',
          name: 'squatter',
          platform: 'other',
          dsn_key: demo.dsn_key,
          sample_keep_first: 1,
          sample_rate: 1,
          daily_quota: 0,
          created_at: 0,
        })
        .execute();
      const notices: string[] = [];
      const summary = await importText(target.store, file, { notice: (m) => notices.push(m) });
      expect(summary.problems).toEqual([]);
      const moved = await target.store.db
        .selectFrom('projects')
        .selectAll()
        .where('slug', '=', 'demo')
        .executeTakeFirstOrThrow();
      expect(Number(moved.id)).not.toBe(demo.id);
      expect(moved.dsn_key).not.toBe(demo.dsn_key);
      // demo takes the next free id, which is web's, so web moves on too.
      const web = await target.store.db
        .selectFrom('projects')
        .selectAll()
        .where('slug', '=', 'web')
        .executeTakeFirstOrThrow();
      expect(notices).toEqual([
        `project "demo": id ${demo.id} is taken here, so it was created as id ${moved.id}; its DSN now ends in /${moved.id}`,
        `project "demo": its DSN key is used by another project here, so it got a new one (${moved.dsn_key})`,
        `project "web": id ${moved.id} is taken here, so it was created as id ${web.id}; its DSN now ends in /${web.id}`,
      ]);
      // Everything else arrived as it was.
      const projectLine = (l: string) => l.startsWith('{"type":"project"');
      const after = bodyLines(await exportText(target.store)).filter((l) => !projectLine(l));
      expect(after.sort()).toEqual(
        bodyLines(file)
          .filter((l) => !projectLine(l))
          .sort(),
      );
      // A project created afterwards through the store gets a free id on both databases.
      const next = await target.store.db
        .insertInto('projects')
        .values({
          slug: 'later',
          name: 'later',
          platform: 'other',
          dsn_key: 'k-later',
          sample_keep_first: 1,
          sample_rate: 1,
          daily_quota: 0,
          created_at: 0,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      expect(Number(next.id)).toBeGreaterThan(Number(moved.id));
    } finally {
      await target.close();
    }
  }, 60_000);

  it('the imported instance answers the read API as the source does, and SDKs keep their DSN', async () => {
    const target = await startTestServer(source, { clock: new ManualClock(t.clock.now()) });
    try {
      await importText(target.deps.store, file);
      for (const path of [
        '/api/projects',
        '/api/projects/demo/issues?days=30',
        '/api/projects/demo/overview?days=7',
        '/api/projects/demo/releases?days=7',
        '/api/projects/web/events',
      ]) {
        const [a, b] = await Promise.all([t.api(path), target.api(path)]);
        expect(b.status, path).toBe(200);
        const [ja, jb] = [await a.json(), await b.json()];
        expect(strip(jb), path).toEqual(strip(ja));
      }
      const demo = (await (await t.api('/api/projects/demo/events?limit=5')).json()) as {
        events: { event_id: string }[];
      };
      for (const e of demo.events) {
        const [a, b] = await Promise.all([
          t.api(`/api/projects/demo/events/${e.event_id}`),
          target.api(`/api/projects/demo/events/${e.event_id}`),
        ]);
        expect(strip(await b.json())).toEqual(strip(await a.json()));
      }

      // The DSN from the source works on the target; a resent imported event is a duplicate.
      const project = await target.deps.store.db
        .selectFrom('projects')
        .selectAll()
        .where('slug', '=', 'demo')
        .executeTakeFirstOrThrow();
      const sourceProject = await t.deps.store.db
        .selectFrom('projects')
        .selectAll()
        .where('slug', '=', 'demo')
        .executeTakeFirstOrThrow();
      expect([project.id, project.dsn_key]).toEqual([sourceProject.id, sourceProject.dsn_key]);
      const before = await target.deps.store.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      const resend = await post(
        target,
        project,
        envelope({}, [
          {
            type: 'event',
            payload: { ...errorEvent({ timestamp: t.clock.now() }), event_id: demo.events[0].event_id },
          },
        ]),
      );
      expect(resend.status).toBe(200);
      const fresh = await post(
        target,
        project,
        envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now(), type: 'MovedError' }) }]),
      );
      expect(fresh.status).toBe(200);
      const after = await target.deps.store.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n) + 1);
    } finally {
      await target.close();
    }
  }, 60_000);

  it('exports one consistent state of a database that ingest writes to meanwhile', async () => {
    const reader = await openStore(t.database.url);
    const created = await t.api('/api/projects', {
      method: 'POST',
      json: { slug: 'busy', name: 'busy', platform: 'backend' },
    });
    expect(created.status).toBe(201);
    const busy = await t.deps.store.db
      .selectFrom('projects')
      .selectAll()
      .where('slug', '=', 'busy')
      .executeTakeFirstOrThrow();
    let running = true;
    let sent = 0;
    const sender = (async () => {
      while (running) {
        const event = errorEvent({ timestamp: t.clock.now(), type: `BusyError${sent}` });
        expect(
          (await post(t, busy, envelope({ event_id: event.event_id }, [{ type: 'event', payload: event }]))).status,
        ).toBe(200);
        sent++;
      }
    })();
    try {
      while (sent === 0) await new Promise((r) => setTimeout(r, 5));
      const before = sent;
      // Small pages make the export long enough for ingest to add issues and events behind it.
      const text = await exportText(reader, { pageRows: 3 });
      running = false;
      await sender;
      expect(sent).toBeGreaterThan(before);
      const lines = bodyLines(text).map((l) => JSON.parse(l));
      const issues = new Set(lines.filter((l) => l.type === 'issue').map((l) => `${l.project} ${l.fingerprint}`));
      expect(lines.filter((l) => l.type === 'event' && !issues.has(`${l.project} ${l.fingerprint}`))).toEqual([]);
      const exported = lines.filter((l) => l.type === 'event' && l.project === 'busy').length;
      expect(
        lines.filter((l) => l.type === 'issue' && l.project === 'busy').reduce((n, l) => n + l.event_count, 0),
      ).toBe(exported);
      const empty = await emptyStore(source);
      try {
        expect((await importText(empty.store, text)).problems).toEqual([]);
      } finally {
        await empty.close();
      }
    } finally {
      running = false;
      await sender;
      await reader.close();
    }
  }, 60_000);
});

/** Answers without the ids a database assigns itself (event and issue row ids are not moved) and the server's port. */
function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .filter(([k]) => !['id', 'issue_id', 'next_before', 'latest_event_id', 'oldest_event_id'].includes(k))
        .map(([k, v]) => [k, k === 'dsn' ? String(v).replace(/@[^/]+\//, '@host/') : strip(v)]),
    );
  }
  return value;
}
