// The dashboard's only assets, served from this app (/static/…): one small
// stylesheet (phone and desktop, visible focus, relative units so 200 % zoom
// reflows), one small script that only adds conveniences (copy the DSN,
// select every issue, confirm before a destructive action; every page works
// without it), and the tab icon.
export const CSS = `
:root{--fg:#1d2330;--muted:#5b6475;--line:#d5dae3;--bg:#f6f7f9;--card:#fff;--accent:#2f5fc4;--bad:#b3261e;--ok:#1e7a4c;--warn:#9a6700;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);line-height:1.45}
*{box-sizing:border-box}body{margin:0}
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible,textarea:focus-visible{outline:3px solid #f0a500;outline-offset:2px}
.skip{position:absolute;left:-999em}.skip:focus{left:1em;top:.5em;background:#fff;padding:.4em;z-index:9}
header.top{background:#1d2330;color:#fff;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1.25rem;align-items:center}
header.top a{color:#fff;text-decoration:none}header.top .brand{font-weight:700;font-size:1.1rem}
header.top nav{display:flex;flex-wrap:wrap;gap:.25rem .9rem;flex:1}header.top nav a[aria-current]{text-decoration:underline;text-underline-offset:.3em}
header.top form{margin:0}header.top button{background:none;border:1px solid #8a93a6;color:#fff}
main{max-width:80rem;margin:0 auto;padding:1rem}
h1{font-size:1.45rem;margin:.3rem 0 .8rem;overflow-wrap:anywhere}h2{font-size:1.15rem;margin:1.4rem 0 .6rem}h3{font-size:1rem;margin:1rem 0 .4rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:.4rem;padding:.8rem 1rem;margin-bottom:1rem}
.timeline{list-style:none;padding:0;margin:0 0 .8rem}.timeline li{border-left:2px solid var(--line);padding:.25rem .7rem;margin:.2rem 0}
.comment{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0;padding:.4rem .6rem;border-left:3px solid var(--accent);background:#f6f8fb}
form.inline{display:inline}textarea{width:100%;display:block}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.6rem;margin-bottom:1rem}
.stat{background:var(--card);border:1px solid var(--line);border-radius:.4rem;padding:.6rem .8rem;min-width:0;overflow-wrap:anywhere}.stat b{display:block;font-size:1.4rem}.stat span{color:var(--muted);font-size:.85rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
.screenshots{display:flex;flex-wrap:wrap;gap:1rem}.screenshot{margin:0}.screenshot img{display:block;max-width:100%;max-height:32rem;border:1px solid var(--line);border-radius:.3rem}.screenshot figcaption{font-size:.85rem}
ul.vh,ul.vh ul{list-style:none;margin:0;padding-left:1rem;border-left:1px dotted var(--line)}ul.vh{padding-left:0;border:0;overflow-wrap:anywhere}.vh-id{color:var(--accent)}
table{border-collapse:collapse;width:100%;background:var(--card)}th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.82rem;color:var(--muted);font-weight:600}td.num,th.num{text-align:right;white-space:nowrap}
.title{overflow-wrap:anywhere;font-weight:600}.sub{color:var(--muted);font-size:.85rem;overflow-wrap:anywhere}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem .8rem;align-items:flex-end;margin-bottom:1rem}
label{display:flex;flex-direction:column;align-items:flex-start;font-size:.82rem;color:var(--muted);gap:.15rem}
input,select,textarea,button{font:inherit;font-size:.95rem;padding:.35rem .5rem;border:1px solid #aab2c0;border-radius:.3rem;background:#fff;color:var(--fg);max-width:100%}
button,.button{cursor:pointer;background:var(--accent);color:#fff;border-color:var(--accent);text-decoration:none;display:inline-block;padding:.35rem .7rem;border-radius:.3rem}
button.secondary,.button.secondary{background:#fff;color:var(--accent)}button.danger{background:var(--bad);border-color:var(--bad)}
.actions{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center;margin:.5rem 0}
.badge{display:inline-block;padding:0 .4rem;border-radius:.8rem;font-size:.78rem;border:1px solid var(--line);background:#eef1f6;white-space:nowrap}
.l-fatal,.l-error{color:var(--bad)}.l-warning{color:var(--warn)}.s-resolved{color:var(--ok)}.s-regression{color:var(--bad)}
.spark{color:var(--accent);vertical-align:middle}.meter{width:min(8rem,20vw);height:.5rem;vertical-align:middle}table.breakdown td:first-child{overflow-wrap:anywhere;width:100%}table.breakdown .meter{width:min(4.5rem,15vw)}
figure.chart{margin:0}figure.chart svg{width:100%;height:10rem;display:block;color:var(--muted)}figure.chart figcaption{display:flex;justify-content:space-between;font-size:.78rem;color:var(--muted)}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.2rem 1rem;font-size:.85rem}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f2f6;padding:.6rem;border-radius:.3rem;max-height:40rem;overflow:auto}
.frames{display:grid;grid-template-columns:1fr;gap:.8rem}.frames.pair{grid-template-columns:repeat(auto-fit,minmax(min(20rem,100%),1fr))}
ol.stack{list-style:none;padding:0;margin:0;border:1px solid var(--line);border-radius:.3rem;background:var(--card)}ol.stack li{padding:.35rem .5rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere}ol.stack li.app{background:#f3f7ff}
.kv{display:grid;grid-template-columns:fit-content(40%) minmax(0,1fr);gap:.2rem .8rem}.kv dt{color:var(--muted);overflow-wrap:anywhere}.kv dd{margin:0;overflow-wrap:anywhere}
ol.stack li.lib{background:none}li.lib-run{padding:0 .5rem;background:#fafbfc}li.lib-run>details>summary{color:var(--muted);font-size:.85rem}li.lib-run ol.stack{margin-bottom:.4rem}
table.ctx{margin:.3rem 0;background:#f0f2f6;table-layout:fixed}table.ctx td{border:0;padding:0 .4rem;vertical-align:top}table.ctx td.ln{width:3.5rem;text-align:right;color:var(--muted);user-select:none;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.8rem}
table.ctx code{white-space:pre-wrap;overflow-wrap:anywhere}table.ctx tr.cur{background:#fde9a9}table.ctx tr.cur td.ln{color:var(--fg);font-weight:600}
details.vars>summary,details.thread>summary{font-size:.85rem}details.thread{border:1px solid var(--line);border-radius:.3rem;padding:0 .5rem;margin:.4rem 0;background:var(--card)}
ol.crumbs{list-style:none;padding:0;margin:0;border:1px solid var(--line);border-radius:.3rem;background:var(--card)}ol.crumbs>li{padding:.35rem .5rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere;min-width:0}
.crumb-head{display:flex;flex-wrap:wrap;gap:.1rem .6rem;align-items:baseline}dl.crumb-data{margin:.2rem 0 0;font-size:.85rem}
table.kvt{table-layout:fixed}table.kvt th{width:30%;overflow-wrap:anywhere;color:var(--muted)}table.kvt td{overflow-wrap:anywhere}
main p,main code,main td,main th,main li{overflow-wrap:anywhere}summary{min-height:1.75rem;display:list-item;padding:.2rem 0}.pager a,header.top a{min-height:1.75rem;display:inline-flex;align-items:center}
.flash{padding:.6rem .8rem;border-radius:.3rem;margin-bottom:1rem;background:#e7f4ec;border:1px solid #9fd2b4}.flash.error{background:#fbeaea;border-color:#e3a4a0}
.pager{display:flex;gap:.8rem;align-items:center;margin:.8rem 0;flex-wrap:wrap}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(18rem,100%),1fr));gap:1rem}.grid2>*,.frames>*{min-width:0}
details>summary{cursor:pointer;margin:.4rem 0}
.strip{display:flex;gap:2px;align-items:stretch;height:1.1rem;list-style:none;padding:0;margin:0}.strip li{width:.55rem;border-radius:2px;background:var(--line)}.strip .c-ok{background:var(--ok)}.strip .c-error,.strip .c-timeout{background:var(--bad)}.strip .c-missed{background:var(--warn)}.strip .c-in_progress{background:var(--accent)}.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
@media (max-width:40rem){main{padding:.6rem}.kv{grid-template-columns:minmax(0,1fr)}.kv dd{margin-bottom:.3rem}header.top nav{flex-basis:100%;order:3}th.opt,td.opt{display:none}h1{font-size:1.2rem}}
`;

export const JS = `
document.addEventListener('click', function (e) {
  var t = e.target;
  if (!(t instanceof Element)) return;
  var copy = t.closest('[data-copy]');
  if (copy) {
    var field = document.getElementById(copy.getAttribute('data-copy'));
    if (field) {
      field.select();
      if (navigator.clipboard) navigator.clipboard.writeText(field.value).catch(function () { document.execCommand('copy'); });
      else document.execCommand('copy');
      copy.textContent = 'Copied';
    }
  }
  var confirmIt = t.closest('[data-confirm]');
  if (confirmIt && !window.confirm(confirmIt.getAttribute('data-confirm'))) e.preventDefault();
});
document.addEventListener('change', function (e) {
  var t = e.target;
  if (t instanceof HTMLInputElement && t.hasAttribute('data-select-all')) {
    document.querySelectorAll('input[name="fingerprints"]').forEach(function (box) { box.checked = t.checked; });
  }
});
`;

/** The tab icon: a fault line across a square, so browsers do not ask for a missing /favicon.ico. */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#b3261e"/><path d="M3 4l4 4-2 2 4 3 4-5" fill="none" stroke="#fff" stroke-width="1.6" stroke-linejoin="round"/></svg>`;
