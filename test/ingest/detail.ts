// Normalised events with their detail beside them, for tests that check both. The
// detail comes from the raw payload by the function the event detail route uses; with
// the event's user IP as the client address it is what `{{auto}}` resolved to at ingest.
import { eventDetailFromRaw } from '../../src/ingest/normalize.js';
import type { EventDetailData, NormalizedEvent } from '../../src/ingest/types.js';

export type DetailedEvent = NormalizedEvent & { detail: EventDetailData };

export function withDetail(event: NormalizedEvent): DetailedEvent {
  return { ...event, detail: eventDetailFromRaw(event.raw, event.userIp) };
}
