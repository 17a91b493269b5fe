// View hierarchies (attachment type `event.view_hierarchy`) as the dashboard draws
// them: the SDKs' JSON (`rendering_system` and `windows`, each node with `type`,
// `identifier`, geometry, `visibility`, `alpha` and `children`) read into a tree of at
// most MAX_VIEW_HIERARCHY_NODES nodes. Pure: bytes in, plain data out; anything that is
// not such a document is null (the page then offers the download).
import { MAX_VIEW_HIERARCHY_NODES, MAX_VIEW_HIERARCHY_RENDER_BYTES } from '../limits.js';

export interface ViewNode {
  type: string;
  identifier: string | null;
  /** "x,y w×h" when the node has geometry. */
  frame: string | null;
  visible: boolean;
  /** Other scalar attributes (tag, alpha, text, …), as text. */
  attributes: [string, string][];
  children: ViewNode[];
}

export interface ViewHierarchy {
  renderingSystem: string | null;
  windows: ViewNode[];
  nodes: number;
  /** True when the tree was cut at MAX_VIEW_HIERARCHY_NODES nodes. */
  cut: boolean;
}

const GEOMETRY = ['x', 'y', 'width', 'height'];
const SHOWN = new Set(['type', 'identifier', 'children', 'visibility', 'visible', ...GEOMETRY]);
const MAX_DEPTH = 200;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function short(value: unknown): string {
  const s = typeof value === 'string' ? value : JSON.stringify(value);
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? Math.round(v * 10) / 10 : null);

/** Reads a view hierarchy; null when the bytes are too large or not one. */
export function readViewHierarchy(bytes: Uint8Array, maxNodes = MAX_VIEW_HIERARCHY_NODES): ViewHierarchy | null {
  if (bytes.byteLength > MAX_VIEW_HIERARCHY_RENDER_BYTES) return null;
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return null;
  }
  if (!isObject(doc) || !Array.isArray(doc.windows)) return null;
  let nodes = 0;
  let cut = false;
  const read = (value: unknown, depth: number): ViewNode | null => {
    if (!isObject(value)) return null;
    if (nodes >= maxNodes || depth > MAX_DEPTH) {
      cut = true;
      return null;
    }
    nodes++;
    const [x, y, w, h] = GEOMETRY.map((k) => num(value[k]));
    const frame = w !== null && h !== null ? `${x ?? 0},${y ?? 0} ${w}×${h}` : null;
    const visible =
      value.visible === false ? false : typeof value.visibility === 'string' ? value.visibility === 'visible' : true;
    const attributes: [string, string][] = [];
    for (const [k, v] of Object.entries(value)) {
      if (SHOWN.has(k) || v === null || typeof v === 'object') continue;
      attributes.push([k, short(v)]);
    }
    const children: ViewNode[] = [];
    if (Array.isArray(value.children)) {
      for (const child of value.children) {
        const node = read(child, depth + 1);
        if (node) children.push(node);
      }
    }
    return {
      type: typeof value.type === 'string' && value.type !== '' ? short(value.type) : '(view)',
      identifier: typeof value.identifier === 'string' && value.identifier !== '' ? short(value.identifier) : null,
      frame,
      visible,
      attributes,
      children,
    };
  };
  const windows: ViewNode[] = [];
  for (const w of doc.windows) {
    const node = read(w, 0);
    if (node) windows.push(node);
  }
  return {
    renderingSystem: typeof doc.rendering_system === 'string' ? short(doc.rendering_system) : null,
    windows,
    nodes,
    cut,
  };
}
