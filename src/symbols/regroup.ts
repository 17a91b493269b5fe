// What re-symbolication changes about issues (docs/api.md "Symbols", "Re-symbolication
// and issues"): an issue whose title, type and location came from frames symbolicated
// only now takes the symbolicated ones; and when the symbolicated frames group an event
// under another fingerprint, that fingerprint joins the event's issue: mapped to it when
// no issue has it, or, when one does (the issue the next crash opened once symbols were
// there), the two issues are merged, the younger into the older. Events stay in their
// issue; the one crash ends as one issue whatever came first, the upload or the next
// crash.
import type { CompiledQuery, Kysely } from 'kysely';
import { chunks } from '../store/dialect.js';
import { mapFingerprint, mergedChange, mergedIssueId, mergeStatements } from '../store/issue-merges.js';
import type { Database } from '../store/schema.js';

type Db = Kysely<Database>;

/** What an event's issue showed of it, and what the event shows symbolicated. */
export interface EventFields {
  title: string;
  errorType: string;
  location: string;
}

/** A re-symbolicated event: its issue, its time, its fields before and after, and its new fingerprint. */
export interface RegroupedEvent {
  issueId: number;
  timestamp: number;
  before: EventFields;
  after: EventFields & { fingerprint: string };
}

interface IssueFacts {
  id: number;
  fingerprint: string;
  title: string;
  error_type: string;
  location: string;
  first_seen: number;
}

const FACT_COLUMNS = ['id', 'fingerprint', 'title', 'error_type', 'location', 'first_seen'] as const;

function facts(row: {
  id: number;
  fingerprint: string;
  title: string;
  error_type: string;
  location: string;
  first_seen: number;
}): IssueFacts {
  return { ...row, id: Number(row.id), first_seen: Number(row.first_seen) };
}

const sameFields = (a: EventFields, b: EventFields) =>
  a.title === b.title && a.errorType === b.errorType && a.location === b.location;

/** The older of two issues (first seen earlier; ties: the one created first), which a merge keeps. */
function older(a: IssueFacts, b: IssueFacts): boolean {
  return a.first_seen < b.first_seen || (a.first_seen === b.first_seen && a.id < b.id);
}

/**
 * The statements that bring the issues of `events` (one project's) in line with their
 * symbolicated frames, read through `reader` (the transaction they run in, or on D1 the
 * database the batch then commits to). Titles first, so that a merge takes the fields
 * of the latest event already symbolicated.
 */
export async function regroupStatements(
  reader: Db,
  projectId: number,
  events: RegroupedEvent[],
  now: number,
): Promise<CompiledQuery[]> {
  if (events.length === 0) return [];
  const issues = new Map<number, IssueFacts>();
  const ids = [...new Set(events.map((e) => e.issueId))];
  // Parts within D1's 100 parameters a statement.
  for (const part of chunks(ids, 90)) {
    for (const row of await reader
      .selectFrom('issues')
      .select([...FACT_COLUMNS])
      .where('id', 'in', part)
      .execute())
      issues.set(Number(row.id), facts(row));
  }
  const statements: CompiledQuery[] = [];

  // 1. An issue that shows what one of these events showed before shows what the latest such event shows now.
  for (const issue of issues.values()) {
    const shown = { title: issue.title, errorType: issue.error_type, location: issue.location };
    let latest: RegroupedEvent | undefined;
    for (const e of events) {
      if (e.issueId !== issue.id || !sameFields(e.before, shown) || sameFields(e.after, shown)) continue;
      if (!latest || e.timestamp > latest.timestamp) latest = e;
    }
    if (!latest) continue;
    const { title, errorType, location } = latest.after;
    statements.push(
      reader
        .updateTable('issues')
        .set({ title, error_type: errorType, location })
        // Unless an event that came meanwhile changed them.
        .where('id', '=', issue.id)
        .where('title', '=', issue.title)
        .where('error_type', '=', issue.error_type)
        .where('location', '=', issue.location)
        .compile(),
    );
    Object.assign(issue, { title, error_type: errorType, location });
  }

  // 2. Fingerprints the symbolicated frames give that differ from the issue's.
  const mergedInto = new Map<number, number>();
  const survivor = (id: number) => {
    while (mergedInto.has(id)) id = mergedInto.get(id)!;
    return issues.get(id)!;
  };
  // Fingerprints this plan gave an issue already (mapped or merged), with that issue.
  const planned = new Map<string, number>();
  for (const e of events) {
    const fingerprint = e.after.fingerprint;
    if (!issues.has(e.issueId)) continue;
    const own = survivor(e.issueId);
    if (own.fingerprint === fingerprint) continue;
    let found: IssueFacts | undefined;
    const known = planned.get(fingerprint);
    if (known !== undefined) {
      found = survivor(known);
    } else {
      let other = await reader
        .selectFrom('issues')
        .select([...FACT_COLUMNS])
        .where('project_id', '=', projectId)
        .where('fingerprint', '=', fingerprint)
        .executeTakeFirst();
      if (!other) {
        const id = await mergedIssueId(reader, projectId, fingerprint);
        if (id !== undefined)
          other = await reader
            .selectFrom('issues')
            .select([...FACT_COLUMNS])
            .where('id', '=', id)
            .executeTakeFirst();
      }
      if (other) {
        if (!issues.has(Number(other.id))) issues.set(Number(other.id), facts(other));
        found = survivor(Number(other.id));
      }
    }
    if (!found) {
      statements.push(mapFingerprint(reader, projectId, fingerprint, own.id, now));
      planned.set(fingerprint, own.id);
      continue;
    }
    planned.set(fingerprint, found.id);
    if (found.id === own.id) continue;
    const [target, source] = older(own, found) ? [own, found] : [found, own];
    statements.push(
      ...mergeStatements(reader, projectId, target, source, now),
      mergedChange(reader, projectId, target.id, now),
    );
    mergedInto.set(source.id, target.id);
    planned.set(fingerprint, target.id);
  }
  return statements;
}
