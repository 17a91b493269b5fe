// How alerts leave the process: one HTTP POST, supplied by the edition so that the
// SSRF guard can check the addresses a name resolves to at the moment of connecting
// (Node: src/editions/node/alerts.ts connects to the address it checked, so a DNS
// answer that changes between check and connection cannot slip through). The
// fallback here uses fetch and can only check literal hosts.
import { forbiddenHostReason } from './addresses.js';
import { MAX_ALERT_RESPONSE } from '../limits.js';

export interface HttpPostRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  /** Refuse hosts that are or resolve to non-public addresses (src/alerts/addresses.ts). */
  guardAddresses: boolean;
}

export interface HttpPostResponse {
  status: number;
  /** The response body, at most the first 64 KB, as text. */
  body: string;
}

/** Posts once, never following a redirect. Rejects on network failure, timeout or a refused address. */
export type HttpPost = (request: HttpPostRequest) => Promise<HttpPostResponse>;

/** The SSRF guard refused the address; the message says which rule. */
export class ForbiddenAddressError extends Error {}

/** One email to a channel's recipients; the sender (SMTP_FROM) is the MailSender's. */
export interface MailMessage {
  to: string[];
  subject: string;
  text: string;
  html: string;
}

export interface MailResult {
  accepted: string[];
  rejected: string[];
  /** The server's last answer, e.g. `250 OK queued`. */
  response: string;
}

/**
 * Sends email over SMTP (Node: nodemailer, src/editions/node/mail.ts). Rejects when the
 * server cannot be reached or refuses the message; the error text never carries the
 * SMTP password.
 */
export interface MailSender {
  send(message: MailMessage): Promise<MailResult>;
}

export interface AlertRuntime {
  post: HttpPost;
  /** How email channels send; absent when this process cannot send email. */
  mail?: MailSender;
  /** Why there is no `mail` (said when an email channel is created or tried). */
  mailUnavailable?: string;
  /**
   * Every address a host name resolves to (Node: dns.lookup with all). Used when a
   * webhook channel is created; absent where the edition cannot resolve names.
   */
  resolveHost?: (hostname: string) => Promise<string[]>;
}

/** The Web API fallback: fetch with redirects left alone and a timeout; literal hosts checked. */
export const fetchPost: HttpPost = async (request) => {
  if (request.guardAddresses) {
    const reason = forbiddenHostReason(new URL(request.url).hostname);
    if (reason) throw new ForbiddenAddressError(`the webhook host is ${reason}`);
  }
  const response = await fetch(request.url, {
    method: 'POST',
    headers: request.headers,
    body: request.body,
    redirect: 'manual',
    signal: AbortSignal.timeout(request.timeoutMs),
  });
  const text = (await response.text()).slice(0, MAX_ALERT_RESPONSE);
  return { status: response.status, body: text };
};

/**
 * The serverless edition: webhooks and chat providers over fetch. It has no email: a
 * Worker reaches SMTP only through raw sockets, the client tried for them does not stop
 * reading on a closed connection, and STARTTLS cannot be tested locally in workerd
 * (docs/api.md "Email channels").
 */
export const webAlertRuntime: AlertRuntime = {
  post: fetchPost,
  mailUnavailable:
    'email channels are not available on the serverless edition (Cloudflare Workers has no SMTP client); use slack, discord, teams or webhook channels there, or the server edition',
};
