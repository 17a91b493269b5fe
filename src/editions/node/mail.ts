// How the Node edition sends email alerts: nodemailer's SMTP transport from SMTP_URL
// (smtp:// upgrades with STARTTLS when the server offers it, smtps:// is TLS from the
// start; user:password@ authenticates) and SMTP_FROM. A connection per message, closed
// after it, and timeouts so a dead mail server holds up one delivery at most. Error texts
// are cut free of the password before anything sees them (docs/api.md "Email channels").
import { createTransport } from 'nodemailer';
import type { SmtpConfig } from '../../config.js';
import type { MailSender } from '../../alerts/transport.js';

const CONNECT_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 20_000;

/** Query options SMTP_URL may carry (`?tls.rejectUnauthorized=false` for a self-signed server). */
const BOOLEAN_OPTIONS = ['requireTLS', 'ignoreTLS'] as const;

export function smtpTransportOptions(smtp: SmtpConfig) {
  const url = new URL(smtp.url);
  const secure = url.protocol === 'smtps:';
  const options: Record<string, unknown> = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    connectionTimeout: CONNECT_TIMEOUT_MS,
    greetingTimeout: CONNECT_TIMEOUT_MS,
    socketTimeout: SOCKET_TIMEOUT_MS,
  };
  if (url.username || url.password)
    options.auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  for (const name of BOOLEAN_OPTIONS) if (url.searchParams.get(name) === 'true') options[name] = true;
  if (url.searchParams.get('tls.rejectUnauthorized') === 'false') options.tls = { rejectUnauthorized: false };
  return options;
}

export function nodeMailSender(smtp: SmtpConfig): MailSender {
  const transport = createTransport(smtpTransportOptions(smtp) as Parameters<typeof createTransport>[0]);
  const password = decodeURIComponent(new URL(smtp.url).password);
  const hide = (text: string) => (password ? text.split(password).join('<password>') : text);
  return {
    async send(message) {
      try {
        const info = (await transport.sendMail({
          from: smtp.from,
          to: message.to,
          subject: message.subject,
          text: message.text,
          html: message.html,
        })) as {
          accepted?: unknown[];
          rejected?: unknown[];
          response?: string;
        };
        const list = (v: unknown[] | undefined) =>
          (v ?? []).map((a) => (typeof a === 'string' ? a : String((a as { address?: string }).address ?? a)));
        return {
          accepted: list(info.accepted),
          rejected: list(info.rejected),
          response: hide(String(info.response ?? '')),
        };
      } catch (err) {
        const e = err as { message?: string; code?: string; responseCode?: number };
        throw Object.assign(new Error(hide(`${e.code ? `${e.code}: ` : ''}${e.message ?? String(err)}`)), {
          code: undefined,
        });
      }
    },
  };
}
