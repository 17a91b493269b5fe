// Flutter / Dart symbol maps (kind `dartsymbolmap`): what `flutter build
// --obfuscate --extra-gen-snapshot-options=--save-obfuscation-map=map.json` writes and
// sentry-cli uploads, a JSON array of strings in pairs, original then obfuscated
// (`["MyException", "xB", "CartService", "Yq", …]`). At ingest an exception type that is
// an obfuscated name becomes the original one (the title and grouping use it), and
// `Instance of 'xB'` in its value is named too. Found by the event's release (and dist);
// a map stored with a debug id is also found by the debug id of one of the event's images.
import { MAX_SYMBOL_FILE_BYTES } from '../limits.js';
import {
  SymbolInputError,
  type EventView,
  type FileInspector,
  type LoadedSymbols,
  type SymbolKindHandler,
  type SymbolLookup,
  type SymbolicationState,
} from './kinds.js';
import type { SymbolFileRow } from './storage.js';

export class DartSymbolMap implements LoadedSymbols {
  readonly memoryBytes: number;
  constructor(readonly names: Map<string, string>) {
    let n = 0;
    for (const [k, v] of names) n += 2 * (k.length + v.length) + 64;
    this.memoryBytes = n;
  }
}

/** The map's pairs, obfuscated → original; SymbolInputError when the bytes are not such a map. */
export function parseDartSymbolMap(bytes: Uint8Array): Map<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new SymbolInputError(
      'a Dart symbol map must be JSON: an array of strings, original and obfuscated names in pairs',
    );
  }
  if (!Array.isArray(value) || value.length % 2 !== 0 || !value.every((v) => typeof v === 'string')) {
    throw new SymbolInputError(
      'a Dart symbol map must be an array of strings with an even length (original, obfuscated, …)',
    );
  }
  const names = new Map<string, string>();
  // sentry-cli puts ["SENTRY_DEBUG_ID_MARKER", debug id] first, so each upload's checksum differs; it names nothing.
  for (let i = value[0] === 'SENTRY_DEBUG_ID_MARKER' ? 2 : 0; i < value.length; i += 2)
    names.set(value[i + 1] as string, value[i] as string);
  return names;
}

function inspectDart(): FileInspector {
  const chunks: Uint8Array[] = [];
  let size = 0;
  return {
    push(chunk) {
      size += chunk.byteLength;
      if (size > MAX_SYMBOL_FILE_BYTES)
        throw new SymbolInputError(`a Dart symbol map is at most ${MAX_SYMBOL_FILE_BYTES} bytes`);
      chunks.push(chunk.slice());
    },
    finish() {
      const all = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        all.set(c, at);
        at += c.byteLength;
      }
      const names = parseDartSymbolMap(all);
      return [{ meta: { names: names.size } }];
    },
  };
}

function debugIds(event: EventView): string[] {
  const out: string[] = [];
  for (const img of event.images) {
    const id = img.debug_id ?? img.uuid;
    if (typeof id === 'string' && id !== '') out.push(id.toLowerCase());
  }
  return out;
}

const INSTANCE_OF = /Instance of '([^']+)'/g;

export const dartSymbolMapHandler: SymbolKindHandler<DartSymbolMap> = {
  kind: 'dartsymbolmap',
  recognises(name, head) {
    return (
      /symbol[-_]?map.*\.json$|obfuscation.*\.json$/i.test(name) &&
      new TextDecoder().decode(head.subarray(0, 64)).trimStart().startsWith('[')
    );
  },
  inspect: inspectDart,
  load(_file: SymbolFileRow, bytes: Uint8Array) {
    return new DartSymbolMap(parseDartSymbolMap(bytes));
  },
  lookups(event) {
    if (event.platform !== 'dart' && event.platform !== 'flutter' && !event.exceptions.some((e) => e.type !== ''))
      return [];
    const out: SymbolLookup[] = debugIds(event).map((debugId) => ({ kind: 'dartsymbolmap', by: 'debug_id', debugId }));
    if (event.release !== '')
      out.push({ kind: 'dartsymbolmap', by: 'release', release: event.release, dist: event.dist });
    return out;
  },
  symbolicate(event, state: SymbolicationState, resolve) {
    const maps: DartSymbolMap[] = [];
    for (const l of this.lookups(event)) maps.push(...resolve(l));
    if (maps.length === 0) return;
    const original = (name: string) => {
      for (const m of maps) {
        const found = m.names.get(name);
        if (found !== undefined) return found;
      }
      return undefined;
    };
    for (let i = 0; i < event.exceptions.length; i++) {
      const exc = event.exceptions[i];
      if (state.types[i]) continue;
      const type = original(exc.type);
      if (type !== undefined) {
        state.types[i] = { type };
        state.changed = true;
      }
      // `Instance of 'xB'` (Dart's toString of an object) names the original class too.
      if (INSTANCE_OF.test(exc.value)) {
        exc.value = exc.value.replace(INSTANCE_OF, (whole, name: string) => {
          const o = original(name);
          return o === undefined ? whole : `Instance of '${o}'`;
        });
      }
      INSTANCE_OF.lastIndex = 0;
    }
  },
};
