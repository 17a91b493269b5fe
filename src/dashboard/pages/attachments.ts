// The attachments of an event on its page: screenshots shown inline (only files whose
// bytes are PNG, JPEG, WebP or GIF, served by the image route with that type), view
// hierarchies as a collapsible tree of <details> elements (size-capped), and every file
// as a download. Every value from the file is escaped text; nothing from it is markup.
import type { EventFile } from '../../attachments/storage.js';
import type { ViewNode } from '../../attachments/view-hierarchy.js';
import { count, html, projectPath, type Html } from '../html.js';

type EventAttachment = EventFile;

type Project = { slug: string };

function bytes(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function nodeLabel(n: ViewNode): Html {
  return html`<code>${n.type}</code>${n.identifier ? html` <span class="vh-id">#${n.identifier}</span>` : ''}${n.frame ? html` <span class="sub">${n.frame}</span>` : ''}${n.visible ? '' : html` <span class="badge">hidden</span>`}${n.attributes.length > 0 ? html` <span class="sub">${n.attributes.map(([k, v]) => `${k}=${v}`).join(' ')}</span>` : ''}`;
}

function nodeView(n: ViewNode, depth: number): Html {
  if (n.children.length === 0) return html`<li>${nodeLabel(n)}</li>`;
  // The first levels start open: the windows and their content views.
  return html`<li><details ${depth < 2 ? html`open` : ''}><summary>${nodeLabel(n)} <span class="sub">(${n.children.length})</span></summary><ul>${n.children.map((c) => nodeView(c, depth + 1))}</ul></details></li>`;
}

export function attachmentsView(project: Project, files: EventFile[]): Html {
  if (files.length === 0) return html``;
  const download = (f: EventAttachment) => projectPath(project.slug, 'attachments', String(f.row.id));
  const images = files.filter((f) => f.image);
  const hierarchies = files.filter((f) => f.row.attachment_type === 'event.view_hierarchy');
  return html`<h3>Attachments</h3>
    ${
      images.length > 0
        ? html`<div class="screenshots">${images.map(
            (f) =>
              html`<figure class="screenshot"><a href="${download(f)}"><img src="${projectPath(project.slug, 'attachments', String(f.row.id), 'image')}" alt="${f.row.name}" loading="lazy"></a><figcaption>${f.row.name} · ${bytes(Number(f.row.size))}</figcaption></figure>`,
          )}</div>`
        : ''
    }
    ${hierarchies.map(
      (
        f,
      ) => html`<div class="view-hierarchy"><h4>View hierarchy <span class="sub">${f.row.name}${f.hierarchy?.renderingSystem ? ` · ${f.hierarchy.renderingSystem}` : ''}</span></h4>
        ${
          f.hierarchy
            ? html`<ul class="vh">${f.hierarchy.windows.map((w) => nodeView(w, 0))}</ul>${f.hierarchy.cut ? html`<p class="sub">Only the first ${count(f.hierarchy.nodes)} views are drawn; download the file for the rest.</p>` : ''}`
            : html`<p class="sub">Too large or not a view hierarchy to draw; <a href="${download(f)}">download it</a>.</p>`
        }</div>`,
    )}
    <div class="scroll"><table><thead><tr><th>File</th><th>Type</th><th>Content type</th><th>Size</th></tr></thead><tbody>
      ${files.map((f) => html`<tr><td><a href="${download(f)}" download>${f.row.name}</a></td><td>${f.row.attachment_type}</td><td>${f.row.content_type}</td><td>${bytes(Number(f.row.size))}</td></tr>`)}
    </tbody></table></div>`;
}
