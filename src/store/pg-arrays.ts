// PostgreSQL array literals ('{…}') for the array parameters of ingest's statements
// (`unnest($1::int8[], $2::text[], …)`). node-postgres turns a JS array parameter into
// the same text, but quotes every element and runs two regular expressions over it,
// numbers included: on a 100-event batch that is an eighth of the main thread's
// batch work on PostgreSQL (measured). Here numbers go unquoted and a string is
// scanned for the two characters that need a backslash only when it holds them.

export type PgArrayElement = 'int8' | 'float8' | 'text' | 'bytea';

function quoted(s: string): string {
  // Inside double quotes only `"` and `\` need escaping; commas, braces, blanks and
  // the word NULL are taken literally.
  return s.includes('"') || s.includes('\\') ? `"${s.replace(/["\\]/g, '\\$&')}"` : `"${s}"`;
}

function element(value: unknown, type: PgArrayElement): string {
  if (value === null || value === undefined) return 'NULL';
  if ((type === 'int8' || type === 'float8') && (typeof value === 'number' || typeof value === 'bigint'))
    return String(value);
  if (type === 'bytea' && value instanceof Uint8Array) {
    // `\\x…` unquoted: the array parser turns `\\` into `\`, leaving bytea's hex form.
    return `\\\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
  }
  // What node-postgres sends for other values: objects as JSON, the rest as text.
  return quoted(typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value));
}

/** The literal PostgreSQL reads back as these values, for a `$n::<type>[]` parameter. */
export function pgArrayLiteral(values: readonly unknown[], type: PgArrayElement): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    out += element(values[i], type);
  }
  return `${out}}`;
}
