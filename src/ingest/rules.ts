// The ingest rules described once, as data (docs/ingest-normalisation.md "The rules
// table"): the daily quota, sampling, regression, a session's class, the end of a
// snooze, and the hour bucket. Each decision is a condition over named facts; the
// planner (src/ingest/plan.ts) evaluates it in JavaScript, the D1 statement builder
// (src/ingest/d1-commit.ts) and the periodic snooze job render it to SQL with the column
// each fact is in. Neither executor restates a number or a comparison of these rules;
// test/ingest/rules-parity.test.ts runs one table of cases against both. Dedupe is
// structural (an event id counts once per project: first occurrence in a work, never
// again once seen) and is checked by the same table.
//
// Comparisons follow SQL's rendering: a comparison with a missing fact (null/undefined
// in JavaScript, NULL in SQL) is false, also under `not` (SQL: coalesce(a op b, false)).
import { HOUR_MS, hourBucket } from '../clock.js';

export { hourBucket };

/** A value in a condition: a named fact, a constant, or arithmetic on those. */
export type Operand =
  | { fact: string }
  | { value: number }
  /** A fact that may be missing, read as 0 (SQL: coalesce(x, 0)). */
  | { orZero: string }
  | { plus: [Operand, Operand] }
  | { minus: [Operand, Operand] };

export type Comparison = '<' | '<=' | '>' | '>=' | '=' | '<>';

/** A rule's condition: comparisons, membership, presence, and/or/not, and first-match cases. */
export type Condition =
  | { cmp: Comparison; left: Operand; right: Operand }
  | { fact: string; in: readonly string[] }
  | { fact: string; isNot: string }
  | { present: string }
  | { any: Condition[] }
  | { all: Condition[] }
  | { not: Condition }
  | { cases: { when: Condition; decide: Condition }[]; otherwise: Condition }
  | { always: boolean };

const fact = (name: string): Operand => ({ fact: name });
const value = (v: number): Operand => ({ value: v });

// ---------------------------------------------------------------------------
// The rules
// ---------------------------------------------------------------------------

/**
 * The daily quota: a work's new events are accepted when the project has no quota
 * (`quota` ≤ 0) or `used` (events counted today, UTC day of receipt) plus `fresh` (the
 * work's events not seen before) stays within it. A work over it is refused whole.
 */
export const QUOTA_ACCEPTS: Condition = {
  any: [
    { cmp: '<=', left: fact('quota'), right: value(0) },
    { cmp: '<=', left: { plus: [fact('used'), fact('fresh')] }, right: fact('quota') },
  ],
};

/**
 * Sampling: a crash is always stored, then the first `keepFirst` events of an issue
 * (`rank`: the event's place in the issue's event_count), then a `draw` in [0, 1)
 * against `rate`. The draw is read only when nothing before it decides.
 */
export const KEEPS_EVENT: Condition = {
  any: [
    { cmp: '=', left: fact('crash'), right: value(1) },
    { cmp: '<=', left: fact('rank'), right: fact('keepFirst') },
    { cmp: '>=', left: fact('rate'), right: value(1) },
    {
      all: [
        { cmp: '>', left: fact('rate'), right: value(0) },
        { cmp: '<', left: fact('draw'), right: fact('rate') },
      ],
    },
  ],
};

/**
 * Regression: an event reopens an issue resolved at `resolvedAt`. With a release, unless
 * the issue saw that release (`releaseFirstSeen`, missing when never) before the
 * resolution; without one, when the event (`ts`) is newer than the resolution.
 */
export const REGRESSES: Condition = {
  cases: [
    {
      when: { fact: 'release', isNot: '' },
      decide: { not: { cmp: '<', left: fact('releaseFirstSeen'), right: fact('resolvedAt') } },
    },
  ],
  otherwise: { cmp: '>', left: fact('ts'), right: fact('resolvedAt') },
};

/**
 * The end of a snooze (docs/api.md "Snoozing"): an `ignored` issue returns to
 * `unresolved` once its time has come (`now` ≥ ignore_until), or it has ignore_count more
 * events, or ignore_users more distinct users, than when it was snoozed. The first
 * condition set decides.
 */
export const SNOOZE_ENDED: Condition = {
  all: [
    { fact: 'status', in: ['ignored'] },
    {
      cases: [
        { when: { present: 'ignore_until' }, decide: { cmp: '>=', left: fact('now'), right: fact('ignore_until') } },
        {
          when: { present: 'ignore_count' },
          decide: {
            cmp: '>=',
            left: { minus: [fact('event_count'), { orZero: 'ignored_event_count' }] },
            right: fact('ignore_count'),
          },
        },
        {
          when: { present: 'ignore_users' },
          decide: {
            cmp: '>=',
            left: { minus: [fact('users'), { orZero: 'ignored_users' }] },
            right: fact('ignore_users'),
          },
        },
      ],
      otherwise: { always: false },
    },
  ],
};

export type SessionClass = 'none' | 'ok' | 'errored' | 'crashed';

/**
 * What a session counts as in `session_hourly`, the first class whose condition holds
 * (`unhandled` is crashed, any error errored), else `ok`.
 */
export const SESSION_CLASSES: readonly { class: Exclude<SessionClass, 'none' | 'ok'>; when: Condition }[] = [
  { class: 'crashed', when: { fact: 'status', in: ['crashed', 'unhandled'] } },
  {
    class: 'errored',
    when: {
      any: [
        { fact: 'status', in: ['errored', 'abnormal'] },
        { cmp: '>', left: fact('errors'), right: value(0) },
      ],
    },
  },
];

/** The hour buckets of every hourly table: the UTC hour an event or session started in. */
export const HOUR_BUCKET_MS = HOUR_MS;

// ---------------------------------------------------------------------------
// The JavaScript executor
// ---------------------------------------------------------------------------

/** Facts by name; a function is read only when the condition reaches it (sampling's draw). */
export type Facts = Record<string, unknown>;

function read(facts: Facts, name: string): unknown {
  const v = facts[name];
  return typeof v === 'function' ? (v as () => unknown)() : v;
}

type Predicate = (facts: Facts) => boolean;
type Value = (facts: Facts) => number | null;

/** An operand's number (comparisons are on numbers; a PostgreSQL bigint arrives as a string), null when missing. */
function compileOperand(o: Operand): Value {
  if ('value' in o) {
    const v = o.value;
    return () => v;
  }
  if ('fact' in o) {
    const name = o.fact;
    return (facts) => {
      const v = read(facts, name);
      return v === null || v === undefined ? null : Number(v);
    };
  }
  if ('orZero' in o) {
    const name = o.orZero;
    return (facts) => {
      const v = read(facts, name);
      return v === null || v === undefined ? 0 : Number(v);
    };
  }
  const plus = 'plus' in o;
  const [a, b] = (plus ? o.plus : o.minus).map(compileOperand);
  return (facts) => {
    const x = a(facts);
    if (x === null) return null;
    const y = b(facts);
    if (y === null) return null;
    return plus ? x + y : x - y;
  };
}

const COMPARE: Record<Comparison, (x: number, y: number) => boolean> = {
  '<': (x, y) => x < y,
  '<=': (x, y) => x <= y,
  '>': (x, y) => x > y,
  '>=': (x, y) => x >= y,
  '=': (x, y) => x === y,
  '<>': (x, y) => x !== y,
};

/**
 * `condition` as a JavaScript predicate, built once per rule (the planner calls it per
 * event): left to right, stopping as soon as it is decided.
 */
export function compile(condition: Condition): Predicate {
  if ('cmp' in condition) {
    const left = compileOperand(condition.left);
    const right = compileOperand(condition.right);
    const op = COMPARE[condition.cmp];
    return (facts) => {
      const x = left(facts);
      if (x === null) return false;
      const y = right(facts);
      return y !== null && op(x, y);
    };
  }
  if ('in' in condition) {
    const { fact: name, in: values } = condition;
    return (facts) => values.includes(String(read(facts, name)));
  }
  if ('isNot' in condition) {
    const { fact: name, isNot } = condition;
    return (facts) => {
      const v = read(facts, name);
      return v !== null && v !== undefined && String(v) !== isNot;
    };
  }
  if ('present' in condition) {
    const name = condition.present;
    return (facts) => {
      const v = read(facts, name);
      return v !== null && v !== undefined;
    };
  }
  if ('any' in condition) {
    const parts = condition.any.map(compile);
    return (facts) => parts.some((p) => p(facts));
  }
  if ('all' in condition) {
    const parts = condition.all.map(compile);
    return (facts) => parts.every((p) => p(facts));
  }
  if ('not' in condition) {
    const inner = compile(condition.not);
    return (facts) => !inner(facts);
  }
  if ('cases' in condition) {
    const cases = condition.cases.map((c) => ({ when: compile(c.when), decide: compile(c.decide) }));
    const otherwise = compile(condition.otherwise);
    return (facts) => {
      for (const c of cases) if (c.when(facts)) return c.decide(facts);
      return otherwise(facts);
    };
  }
  const always = condition.always;
  return () => always;
}

const compiled = new WeakMap<Condition, Predicate>();

/** Whether `condition` holds for `facts` (compiled on first use). */
export function holds(condition: Condition, facts: Facts): boolean {
  let predicate = compiled.get(condition);
  if (!predicate) {
    predicate = compile(condition);
    compiled.set(condition, predicate);
  }
  return predicate(facts);
}

const SESSION_PREDICATES = SESSION_CLASSES.map((c) => ({ class: c.class, when: compile(c.when) }));

/** The class of a session with `status` and `errors` (SESSION_CLASSES). */
export function sessionClass(status: string, errors: number): SessionClass {
  const facts = { status, errors };
  for (const c of SESSION_PREDICATES) if (c.when(facts)) return c.class;
  return 'ok';
}

// ---------------------------------------------------------------------------
// The SQL executor (SQLite's dialect, which D1 speaks; the snooze rule also PostgreSQL's)
// ---------------------------------------------------------------------------

/** The SQL text of each fact a condition reads. */
export type Columns = Record<string, string>;

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

function column(columns: Columns, name: string): string {
  const c = columns[name];
  if (c === undefined) throw new Error(`rules: no SQL column for the fact ${name}`);
  return c;
}

function operandSql(o: Operand, columns: Columns): string {
  if ('value' in o) return String(o.value);
  if ('fact' in o) return column(columns, o.fact);
  if ('orZero' in o) return `coalesce(${column(columns, o.orZero)}, 0)`;
  const [a, b] = 'plus' in o ? o.plus : o.minus;
  return `(${operandSql(a, columns)} ${'plus' in o ? '+' : '-'} ${operandSql(b, columns)})`;
}

/** `condition` as an SQL boolean expression over `columns`, with the JavaScript executor's meaning. */
export function toSql(condition: Condition, columns: Columns): string {
  if ('cmp' in condition)
    return `coalesce(${operandSql(condition.left, columns)} ${condition.cmp} ${operandSql(condition.right, columns)}, false)`;
  if ('in' in condition)
    return `coalesce(${column(columns, condition.fact)} IN (${condition.in.map(quote).join(', ')}), false)`;
  if ('isNot' in condition) return `coalesce(${column(columns, condition.fact)} <> ${quote(condition.isNot)}, false)`;
  if ('present' in condition) return `(${column(columns, condition.present)} IS NOT NULL)`;
  if ('any' in condition) return `(${condition.any.map((c) => toSql(c, columns)).join(' OR ')})`;
  if ('all' in condition) return `(${condition.all.map((c) => toSql(c, columns)).join(' AND ')})`;
  if ('not' in condition) return `(NOT ${toSql(condition.not, columns)})`;
  if ('cases' in condition) {
    const whens = condition.cases
      .map((c) => `WHEN ${toSql(c.when, columns)} THEN ${toSql(c.decide, columns)}`)
      .join(' ');
    return `(CASE ${whens} ELSE ${toSql(condition.otherwise, columns)} END)`;
  }
  return condition.always ? 'true' : 'false';
}

/** SESSION_CLASSES as an SQL CASE over the status and error count columns. */
export function sessionClassSql(status: string, errors: string): string {
  const columns = { status, errors };
  return `(CASE ${SESSION_CLASSES.map((c) => `WHEN ${toSql(c.when, columns)} THEN '${c.class}'`).join(' ')} ELSE 'ok' END)`;
}

/** hourBucket in SQL on a column of epoch milliseconds (integer division truncates toward zero: floor for times before 1970 too). */
export function hourBucketSql(ms: string): string {
  const h = HOUR_BUCKET_MS;
  return `(CASE WHEN ${ms} >= 0 THEN (${ms} / ${h}) * ${h} ELSE ((${ms} - ${h - 1}) / ${h}) * ${h} END)`;
}
