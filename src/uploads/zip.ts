// Reading ZIP archives (artifact bundles, the legacy debug-file ZIPs) without holding
// them whole: the central directory is read from the end, each entry's bytes are read
// in ranges and inflated as a stream. The archive may be prefixed (an artifact bundle
// starts with `SYSB` + version): offsets are corrected by the distance between where the
// central directory is and where the archive says it is, as unzip does.
import { Inflate } from 'fflate';
import { UploadError } from './errors.js';
import { MAX_ARCHIVE_ENTRIES } from '../limits.js';

/** Random access to the bytes of an archive. */
export interface ByteRangeSource {
  size: number;
  /** Exactly `length` bytes from `offset` (fewer only at the end). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflated. */
  method: number;
  compressedSize: number;
  size: number;
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

const invalid = (why: string) => new UploadError(400, `not a valid ZIP archive: ${why}`);

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function u64(v: DataView, at: number): number {
  const n = v.getBigUint64(at, true);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid('a size or offset is too large');
  return Number(n);
}

/** A source over bytes already in memory. */
export function bytesSource(bytes: Uint8Array): ByteRangeSource {
  return { size: bytes.byteLength, read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.byteLength, offset + length)) };
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
  if (entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const locator = eocd - 20;
    if (locator < 0 || tv.getUint32(locator, true) !== ZIP64_LOCATOR_SIGNATURE) throw invalid('missing ZIP64 locator');
    // The ZIP64 record sits right before its locator; its own recorded offset may be unprefixed.
    const record = await source.read(tailStart + locator - 56, 56);
    const rv = view(record);
    if (record.byteLength < 56 || rv.getUint32(0, true) !== ZIP64_EOCD_SIGNATURE) throw invalid('missing ZIP64 end of central directory');
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
    if (at + 46 > cd.byteLength || cv.getUint32(at, true) !== CENTRAL_SIGNATURE) throw invalid('damaged central directory');
    const flags = cv.getUint16(at + 8, true);
    const method = cv.getUint16(at + 10, true);
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
    if (flags & 1) throw new UploadError(400, `ZIP entry ${JSON.stringify(name)} is encrypted`);
    out.push({ name, method, compressedSize, size, localHeaderOffset: localHeaderOffset + shift });
  }
  return out;
}

/**
 * The bytes of one entry, inflated as they are read. Stops with an UploadError when the
 * entry yields more than `maxSize` bytes or more than its directory says.
 */
export async function* readZipEntry(source: ByteRangeSource, entry: ZipEntry, maxSize = Number.MAX_SAFE_INTEGER): AsyncGenerator<Uint8Array> {
  if (entry.method !== 0 && entry.method !== 8) throw new UploadError(400, `ZIP entry ${JSON.stringify(entry.name)} uses compression method ${entry.method}; only stored and deflated entries are supported`);
  if (entry.size > maxSize) throw new UploadError(400, `ZIP entry ${JSON.stringify(entry.name)} is larger than ${maxSize} bytes`);
  const header = await source.read(entry.localHeaderOffset, 30);
  const hv = view(header);
  if (header.byteLength < 30 || hv.getUint32(0, true) !== LOCAL_SIGNATURE) throw invalid(`damaged local header of ${JSON.stringify(entry.name)}`);
  const dataStart = entry.localHeaderOffset + 30 + hv.getUint16(26, true) + hv.getUint16(28, true);
  const dataEnd = dataStart + entry.compressedSize;
  if (dataEnd > source.size) throw invalid(`entry ${JSON.stringify(entry.name)} runs past the end`);
  const limit = Math.min(maxSize, entry.size);
  let produced = 0;
  const overflow = () => new UploadError(400, `ZIP entry ${JSON.stringify(entry.name)} inflates to more than its recorded size`);
  if (entry.method === 0) {
    for (let at = dataStart; at < dataEnd; at += READ_STEP) {
      const piece = await source.read(at, Math.min(READ_STEP, dataEnd - at));
      produced += piece.byteLength;
      if (produced > limit) throw overflow();
      yield piece;
    }
    return;
  }
  let pending: Uint8Array[] = [];
  const inflate = new Inflate((data) => {
    produced += data.byteLength;
    if (produced > limit) throw overflow();
    pending.push(data);
  });
  for (let at = dataStart; at < dataEnd || at === dataStart; at += READ_STEP) {
    const piece = await source.read(at, Math.min(READ_STEP, dataEnd - at));
    try {
      inflate.push(piece, at + READ_STEP >= dataEnd);
    } catch (err) {
      if (err instanceof UploadError) throw err;
      throw invalid(`entry ${JSON.stringify(entry.name)} is not valid deflate data`);
    }
    const out = pending;
    pending = [];
    for (const chunk of out) yield chunk;
    if (dataEnd === dataStart) break;
  }
  if (produced !== entry.size) throw invalid(`entry ${JSON.stringify(entry.name)} is truncated`);
}

/** An entry read whole (small entries only: manifests). */
export async function readZipEntryBytes(source: ByteRangeSource, entry: ZipEntry, maxSize: number): Promise<Uint8Array> {
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
  if (name === '' || name.startsWith('/') || name.includes('\\') || name.includes('\0') || /^[A-Za-z]:/.test(name)) return false;
  return !name.split('/').some((segment) => segment === '..');
}
