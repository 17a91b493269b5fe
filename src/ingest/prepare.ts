// Preparation of a request's ingest work for the group-commit writer, at submit time
// (outside the transaction): every field checked and clamped so that the database
// accepts the row, tags as a de-duplicated list: the store's PreparedWork
// (src/store/write-set.ts), which the planner (plan.ts) and the store's batches take.
import type { EventInput, PreparedWork } from '../store/write-set.js';
import { LEVELS, type IngestWork } from './types.js';
import { MAX_EVENT_RELEASE, MAX_KEY_ID, MAX_TAG_KEY, MAX_TAG_VALUE } from '../limits.js';

/** PostgreSQL text cannot hold NUL; both dialects drop it so they store the same thing. */
function text(value: unknown, max = 0): string {
  let s = typeof value === 'string' ? value : value == null ? '' : String(value);
  if (s.includes('\u0000')) s = s.replaceAll('\u0000', '');
  return max > 0 && s.length > max ? s.slice(0, max) : s;
}

function optText(value: unknown): string | null {
  return value == null ? null : text(value);
}

function time(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.round(value) : fallback;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/** Turns a request's work into row-shaped input, outside the transaction. */
export function prepareWork(work: IngestWork): PreparedWork {
  const receivedAt = time(work.receivedAt, Date.now());
  const events = work.events.map((e) => {
    const tags: [string, string][] = [];
    const tagObject: Record<string, string> = {};
    for (const [k, v] of Object.entries(e.tags ?? {})) {
      const key = text(k, MAX_TAG_KEY);
      const value = text(v, MAX_TAG_VALUE);
      if (key === '' || Object.hasOwn(tagObject, key)) continue;
      tagObject[key] = value;
      tags.push([key, value]);
    }
    const input: EventInput = {
      source: e,
      eventId: text(e.eventId, MAX_KEY_ID),
      fingerprint: text(e.fingerprint, MAX_KEY_ID),
      timestamp: time(e.timestamp, receivedAt),
      level: LEVELS.includes(e.level) ? e.level : 'info',
      platform: text(e.platform),
      release: text(e.release, MAX_EVENT_RELEASE),
      dist: text(e.dist),
      environment: text(e.environment),
      userId: e.userId == null ? null : text(e.userId, MAX_KEY_ID),
      userEmail: optText(e.userEmail),
      userUsername: optText(e.userUsername),
      userIp: optText(e.userIp),
      userKey: e.userKey == null || e.userKey === '' ? null : text(e.userKey, MAX_KEY_ID),
      deviceId: optText(e.deviceId),
      deviceModel: optText(e.deviceModel),
      osName: optText(e.osName),
      osVersion: optText(e.osVersion),
      screen: text(e.screen),
      title: text(e.title),
      message: text(e.message),
      errorType: text(e.errorType),
      location: text(e.location),
      isCrash: e.isCrash === true,
      sdkName: text(e.sdkName),
      tags,
      tagsJson: JSON.stringify(tagObject),
      symbolicated: typeof e.symbolicated === 'string' ? text(e.symbolicated) : null,
    };
    return input;
  });
  const sessions = work.sessions.map((s) => ({
    sid: text(s.sid, MAX_KEY_ID),
    did: s.did == null || s.did === '' ? null : text(s.did),
    started: time(s.started, receivedAt),
    timestamp: time(s.timestamp, receivedAt),
    status: s.status,
    errors: count(s.errors),
    release: text(s.release, MAX_EVENT_RELEASE),
    environment: text(s.environment),
    anr: s.anr === true ? 1 : 0,
  }));
  const aggregates = work.aggregates.map((a) => {
    // `unhandled` counts as crashed (docs/ingest-normalisation.md "Release health").
    const crashed = count(a.crashed) + count(a.unhandled);
    const errored = count(a.errored) + count(a.abnormal);
    return {
      started: time(a.started, receivedAt),
      release: text(a.release, MAX_EVENT_RELEASE),
      total: count(a.exited) + errored + crashed,
      crashed,
      errored,
    };
  });
  return { projectId: work.project.id, receivedAt, events, sessions, aggregates };
}
