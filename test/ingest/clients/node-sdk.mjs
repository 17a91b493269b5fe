// A real @sentry/node client, run as a child process by test/ingest/sdk.test.ts
// (Sentry.init is process-global, so every scenario gets its own process).
// Usage: node node-sdk.mjs <scenario>; FAULTLINE_DSN names the server and project.
import http from 'node:http';
import * as Sentry from '@sentry/node';

const scenario = process.argv[2];
const dsn = process.env.FAULTLINE_DSN;
if (!dsn) throw new Error('FAULTLINE_DSN is not set');

const base = {
  dsn,
  release: process.env.FAULTLINE_RELEASE ?? 'sdk-test@1.0.0',
  environment: 'test',
  // Keep the process quiet and focused: no tracing, no default process session
  // unless a scenario asks for sessions.
  tracesSampleRate: 0,
  sendClientReports: false,
};

function failingCall(input) {
  // The same throw site for every call, so two calls must group together.
  return input.value.length;
}

function captureTypeError() {
  try {
    failingCall(undefined);
  } catch (err) {
    Sentry.captureException(err);
  }
}

async function done() {
  const ok = await Sentry.flush(10_000);
  if (!ok) {
    console.error('flush timed out');
    process.exit(3);
  }
}

switch (scenario) {
  case 'handled': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    Sentry.setUser({ id: 'user-1' });
    captureTypeError();
    captureTypeError();
    await done();
    break;
  }
  case 'message': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    Sentry.captureMessage('sdk test message 42', 'warning');
    await done();
    break;
  }
  case 'large': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    // Over 32 KiB so the transport gzips the body.
    Sentry.setExtra('padding', 'x'.repeat(48 * 1024));
    Sentry.captureException(new RangeError('large event'));
    await done();
    break;
  }
  case 'crash': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    setTimeout(() => {
      throw new Error('unhandled crash in child');
    }, 10);
    break;
  }
  case 'sessions': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    // One session that ends normally.
    Sentry.startSession({ user: { id: 'u1' } });
    Sentry.endSession();
    // One that crashes: an unhandled-mechanism exception marks it crashed.
    Sentry.startSession({ user: { id: 'u2' } });
    try {
      failingCall(undefined);
    } catch (err) {
      Sentry.captureException(err, { mechanism: { handled: false, type: 'test' } });
    }
    // The event marks the session crashed while it is processed; end it after that.
    await Sentry.flush(10_000);
    Sentry.endSession();
    await done();
    break;
  }
  case 'server': {
    Sentry.init({
      ...base,
      integrations: (defaults) => [
        ...defaults.filter((i) => i.name !== 'ProcessSession' && i.name !== 'Http'),
        Sentry.httpIntegration({ sessionFlushingDelayMS: 300 }),
      ],
    });
    const server = http.createServer((req, res) => {
      if (req.url === '/err') Sentry.captureException(new Error('request failed in handler'));
      res.end('ok');
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address();
    for (const path of ['/ok', '/ok', '/err', '/ok']) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      await res.text();
    }
    // Aggregates are flushed after the delay; give it time, then flush the transport.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    server.close();
    await done();
    break;
  }
  case 'chained': {
    Sentry.init({ ...base, integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession') });
    // The SDK lists the cause first, with exception_id/parent_id (linkedErrors).
    Sentry.captureException(new Error('outer', { cause: new TypeError('inner') }));
    await done();
    break;
  }
  case 'secrets': {
    // What apps and frameworks hand the SDK: the request as received (headers, cookies,
    // query string, form body), extra data and a message holding a card number. Recent
    // SDKs filter some request headers themselves; older ones and other languages' SDKs
    // send them as given, which the event processor stands for. No context lines: this
    // file's own source holds the secrets as literals.
    Sentry.init({
      ...base,
      integrations: (defaults) => defaults.filter((i) => i.name !== 'ProcessSession' && i.name !== 'ContextLines'),
    });
    Sentry.setUser({ id: 'secret-user', ip_address: '{{auto}}' });
    Sentry.setExtra('db_password', 'hunter2-extra');
    Sentry.setExtra('config', { stripe_api_key: 'sk_live_extra', region: 'eu' });
    Sentry.addEventProcessor((event) => ({
      ...event,
      request: {
        method: 'POST',
        url: 'https://shop.example/pay?token=query-secret&q=1',
        query_string: 'token=query-secret&q=1',
        headers: {
          Authorization: 'Bearer header-secret-token',
          Cookie: 'theme=dark; sessionid=cookie-secret',
          'X-Api-Key': 'apikey-secret',
          Accept: 'text/html',
        },
        cookies: { theme: 'dark', sessionid: 'cookie-secret' },
        data: 'user=bob&password=form-secret',
      },
    }));
    Sentry.captureException(new Error('charge failed for card 4111 1111 1111 1111'));
    await done();
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}
