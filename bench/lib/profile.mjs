// Summarises a V8 .cpuprofile (from `node --cpu-prof`): self time per function and
// per file/package, so the hot spots of the server under load can be read at once.
import fs from 'node:fs';

function shortFile(url) {
  if (!url) return '(native/V8)';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = u.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    return `npm:${pkg}/${rest.slice(rest[0].startsWith('@') ? 2 : 1).join('/')}`;
  }
  const dist = u.indexOf('/dist/');
  if (dist >= 0) return u.slice(dist + 1);
  return u.startsWith('node:') ? u : u.split('/').slice(-2).join('/');
}

function packageOf(url) {
  if (!url) return '(native/V8)';
  const f = shortFile(url);
  if (f.startsWith('npm:'))
    return f
      .split('/')
      .slice(0, f.startsWith('npm:@') ? 2 : 1)
      .join('/');
  if (f.startsWith('node:')) return 'node: (core)';
  if (f.startsWith('dist/')) return f.split('/').slice(0, 2).join('/');
  return f;
}

/** Returns { totalMs, functions: [{name, file, selfMs, pct}], files: [...], packages: [...] }. */
export function summarizeProfile(file, top = 25) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] ?? 0;
    self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt);
  }
  // Parent links, to charge library time to the nearest function of our own code.
  const parent = new Map();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownerCache = new Map();
  const ownerOf = (id) => {
    if (ownerCache.has(id)) return ownerCache.get(id);
    const n = byId.get(id);
    let owner;
    if (n.callFrame.url.includes('/dist/') && !n.callFrame.url.includes('/node_modules/'))
      owner = `${n.callFrame.functionName || '(anonymous)'} ${shortFile(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    else owner = parent.has(id) ? ownerOf(parent.get(id)) : null;
    ownerCache.set(id, owner);
    return owner;
  };
  const owners = new Map();
  let total = 0;
  const fn = new Map();
  const files = new Map();
  const pkgs = new Map();
  for (const [id, us] of self) {
    const n = byId.get(id);
    const cf = n.callFrame;
    total += us;
    const name = cf.functionName || '(anonymous)';
    const fileName = shortFile(cf.url);
    const key = `${name} ${fileName}:${cf.lineNumber + 1}`;
    const special = ['(garbage collector)', '(idle)', '(program)', '(root)'].includes(name);
    const k = special ? name : key;
    const f = fn.get(k) ?? { name, file: special ? '' : `${fileName}:${cf.lineNumber + 1}`, us: 0 };
    f.us += us;
    fn.set(k, f);
    const fk = special ? name : fileName;
    files.set(fk, (files.get(fk) ?? 0) + us);
    const pk = special ? name : packageOf(cf.url);
    pkgs.set(pk, (pkgs.get(pk) ?? 0) + us);
    if (!special) {
      const o = ownerOf(id) ?? '(outside faultline code: HTTP server, streams, timers)';
      owners.set(o, (owners.get(o) ?? 0) + us);
    }
  }
  const busy = total - (fn.get('(idle)')?.us ?? 0);
  const pct = (us) => Math.round((us / busy) * 1000) / 10;
  const sortDesc = (entries) => entries.sort((a, b) => b.us - a.us);
  return {
    totalMs: Math.round(total / 1000),
    busyMs: Math.round(busy / 1000),
    idlePct: Math.round(((total - busy) / total) * 1000) / 10,
    functions: sortDesc([...fn.values()].filter((f) => f.name !== '(idle)'))
      .slice(0, top)
      .map((f) => ({ name: f.name, file: f.file, selfMs: Math.round(f.us / 1000), pct: pct(f.us) })),
    files: sortDesc([...files.entries()].filter(([k]) => k !== '(idle)').map(([file, us]) => ({ file, us })))
      .slice(0, top)
      .map((f) => ({ file: f.file, selfMs: Math.round(f.us / 1000), pct: pct(f.us) })),
    /** Self time of each faultline function plus the library/runtime code it calls (not other faultline functions). */
    owners: sortDesc([...owners.entries()].map(([owner, us]) => ({ owner, us })))
      .slice(0, top)
      .map((o) => ({ owner: o.owner, ms: Math.round(o.us / 1000), pct: pct(o.us) })),
    packages: sortDesc([...pkgs.entries()].filter(([k]) => k !== '(idle)').map(([pkg, us]) => ({ pkg, us })))
      .slice(0, top)
      .map((p) => ({ package: p.pkg, selfMs: Math.round(p.us / 1000), pct: pct(p.us) })),
  };
}

// `node bench/lib/profile.mjs file.cpuprofile` prints the summary.
if (import.meta.url === `file://${process.argv[1]}`) {
  const s = summarizeProfile(process.argv[2], Number(process.argv[3] ?? 30));
  console.log(`total ${s.totalMs} ms, busy ${s.busyMs} ms, idle ${s.idlePct}%`);
  console.log('\nself time by function (% of busy time):');
  for (const f of s.functions)
    console.log(`${String(f.pct).padStart(5)}%  ${String(f.selfMs).padStart(7)} ms  ${f.name}  ${f.file}`);
  console.log('\nby file:');
  for (const f of s.files) console.log(`${String(f.pct).padStart(5)}%  ${String(f.selfMs).padStart(7)} ms  ${f.file}`);
  console.log('\nby faultline function, including the library code it calls:');
  for (const o of s.owners) console.log(`${String(o.pct).padStart(5)}%  ${String(o.ms).padStart(7)} ms  ${o.owner}`);
  console.log('\nby package:');
  for (const p of s.packages)
    console.log(`${String(p.pct).padStart(5)}%  ${String(p.selfMs).padStart(7)} ms  ${p.package}`);
}
