// Simple HTML previews of what the test receivers got, close to how each provider
// draws it: a Slack message of Block Kit blocks, a Discord embed, a Teams Adaptive
// Card and an email in a mail-reader frame. Only for the screenshots in docs/ (the
// providers' own renderers cannot run here); every text is escaped.
import type { ParsedMail } from 'mailparser';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const PAGE = (body: string, css: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><style>
  body{margin:0;padding:24px;font:15px/1.45 -apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
  #shot{max-width:680px}
  a{text-decoration:none}
  ${css}</style></head><body><div id="shot">${body}</div></body></html>`;

/** Slack mrkdwn as Slack shows it: `<url|text>` links, `*bold*`, line breaks (text arrives escaped). */
function mrkdwn(text: string): string {
  return text
    .replace(/<(https?:[^|>]+)\|([^>]*)>/g, (_m, url: string, label: string) => `<a href="${url}">${label}</a>`)
    .replace(/\*([^*\n]+)\*/g, '<b>$1</b>')
    .replace(/\n/g, '<br>');
}

type Block = {
  type: string;
  text?: { text: string };
  fields?: { text: string }[];
  elements?: { text: string | { text: string }; url?: string }[];
};

export function slackPreview(payload: { blocks: Block[] }): string {
  const blocks = payload.blocks
    .map((b) => {
      if (b.type === 'header') return `<div class="header">${esc(b.text!.text)}</div>`;
      if (b.type === 'section' && b.fields)
        return `<div class="fields">${b.fields.map((f) => `<div>${mrkdwn(f.text)}</div>`).join('')}</div>`;
      if (b.type === 'section') return `<div class="section">${mrkdwn(b.text!.text)}</div>`;
      if (b.type === 'actions')
        return `<div>${b.elements!.map((e) => `<a class="button" href="${esc(e.url ?? '#')}">${esc((e.text as { text: string }).text)}</a>`).join('')}</div>`;
      if (b.type === 'context')
        return `<div class="context">${b.elements!.map((e) => mrkdwn(e.text as string)).join(' ')}</div>`;
      return '';
    })
    .join('');
  return PAGE(
    `<div class="msg"><div class="avatar">F</div><div><div class="who">Faultline <span class="app">APP</span> <span class="time">10:02</span></div>${blocks}</div></div>`,
    `body{background:#fff;color:#1d1c1d} .msg{display:flex;gap:10px} .avatar{width:36px;height:36px;border-radius:6px;background:#6b4fbb;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
    .who{font-weight:900} .app{font-size:10px;background:#e8e8e8;color:#616061;padding:1px 3px;border-radius:2px;font-weight:700} .time{color:#616061;font-weight:400;font-size:12px}
    .header{font-size:18px;font-weight:900;margin:4px 0} .section{margin:4px 0} .fields{display:grid;grid-template-columns:1fr 1fr;gap:6px 16px;margin:8px 0}
    a{color:#1264a3} .button{display:inline-block;border:1px solid #bbb;border-radius:4px;padding:4px 12px;color:#1d1c1d;font-weight:700;margin:6px 0}
    .context{color:#616061;font-size:12px}`,
  );
}

/** Discord markdown: `[text](url)` links, backslash escapes. */
function discordMarkdown(text: string): string {
  return esc(text)
    .replace(
      /\[((?:\\.|[^\]\\])*)\]\((https?:[^)\s]+)\)/g,
      (_m, label: string, url: string) => `<a href="${url}">${label}</a>`,
    )
    .replace(/\\(.)/g, '$1')
    .replace(/\n/g, '<br>');
}

type Embed = {
  title: string;
  url?: string;
  description?: string;
  color?: number;
  fields?: { name: string; value: string; inline?: boolean }[];
  footer?: { text: string };
  timestamp?: string;
};

export function discordPreview(payload: { embeds: Embed[] }): string {
  const e = payload.embeds[0];
  const color = `#${(e.color ?? 0).toString(16).padStart(6, '0')}`;
  const title = e.url ? `<a href="${esc(e.url)}">${esc(e.title)}</a>` : esc(e.title);
  const fields = (e.fields ?? [])
    .map((f) => `<div class="field"><div class="fname">${esc(f.name)}</div><div>${esc(f.value)}</div></div>`)
    .join('');
  return PAGE(
    `<div class="msg"><div class="avatar">F</div><div style="flex:1"><div class="who">Faultline <span class="bot">BOT</span> <span class="time">Today at 10:02</span></div>
    <div class="embed" style="border-left-color:${color}"><div class="title">${title}</div><div class="desc">${discordMarkdown(e.description ?? '')}</div>
    <div class="fields">${fields}</div><div class="footer">${esc(e.footer?.text ?? '')} • ${esc(e.timestamp ?? '')}</div></div></div></div>`,
    `body{background:#313338;color:#dbdee1} .msg{display:flex;gap:14px} .avatar{width:40px;height:40px;border-radius:50%;background:#6b4fbb;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
    .who{font-weight:600;color:#f2f3f5} .bot{font-size:10px;background:#5865f2;color:#fff;padding:1px 4px;border-radius:3px} .time{color:#949ba4;font-size:12px;font-weight:400}
    .embed{background:#2b2d31;border-left:4px solid;border-radius:4px;padding:10px 14px;margin-top:6px;max-width:520px} .title{font-weight:600;margin-bottom:6px} .title a{color:#00a8fc}
    .desc{font-size:14px} .desc a{color:#00a8fc} .fields{display:grid;grid-template-columns:repeat(3,1fr);gap:8px;margin-top:8px;font-size:14px} .fname{font-weight:600;color:#f2f3f5}
    .footer{color:#949ba4;font-size:12px;margin-top:8px}`,
  );
}

type CardElement = {
  type: string;
  text?: string;
  size?: string;
  weight?: string;
  color?: string;
  facts?: { title: string; value: string }[];
};

function cardMarkdown(text: string): string {
  return esc(text)
    .replace(/\[([^\]]*)\]\((https?:[^)\s]+)\)/g, (_m, label: string, url: string) => `<a href="${url}">${label}</a>`)
    .replace(/\n/g, '<br>');
}

export function teamsPreview(payload: {
  attachments: { content: { body: CardElement[]; actions?: { title: string; url: string }[] } }[];
}): string {
  const card = payload.attachments[0].content;
  const body = card.body
    .map((el) => {
      if (el.type === 'FactSet')
        return `<table>${el.facts!.map((f) => `<tr><th>${esc(f.title)}</th><td>${esc(f.value)}</td></tr>`).join('')}</table>`;
      const cls = [
        el.size === 'Medium' ? 'medium' : '',
        el.weight === 'Bolder' ? 'bold' : '',
        el.color === 'Attention' ? 'attention' : '',
      ].join(' ');
      return `<div class="tb ${cls}">${cardMarkdown(el.text ?? '')}</div>`;
    })
    .join('');
  const actions = (card.actions ?? [])
    .map((a) => `<a class="action" href="${esc(a.url)}">${esc(a.title)}</a>`)
    .join('');
  return PAGE(
    `<div class="who"><span class="avatar">F</span> Workflows <span class="time">10:02</span></div><div class="card">${body}<div>${actions}</div></div>`,
    `body{background:#f5f5f5;color:#242424;font-family:"Segoe UI","DejaVu Sans",sans-serif} .who{font-size:13px;color:#616161;margin-bottom:6px;display:flex;align-items:center;gap:8px}
    .avatar{width:28px;height:28px;border-radius:50%;background:#6b4fbb;color:#fff;display:inline-flex;align-items:center;justify-content:center;font-weight:700}
    .card{background:#fff;border-radius:6px;box-shadow:0 1px 3px rgba(0,0,0,.15);padding:14px 16px;max-width:560px} .tb{margin:0 0 8px} .medium{font-size:18px} .bold{font-weight:700} .attention{color:#c4314b}
    table{border-collapse:collapse;margin:4px 0 10px;font-size:14px} th{text-align:left;padding:2px 16px 2px 0;font-weight:600} td{padding:2px 0} a{color:#5b5fc7}
    .action{display:block;text-align:center;border:1px solid #d1d1d1;border-radius:4px;padding:6px;color:#242424;font-weight:600;margin-top:6px}`,
  );
}

export function emailPreview(mail: ParsedMail): string {
  const from = mail.from?.text ?? '';
  const to = Array.isArray(mail.to) ? mail.to.map((a) => a.text).join(', ') : (mail.to?.text ?? '');
  // The message's own HTML part, shown in a sandboxed frame as a mail reader would.
  return PAGE(
    `<div class="reader"><div class="subject">${esc(mail.subject ?? '')}</div><div class="meta"><b>From</b> ${esc(from)}<br><b>To</b> ${esc(to)}</div>
    <iframe sandbox srcdoc="${esc(typeof mail.html === 'string' ? mail.html : '')}"></iframe></div>`,
    `body{background:#eef1f5;color:#202124} .reader{background:#fff;border-radius:8px;padding:16px 20px;box-shadow:0 1px 3px rgba(0,0,0,.15)}
    .subject{font-size:19px;margin-bottom:8px} .meta{font-size:13px;color:#5f6368;border-bottom:1px solid #e0e0e0;padding-bottom:8px} iframe{border:0;width:100%;height:340px}`,
  );
}
