// Uploader-compatibility routes under /api/0/ (sentry-cli 2.x and 3.x, and the build
// plugins that run it): auth check, organization and project lookups, chunk upload,
// assemble, legacy debug-file routes, releases in both URL forms with their commits and
// deploys. `{org}` is
// ignored; `{project}` is a slug or a numeric id. Thin: parsing and answers here, the
// work in src/uploads. Bodies are streamed (this prefix is exempt from the app's 1 MB
// limit); JSON bodies get their own limit here.
import { Hono, type Context } from 'hono';
import { MultipartError, MultipartLimitError, multipartBoundary, parseMultipart } from '../symbols/multipart.js';
import type { AppDeps } from '../context.js';
import type { ProjectRow } from '../store/schema.js';
import { findProjectByIdOrSlug, listProjects } from '../store/projects.js';
import { assembleBundle, parseBundleAssembleBody } from '../uploads/bundles.js';
import { chunkUploadOptions, receiveChunks } from '../uploads/chunks.js';
import { difJson } from '../uploads/dif.js';
import { assembleDifs, parseDifAssembleBody, storeDifZip } from '../uploads/difs.js';
import { UploadError } from '../uploads/errors.js';
import { createDeploy, deployJson, listDeploys, parseDeployBody } from '../uploads/deploys.js';
import { commitJson, listCommits, setReleaseCommits } from '../uploads/release-commits.js';
import {
  associateProguardRelease,
  deleteRelease,
  findRelease,
  listReleases,
  parseReleaseBody,
  releaseActivity,
  releaseJson,
  updateRelease,
  upsertRelease,
  versionProblem,
  type ReleaseChange,
} from '../uploads/releases.js';
import type { CliReleaseTable } from '../store/schema.js';
import { symbolPortFor } from '../uploads/symbols-adapter.js';
import type { AssembleContext } from '../uploads/assemble.js';
import { ZipError } from '../symbols/zip.js';
import { bytesSource } from '../bytes.js';
import { errorResponse, handleError, readJson } from './errors.js';
import { publicBaseUrl } from './public-url.js';
import { LEGACY_ZIP_LIMIT, UPLOAD_JSON_LIMIT } from '../limits.js';
import { recordAudit } from '../accounts/store.js';
import { audit, auditFrom } from './audit.js';

/** The one organization every `{org}` stands for. */
const ORGANIZATION = { id: '1', slug: 'faultline', name: 'Faultline' };

/** Both spellings of a path: sentry-cli sends trailing slashes, people and plugins sometimes do not. */
function paths(path: string): string[] {
  return [path, path.replace(/\/$/, '')];
}

/** Every JSON body here goes through the app's one reader, with the uploader routes' larger limit. */
const readJsonBody = (c: Context): Promise<unknown> => readJson(c, UPLOAD_JSON_LIMIT);

function boundaryOf(c: Context): string {
  const boundary = multipartBoundary(c.req.header('content-type') ?? null);
  if (!boundary) throw new UploadError(400, 'expected a multipart/form-data body with a boundary');
  return boundary;
}

function projectSummary(p: ProjectRow) {
  return {
    id: String(p.id),
    slug: p.slug,
    name: p.name,
    platform: p.platform,
    dateCreated: new Date(Number(p.created_at)).toISOString(),
    isMember: true,
    hasAccess: true,
  };
}

export function uploadRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const symbols = symbolPortFor(deps);
  /**
   * The assemble routes' context: each file this request assembles is audited as the
   * request's actor, also when the assembly ends after the answer (sentry-cli polls).
   */
  const assembleContext = (c: Context, targets: ProjectRow[]): AssembleContext => {
    const who = auditFrom(deps, c);
    return {
      db,
      symbols,
      now: () => deps.clock.now(),
      createSha1: deps.createSha1,
      waitMs: deps.assembleWaitMs,
      onAssembled: async (job, result) => {
        const slugs = targets.filter((p) => job.projectIds.includes(Number(p.id))).map((p) => p.slug);
        const dif =
          job.kind === 'dif' ? (result as { symbolType?: unknown; debugId?: unknown } | undefined) : undefined;
        const details =
          job.kind === 'dif'
            ? {
                via: 'sentry-cli',
                name: job.name,
                checksum: job.checksum,
                type: dif?.symbolType ?? null,
                debug_id: dif?.debugId ?? null,
              }
            : {
                via: 'sentry-cli',
                checksum: job.checksum,
                files: (result as { files?: unknown } | undefined)?.files ?? 0,
                projects: slugs,
              };
        try {
          await recordAudit(
            deps.store,
            {
              ...who,
              action: job.kind === 'dif' ? 'symbol.upload' : 'artifact_bundle.upload',
              target: slugs.join(','),
              details,
            },
            deps.clock.now(),
          );
        } catch (err) {
          deps.logger.error({ err }, 'writing an audit entry failed');
        }
      },
    };
  };
  /** A release's audit target and details: its version and the projects' slugs. */
  const releaseAudit = async (
    c: Context,
    action: string,
    version: string,
    projectIds: number[],
    details: Record<string, unknown> = {},
  ) => {
    const map = await projectMap();
    await audit(deps, c, action, version, {
      via: 'sentry-cli',
      projects: projectIds.map((id) => map.get(id)?.slug ?? String(id)),
      ...details,
    });
  };
  /**
   * The audit entries of a release body's change: its commits, its finalizing (sentry-cli
   * sends the release again before set-commits: a body that only names it records nothing).
   */
  const changeAudits = async (c: Context, version: string, projectIds: number[], change: ReleaseChange) => {
    if (change.commits !== undefined && projectIds.length > 0)
      await releaseAudit(c, 'release.set_commits', version, projectIds, { commits: change.commits.length });
    if (change.dateReleased)
      await releaseAudit(c, 'release.finalize', version, projectIds, {
        released_at: new Date(change.dateReleased).toISOString(),
      });
  };

  app.onError((err, c) => {
    // The rest of a refused body is not read: the connection closes after the answer, so a
    // client never sends its next request into the remains of this one.
    if (err instanceof UploadError || err instanceof ZipError) {
      return errorResponse(
        c,
        err instanceof UploadError ? err.status : 400,
        err.message,
        c.req.raw.body ? { Connection: 'close' } : {},
      );
    }
    return handleError(err, c, deps.logger);
  });

  async function project(c: Context): Promise<ProjectRow> {
    const p = await findProjectByIdOrSlug(db, c.req.param('project') ?? '');
    if (!p) throw new UploadError(404, `project ${JSON.stringify(c.req.param('project'))} not found`);
    return p;
  }

  async function projectsNamed(names: string[]): Promise<ProjectRow[]> {
    const out: ProjectRow[] = [];
    for (const name of names) {
      const p = await findProjectByIdOrSlug(db, name);
      if (!p) throw new UploadError(400, `project ${JSON.stringify(name)} not found`);
      if (!out.some((o) => o.id === p.id)) out.push(p);
    }
    return out;
  }

  const projectMap = async () => new Map((await listProjects(db)).map((p) => [Number(p.id), p]));

  /** Sentry's JSON of releases (rows of one version each), with their commits and deploys. */
  async function releasesJson(groups: CliReleaseTable[][]) {
    const projectIds = [...new Set(groups.flat().map((r) => Number(r.project_id)))];
    const [map, activity] = await Promise.all([
      projectMap(),
      releaseActivity(
        db,
        projectIds,
        groups.map((g) => g[0].version),
        1,
      ),
    ]);
    return groups.map((rows) => releaseJson(rows, map, activity.get(rows[0].version)));
  }
  const oneReleaseJson = async (rows: CliReleaseTable[]) => (await releasesJson([rows]))[0];

  /** The commits a release body sets, on the release rows of these projects. */
  async function applyCommits(projectIds: number[], version: string, change: ReleaseChange) {
    if (change.commits !== undefined && projectIds.length > 0)
      await setReleaseCommits(deps.store, projectIds, version, change.commits);
  }

  /** The release rows of `{version}` (404 as Sentry answers an unknown release). */
  async function existingRelease(c: Context): Promise<CliReleaseTable[]> {
    const rows = await findRelease(db, null, version(c));
    if (rows.length === 0) throw new UploadError(404, `release ${JSON.stringify(c.req.param('version'))} not found`);
    return rows;
  }

  function version(c: Context): string {
    const v = c.req.param('version') ?? '';
    const problem = versionProblem(v);
    if (problem) throw new UploadError(404, `release ${JSON.stringify(v)} not found`);
    return v;
  }

  // sentry-cli `info` and token checks.
  app.get('/api/0/', (c) =>
    c.json({
      version: '0',
      auth: { scopes: ['org:read', 'project:read', 'project:write', 'project:releases'] },
      user: null,
    }),
  );

  app.get('/api/0/organizations/', (c) => c.json([ORGANIZATION]));
  app.on('GET', paths('/api/0/organizations/:org/'), (c) =>
    c.json({ ...ORGANIZATION, features: [], status: { id: 'active', name: 'active' } }),
  );
  app.on('GET', paths('/api/0/organizations/:org/projects/'), async (c) =>
    c.json((await listProjects(db)).map(projectSummary)),
  );
  app.on('GET', paths('/api/0/projects/:org/:project/'), async (c) =>
    c.json({ ...projectSummary(await project(c)), organization: ORGANIZATION }),
  );
  // No repository integrations: set-commits --auto falls back to the local git history.
  app.on('GET', paths('/api/0/organizations/:org/repos/'), (c) => c.json([]));

  app.on('GET', paths('/api/0/organizations/:org/chunk-upload/'), (c) =>
    c.json(
      chunkUploadOptions(
        `${publicBaseUrl(c, deps.config)}/api/0/organizations/${encodeURIComponent(c.req.param('org') ?? '')}/chunk-upload/`,
        symbols.maxFileBytes(),
      ),
    ),
  );
  app.on('POST', paths('/api/0/organizations/:org/chunk-upload/'), async (c) => {
    const boundary = boundaryOf(c);
    const body = c.req.raw.body;
    if (!body) return c.body(null, 200);
    await receiveChunks(db, body, { boundary, now: deps.clock.now(), decompress: deps.ingestRuntime.decompress });
    return c.body(null, 200);
  });

  app.on('POST', paths('/api/0/projects/:org/:project/files/difs/assemble/'), async (c) => {
    const p = await project(c);
    const files = parseDifAssembleBody(await readJsonBody(c));
    return c.json(await assembleDifs(assembleContext(c, [p]), Number(p.id), files));
  });

  app.on('POST', paths('/api/0/organizations/:org/artifactbundle/assemble/'), async (c) => {
    const request = parseBundleAssembleBody(await readJsonBody(c));
    const targets = await projectsNamed(request.projects);
    return c.json(
      await assembleBundle(
        assembleContext(c, targets),
        targets.map((p) => Number(p.id)),
        request,
      ),
    );
  });

  // Legacy debug-file routes (sentry-cli 2.x `upload-proguard`, and uploads without chunking).
  app.on('GET', paths('/api/0/projects/:org/:project/files/dsyms/'), async (c) => {
    const p = await project(c);
    const debugId = (c.req.query('debug_id') ?? '').toLowerCase();
    if (debugId === '') return c.json([]);
    const found = await symbols.findByDebugId(Number(p.id), debugId);
    return c.json(found.map((f) => difJson(f, '', f.filename.slice(f.filename.lastIndexOf('/') + 1))));
  });
  app.on('GET', paths('/api/0/projects/:org/:project/files/dsyms/unknown/'), async (c) => {
    await project(c);
    // Stored files are found by debug id, not by the checksum of the upload: every file is sent.
    return c.json({ missing: c.req.queries('checksums') ?? [] });
  });
  app.on('POST', paths('/api/0/projects/:org/:project/files/dsyms/'), async (c) => {
    const p = await project(c);
    const boundary = boundaryOf(c);
    const body = c.req.raw.body;
    if (!body) throw new UploadError(400, 'expected a multipart part "file" with a ZIP of debug files');
    let zip: Uint8Array | null = null;
    try {
      for await (const part of parseMultipart(body, boundary, {
        maxParts: 16,
        maxBytes: LEGACY_ZIP_LIMIT + 1024 * 1024,
      })) {
        if (part.name === 'file' && zip === null) zip = await part.bytes(LEGACY_ZIP_LIMIT);
      }
    } catch (err) {
      if (err instanceof MultipartLimitError && err.limit !== 'parts') {
        throw new UploadError(413, `the ZIP is larger than ${LEGACY_ZIP_LIMIT} bytes; upload with chunks instead`);
      }
      if (err instanceof MultipartError) throw new UploadError(400, `malformed multipart body: ${err.message}`);
      throw err;
    }
    if (!zip) throw new UploadError(400, 'expected a multipart part "file" with a ZIP of debug files');
    const stored = await storeDifZip(symbols, Number(p.id), bytesSource(zip));
    await audit(deps, c, 'symbol.upload', p.slug, { via: 'sentry-cli', files: stored.length });
    return c.json(stored, 201);
  });
  app.on('POST', paths('/api/0/projects/:org/:project/files/dsyms/associate/'), async (c) => {
    await project(c);
    await readJsonBody(c);
    return c.json({ associatedDsymFiles: [] });
  });
  app.on('POST', paths('/api/0/projects/:org/:project/files/proguard-artifact-releases/'), async (c) => {
    const p = await project(c);
    const body = (await readJsonBody(c)) as Record<string, unknown> | undefined;
    const release = body?.release_name;
    const uuid = body?.proguard_uuid;
    if (typeof release !== 'string' || release === '' || typeof uuid !== 'string')
      throw new UploadError(400, 'release_name and proguard_uuid are required');
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(uuid))
      throw new UploadError(400, 'proguard_uuid must be a UUID');
    const mappings = await symbols.findByDebugId(Number(p.id), uuid.toLowerCase());
    if (!mappings.some((m) => m.kind === 'proguard'))
      throw new UploadError(400, `no ProGuard mapping with UUID ${uuid} was uploaded to this project`);
    const added = await associateProguardRelease(db, Number(p.id), release, uuid, deps.clock.now());
    if (!added) return errorResponse(c, 409, 'this ProGuard mapping is already associated with that release');
    await releaseAudit(c, 'release.associate_proguard', release, [Number(p.id)], { proguard_uuid: uuid.toLowerCase() });
    return c.json({ release_name: release, proguard_uuid: uuid.toLowerCase() }, 201);
  });
  app.on('POST', paths('/api/0/projects/:org/:project/reprocessing/'), async (c) => {
    await project(c);
    return c.json({});
  });

  // Releases, organization form (3.x; 2.x with several projects).
  app.on('GET', paths('/api/0/organizations/:org/releases/'), async (c) => {
    const projectFilter = c.req.queries('project');
    const ids =
      projectFilter && projectFilter.length > 0 ? (await projectsNamed(projectFilter)).map((p) => Number(p.id)) : null;
    return c.json(await releasesJson(await listReleases(db, ids)));
  });
  app.on('POST', paths('/api/0/organizations/:org/releases/'), async (c) => {
    const change = parseReleaseBody(await readJsonBody(c));
    if (!change.version) throw new UploadError(400, 'version is required');
    if (!change.projects || change.projects.length === 0)
      throw new UploadError(400, 'projects must name at least one project');
    const targets = await projectsNamed(change.projects);
    const ids = targets.map((p) => Number(p.id));
    const created = await upsertRelease(db, ids, change.version, change, deps.clock.now());
    await applyCommits(ids, change.version, change);
    if (created) await releaseAudit(c, 'release.create', change.version, ids);
    await changeAudits(c, change.version, ids, change);
    return c.json(await oneReleaseJson(await findRelease(db, ids, change.version)), created ? 201 : 200);
  });
  app.on('GET', paths('/api/0/organizations/:org/releases/:version/'), async (c) =>
    c.json(await oneReleaseJson(await existingRelease(c))),
  );
  app.on('PUT', paths('/api/0/organizations/:org/releases/:version/'), async (c) => {
    const v = version(c);
    const change = parseReleaseBody(await readJsonBody(c));
    const ids =
      change.projects && change.projects.length > 0
        ? (await projectsNamed(change.projects)).map((p) => Number(p.id))
        : null;
    const existing = await findRelease(db, ids, v);
    if (existing.length === 0) throw new UploadError(404, `release ${JSON.stringify(v)} not found`);
    const existingIds = existing.map((r) => Number(r.project_id));
    await updateRelease(db, existingIds, v, change);
    await applyCommits(existingIds, v, change);
    await changeAudits(c, v, existingIds, change);
    return c.json(await oneReleaseJson(await findRelease(db, ids, v)));
  });
  app.on('DELETE', paths('/api/0/organizations/:org/releases/:version/'), async (c) => {
    const v = version(c);
    const ids = (await findRelease(db, null, v)).map((r) => Number(r.project_id));
    const removed = await deleteRelease(db, null, v);
    if (removed === 0) throw new UploadError(404, `release ${JSON.stringify(c.req.param('version'))} not found`);
    await releaseAudit(c, 'release.delete', v, ids);
    return c.body(null, 204);
  });
  app.on('GET', paths('/api/0/organizations/:org/releases/:version/previous-with-commits/'), (c) => c.json({}));
  app.on('GET', paths('/api/0/organizations/:org/releases/:version/commits/'), async (c) => {
    const rows = await existingRelease(c);
    return c.json((await listCommits(db, Number(rows[0].project_id), rows[0].version)).map(commitJson));
  });
  // Deploys (3.x `deploys new|list`, 2.x `releases deploys`, the build plugins' `release.deploy`).
  app.on('GET', paths('/api/0/organizations/:org/releases/:version/deploys/'), async (c) => {
    const rows = await existingRelease(c);
    return c.json(
      (
        await listDeploys(
          db,
          rows.map((r) => Number(r.project_id)),
          rows[0].version,
        )
      ).map(deployJson),
    );
  });
  app.on('POST', paths('/api/0/organizations/:org/releases/:version/deploys/'), async (c) => {
    const rows = await existingRelease(c);
    const input = parseDeployBody(await readJsonBody(c));
    let ids = rows.map((r) => Number(r.project_id));
    if (input.projects) {
      const named = (await projectsNamed(input.projects)).map((p) => Number(p.id));
      const outside = named.filter((id) => !ids.includes(id));
      if (outside.length > 0)
        throw new UploadError(400, `release ${JSON.stringify(rows[0].version)} is not in every project named`);
      ids = named;
    }
    const deploy = deployJson(await createDeploy(deps.store, ids, rows[0].version, input, deps.clock.now()));
    await releaseAudit(c, 'deploy.create', rows[0].version, ids, {
      environment: deploy.environment,
      name: deploy.name,
    });
    return c.json(deploy, 201);
  });

  // Releases, project form (2.x with one project).
  app.on('GET', paths('/api/0/projects/:org/:project/releases/'), async (c) => {
    const p = await project(c);
    return c.json(await releasesJson(await listReleases(db, [Number(p.id)])));
  });
  app.on('POST', paths('/api/0/projects/:org/:project/releases/'), async (c) => {
    const p = await project(c);
    const change = parseReleaseBody(await readJsonBody(c));
    if (!change.version) throw new UploadError(400, 'version is required');
    const created = await upsertRelease(db, [Number(p.id)], change.version, change, deps.clock.now());
    await applyCommits([Number(p.id)], change.version, change);
    if (created) await releaseAudit(c, 'release.create', change.version, [Number(p.id)]);
    await changeAudits(c, change.version, [Number(p.id)], change);
    return c.json(await oneReleaseJson(await findRelease(db, [Number(p.id)], change.version)), created ? 201 : 200);
  });
  app.on('GET', paths('/api/0/projects/:org/:project/releases/:version/'), async (c) => {
    const p = await project(c);
    const rows = await findRelease(db, [Number(p.id)], version(c));
    if (rows.length === 0) throw new UploadError(404, `release ${JSON.stringify(c.req.param('version'))} not found`);
    return c.json(await oneReleaseJson(rows));
  });
  app.on('PUT', paths('/api/0/projects/:org/:project/releases/:version/'), async (c) => {
    const p = await project(c);
    const v = version(c);
    const change = parseReleaseBody(await readJsonBody(c));
    if ((await updateRelease(db, [Number(p.id)], v, change)) === 0)
      throw new UploadError(404, `release ${JSON.stringify(v)} not found`);
    await applyCommits([Number(p.id)], v, change);
    await changeAudits(c, v, [Number(p.id)], change);
    return c.json(await oneReleaseJson(await findRelease(db, [Number(p.id)], v)));
  });
  app.on('DELETE', paths('/api/0/projects/:org/:project/releases/:version/'), async (c) => {
    const p = await project(c);
    const v = version(c);
    if ((await deleteRelease(db, [Number(p.id)], v)) === 0)
      throw new UploadError(404, `release ${JSON.stringify(c.req.param('version'))} not found`);
    await releaseAudit(c, 'release.delete', v, [Number(p.id)]);
    return c.body(null, 204);
  });
  // Release files are only used by clients that cannot upload artifact bundles: none are kept.
  app.on('GET', paths('/api/0/projects/:org/:project/releases/:version/files/'), async (c) => {
    await project(c);
    return c.json([]);
  });

  return app;
}
