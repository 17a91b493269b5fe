// Demo data for `faultline seed`: a week of a React Native shop app ("demo") as
// its SDKs would report it — JavaScript errors and native iOS/Android crashes
// across three releases rolling out, a pool of devices and users, daily traffic
// cycles, and release-health sessions. Pure and deterministic for a given seed;
// the CLI sends the envelopes built here through the real ingest path.
import { DAY_MS, HOUR_MS } from '../clock.js';

export const SEED_RELEASES = [
  'com.example.shop@1.0.0+100',
  'com.example.shop@1.1.0+110',
  'com.example.shop@1.2.0+120',
] as const;
type Release = (typeof SEED_RELEASES)[number];

/** When each release started rolling out, in days before now, and how widely it spreads. */
const ROLLOUT: Record<Release, { startDaysAgo: number; weight: number }> = {
  'com.example.shop@1.0.0+100': { startDaysAgo: 30, weight: 1 },
  'com.example.shop@1.1.0+110': { startDaysAgo: 4.5, weight: 4 },
  'com.example.shop@1.2.0+120': { startDaysAgo: 1.5, weight: 8 },
};

/** Crash rate of sessions per release: 1.2.0 crashes most (the lowest crash-free rate). */
const SESSION_CRASH_RATE: Record<Release, number> = {
  'com.example.shop@1.0.0+100': 0.015,
  'com.example.shop@1.1.0+110': 0.008,
  'com.example.shop@1.2.0+120': 0.035,
};

type Os = 'ios' | 'android';

interface Device {
  os: Os;
  model: string;
  family: string;
  manufacturer: string;
  osVersion: string;
  weight: number;
}

const DEVICES: Device[] = [
  { os: 'ios', model: 'iPhone15,2', family: 'iPhone', manufacturer: 'Apple', osVersion: '17.4.1', weight: 5 },
  { os: 'ios', model: 'iPhone14,5', family: 'iPhone', manufacturer: 'Apple', osVersion: '16.7.5', weight: 3 },
  { os: 'ios', model: 'iPhone16,1', family: 'iPhone', manufacturer: 'Apple', osVersion: '17.5', weight: 3 },
  { os: 'ios', model: 'iPad13,4', family: 'iPad', manufacturer: 'Apple', osVersion: '17.4.1', weight: 1 },
  { os: 'android', model: 'Pixel 7', family: 'Pixel', manufacturer: 'Google', osVersion: '14', weight: 3 },
  { os: 'android', model: 'SM-S911B', family: 'Galaxy S23', manufacturer: 'samsung', osVersion: '14', weight: 4 },
  { os: 'android', model: 'SM-A536B', family: 'Galaxy A53', manufacturer: 'samsung', osVersion: '13', weight: 3 },
  { os: 'android', model: 'Redmi Note 11', family: 'Redmi', manufacturer: 'Xiaomi', osVersion: '12', weight: 2 },
];

const SCREENS = ['HomeScreen', 'ProductScreen', 'CartScreen', 'CheckoutScreen', 'SearchScreen', 'ProfileScreen'];
const LOCALES = ['en-US', 'en-GB', 'de-DE', 'fr-FR', 'es-ES'];
const USER_POOL = 240;

interface Frame {
  [key: string]: unknown;
}

interface IssueTemplate {
  name: string;
  /** Relative frequency among events. */
  weight: number;
  os: Os | 'any';
  platform: 'javascript' | 'cocoa' | 'java';
  level: 'fatal' | 'error' | 'warning' | 'info';
  crash: boolean;
  releases: readonly Release[];
  screen: string;
  build(rand: Rng): { exception?: Record<string, unknown>; message?: string; debugImages?: Record<string, unknown>[] };
}

const ALL = SEED_RELEASES;
const IOS_IMAGE = {
  type: 'macho',
  debug_id: '6a8f3c2e-1b4d-3e5f-9a7b-2c1d0e9f8a7b',
  image_addr: '0x100000000',
  image_size: 8_388_608,
  code_file: '/private/var/containers/Bundle/Application/ShopApp.app/ShopApp',
  arch: 'arm64e',
};

function jsFrames(frames: Array<[string, string, number]>): Frame[] {
  // Caller first, the throwing frame last, as SDKs send them.
  return [
    {
      filename: 'node_modules/react-native/Libraries/Core/Timers/JSTimers.js',
      function: 'callTimers',
      lineno: 446,
      in_app: false,
    },
    {
      filename: 'node_modules/react/cjs/react.production.js',
      function: 'renderWithHooks',
      lineno: 1203,
      in_app: false,
    },
    ...frames.map(([filename, fn, lineno]) => ({
      filename: `app:///${filename}`,
      abs_path: `app:///${filename}`,
      function: fn,
      lineno,
      colno: 17,
      in_app: true,
    })),
  ];
}

function javaFrames(frames: Array<[string, string, string, number]>): Frame[] {
  return [
    { module: 'android.os.Looper', function: 'loop', filename: 'Looper.java', lineno: 288, in_app: false },
    { module: 'android.os.Handler', function: 'dispatchMessage', filename: 'Handler.java', lineno: 106, in_app: false },
    ...frames.map(([module, fn, filename, lineno]) => ({ module, function: fn, filename, lineno, in_app: true })),
  ];
}

function nativeFrames(frames: Array<[string, number]>): Frame[] {
  return [
    { function: 'start', package: '/usr/lib/system/libdyld.dylib', instruction_addr: '0x1a2b3c4d0', in_app: false },
    { function: 'UIApplicationMain', package: 'UIKitCore', instruction_addr: '0x18f2a1b30', in_app: false },
    ...frames.map(([fn, offset]) => ({
      function: fn,
      package: IOS_IMAGE.code_file,
      instruction_addr: `0x${(0x100000000 + offset).toString(16)}`,
      image_addr: IOS_IMAGE.image_addr,
      in_app: true,
    })),
  ];
}

const TEMPLATES: IssueTemplate[] = [
  {
    name: 'js-price-undefined',
    weight: 24,
    os: 'any',
    platform: 'javascript',
    level: 'error',
    crash: false,
    releases: ALL,
    screen: 'ProductScreen',
    build: () => ({
      exception: {
        type: 'TypeError',
        value: "Cannot read property 'price' of undefined",
        mechanism: { type: 'generic', handled: true },
        stacktrace: {
          frames: jsFrames([
            ['src/screens/ProductScreen.tsx', 'ProductScreen', 58],
            ['src/components/PriceTag.tsx', 'formatPrice', 21],
          ]),
        },
      },
    }),
  },
  {
    name: 'js-network-500',
    weight: 18,
    os: 'any',
    platform: 'javascript',
    level: 'error',
    crash: false,
    releases: ALL,
    screen: 'CartScreen',
    build: (rand) => ({
      exception: {
        type: 'AxiosError',
        value: `Request failed with status code ${rand.pick([500, 502, 503])}`,
        mechanism: { type: 'generic', handled: true },
        stacktrace: {
          frames: jsFrames([
            ['src/api/cart.ts', 'fetchCart', 34],
            ['src/api/client.ts', 'request', 88],
          ]),
        },
      },
    }),
  },
  {
    name: 'js-unhandled-rejection',
    weight: 3,
    os: 'any',
    platform: 'javascript',
    level: 'fatal',
    crash: true,
    releases: ['com.example.shop@1.1.0+110', 'com.example.shop@1.2.0+120'],
    screen: 'CheckoutScreen',
    build: () => ({
      exception: {
        type: 'Error',
        value: 'Payment session expired before confirmation',
        mechanism: { type: 'onunhandledrejection', handled: false },
        stacktrace: {
          frames: jsFrames([
            ['src/checkout/usePayment.ts', 'confirmPayment', 112],
            ['src/checkout/session.ts', 'assertActive', 19],
          ]),
        },
      },
    }),
  },
  {
    name: 'payment-warning',
    weight: 10,
    os: 'any',
    platform: 'javascript',
    level: 'warning',
    crash: false,
    releases: ALL,
    screen: 'CheckoutScreen',
    build: (rand) => ({ message: `Payment provider answered slowly (${rand.int(2000, 9000)} ms)` }),
  },
  {
    name: 'ios-bad-access',
    weight: 4,
    os: 'ios',
    platform: 'cocoa',
    level: 'fatal',
    crash: true,
    releases: ALL,
    screen: 'CheckoutScreen',
    build: () => ({
      exception: {
        type: 'EXC_BAD_ACCESS',
        value: 'KERN_INVALID_ADDRESS at 0x0000000000000010',
        mechanism: {
          type: 'mach',
          handled: false,
          meta: {
            signal: { number: 11, name: 'SIGSEGV' },
            mach_exception: { exception: 1, code: 1, subcode: 16, name: 'EXC_BAD_ACCESS' },
          },
        },
        stacktrace: {
          frames: nativeFrames([
            ['-[RNPaymentSheet present:]', 0x4f10],
            ['-[PaymentSheetController configureWithIntent:]', 0x5a3c],
          ]),
        },
      },
      debugImages: [IOS_IMAGE],
    }),
  },
  {
    name: 'ios-index-out-of-range',
    weight: 3,
    os: 'ios',
    platform: 'cocoa',
    level: 'fatal',
    crash: true,
    // Fixed in 1.2.0.
    releases: ['com.example.shop@1.0.0+100', 'com.example.shop@1.1.0+110'],
    screen: 'SearchScreen',
    build: () => ({
      exception: {
        type: 'EXC_BREAKPOINT',
        value: 'Fatal error: Index out of range',
        mechanism: { type: 'mach', handled: false, meta: { signal: { number: 5, name: 'SIGTRAP' } } },
        stacktrace: {
          frames: nativeFrames([
            ['SearchResultsDataSource.collectionView(_:cellForItemAt:)', 0x8c20],
            ['Array.subscript.getter', 0x9110],
          ]),
        },
      },
      debugImages: [IOS_IMAGE],
    }),
  },
  {
    name: 'android-npe',
    weight: 4,
    os: 'android',
    platform: 'java',
    level: 'fatal',
    crash: true,
    releases: ALL,
    screen: 'CartScreen',
    build: () => ({
      exception: {
        type: 'NullPointerException',
        module: 'java.lang',
        value: "Attempt to invoke virtual method 'int java.lang.String.length()' on a null object reference",
        mechanism: { type: 'UncaughtExceptionHandler', handled: false },
        stacktrace: {
          frames: javaFrames([
            ['com.example.shop.cart.CartAdapter', 'onBindViewHolder', 'CartAdapter.kt', 64],
            ['com.example.shop.cart.CartItemView', 'bindQuantity', 'CartItemView.kt', 41],
          ]),
        },
      },
    }),
  },
  {
    name: 'android-fragment-not-attached',
    weight: 8,
    os: 'android',
    platform: 'java',
    level: 'fatal',
    crash: true,
    // The new crash 1.2.0 brings (a new issue of that release; nothing is resolved, so no regression).
    releases: ['com.example.shop@1.2.0+120'],
    screen: 'ProfileScreen',
    build: () => ({
      exception: {
        type: 'IllegalStateException',
        module: 'java.lang',
        value: 'Fragment ProfileFragment{3f2a9c1} not attached to a context.',
        mechanism: { type: 'UncaughtExceptionHandler', handled: false },
        stacktrace: {
          frames: javaFrames([
            ['com.example.shop.profile.ProfileFragment', 'onAvatarLoaded', 'ProfileFragment.kt', 133],
            ['androidx.fragment.app.Fragment', 'requireContext', 'Fragment.java', 972],
          ]),
        },
      },
    }),
  },
  {
    name: 'android-socket-timeout',
    weight: 10,
    os: 'android',
    platform: 'java',
    level: 'error',
    crash: false,
    releases: ALL,
    screen: 'HomeScreen',
    build: () => ({
      exception: {
        type: 'SocketTimeoutException',
        module: 'java.net',
        value: 'timeout',
        mechanism: { type: 'generic', handled: true },
        stacktrace: {
          frames: javaFrames([
            ['com.example.shop.api.ApiClient', 'get', 'ApiClient.kt', 77],
            ['okhttp3.internal.connection.RealCall', 'execute', 'RealCall.kt', 154],
          ]),
        },
      },
    }),
  },
  {
    name: 'login-info',
    weight: 5,
    os: 'any',
    platform: 'javascript',
    level: 'info',
    crash: false,
    releases: ALL,
    screen: 'ProfileScreen',
    build: () => ({ message: 'User signed in with an expired refresh token; asked to log in again' }),
  },
];

/** mulberry32: small, fast, good enough for demo data; deterministic per seed. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
  weighted<T>(items: readonly T[], weight: (item: T) => number): T {
    const total = items.reduce((s, i) => s + weight(i), 0);
    let r = this.next() * total;
    for (const item of items) {
      r -= weight(item);
      if (r < 0) return item;
    }
    return items[items.length - 1];
  }
  /** Poisson-distributed count (Knuth; fine for the small means used here). */
  poisson(mean: number): number {
    const limit = Math.exp(-mean);
    let k = 0;
    let p = 1;
    do {
      k++;
      p *= this.next();
    } while (p > limit);
    return k - 1;
  }
  hex(chars: number): string {
    let out = '';
    while (out.length < chars)
      out += Math.floor(this.next() * 0x10000)
        .toString(16)
        .padStart(4, '0');
    return out.slice(0, chars);
  }
}

/** Traffic through the day (UTC): quiet at night, busy in the afternoon. */
function diurnal(ms: number): number {
  const hour = new Date(ms).getUTCHours() + new Date(ms).getUTCMinutes() / 60;
  return 1 + 0.7 * Math.sin(((hour - 8) / 24) * 2 * Math.PI);
}

function releaseAt(rand: Rng, ms: number, now: number, allowed: readonly Release[] = SEED_RELEASES): Release | null {
  const ageDays = (now - ms) / DAY_MS;
  const weights = allowed.map((r) => {
    const { startDaysAgo, weight } = ROLLOUT[r];
    const sinceStart = startDaysAgo - ageDays;
    if (sinceStart < 0) return 0;
    // Adoption grows over about two days after a release starts rolling out.
    return weight * Math.min(1, 0.1 + sinceStart / 2);
  });
  if (weights.every((w) => w === 0)) return null;
  return rand.weighted(
    allowed.map((r, i) => ({ r, w: weights[i] })),
    (x) => x.w,
  ).r;
}

function device(rand: Rng, os: Os | 'any'): Device {
  const pool = os === 'any' ? DEVICES : DEVICES.filter((d) => d.os === os);
  return rand.weighted(pool, (d) => d.weight);
}

function userId(rand: Rng): string {
  return `user-${String(rand.int(1, USER_POOL)).padStart(4, '0')}`;
}

function sdkFor(platform: IssueTemplate['platform']): { name: string; version: string } {
  if (platform === 'cocoa') return { name: 'sentry.cocoa', version: '8.36.0' };
  if (platform === 'java') return { name: 'sentry.java.android', version: '7.14.0' };
  return { name: 'sentry.javascript.react-native', version: '5.33.1' };
}

function contexts(d: Device, release: Release) {
  const [, version] = release.split('@');
  const [appVersion, build] = version.split('+');
  return {
    device: { model: d.model, family: d.family, manufacturer: d.manufacturer, simulator: false },
    os: { name: d.os === 'ios' ? 'iOS' : 'Android', version: d.osVersion },
    app: { app_identifier: 'com.example.shop', app_name: 'Shop', app_version: appVersion, app_build: build },
  };
}

function breadcrumbs(rand: Rng, ts: number, screen: string) {
  const crumbs = [];
  const from = rand.pick(SCREENS.filter((s) => s !== screen));
  crumbs.push({
    timestamp: (ts - 45_000) / 1000,
    type: 'navigation',
    category: 'navigation',
    data: { from: 'HomeScreen', to: from },
  });
  crumbs.push({
    timestamp: (ts - 20_000) / 1000,
    type: 'navigation',
    category: 'navigation',
    data: { from, to: screen },
  });
  crumbs.push({
    timestamp: (ts - 8_000) / 1000,
    type: 'http',
    category: 'xhr',
    data: { method: 'GET', url: 'https://api.example.com/v2/cart', status_code: 200 },
  });
  crumbs.push({ timestamp: (ts - 1_500) / 1000, type: 'user', category: 'ui.click', message: `${screen} > Button` });
  return { values: crumbs };
}

export interface SeedOptions {
  /** "Now": the end of the seeded week (ms). */
  now: number;
  seed: number;
  days?: number;
  /** Mean events per hour at average traffic. */
  eventsPerHour?: number;
  /** Mean sessions per hour at average traffic. */
  sessionsPerHour?: number;
}

export interface SeedEnvelope {
  kind: 'events' | 'sessions';
  /** The envelope body. */
  body: string;
  items: number;
}

export interface SeedPlan {
  envelopes: SeedEnvelope[];
  events: number;
  crashes: number;
  sessions: number;
  crashedSessions: number;
  releases: string[];
}

/** Items per envelope; events stay within the server's 100-per-envelope limit. */
const BATCH = 100;

export function buildSeedPlan(options: SeedOptions): SeedPlan {
  const rand = new Rng(options.seed);
  const days = options.days ?? 7;
  const now = options.now;
  const start = now - days * DAY_MS;
  const eventsPerHour = options.eventsPerHour ?? 4;
  const sessionsPerHour = options.sessionsPerHour ?? 12;

  const events: Record<string, unknown>[] = [];
  const sessions: Record<string, unknown>[] = [];
  let crashes = 0;
  let crashedSessions = 0;
  const releasesSeen = new Set<string>();

  // Hour by hour, oldest first; the last (partial) hour stops a minute before now.
  for (let hour = start; hour < now; hour += HOUR_MS) {
    const span = Math.min(HOUR_MS, now - 60_000 - hour);
    if (span <= 0) break;
    const factor = diurnal(hour);

    for (let n = rand.poisson(eventsPerHour * factor); n > 0; n--) {
      const ts = hour + Math.floor(rand.next() * span);
      const template = rand.weighted(TEMPLATES, (t) => t.weight);
      const release = releaseAt(rand, ts, now, template.releases);
      if (!release) continue;
      const d = device(rand, template.os);
      const built = template.build(rand);
      const event: Record<string, unknown> = {
        event_id: rand.hex(32),
        timestamp: ts / 1000,
        platform: template.platform,
        level: template.level,
        release,
        dist: release.split('+')[1],
        environment: 'production',
        transaction: template.screen,
        user: { id: userId(rand) },
        tags: {
          locale: rand.pick(LOCALES),
          'os.name': d.os === 'ios' ? 'iOS' : 'Android',
          device_class: rand.pick(['high', 'medium', 'low']),
        },
        contexts: contexts(d, release),
        breadcrumbs: breadcrumbs(rand, ts, template.screen),
        sdk: sdkFor(template.platform),
      };
      if (built.exception) event.exception = { values: [built.exception] };
      if (built.message) event.message = built.message;
      if (built.debugImages) event.debug_meta = { images: built.debugImages };
      events.push(event);
      releasesSeen.add(release);
      if (template.crash) crashes++;
    }

    for (let n = rand.poisson(sessionsPerHour * factor); n > 0; n--) {
      const started = hour + Math.floor(rand.next() * span);
      const release = releaseAt(rand, started, now);
      if (!release) continue;
      const durationS = rand.int(20, 900);
      const ended = Math.min(started + durationS * 1000, now - 30_000);
      const r = rand.next();
      const crashRate = SESSION_CRASH_RATE[release];
      let status = 'exited';
      let errors = 0;
      if (r < crashRate) {
        status = 'crashed';
        errors = 1;
        crashedSessions++;
      } else if (r < crashRate + 0.003) {
        status = 'abnormal';
      } else if (r < crashRate + 0.05) {
        errors = rand.int(1, 3);
      }
      sessions.push({
        sid: rand.hex(32),
        did: userId(rand),
        init: true,
        started: new Date(started).toISOString(),
        timestamp: new Date(ended).toISOString(),
        duration: Math.max(0, (ended - started) / 1000),
        status,
        errors,
        attrs: { release, environment: 'production' },
      });
      releasesSeen.add(release);
    }
  }

  const envelopes: SeedEnvelope[] = [];
  for (let i = 0; i < events.length; i += BATCH) {
    const batch = events.slice(i, i + BATCH);
    const lines = [JSON.stringify({ sdk: { name: 'faultline.seed', version: '1' } })];
    for (const e of batch) lines.push('{"type":"event"}', JSON.stringify(e));
    envelopes.push({ kind: 'events', body: lines.join('\n'), items: batch.length });
  }
  for (let i = 0; i < sessions.length; i += BATCH) {
    const batch = sessions.slice(i, i + BATCH);
    const lines = [JSON.stringify({ sdk: { name: 'faultline.seed', version: '1' } })];
    for (const s of batch) lines.push('{"type":"session"}', JSON.stringify(s));
    envelopes.push({ kind: 'sessions', body: lines.join('\n'), items: batch.length });
  }

  return {
    envelopes,
    events: events.length,
    crashes,
    sessions: sessions.length,
    crashedSessions,
    releases: SEED_RELEASES.filter((r) => releasesSeen.has(r)),
  };
}
