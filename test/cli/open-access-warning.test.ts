// `serve` warns when it listens on an address reachable from the network with no
// API_KEYS (the defaults): the management API and the dashboard are then open to
// anyone who reaches it. Loopback addresses and set API keys give no warning.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isLoopbackHost, openAccessWarning } from '../../src/config.js';
import { ensureBuilt, startServe } from '../helpers/cli.js';

beforeAll(() => {
  ensureBuilt();
});

describe('openAccessWarning', () => {
  it('names the open address when no API key protects a non-loopback one', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.20', 'errors.example.com']) {
      expect(openAccessWarning({ host, apiKeys: [] }), host).toContain(`listening on ${host} with no API_KEYS`);
      expect(openAccessWarning({ host, apiKeys: ['k'] }), host).toBeNull();
    }
  });

  it('gives none for loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
      expect(openAccessWarning({ host, apiKeys: [] }), host).toBeNull();
    }
    for (const host of ['0.0.0.0', '::', '128.0.0.1', '127.0.0.1.example.com', '::ffff:10.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe('serve', () => {
  async function warnings(env: Record<string, string | undefined>): Promise<Record<string, any>[]> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-open-'));
    const serve = await startServe({
      env: { DATABASE_URL: `sqlite:${path.join(dir, 'f.db')}`, API_KEYS: undefined, ...env },
    });
    serve.signal('SIGTERM');
    expect(await serve.exited).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
    // pino's warn level is 40.
    return serve.lines.filter((l) => l.level === 40);
  }

  it('logs the warning when listening on 0.0.0.0 without API_KEYS', async () => {
    const found = await warnings({ HOST: '0.0.0.0' });
    expect(found).toHaveLength(1);
    expect(found[0].msg).toContain('listening on 0.0.0.0 with no API_KEYS');
    expect(found[0].host).toBe('0.0.0.0');
  });

  it('logs no warning on 127.0.0.1, nor on 0.0.0.0 with API_KEYS', async () => {
    expect(await warnings({ HOST: '127.0.0.1' })).toEqual([]);
    expect(await warnings({ HOST: '0.0.0.0', API_KEYS: 'a-key' })).toEqual([]);
  });
});
