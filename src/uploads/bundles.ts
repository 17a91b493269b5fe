// Artifact bundles (`artifactbundle/assemble/`, sentry-cli `sourcemaps upload`): a ZIP
// (after an 8-byte `SYSB` header) with `manifest.json` naming each file's type, URL
// (`~/app.min.js`) and headers (`Sourcemap`, `debug-id`). The bundle is read from its
// chunks without being assembled in memory: the manifest and directory are checked
// first (a bundle without a manifest, or with a path leaving the archive, stores
// nothing), then each source map streams into symbol storage with its debug id, the
// URL it serves, and the release and dist of the request or the manifest. Debug-file
// source bundles (`--include-sources`, `bundle-jvm`) share the format: their manifest
// names the debug id of the object whose sources they hold.
import {
  assembleOne,
  chunkBytes,
  chunkRangeSource,
  portableSha1,
  validateChunkList,
  type AssembleAnswer,
  type AssembleContext,
} from './assemble.js';
import { UploadError } from './errors.js';
import type { SymbolFileToStore } from './symbol-port.js';
import {
  isSafeArchivePath,
  readZipDirectory,
  readZipEntry,
  readZipEntryBytes,
  unpackedTooLargeMessage,
  type ZipEntry,
} from '../symbols/zip.js';
import type { ByteRangeSource } from '../bytes.js';
import { tooLargeMessage } from '../symbols/upload.js';
import { MAX_MANIFEST_BYTES, MAX_SYMBOL_DIST, MAX_SYMBOL_RELEASE } from '../limits.js';
import { unsafeJsonProblem } from '../ingest/hygiene.js';

export interface BundleAssembleRequest {
  checksum: string;
  chunks: string[];
  projects: string[];
  version: string;
  dist: string;
}

export function parseBundleAssembleBody(body: unknown): BundleAssembleRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new UploadError(400, 'request body must be a JSON object');
  const v = body as Record<string, unknown>;
  const { checksum, chunks } = validateChunkList(v.checksum, v.chunks, 'artifact bundle');
  if (
    !Array.isArray(v.projects) ||
    v.projects.length === 0 ||
    v.projects.some((p) => typeof p !== 'string' || p === '')
  ) {
    throw new UploadError(400, 'projects must be a non-empty list of project slugs or ids');
  }
  const text = (value: unknown, name: string, max: number) => {
    if (value === undefined || value === null) return '';
    if (typeof value !== 'string') throw new UploadError(400, `${name} must be a string`);
    if (value.length > max) throw new UploadError(400, `${name} must be at most ${max} characters`);
    return value;
  };
  return {
    checksum,
    chunks,
    projects: [...new Set(v.projects as string[])],
    version: text(v.version, 'version', MAX_SYMBOL_RELEASE),
    dist: text(v.dist, 'dist', MAX_SYMBOL_DIST),
  };
}

interface ManifestFile {
  type: string;
  url: string;
  headers: Record<string, string>;
}

export interface BundleManifest {
  files: Map<string, ManifestFile>;
  release: string;
  dist: string;
  debugId: string;
}

/** Parses and checks manifest.json: every file path stays in the archive and has a URL. */
export function parseManifest(bytes: Uint8Array): BundleManifest {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new UploadError(400, 'artifact bundle: manifest.json is not valid JSON');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new UploadError(400, 'artifact bundle: manifest.json must be an object');
  // Its text is stored (release, dist, URLs): what the API's JSON bodies may not hold, it may not either.
  const unsafe = unsafeJsonProblem(json, 'manifest.json');
  if (unsafe) throw new UploadError(400, `artifact bundle: ${unsafe}`);
  const m = json as Record<string, unknown>;
  const filesRaw = m.files ?? {};
  if (filesRaw === null || typeof filesRaw !== 'object' || Array.isArray(filesRaw))
    throw new UploadError(400, 'artifact bundle: manifest.json "files" must be an object');
  const files = new Map<string, ManifestFile>();
  for (const [path, info] of Object.entries(filesRaw as Record<string, unknown>)) {
    if (!isSafeArchivePath(path))
      throw new UploadError(400, `artifact bundle: unsafe path ${JSON.stringify(path)} in manifest.json`);
    if (info === null || typeof info !== 'object')
      throw new UploadError(400, `artifact bundle: manifest entry ${JSON.stringify(path)} must be an object`);
    const i = info as Record<string, unknown>;
    const headers: Record<string, string> = {};
    if (i.headers && typeof i.headers === 'object') {
      for (const [k, v] of Object.entries(i.headers as Record<string, unknown>))
        if (typeof v === 'string') headers[k.toLowerCase()] = v;
    }
    files.set(path, {
      type: typeof i.type === 'string' ? i.type : '',
      url: typeof i.url === 'string' ? i.url : '',
      headers,
    });
  }
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const release = str(m.release);
  const dist = str(m.dist);
  if (release.length > MAX_SYMBOL_RELEASE)
    throw new UploadError(
      400,
      `artifact bundle: manifest.json release must be at most ${MAX_SYMBOL_RELEASE} characters`,
    );
  if (dist.length > MAX_SYMBOL_DIST)
    throw new UploadError(400, `artifact bundle: manifest.json dist must be at most ${MAX_SYMBOL_DIST} characters`);
  return { files, release, dist, debugId: str(m.debug_id) };
}

/** A native debug id: a UUID, with an age appendix on some platforms (`…-1`). */
const SOURCE_BUNDLE_DEBUG_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-[0-9a-f]{1,8})?$/i;

/**
 * The debug id a debug-file source bundle's manifest names (its `debug_id` attribute),
 * lowercase; undefined when the bundle has no readable manifest or none is named. Never
 * throws: a source bundle is kept whatever its manifest says.
 */
export async function sourceBundleDebugId(zip: ByteRangeSource): Promise<string | undefined> {
  try {
    const manifestEntry = (await readZipDirectory(zip)).find((e) => e.name === 'manifest.json');
    if (!manifestEntry) return undefined;
    const manifest: unknown = JSON.parse(
      new TextDecoder().decode(await readZipEntryBytes(zip, manifestEntry, MAX_MANIFEST_BYTES)),
    );
    const id =
      manifest !== null && typeof manifest === 'object' ? (manifest as Record<string, unknown>).debug_id : undefined;
    return typeof id === 'string' && SOURCE_BUNDLE_DEBUG_ID.test(id) ? id.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** Resolves a `Sourcemap` header against the URL of the file that names it. */
export function resolveSourcemapUrl(fileUrl: string, reference: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(reference) || reference.startsWith('~/') || reference.startsWith('/'))
    return reference;
  const dir = fileUrl.slice(0, fileUrl.lastIndexOf('/') + 1);
  const parts: string[] = [];
  for (const segment of (dir + reference).split('/')) {
    if (segment === '..' && parts.length > 1 && parts[parts.length - 1] !== '~') parts.pop();
    else if (segment !== '.' && segment !== '..') parts.push(segment);
  }
  return parts.join('/');
}

const DEBUG_ID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function normalizeDebugId(value: string | undefined): string | undefined {
  if (!value || !DEBUG_ID.test(value)) return undefined;
  const hex = value.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What a bundle may unpack to: each source map, and all of them together. */
export interface BundleLimits {
  maxMapBytes: number;
  maxUnpackedBytes: number;
}

/**
 * The source maps of a bundle as files to store, after checking the whole bundle: a
 * manifest, no unsafe path anywhere, every manifest file present in the archive, no map
 * (by the size the archive records, which its reading holds it to) past the per-file
 * limit and all maps together within the unpacked limit.
 */
export async function bundleSourceMaps(
  zip: ByteRangeSource,
  release: string,
  dist: string,
  limits: BundleLimits,
): Promise<SymbolFileToStore[]> {
  const entries = await readZipDirectory(zip);
  const byName = new Map<string, ZipEntry>();
  for (const entry of entries) {
    if (!isSafeArchivePath(entry.name))
      throw new UploadError(400, `artifact bundle: unsafe path ${JSON.stringify(entry.name)}`);
    byName.set(entry.name, entry);
  }
  const manifestEntry = byName.get('manifest.json');
  if (!manifestEntry) throw new UploadError(400, 'artifact bundle: manifest.json is missing');
  const manifest = parseManifest(await readZipEntryBytes(zip, manifestEntry, MAX_MANIFEST_BYTES));
  for (const path of manifest.files.keys()) {
    if (!byName.has(path))
      throw new UploadError(400, `artifact bundle: ${JSON.stringify(path)} is in manifest.json but not in the archive`);
  }
  // Which minified file each map serves, and the debug id the minified file carries.
  const servedBy = new Map<string, { url: string; debugId?: string }>();
  for (const file of manifest.files.values()) {
    if (file.type === 'source_map' || !file.headers.sourcemap || !file.url) continue;
    servedBy.set(resolveSourcemapUrl(file.url, file.headers.sourcemap), {
      url: file.url,
      debugId: normalizeDebugId(file.headers['debug-id']),
    });
  }
  const effectiveRelease = release || manifest.release;
  const effectiveDist = dist || manifest.dist;
  const out: SymbolFileToStore[] = [];
  let unpacked = 0;
  for (const [path, file] of manifest.files) {
    if (file.type !== 'source_map') continue;
    const url = file.url || `~/${path.replace(/^files\/_\/_\//, '')}`;
    const entry = byName.get(path)!;
    if (entry.size > limits.maxMapBytes)
      throw new UploadError(400, `artifact bundle: ${tooLargeMessage(url, limits.maxMapBytes)}`);
    unpacked += entry.size;
    if (unpacked > limits.maxUnpackedBytes)
      throw new UploadError(400, `artifact bundle: ${unpackedTooLargeMessage('source maps', limits.maxUnpackedBytes)}`);
    const minified = servedBy.get(url);
    out.push({
      kind: 'sourcemap',
      filename: url,
      release: effectiveRelease,
      dist: effectiveDist,
      debugId: normalizeDebugId(file.headers['debug-id']) ?? minified?.debugId,
      serves: minified?.url,
      source: readZipEntry(zip, entry, limits.maxMapBytes),
    });
  }
  return out;
}

export interface BundleResult {
  files: number;
}

/** Answers one `artifactbundle/assemble/` request for the resolved projects. */
export async function assembleBundle(
  ctx: AssembleContext,
  projectIds: number[],
  request: BundleAssembleRequest,
): Promise<AssembleAnswer> {
  const answer = await assembleOne(ctx, {
    projectIds,
    kind: 'artifact_bundle',
    checksum: request.checksum,
    chunks: request.chunks,
    name: 'the artifact bundle',
    run: async (sizes) => {
      // The bundle's SHA-1 is checked before anything of it is stored.
      for await (const _ of chunkBytes(ctx.db, request.chunks, request.checksum, ctx.createSha1 ?? portableSha1));
      const zip = chunkRangeSource(ctx.db, request.chunks, sizes);
      const fileIds: number[] = [];
      for (const projectId of projectIds) {
        // Each project reads the maps again from the chunks: nothing is held between them.
        const maps = await bundleSourceMaps(zip, request.version, request.dist, {
          maxMapBytes: ctx.symbols.fileLimit('sourcemap'),
          maxUnpackedBytes: ctx.symbols.archiveLimits().maxUnpackedBytes,
        });
        if (maps.length > 0) fileIds.push(...(await ctx.symbols.storeAll(projectId, maps)).map((f) => f.id));
      }
      return { result: { files: fileIds.length } satisfies BundleResult, fileIds };
    },
  });
  const { result: _result, ...rest } = answer;
  return rest;
}
