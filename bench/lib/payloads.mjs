// Benchmark request bodies: envelope templates shaped like what @sentry/node sends
// (one event per envelope, or one session update), with slots the generators fill
// per request so every event has a fresh event_id (the server dedupes resends) and
// the fingerprint, release, user and time vary. Both generators (the wrk Lua script
// and bench/loadgen.mjs) read the same template file and fill slots the same way.
//
// Slots: @@E@@ event id / @@S@@ session id (32 hex, unique per request),
// @@F@@ fingerprint index, @@Y@@ exception type (a function of the index, so the
// index alone decides the fingerprint), @@R@@ release, @@U@@ user number,
// @@T@@ event time in epoch seconds.
import fs from 'node:fs';

export const TEMPLATE_FORMAT = 'faultline-bench-templates 1';

export const EXCEPTION_TYPES = [
  'TypeError',
  'RangeError',
  'ReferenceError',
  'SyntaxError',
  'Error',
  'ValidationError',
  'DatabaseError',
  'TimeoutError',
  'NotFoundError',
  'AuthError',
  'ConnectionResetError',
  'PaymentDeclinedError',
  'QuotaExceededError',
  'ParseError',
  'ConfigError',
  'CacheMissError',
  'RateLimitError',
  'SerializationError',
  'PermissionDeniedError',
  'UnknownStateError',
];

export const RELEASES = Array.from({ length: 10 }, (_, i) => `shop-api@2.${i}.0`);

/** 20 event templates: 14 of ~3 KB and 6 of ~20 KB (the 70/30 mix), cycled in order. */
export const EVENT_TEMPLATES = 20;
const LARGE_EVERY = [2, 5, 9, 12, 15, 18]; // template indexes that are large (6 of 20)
const SESSION_STATUSES = [
  { status: 'ok', init: true, errors: 0 },
  { status: 'exited', init: false, errors: 0 },
  { status: 'ok', init: true, errors: 1 },
  { status: 'exited', init: false, errors: 2 },
  { status: 'crashed', init: false, errors: 1 },
  { status: 'exited', init: true, errors: 0 },
  { status: 'abnormal', init: false, errors: 0 },
  { status: 'exited', init: false, errors: 0 },
];

const SDK = { name: 'sentry.javascript.node', version: '11.12.0' };
const INTEGRATIONS = [
  'EventFilters',
  'FunctionToString',
  'LinkedErrors',
  'Dedupe',
  'RequestData',
  'NodeSystemError',
  'Console',
  'Http',
  'NodeFetch',
  'OnUncaughtException',
  'OnUnhandledRejection',
  'ContextLines',
  'LocalVariablesAsync',
  'Context',
  'ChildProcess',
  'ProcessSession',
  'Modules',
  'Express',
];
const REGIONS = ['eu-west-1', 'us-east-1', 'ap-south-1', 'sa-east-1'];
const ROUTES = ['POST /api/orders', 'GET /api/cart', 'POST /api/checkout', 'GET /api/products/:id', 'PUT /api/profile'];

function contextLines(seed, count) {
  const lines = [];
  for (let i = 0; i < count; i++) {
    lines.push(`  const row${seed}_${i} = await repo.load(req.params.id, { retries: ${i % 4} });`);
  }
  return lines;
}

function vendorFrame(i, withContext) {
  const frame = {
    filename: `/srv/app/node_modules/express/lib/router/layer${i % 4}.js`,
    module: `express.lib.router:layer${i % 4}`,
    function: ['Layer.handle [as handle_request]', 'next', 'Route.dispatch', 'Function.process_params'][i % 4],
    lineno: 95 + i,
    colno: 5 + (i % 7),
    in_app: false,
  };
  if (withContext) {
    frame.pre_context = contextLines(i, 5);
    frame.context_line = `    fn(req, res, next); // layer ${i}`;
    frame.post_context = contextLines(i + 100, 5);
  }
  return frame;
}

/** The five innermost in-app frames: the same in every template, so only @@F@@ and @@Y@@ decide the fingerprint. */
function innermostInApp(withContext) {
  const spec = [
    ['/srv/app/src/server.mjs', 'server', 'handleRequest', 41],
    ['/srv/app/src/router.mjs', 'router', 'dispatch', 88],
    ['/srv/app/src/controllers/orders.mjs', 'controllers.orders', 'OrderController.create', 132],
    ['/srv/app/src/services/pricing.mjs', 'services.pricing', 'PricingService.quote', 57],
    ['/srv/app/src/lib/validate.mjs', 'lib.validate', 'validate@@F@@', 19],
  ];
  return spec.map(([filename, module, fn, lineno], i) => {
    const frame = { filename, module, function: fn, lineno, colno: 9 + i, in_app: true };
    if (withContext || i === spec.length - 1) {
      frame.pre_context = contextLines(lineno, withContext ? 5 : 3);
      frame.context_line = `  if (!schema.check(input)) throw new @@Y@@(\`cannot process item @@F@@\`);`;
      frame.post_context = contextLines(lineno + 1, withContext ? 5 : 3);
    }
    return frame;
  });
}

function breadcrumbs(count) {
  const out = [];
  for (let i = 0; i < count; i++) {
    out.push({
      timestamp: 1795268700 + i,
      category: i % 3 === 0 ? 'http' : 'console',
      level: 'info',
      ...(i % 3 === 0
        ? {
            type: 'http',
            data: {
              method: 'GET',
              url: `http://inventory.internal:8080/api/stock/${1000 + i}?include=warehouses`,
              status_code: 200,
            },
          }
        : { message: `loaded ${i * 7} rows from orders_${i} in ${i + 3}ms (cache miss, shard ${i % 5})` }),
    });
  }
  return out;
}

function eventTemplate(index, nowIso) {
  const large = LARGE_EVERY.includes(index);
  const crash = index === 7; // 1 in 20 events is unhandled
  const frames = [];
  frames.push({
    filename: 'node:internal/process/task_queues',
    module: 'task_queues',
    function: 'process.processTicksAndRejections',
    lineno: 95,
    colno: 5,
    in_app: false,
  });
  if (large) {
    for (let i = 0; i < 10; i++) frames.push(vendorFrame(i, true));
  } else {
    frames.push(vendorFrame(0, false), vendorFrame(1, false));
  }
  frames.push(...innermostInApp(large));
  const event = {
    exception: {
      values: [
        {
          type: '@@Y@@',
          value: 'cannot process item @@F@@: expected an object with a numeric quantity',
          stacktrace: { frames },
          mechanism: crash ? { type: 'onuncaughtexception', handled: false } : { type: 'generic', handled: true },
        },
      ],
    },
    event_id: '@@E@@',
    level: crash ? 'fatal' : index % 5 === 4 ? 'warning' : 'error',
    platform: 'node',
    transaction: ROUTES[index % ROUTES.length],
    contexts: {
      trace: { trace_id: 'fb8d646ddfc145f386a844658c646e3c', span_id: '81f56ecc8377ed1d' },
      runtime: { name: 'node', version: 'v20.20.2' },
      app: { app_start_time: nowIso, app_memory: 120537088 },
      os: { kernel_version: '6.1.0-18-amd64', name: 'Debian', version: index % 2 ? '12.5' : '12.11' },
      device: {
        arch: 'x64',
        memory_size: 25276502016,
        free_memory: 24806260736,
        processor_count: 2,
        cpu_description: 'AMD EPYC',
      },
      culture: { locale: 'en-US', timezone: 'UTC' },
    },
    server_name: `web-${index % 4}`,
    tags: { region: REGIONS[index % REGIONS.length], customer: 'c@@F@@' },
    user: { id: 'user-@@U@@', ip_address: '10.1.2.3' },
    timestamp: '@@T@@',
    environment: index % 4 === 3 ? 'staging' : 'production',
    release: '@@R@@',
    sdk: { integrations: INTEGRATIONS, ...SDK, packages: [{ name: 'npm:@sentry/node', version: SDK.version }] },
  };
  if (large) {
    event.breadcrumbs = { values: breadcrumbs(24) };
    event.request = {
      method: 'POST',
      url: 'https://shop.example.com/api/orders?expand=items',
      headers: {
        'user-agent':
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
        accept: 'application/json',
      },
    };
    event.extra = {
      cart: Array.from({ length: 12 }, (_, i) => ({ sku: `SKU-${10000 + i}`, quantity: i % 3, price_cents: 1999 + i })),
    };
  }
  const header = {
    event_id: '@@E@@',
    sent_at: nowIso,
    sdk: SDK,
    trace: {
      environment: event.environment,
      release: '@@R@@',
      public_key: 'benchkey',
      trace_id: 'fb8d646ddfc145f386a844658c646e3c',
    },
  };
  // The number slot is written as a bare number, as the SDK sends `timestamp`.
  return `${JSON.stringify(header)}\n{"type":"event"}\n${JSON.stringify(event).replace('"@@T@@"', '@@T@@')}`;
}

function sessionTemplate(index, nowIso) {
  const s = SESSION_STATUSES[index];
  const body = {
    sid: '@@S@@',
    did: 'user-@@U@@',
    init: s.init,
    started: nowIso,
    timestamp: nowIso,
    status: s.status,
    errors: s.errors,
    duration: 12.5,
    attrs: { release: '@@R@@', environment: 'production' },
  };
  return `${JSON.stringify({ sent_at: nowIso, sdk: SDK })}\n{"type":"session"}\n${JSON.stringify(body)}`;
}

export function buildTemplates(now = new Date()) {
  const nowIso = now.toISOString();
  return {
    events: Array.from({ length: EVENT_TEMPLATES }, (_, i) => eventTemplate(i, nowIso)),
    sessions: SESSION_STATUSES.map((_, i) => sessionTemplate(i, nowIso)),
  };
}

/** The file both generators read: a header, the slot vocabularies, then length-prefixed templates. */
export function writeTemplateFile(file, templates = buildTemplates()) {
  const parts = [TEMPLATE_FORMAT, `types ${EXCEPTION_TYPES.join(',')}`, `releases ${RELEASES.join(',')}`];
  let out = `${parts.join('\n')}\n`;
  for (const t of templates.events) out += `event ${Buffer.byteLength(t)}\n${t}\n`;
  for (const t of templates.sessions) out += `session ${Buffer.byteLength(t)}\n${t}\n`;
  fs.writeFileSync(file, out);
  return templates;
}

export function readTemplateFile(file) {
  const buf = fs.readFileSync(file);
  let pos = 0;
  const line = () => {
    const end = buf.indexOf(10, pos);
    const s = buf.subarray(pos, end).toString();
    pos = end + 1;
    return s;
  };
  if (line() !== TEMPLATE_FORMAT) throw new Error(`${file} is not a ${TEMPLATE_FORMAT} file`);
  const types = line().slice('types '.length).split(',');
  const releases = line().slice('releases '.length).split(',');
  const events = [];
  const sessions = [];
  while (pos < buf.length) {
    const [kind, len] = line().split(' ');
    const body = buf.subarray(pos, pos + Number(len)).toString();
    pos += Number(len) + 1;
    (kind === 'event' ? events : sessions).push(body);
  }
  return { types, releases, events, sessions };
}

function compile(template) {
  const pieces = template.split(/@@([A-Z])@@/);
  // Even indexes are literal text, odd ones slot letters.
  return pieces;
}

/**
 * Fills templates request by request, the same way bench/wrk/envelopes.lua does:
 * request n (1-based) is a session when n % sessionEvery == 0, else the next event.
 */
export function createFiller({
  templates,
  prefix,
  fingerprints,
  spreadSeconds = 0,
  users = 5000,
  sessionEvery = 10,
  offset = 0,
}) {
  if (!/^[0-9a-f]{16}$/.test(prefix)) throw new Error('prefix must be 16 hex characters');
  const events = templates.events.map(compile);
  const sessions = templates.sessions.map(compile);
  const { types, releases } = templates;
  let n = 0;
  let ec = offset;
  let sc = 0;
  // SDKs send random UUIDs, whose keys land all over the server's indexes; a counter's
  // would all sort together at one end. The counter's low 32 bits go through a
  // bijective multiply, so ids stay unique but consecutive ones land far apart
  // (envelopes.lua does the same).
  const hex8 = (x) => x.toString(16).padStart(8, '0');
  const id = (k) => prefix + hex8(Math.imul(k % 0x100000000, 0x9e3779b1) >>> 0) + hex8(Math.floor(k / 0x100000000));
  const fill = (pieces, slots) => {
    let out = pieces[0];
    for (let i = 1; i < pieces.length; i += 2) out += slots[pieces[i]] + pieces[i + 1];
    return out;
  };
  return {
    next() {
      n++;
      if (sessionEvery > 0 && n % sessionEvery === 0) {
        sc++;
        const slots = { S: id(n), U: String((sc * 13) % users), R: releases[Math.floor(sc / 7) % releases.length] };
        return { kind: 'session', body: fill(sessions[sc % sessions.length], slots) };
      }
      ec++;
      const f = (ec + Math.floor(ec / 20) * 3) % fingerprints;
      const nowS = Math.floor(Date.now() / 1000);
      const slots = {
        E: id(n),
        F: String(f),
        Y: types[f % types.length],
        R: releases[Math.floor(ec / 7) % releases.length],
        U: String((ec * 13) % users),
        T: String(spreadSeconds > 0 ? nowS - ((ec * 7919) % spreadSeconds) : nowS),
      };
      return { kind: 'event', body: fill(events[ec % events.length], slots) };
    },
  };
}
