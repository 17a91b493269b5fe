// Minidumps at ingest (docs/api.md "Minidumps"): an envelope's `event.minidump` attachment
// (or the minidump route's upload) becomes the event item the rest of ingest stores,
// symbolicates and groups like any native crash. The minidump is walked with the unwind
// information of the project's uploaded Breakpad files (read from the store), and its
// event merged under what the SDK sent (tags, user, release and its own contexts win; the
// exception, threads and images come from the dump). A minidump that cannot be read
// leaves the envelope's own event as it is (or nothing, without one). Modules without a
// Breakpad file are unwound with their uploaded ELF file's `.eh_frame` and `.debug_frame`,
// or their uploaded Mach-O image's compact unwind. The minidump item
// stays in the envelope: the attachment store keeps it with the event (src/attachments).
// The editions pass expandMinidumpEnvelope to the pipeline as its `expandMinidump`
// (src/ingest/types.ts ExpandMinidump): this folder reads symbol files, which run ingest's
// normalisation, so ingest does not import it.

import type { Kysely } from 'kysely';
import { MINIDUMP_ATTACHMENT_TYPE } from '../attachments/rules.js';
import type { EnvelopeItem, ParsedEnvelope } from '../ingest/envelope.js';
import type { Database } from '../store/schema.js';
import { breakpadIndex } from '../symbols/breakpad.js';
import { NativeIndex } from '../symbols/native/lookup-index.js';
import { INDEX_PART, readSymbolBytes, storedFileSource } from '../symbols/storage.js';
import { readElfFrom } from '../symbols/native/elf.js';
import { BadNativeFile } from '../symbols/native/bytes.js';
import { dwarfCfiUnwindInfo } from './eh-frame.js';
import { compactUnwindInfo, readStackSizeImmediates } from './compact-unwind.js';
import { readMachOFrom } from '../symbols/native/macho.js';
import { BreakpadReader } from '../symbols/native/breakpad.js';
import { breakpadUnwindInfo, MAX_MINIDUMP_BYTES, processMinidump } from './process.js';
import { BadMinidump, readMinidump, type MinidumpModule } from './reader.js';
import type { ModuleUnwindInfo } from './unwind.js';
import { randomId } from '../protocol-values.js';

/** A minidump to keep with its event (the attachment store's input). */
export interface MinidumpAttachment {
  projectId: number;
  eventId: string;
  filename: string;
  contentType: string;
  attachmentType: typeof MINIDUMP_ATTACHMENT_TYPE;
  bytes: Uint8Array;
}

/** A stored symbol file a module's unwind information may come from. */
interface UnwindSource {
  id: number;
  size: number;
  indexSize: number;
}

/** A Breakpad .sym file's STACK CFI records (with its lookup index); null when it no longer reads. */
async function breakpadUnwindInfoOf(db: Kysely<Database>, file: UnwindSource): Promise<ModuleUnwindInfo | null> {
  const bytes = await readSymbolBytes(db, file.id);
  if (!bytes) return null;
  try {
    const reader = new BreakpadReader(true);
    reader.push(bytes);
    reader.finish();
    const stored = file.indexSize > 0 ? await readSymbolBytes(db, file.id, INDEX_PART) : null;
    let index: NativeIndex;
    try {
      index = new NativeIndex(stored ?? breakpadIndex(reader));
    } catch {
      index = new NativeIndex(breakpadIndex(reader));
    }
    return breakpadUnwindInfo(reader, index);
  } catch {
    // A stored file that no longer reads: the walk goes on without its CFI.
    return null;
  }
}

/**
 * Where a module's unwind information comes from, in order: its Breakpad .sym file (STACK
 * CFI), else its ELF file (`.eh_frame`, `.debug_frame`), else its Mach-O executable
 * (compact unwind).
 */
const UNWIND_SOURCES: readonly [
  kind: 'breakpad' | 'elf' | 'dsym',
  load: (db: Kysely<Database>, file: UnwindSource) => Promise<ModuleUnwindInfo | null | undefined>,
][] = [
  ['breakpad', breakpadUnwindInfoOf],
  ['elf', (db, f) => elfUnwindInfo(db, f.id, f.size, f.indexSize)],
  ['dsym', (db, f) => machoUnwindInfo(db, f.id, f.size)],
];

/** The unwind information of the modules (by debug id), from the first source that has each. */
async function unwindInfoFor(
  db: Kysely<Database>,
  projectId: number,
  modules: MinidumpModule[],
): Promise<Map<string, ModuleUnwindInfo>> {
  const ids = [...new Set(modules.map((m) => m.debugId).filter((id) => id !== ''))];
  const out = new Map<string, ModuleUnwindInfo>();
  for (const [kind, load] of UNWIND_SOURCES) {
    const wanted = ids.filter((id) => !out.has(id));
    for (let i = 0; i < wanted.length; i += 200) {
      const rows = await db
        .selectFrom('symbol_files')
        .select(['id', 'debug_id', 'size', 'index_size'])
        .where('project_id', '=', projectId)
        .where('kind', '=', kind)
        .where('state', '=', 'ready')
        .where('debug_id', 'in', wanted.slice(i, i + 200))
        .orderBy('id', 'desc')
        .execute();
      for (const row of rows) {
        if (out.has(row.debug_id)) continue;
        const info = await load(db, { id: Number(row.id), size: Number(row.size), indexSize: Number(row.index_size) });
        if (info) out.set(row.debug_id, info);
      }
    }
  }
  return out;
}

/**
 * An uploaded Mach-O image's compact unwind (`__unwind_info`), with its `__eh_frame` for
 * the functions whose encoding points there (read by ranges). A dSYM has neither (its
 * __TEXT sections carry no bytes); the executable or library uploaded beside it has both.
 */
async function machoUnwindInfo(db: Kysely<Database>, id: number, size: number): Promise<ModuleUnwindInfo | null> {
  try {
    const source = storedFileSource(db, id, size);
    const [slice] = await readMachOFrom(source);
    if (!slice) return null;
    const section = (name: string) =>
      slice.sections.find(
        (s) =>
          s.segment === '__TEXT' && s.name === name && s.fileOffset >= 0 && s.size > 0 && s.size <= MAX_EH_FRAME_BYTES,
      );
    const unwind = section('__unwind_info');
    const eh = section('__eh_frame');
    const dwarf = eh
      ? dwarfCfiUnwindInfo(
          await source.read(eh.fileOffset, eh.size),
          eh.addr,
          slice.arch,
          slice.is64,
          slice.textVmaddr,
          'eh_frame',
        )
      : null;
    if (!unwind) return dwarf;
    const unwindBytes = await source.read(unwind.fileOffset, unwind.size);
    const immediates = await readStackSizeImmediates(source, slice, unwindBytes);
    return compactUnwindInfo(unwindBytes, slice.arch, dwarf, immediates) ?? dwarf;
  } catch (err) {
    if (err instanceof BadNativeFile) return null;
    throw err;
  }
}

/**
 * An uploaded ELF file's call frame information (read by ranges): its `.eh_frame`, else
 * its `.debug_frame` for the addresses `.eh_frame` does not cover (a split debug file has
 * only the latter; code built without unwind tables too), and its symbols.
 */
async function elfUnwindInfo(
  db: Kysely<Database>,
  id: number,
  size: number,
  indexSize: number,
): Promise<ModuleUnwindInfo | null> {
  try {
    const source = storedFileSource(db, id, size);
    const elf = await readElfFrom(source);
    const tables: ModuleUnwindInfo[] = [];
    for (const kind of ['eh_frame', 'debug_frame'] as const) {
      const section = elf.sections.find(
        (s) => s.name === `.${kind}` && s.fileOffset >= 0 && s.size > 0 && s.size <= MAX_EH_FRAME_BYTES,
      );
      if (!section) continue;
      const info = dwarfCfiUnwindInfo(
        await source.read(section.fileOffset, section.size),
        section.addr,
        elf.arch,
        elf.is64,
        elf.loadAddress,
        kind,
      );
      if (info) tables.push(info);
    }
    if (tables.length === 0) return null;
    const cfiAt = (rel: number): string | null => {
      for (const t of tables) {
        const rules = t.cfiAt(rel);
        if (rules) return rules;
      }
      return null;
    };
    const stored = indexSize > 0 ? await readSymbolBytes(db, id, INDEX_PART) : null;
    let index: NativeIndex | null = null;
    try {
      index = stored ? new NativeIndex(stored) : null;
    } catch {
      index = null;
    }
    return index
      ? { cfiAt, knows: (rel) => index.lookup(rel + elf.loadAddress).some((f) => f.function !== '') }
      : { cfiAt };
  } catch (err) {
    if (err instanceof BadNativeFile) return null;
    throw err;
  }
}

/** The largest `.eh_frame` or `.debug_frame` read for unwinding (real ones are a few percent of their code). */
const MAX_EH_FRAME_BYTES = 64 * 1024 * 1024;

/** The event a minidump stands for, merged under the SDK's own event fields. */
export async function minidumpEvent(
  db: Kysely<Database>,
  projectId: number,
  bytes: Uint8Array,
  base: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  if (bytes.byteLength > MAX_MINIDUMP_BYTES)
    throw new BadMinidump(`the minidump is ${bytes.byteLength} bytes; at most ${MAX_MINIDUMP_BYTES} are read`);
  const modules = readMinidump(bytes).modules;
  const unwind = await unwindInfoFor(db, projectId, modules);
  const { event } = processMinidump(bytes, (m) => unwind.get(m.debugId) ?? null);
  const baseContexts =
    base.contexts && typeof base.contexts === 'object' ? (base.contexts as Record<string, unknown>) : {};
  return {
    ...event,
    ...base,
    level: base.level ?? event.level,
    platform: base.platform ?? event.platform,
    exception: event.exception ?? base.exception,
    threads: event.threads,
    debug_meta: event.debug_meta,
    contexts: { ...(event.contexts as Record<string, unknown>), ...baseContexts },
  };
}

function parseJson(bytes: Uint8Array): Record<string, unknown> | null {
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Replaces an envelope's event with the one its `event.minidump` attachment stands for
 * (adding one when the envelope has none). Returns the attachments to keep once the
 * event is stored. An unreadable minidump leaves the envelope as it is.
 */
export async function expandMinidumpEnvelope(
  db: Kysely<Database>,
  projectId: number,
  envelope: ParsedEnvelope,
): Promise<{ envelope: ParsedEnvelope; attachments: MinidumpAttachment[] }> {
  const index = envelope.items.findIndex(
    (i) => i.type === 'attachment' && i.headers.attachment_type === MINIDUMP_ATTACHMENT_TYPE,
  );
  if (index < 0) return { envelope, attachments: [] };
  const item = envelope.items[index];
  const eventAt = envelope.items.findIndex((i) => i.type === 'event');
  const base = eventAt >= 0 ? (parseJson(envelope.items[eventAt].payload) ?? {}) : {};
  const headerId = typeof envelope.headers.event_id === 'string' ? envelope.headers.event_id : null;
  const eventId = (typeof base.event_id === 'string' ? base.event_id : headerId) ?? randomId();
  let event: Record<string, unknown>;
  try {
    event = await minidumpEvent(db, projectId, item.payload, { ...base, event_id: eventId });
  } catch (err) {
    if (err instanceof BadMinidump) return { envelope, attachments: [] };
    throw err;
  }
  const eventItem: EnvelopeItem = {
    type: 'event',
    headers: { type: 'event' },
    payload: new TextEncoder().encode(JSON.stringify(event)),
  };
  const items = envelope.items.filter((_, i) => i !== eventAt);
  items.unshift(eventItem);
  const filename = typeof item.headers.filename === 'string' ? item.headers.filename : 'minidump.dmp';
  return {
    envelope: { ...envelope, items },
    attachments: [
      {
        projectId,
        eventId,
        filename,
        contentType: 'application/x-dmp',
        attachmentType: MINIDUMP_ATTACHMENT_TYPE,
        bytes: item.payload,
      },
    ],
  };
}

/**
 * The `sentry` JSON field, or `sentry[...]` bracket fields (`sentry[tags][os]=linux`,
 * `sentry[release]=1.0`), of a minidump upload as one event object.
 */
export function sentryFormFields(fields: [string, string][]): Record<string, unknown> {
  let event: Record<string, unknown> = {};
  for (const [name, value] of fields) {
    if (name === 'sentry') {
      const parsed = parseJson(new TextEncoder().encode(value));
      if (parsed) event = { ...event, ...parsed };
      continue;
    }
    const m = /^sentry((?:\[[^\]]{1,200}\]){1,8})$/.exec(name);
    if (!m) continue;
    const path = [...m[1].matchAll(/\[([^\]]+)\]/g)].map((x) => x[1]);
    if (path.some((k) => k === '__proto__' || k === 'constructor' || k === 'prototype')) continue;
    let at = event;
    for (const key of path.slice(0, -1)) {
      const next = at[key];
      if (!next || typeof next !== 'object' || Array.isArray(next)) at[key] = {};
      at = at[key] as Record<string, unknown>;
    }
    at[path[path.length - 1]] = value;
  }
  return event;
}
