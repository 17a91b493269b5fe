// Charts as inline SVG, drawn on the server from the read API's numbers: issue
// sparklines, hourly timelines (optionally stacked by release) and daily
// crash-free bars. Presentation attributes only (no style attributes), so the
// Content-Security-Policy can forbid inline styles. Each chart carries a text
// alternative for screen readers.
import { html, raw, type Html } from './html.js';

/** Colours of stacked series (releases), cycled. */
const SERIES = ['#3b6fd8', '#e0793a', '#2e9e6a', '#a35bd0', '#c9a227', '#d0466a', '#3aa7b8', '#7a7f8c'];
export const seriesColour = (i: number): string => SERIES[i % SERIES.length];

const r = (n: number) => Math.round(n * 100) / 100;

/** One bar as a path segment (move, then a closed rectangle): far smaller than a rect element. */
function barPath(x: number, y: number, w: number, h: number): string {
  return `M${r(x)} ${r(y)}h${r(w)}v${r(h)}h${r(-w)}z`;
}

/** 24 hourly counts as a tiny bar chart. */
export function sparkline(values: number[] | undefined, label = 'events per hour, last 24 hours'): Html {
  const v = values ?? [];
  const max = Math.max(1, ...v);
  const w = 96;
  const h = 20;
  const bw = v.length > 0 ? w / v.length : w;
  let d = '';
  v.forEach((n, i) => {
    if (n === 0) return;
    const bh = Math.max(1.5, (n / max) * h);
    d += barPath(i * bw, h - bh, Math.max(bw - 1, 1), bh);
  });
  return html`<svg class="spark" viewBox="0 0 ${w} ${h}" width="${w}" height="${h}" role="img" aria-label="${label}: ${v.join(', ')}"><path fill="currentColor" d="${d}"/></svg>`;
}

/**
 * A bar per bucket, stacked by series. `buckets` lists every bucket in order
 * (zero-filled by the caller); `series` names the stack order. Each series is one
 * path; each non-empty bucket gets a transparent hover target with its numbers.
 */
export function stackedBars(
  buckets: string[],
  values: Map<string, Map<string, number>>,
  series: string[],
  label: string,
): Html {
  const w = 720;
  const h = 160;
  const pad = 18;
  const totals = buckets.map((b) => series.reduce((sum, s) => sum + (values.get(b)?.get(s) ?? 0), 0));
  const max = Math.max(1, ...totals);
  const bw = buckets.length > 0 ? w / buckets.length : w;
  const paths = series.map(() => '');
  const tips: string[] = [];
  buckets.forEach((b, i) => {
    if (totals[i] === 0) return;
    let y = h;
    const parts: string[] = [];
    series.forEach((s, si) => {
      const n = values.get(b)?.get(s) ?? 0;
      if (n === 0) return;
      const bh = (n / max) * (h - pad);
      y -= bh;
      paths[si] += barPath(i * bw, y, Math.max(bw - 0.5, 0.5), bh);
      if (series.length > 1) parts.push(`${s || '(no release)'} ${n}`);
    });
    const tip = `${b.slice(0, 10)} ${b.slice(11, 13)}h: ${totals[i]}${parts.length ? ` (${parts.join(', ')})` : ''}`;
    tips.push(
      `<rect x="${r(i * bw)}" y="0" width="${r(bw)}" height="${h}" fill="transparent"><title>${escapeText(tip)}</title></rect>`,
    );
  });
  const total = totals.reduce((a, b) => a + b, 0);
  return html`<figure class="chart">
    <svg viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" role="img" aria-label="${label}: ${total} in total, peak ${Math.max(0, ...totals)} per bucket">
      <line x1="0" y1="${h - 0.5}" x2="${w}" y2="${h - 0.5}" stroke="#889" stroke-width="1"/>
      <text x="2" y="12" font-size="11" fill="currentColor">${max}</text>
      ${paths.map((d, si) => (d ? html`<path fill="${seriesColour(si)}" d="${d}"/>` : ''))}
      ${raw(tips.join(''))}
    </svg>
    <figcaption>${axis(buckets)}</figcaption>
  </figure>`;
}

/** A single-series bar chart (issue and release timelines). */
export function bars(buckets: string[], counts: number[], label: string): Html {
  const values = new Map(buckets.map((b, i) => [b, new Map([['', counts[i] ?? 0]])]));
  return stackedBars(buckets, values, [''], label);
}

function axis(buckets: string[]): Html {
  if (buckets.length === 0) return html`no data`;
  return html`<span>${buckets[0].slice(0, 10)}</span><span>${buckets[buckets.length - 1].slice(0, 16).replace('T', ' ')} UTC</span>`;
}

function escapeText(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Colour-free legend of the series, each with its swatch. */
export function legend(series: string[]): Html {
  return html`<ul class="legend">${series.map(
    (s, i) =>
      html`<li><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${seriesColour(i)}"/></svg> ${s || '(no release)'}</li>`,
  )}</ul>`;
}

/** A horizontal meter for a share (breakdowns, crash-free rates). */
export function meter(value: number, max: number, label: string): Html {
  const width = max > 0 ? Math.max(0, Math.min(1, value / max)) * 100 : 0;
  return html`<svg class="meter" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" aria-label="${label}"><rect width="100" height="8" fill="#dfe3ea"/><rect width="${r(width)}" height="8" fill="#3b6fd8"/></svg>`;
}
