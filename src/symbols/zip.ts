// The ZIP rules every upload route applies, and the reader of archives that can be read
// at random (artifact bundles and legacy debug-file ZIPs, from their chunks or a buffer)
// without holding them whole: the central directory is read from the end, each entry's
// bytes are read in ranges and inflated as a stream, its size and CRC-32 checked against
// the directory. The archive may be prefixed (an artifact bundle starts with `SYSB` +
// version): offsets are corrected by the distance between where the central directory
// is and where the archive says it is, as unzip does. And the reader of a zip as it
// streams in (the Symbols routes' uploads, `readStreamedZip`), which checks it against
// the same directory reader at its end. Only stored and deflated entries without
// encryption are read; any other entry refuses the upload (ZipError, 400) naming its
// method or its encryption.
import { Inflate, Unzip, UnzipInflate, type UnzipFile } from 'fflate';
import { SymbolInputError } from './kinds.js';
import { MAX_ARCHIVE_ENTRIES } from '../limits.js';
import { bytesSource, concatBytes, type ByteRangeSource } from '../bytes.js';

/** An archive that is not a readable ZIP, or an entry that cannot be read: 400, nothing stored. */
export class ZipError extends SymbolInputError {}

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated (others are refused when the entry is read). */
  method: number;
  compressedSize: number;
  size: number;
  /** The CRC-32 of the entry's bytes, as the directory records it. */
  crc32: number;
  /** Absolute offset of the local header in the source. */
  localHeaderOffset: number;
}

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
/** Bytes read per step of an entry. */
const READ_STEP = 1024 * 1024;

const invalid = (why: string) => new ZipError(`not a valid ZIP archive: ${why}`);

/** Names of the compression methods of APPNOTE 4.4.5 an uploader may meet. */
const METHOD_NAMES: Record<number, string> = {
  1: 'shrunk',
  6: 'imploded',
  9: 'deflate64',
  12: 'bzip2',
  14: 'LZMA',
  19: 'LZ77',
  93: 'zstd',
  95: 'xz',
  96: 'JPEG',
  97: 'WavPack',
  98: 'PPMd',
  99: 'AES encryption',
};

/**
 * Why an entry cannot be read (its compression method or its encryption), or null. Every
 * zip reader asks before reading an entry's bytes.
 */
export function entryProblem(name: string, method: number, flags: number): string | null {
  if (flags & 1 || method === 99) return `the zip entry ${JSON.stringify(name)} is encrypted; upload it unencrypted`;
  if (method !== 0 && method !== 8) {
    const known = METHOD_NAMES[method];
    return `the zip entry ${JSON.stringify(name)} uses compression method ${method}${known ? ` (${known})` : ''}; only stored (0) and deflated (8) entries are supported`;
  }
  return null;
}

/** Why an entry whose bytes do not hash to the directory's CRC-32 is refused. */
export function crcMismatch(name: string): string {
  return `the zip entry ${JSON.stringify(name)} is corrupt: its bytes do not match its CRC-32`;
}

const CRC_TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-32 (ZIP's, IEEE 802.3) over bytes given in pieces: `update` with the previous value, starting at 0. */
export function crc32(bytes: Uint8Array, previous = 0): number {
  let c = ~previous;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function u64(v: DataView, at: number): number {
  const n = v.getBigUint64(at, true);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid('a size or offset is too large');
  return Number(n);
}

/** Lists the archive's entries (directories left out). */
export async function readZipDirectory(source: ByteRangeSource): Promise<ZipEntry[]> {
  const tailLength = Math.min(source.size, 22 + 65_535);
  const tailStart = source.size - tailLength;
  const tail = await source.read(tailStart, tailLength);
  const tv = view(tail);
  let eocd = -1;
  for (let i = tail.byteLength - 22; i >= 0; i--) {
    if (tv.getUint32(i, true) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw invalid('no end of central directory');
  let entries = tv.getUint16(eocd + 10, true);
  let cdSize = tv.getUint32(eocd + 12, true);
  let cdOffset = tv.getUint32(eocd + 16, true);
  let cdEnd = tailStart + eocd;
  // A ZIP64 record is used whenever one is there: writers that stream (Info-ZIP reading
  // stdin) add one beside an ordinary record, and the directory then ends before it.
  const locator = eocd - 20;
  const zip64 = locator >= 0 && tv.getUint32(locator, true) === ZIP64_LOCATOR_SIGNATURE;
  if (zip64 || entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    if (!zip64) throw invalid('missing ZIP64 locator');
    // The ZIP64 record sits right before its locator; its own recorded offset may be unprefixed.
    const record = await source.read(tailStart + locator - 56, 56);
    const rv = view(record);
    if (record.byteLength < 56 || rv.getUint32(0, true) !== ZIP64_EOCD_SIGNATURE)
      throw invalid('missing ZIP64 end of central directory');
    entries = u64(rv, 32);
    cdSize = u64(rv, 40);
    cdOffset = u64(rv, 48);
    cdEnd = tailStart + locator - 56;
  }
  if (entries > MAX_ARCHIVE_ENTRIES) throw invalid(`more than ${MAX_ARCHIVE_ENTRIES} entries`);
  const cdStart = cdEnd - cdSize;
  if (cdStart < 0) throw invalid('central directory out of bounds');
  const shift = cdStart - cdOffset;
  const cd = await source.read(cdStart, cdSize);
  const cv = view(cd);
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const out: ZipEntry[] = [];
  let at = 0;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > cd.byteLength || cv.getUint32(at, true) !== CENTRAL_SIGNATURE)
      throw invalid('damaged central directory');
    const flags = cv.getUint16(at + 8, true);
    const method = cv.getUint16(at + 10, true);
    const crc = cv.getUint32(at + 16, true);
    let compressedSize = cv.getUint32(at + 20, true);
    let size = cv.getUint32(at + 24, true);
    const nameLength = cv.getUint16(at + 28, true);
    const extraLength = cv.getUint16(at + 30, true);
    const commentLength = cv.getUint16(at + 32, true);
    let localHeaderOffset = cv.getUint32(at + 42, true);
    const nameStart = at + 46;
    if (nameStart + nameLength + extraLength > cd.byteLength) throw invalid('damaged central directory');
    const name = decoder.decode(cd.subarray(nameStart, nameStart + nameLength));
    // ZIP64 extra field: the 64-bit values of the fields saturated above, in this order.
    let x = nameStart + nameLength;
    const extraEnd = x + extraLength;
    while (x + 4 <= extraEnd) {
      const id = cv.getUint16(x, true);
      const len = cv.getUint16(x + 2, true);
      if (id === 0x0001) {
        let p = x + 4;
        if (size === 0xffffffff && p + 8 <= x + 4 + len) (size = u64(cv, p)), (p += 8);
        if (compressedSize === 0xffffffff && p + 8 <= x + 4 + len) (compressedSize = u64(cv, p)), (p += 8);
        if (localHeaderOffset === 0xffffffff && p + 8 <= x + 4 + len) localHeaderOffset = u64(cv, p);
      }
      x += 4 + len;
    }
    at = extraEnd + commentLength;
    if (name.endsWith('/')) continue;
    const problem = entryProblem(name, method, flags);
    if (problem) throw new ZipError(problem);
    out.push({ name, method, compressedSize, size, crc32: crc, localHeaderOffset: localHeaderOffset + shift });
  }
  return out;
}

/**
 * The bytes of one entry, inflated as they are read. Stops with a ZipError when the entry
 * yields more than `maxSize` bytes or more than its directory says, and at its end when
 * its bytes do not match the directory's CRC-32.
 */
export async function* readZipEntry(
  source: ByteRangeSource,
  entry: ZipEntry,
  maxSize = Number.MAX_SAFE_INTEGER,
): AsyncGenerator<Uint8Array> {
  const problem = entryProblem(entry.name, entry.method, 0);
  if (problem) throw new ZipError(problem);
  if (entry.size > maxSize)
    throw new ZipError(`the zip entry ${JSON.stringify(entry.name)} is larger than ${maxSize} bytes`);
  const header = await source.read(entry.localHeaderOffset, 30);
  const hv = view(header);
  if (header.byteLength < 30 || hv.getUint32(0, true) !== LOCAL_SIGNATURE)
    throw invalid(`damaged local header of ${JSON.stringify(entry.name)}`);
  const dataStart = entry.localHeaderOffset + 30 + hv.getUint16(26, true) + hv.getUint16(28, true);
  const dataEnd = dataStart + entry.compressedSize;
  if (dataEnd > source.size) throw invalid(`entry ${JSON.stringify(entry.name)} runs past the end`);
  const limit = Math.min(maxSize, entry.size);
  let produced = 0;
  let crc = 0;
  const overflow = () =>
    new ZipError(`the zip entry ${JSON.stringify(entry.name)} inflates to more than its recorded size`);
  if (entry.method === 0) {
    for (let at = dataStart; at < dataEnd; at += READ_STEP) {
      const piece = await source.read(at, Math.min(READ_STEP, dataEnd - at));
      produced += piece.byteLength;
      if (produced > limit) throw overflow();
      crc = crc32(piece, crc);
      // The last piece only once its CRC is known good: nothing of a corrupt entry is complete.
      if (at + READ_STEP >= dataEnd && crc !== entry.crc32) throw new ZipError(crcMismatch(entry.name));
      yield piece;
    }
    if (dataEnd === dataStart && entry.crc32 !== 0) throw new ZipError(crcMismatch(entry.name));
    return;
  }
  let pending: Uint8Array[] = [];
  const inflate = new Inflate((data) => {
    produced += data.byteLength;
    if (produced > limit) throw overflow();
    crc = crc32(data, crc);
    pending.push(data);
  });
  for (let at = dataStart; at < dataEnd || at === dataStart; at += READ_STEP) {
    const piece = await source.read(at, Math.min(READ_STEP, dataEnd - at));
    const last = at + READ_STEP >= dataEnd;
    try {
      inflate.push(piece, last);
    } catch (err) {
      if (err instanceof ZipError) throw err;
      throw invalid(`entry ${JSON.stringify(entry.name)} is not valid deflate data`);
    }
    if (last && produced !== entry.size) throw invalid(`entry ${JSON.stringify(entry.name)} is truncated`);
    if (last && crc !== entry.crc32) throw new ZipError(crcMismatch(entry.name));
    const out = pending;
    pending = [];
    for (const chunk of out) yield chunk;
    if (dataEnd === dataStart) break;
  }
}

/** An entry read whole (small entries only: manifests). */
export async function readZipEntryBytes(
  source: ByteRangeSource,
  entry: ZipEntry,
  maxSize: number,
): Promise<Uint8Array> {
  const out = new Uint8Array(Math.min(entry.size, maxSize));
  let at = 0;
  for await (const chunk of readZipEntry(source, entry, maxSize)) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out.subarray(0, at);
}

/** True for a path that stays inside the archive: relative, no `..` segment, no drive or backslash tricks. */
export function isSafeArchivePath(name: string): boolean {
  if (name === '' || name.startsWith('/') || name.includes('\\') || name.includes('\0') || /^[A-Za-z]:/.test(name))
    return false;
  return !name.split('/').some((segment) => segment === '..');
}

/** A byte count as people read it in a refusal: `1 GB`, `256 MB`, else bytes. */
export function sizeText(n: number): string {
  return n % (1024 * 1024 * 1024) === 0
    ? `${n / (1024 * 1024 * 1024)} GB`
    : n % (1024 * 1024) === 0
      ? `${n / (1024 * 1024)} MB`
      : `${n} bytes`;
}

/** Why a zip past the unpacked limit is refused (every upload route says it alike); `what`: "the zip", "source maps". */
export function unpackedTooLargeMessage(what: string, max: number): string {
  return `${what} unpack${what.endsWith('s') ? '' : 's'} to more than ${max} bytes (${sizeText(max)})`;
}

/** Why a zip with too many entries is refused. */
export function tooManyEntriesMessage(max: number): string {
  return `the zip has more than ${max} entries`;
}

/** A zip entry name that could write outside the archive's folder (zip-slip), as the streamed reader judges it. */
export function unsafeEntryName(name: string): boolean {
  if (name.includes('\0')) return true;
  const n = name.replace(/\\/g, '/');
  if (n.startsWith('/') || /^[a-z]:/i.test(n)) return true;
  return n.split('/').some((seg) => seg === '..');
}

/** Zip local file header magic at the start of `head`. */
export function startsLikeZip(head: Uint8Array): boolean {
  return head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04;
}

/** Compressed bytes handed to the inflater per step (bounds what one step can produce). */
const ZIP_STEP_BYTES = 16 * 1024;
/**
 * Bytes of a zip's end kept to check its central directory: a directory of 1 000 entries
 * with names of a few hundred bytes is well under it.
 */
const ZIP_DIRECTORY_BYTES = 4 * 1024 * 1024;

export interface StreamedZipLimits {
  maxFileBytes: number;
  maxZipEntries: number;
  maxZipUnpackedBytes: number;
}

/** Where a streamed entry's bytes go, in order; `end` once they are all there. */
export interface StreamedEntry {
  push(chunk: Uint8Array): Promise<void>;
  end(): Promise<void>;
}

type ZipEvent =
  | { kind: 'file'; file: UnzipFile }
  | { kind: 'data'; file: UnzipFile; data: Uint8Array; final: boolean }
  | { kind: 'error'; message: string };

/**
 * Reads a zip as it streams in, handing each file entry's inflated bytes to what `open`
 * returns for its name (null: the entry is read and checked, its bytes dropped);
 * directories and macOS metadata (`__MACOSX/`, `.DS_Store`) are skipped. Refuses
 * (ZipError) more than `maxZipEntries` entries, an entry past `maxFileBytes` or all past
 * `maxZipUnpackedBytes` (by the sizes the local headers declare, before a byte is
 * inflated, and by the bytes really inflated), an unsafe name, an entry it cannot read,
 * a zip cut short, and a central directory that does not list what was read with its
 * CRC-32s. Data is inflated ZIP_STEP_BYTES of input at a time, so one step never
 * produces more than about 16 MB, and reading stops as soon as a limit is passed.
 */
export async function readStreamedZip(
  source: AsyncIterable<Uint8Array>,
  limits: StreamedZipLimits,
  open: (name: string) => StreamedEntry | null,
): Promise<void> {
  const { maxFileBytes, maxZipEntries, maxZipUnpackedBytes } = limits;
  const tooBig = (name: string) =>
    new ZipError(
      `the zip entry ${JSON.stringify(name)} is larger than ${maxFileBytes} bytes (${sizeText(maxFileBytes)} per file)`,
    );
  const tooMuch = () => new ZipError(unpackedTooLargeMessage('the zip', maxZipUnpackedBytes));
  const events: ZipEvent[] = [];
  const unzip = new Unzip((file) => {
    events.push({ kind: 'file', file });
  });
  unzip.register(UnzipInflate);
  const sinks = new Map<UnzipFile, StreamedEntry | null>();
  const open_ = new Set<UnzipFile>();
  let entries = 0;
  let unpacked = 0;
  let declaredTotal = 0;
  const entrySizes = new Map<UnzipFile, number>();
  const entryCrcs = new Map<UnzipFile, number>();
  /** Entries as read (directories left out), to be matched against the central directory. */
  const read: { name: string; size: number; crc: number }[] = [];
  // The zip's end, for its central directory: the end of central directory record must be
  // in the last 64 KiB + 22 bytes (a zip cut short lacks it), the directory right before.
  const tail: Uint8Array[] = [];
  let tailBytes = 0;
  let totalBytes = 0;

  const drain = async () => {
    while (events.length > 0) {
      const ev = events.shift()!;
      if (ev.kind === 'error') throw new ZipError(`the zip is corrupt: ${ev.message}`);
      if (ev.kind === 'file') {
        const file = ev.file;
        entries++;
        if (entries > maxZipEntries) throw new ZipError(tooManyEntriesMessage(maxZipEntries));
        if (unsafeEntryName(file.name))
          throw new ZipError(`the zip entry ${JSON.stringify(file.name)} points outside the archive`);
        // Sizes the local header declares refuse a bomb before a byte is inflated; the bytes
        // actually inflated are counted too, for zips written without sizes (or lying).
        const declared = file.originalSize ?? 0;
        if (declared > maxFileBytes) throw tooBig(file.name);
        declaredTotal += declared;
        if (declaredTotal > maxZipUnpackedBytes) throw tooMuch();
        const ignored =
          isDirectoryName(file.name) || /(^|\/)__MACOSX\//.test(file.name) || /(^|\/)\.DS_Store$/.test(file.name);
        sinks.set(file, ignored ? null : open(file.name));
        open_.add(file);
        const problem = entryProblem(file.name, file.compression, 0);
        if (problem) throw new ZipError(problem);
        file.ondata = (err, data, final) => {
          if (err) events.push({ kind: 'error', message: err.message });
          else events.push({ kind: 'data', file, data, final });
        };
        file.start();
        continue;
      }
      const sink = sinks.get(ev.file);
      const entrySize = (entrySizes.get(ev.file) ?? 0) + ev.data.byteLength;
      entrySizes.set(ev.file, entrySize);
      if (entrySize > maxFileBytes) throw tooBig(ev.file.name);
      unpacked += ev.data.byteLength;
      if (unpacked > maxZipUnpackedBytes) throw tooMuch();
      const crc = crc32(ev.data, entryCrcs.get(ev.file) ?? 0);
      entryCrcs.set(ev.file, crc);
      if (sink) await sink.push(ev.data);
      if (ev.final) {
        if (!isDirectoryName(ev.file.name)) read.push({ name: ev.file.name, size: entrySize, crc });
        entryCrcs.delete(ev.file);
        open_.delete(ev.file);
        if (sink) await sink.end();
        sinks.delete(ev.file);
        entrySizes.delete(ev.file);
      }
    }
  };

  const push = (chunk: Uint8Array, final: boolean) => {
    try {
      unzip.push(chunk, final);
    } catch (err) {
      events.push({ kind: 'error', message: (err as Error).message });
    }
  };

  for await (const chunk of source) {
    for (let at = 0; at < chunk.byteLength; at += ZIP_STEP_BYTES) {
      push(chunk.subarray(at, at + ZIP_STEP_BYTES), false);
      await drain();
    }
    tail.push(chunk);
    tailBytes += chunk.byteLength;
    totalBytes += chunk.byteLength;
    while (tailBytes - tail[0].byteLength >= ZIP_DIRECTORY_BYTES) tailBytes -= tail.shift()!.byteLength;
  }
  push(new Uint8Array(0), true);
  await drain();
  if (open_.size > 0) throw new ZipError('the zip is truncated: an entry ends before its data does');
  const end = concatBytes(tail, tailBytes);
  if (!hasEndOfCentralDirectory(end.subarray(Math.max(0, end.byteLength - 65_557))))
    throw new ZipError('the zip is truncated: it has no end of central directory record');
  checkCentralDirectory(await streamedDirectory(end, totalBytes > end.byteLength), read);
}

function isDirectoryName(name: string): boolean {
  return name.endsWith('/') || name.endsWith('\\');
}

/** The entries the zip's central directory lists (encrypted ones or unknown methods refused). */
async function streamedDirectory(end: Uint8Array, cut: boolean) {
  try {
    return await readZipDirectory(bytesSource(end));
  } catch (err) {
    if (cut && err instanceof ZipError && /out of bounds/.test(err.message)) {
      throw new ZipError(`the zip's central directory is larger than ${ZIP_DIRECTORY_BYTES} bytes`);
    }
    throw err;
  }
}

/** The entries read must be those the directory lists, in order, with its sizes and CRC-32s. */
function checkCentralDirectory(
  listed: { name: string; size: number; crc32: number }[],
  read: { name: string; size: number; crc: number }[],
): void {
  const files = listed.filter((e) => !isDirectoryName(e.name));
  for (let i = 0; i < Math.max(files.length, read.length); i++) {
    const a = files[i];
    const b = read[i];
    if (!a || !b || a.name !== b.name || a.size !== b.size) {
      throw new ZipError(
        `the zip's central directory does not list the entries it holds (entry ${JSON.stringify((b ?? a).name)})`,
      );
    }
    if (a.crc32 !== b.crc) throw new ZipError(crcMismatch(a.name));
  }
}

function hasEndOfCentralDirectory(tail: Uint8Array): boolean {
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tail[i] === 0x50 && tail[i + 1] === 0x4b && tail[i + 2] === 0x05 && tail[i + 3] === 0x06) return true;
  }
  return false;
}
