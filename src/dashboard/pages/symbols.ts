// The symbols page: the project's symbol files (ProGuard mappings, source maps,
// dSYMs) with delete, and the upload form, which streams its file to src/symbols
// as the symbols API does (multipart; the CSRF token rides in the form's URL so
// the body is never buffered).
import type { symbolFileJson } from '../../symbols/storage.js';
import { SYMBOL_KINDS } from '../../symbols/storage.js';
import { count, href, html, options, projectPath, utc, type Html } from '../html.js';
import { csrfField, flash, page, type PageContext } from '../layout.js';

type Project = { slug: string; name: string };
type SymbolFile = ReturnType<typeof symbolFileJson>;

export function symbolsPage(
  ctx: PageContext,
  project: Project,
  files: SymbolFile[],
  o: { message?: string; error?: string } = {},
): Html {
  const base = projectPath(project.slug, 'symbols');
  const body = html`<h1>Symbols</h1>
  ${flash(o.message)}${flash(o.error, 'error')}
  <section class="card" aria-labelledby="upload-h"><h2 id="upload-h">Upload</h2>
    <p class="sub">A ProGuard mapping, a source map or a dSYM (or a zip of them). Events already stored for the release are symbolicated again.</p>
    <form method="post" action="${href(base, { _csrf: ctx.csrf })}" enctype="multipart/form-data" class="filters">
      <label>Kind<select name="kind">${options(SYMBOL_KINDS, 'sourcemap')}</select></label>
      <label>Release<input name="release" required></label>
      <label>Dist (optional)<input name="dist"></label>
      <label>File<input name="file" type="file" required></label>
      <button type="submit">Upload</button>
    </form>
  </section>
  <h2>Files</h2>
  ${
    files.length === 0
      ? html`<p>No symbol file yet.</p>`
      : html`<div class="scroll"><table><thead><tr><th>File</th><th>Kind</th><th>Release</th><th class="num">Size</th><th class="opt">Debug id</th><th class="opt">Uploaded</th><th></th></tr></thead><tbody>
    ${files.map(
      (
        f,
      ) => html`<tr><td class="title">${f.filename}</td><td>${f.kind}</td><td>${f.release}${f.dist ? ` (${f.dist})` : ''}</td><td class="num">${count(f.size)} B</td>
        <td class="opt"><code>${f.debug_id ?? ''}</code></td><td class="opt">${utc(f.uploaded_at)}</td>
        <td><form method="post" action="${base}/${f.id}/delete">${csrfField(ctx)}<button type="submit" class="secondary" data-confirm="Delete this symbol file?" aria-label="Delete ${f.filename}">Delete</button></form></td></tr>`,
    )}</tbody></table></div>`
  }`;
  return page(ctx, { title: `Symbols · ${project.name}`, project, section: 'symbols', body });
}
