// How long an assemble request waits for its assembly: up to `waitMs`, then `created`
// while the work goes on (the server edition, 20 s); with Infinity until the end, which
// is what the serverless edition uses, since a Worker's pending work is cancelled once it
// has answered (test/editions/workers/sentry-cli.test.ts runs the real uploads there, and
// test/editions/workers/runtime/symbols.test.ts checks the Worker's setting). SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { assembleOne, type AssembleContext, type AssembleJob } from '../../src/uploads/assemble.js';
import { symbolPortFor } from '../../src/uploads/symbols-adapter.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(dialects)('assemble wait (%s)', (dialect) => {
  let t: TestServer;
  let projectId: number;
  beforeAll(async () => {
    t = await startTestServer(dialect);
    projectId = Number(
      (await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'app', name: 'App' }, t.clock.now())).id,
    );
  });
  afterAll(async () => t?.close());

  /** A stored chunk and a job over it whose work ends when `finish` is called. */
  async function heldJob(name: string): Promise<{ job: AssembleJob; finish: () => void }> {
    const data = new TextEncoder().encode(name);
    const sha1 = createHash('sha1').update(data).digest('hex');
    await t.deps.store.db
      .insertInto('upload_chunks')
      .values({ sha1, size: data.byteLength, data, created_at: t.clock.now(), batch: null })
      .execute();
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const job: AssembleJob = {
      projectIds: [projectId],
      kind: 'dif',
      checksum: sha1,
      chunks: [sha1],
      name,
      async run() {
        await finished;
        return { result: { name }, fileIds: [] };
      },
    };
    return { job, finish };
  }
  const context = (waitMs: number): AssembleContext => ({
    db: t.deps.store.db,
    symbols: symbolPortFor(t.deps),
    now: () => t.clock.now(),
    waitMs,
  });

  it('answers created after waitMs and records the outcome when the work ends', async () => {
    const { job, finish } = await heldJob('slow-a');
    expect((await assembleOne(context(20), job)).state).toBe('created');
    finish();
    // The outcome is recorded after the work ends, in the background: ask until it is there.
    let answer = await assembleOne(context(20), job);
    for (let i = 0; i < 200 && answer.state !== 'ok'; i++) {
      await sleep(25);
      answer = await assembleOne(context(20), job);
    }
    expect(answer).toMatchObject({ state: 'ok', result: { name: 'slow-a' } });
  });

  it('with Infinity answers the outcome, however long the work takes', async () => {
    const { job, finish } = await heldJob('slow-b');
    const answer = assembleOne(context(Number.POSITIVE_INFINITY), job);
    // The work ends long after a 20 ms wait would have answered `created`.
    setTimeout(finish, 300);
    expect(await answer).toMatchObject({ state: 'ok', result: { name: 'slow-b' } });
  });
});
