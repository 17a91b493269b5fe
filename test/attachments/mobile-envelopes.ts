// Envelopes as the mobile SDKs send them (sentry-java's Android SDK, sentry-cocoa,
// sentry-react-native, sentry-dart): the event, then its attachments with the item
// headers those SDKs write (`filename`, `content_type`, `attachment_type`, `length`).
// The payloads are copied shapes in test/fixtures/mobile.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/mobile');

export function mobileFixture(name: string): Buffer {
  return fs.readFileSync(path.join(FIXTURES, name));
}

export interface EnvelopeItem {
  headers: Record<string, unknown>;
  payload: Uint8Array | string | object;
}

/** An envelope with `length` on every item, as the mobile SDKs write them. */
export function buildEnvelope(header: Record<string, unknown>, items: EnvelopeItem[]): Buffer {
  const parts: Buffer[] = [Buffer.from(JSON.stringify(header) + '\n')];
  for (const item of items) {
    const payload =
      typeof item.payload === 'string'
        ? Buffer.from(item.payload)
        : item.payload instanceof Uint8Array
          ? Buffer.from(item.payload)
          : Buffer.from(JSON.stringify(item.payload));
    parts.push(
      Buffer.from(JSON.stringify({ ...item.headers, length: payload.length }) + '\n'),
      payload,
      Buffer.from('\n'),
    );
  }
  return Buffer.concat(parts);
}

export function newEventId(): string {
  return randomBytes(16).toString('hex');
}

/** The Android fixture event with a fresh event_id and the given time. */
export function androidEvent(eventId: string, timestamp: number): Record<string, unknown> {
  const event = JSON.parse(mobileFixture('android-event.json').toString('utf8')) as Record<string, unknown>;
  return { ...event, event_id: eventId, timestamp: new Date(timestamp).toISOString() };
}

export const screenshotItem = (bytes: Uint8Array = mobileFixture('screenshot.png')): EnvelopeItem => ({
  headers: {
    type: 'attachment',
    filename: 'screenshot.png',
    content_type: 'image/png',
    attachment_type: 'event.attachment',
  },
  payload: bytes,
});

export const viewHierarchyItem = (bytes: Uint8Array = mobileFixture('android-view-hierarchy.json')): EnvelopeItem => ({
  headers: {
    type: 'attachment',
    filename: 'view-hierarchy.json',
    content_type: 'application/json',
    attachment_type: 'event.view_hierarchy',
  },
  payload: bytes,
});

/** What sentry-android sends for a crash with `attachScreenshot` and `attachViewHierarchy`. */
export function androidCrashEnvelope(
  eventId: string,
  timestamp: number,
  dsn: string,
  extra: EnvelopeItem[] = [],
): Buffer {
  return buildEnvelope(
    {
      event_id: eventId,
      dsn,
      sdk: { name: 'sentry.java.android', version: '7.14.0' },
      sent_at: new Date(timestamp).toISOString(),
    },
    [
      { headers: { type: 'event', content_type: 'application/json' }, payload: androidEvent(eventId, timestamp) },
      screenshotItem(),
      viewHierarchyItem(),
      ...extra,
    ],
  );
}
