// What an event's row may leave out because other rows hold it, and how readers get it
// back. The D1 ingest (src/ingest/d1-commit.ts) writes such rows, saving D1 about 120
// bytes per event; every reader of a row's title or tags goes through these functions,
// so the API, the dashboard and the export answer the same whichever edition stored it.
// - The title: most are the exception's type and message (`TypeError: x is undefined`),
//   which the row holds anyway in `error_type` and `message`; such a title is stored as ''
//   (a title normalisation never makes: an event without one is `<unlabeled event>`).
// - The tags: the event's `event_tags` rows hold them too (the tag filters' index); the
//   row's `tags` is then '' (no JSON text), and the tags are read from those rows in the
//   order they were inserted, the order of the JSON the row would have held.
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

/** The title as a row stores it: '' when it is `${errorType}: ${message}`, else the title. */
export function storedTitle(title: string, errorType: string, message: string): string {
  return errorType !== '' && title === `${errorType}: ${message}` ? '' : title;
}

/** An event row's title, made again when the row left it out (storedTitle). */
export function eventTitle(row: { title: string; error_type: string; message: string }): string {
  return row.title === '' && row.error_type !== '' ? `${row.error_type}: ${row.message}` : row.title;
}

/** A row's `tags` when its event_tags rows hold them (never valid JSON, so never a stored object). */
export const TAGS_IN_EVENT_TAGS = '';

/** Event ids per query (D1 binds at most 100 parameters). */
const IDS_PER_QUERY = 90;

/** Sets `tags` (JSON text) of the rows that left their tags to event_tags. */
export async function fillEventTags(
  db: Kysely<Database>,
  rows: { id: number | bigint; tags: string }[],
): Promise<void> {
  const wanted = rows.filter((r) => r.tags === TAGS_IN_EVENT_TAGS);
  if (wanted.length === 0) return;
  const byId = new Map<number, Record<string, string>>();
  const ids = [...new Set(wanted.map((r) => Number(r.id)))];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    // Only D1 writes such rows, so the order of insertion is SQLite's rowid.
    const found = await db
      .selectFrom('event_tags')
      .select(['event_id', 'key', 'value'])
      .where('event_id', 'in', ids.slice(i, i + IDS_PER_QUERY))
      .orderBy('event_id')
      .orderBy(sql`rowid`)
      .execute();
    for (const t of found) {
      const id = Number(t.event_id);
      let tags = byId.get(id);
      if (!tags) byId.set(id, (tags = {}));
      tags[t.key] = t.value;
    }
  }
  for (const r of wanted) r.tags = JSON.stringify(byId.get(Number(r.id)) ?? {});
}
