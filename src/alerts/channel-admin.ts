// Creating a channel and sending a test alert: the checks beyond the shape of the
// input (the SSRF guard on the host of a webhook, Slack, Discord or Teams URL, the
// bot token a Telegram channel needs, the SMTP setup an email channel needs) and the
// one immediate attempt of `POST alerts/channels/{id}/test`.
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../store/schema.js';
import { forbiddenAddressReason, forbiddenHostReason } from './addresses.js';
import { sendToChannel, type SendResult } from './channels.js';
import { AlertInputError, isProviderKind, parseChannelInput, type ChannelInput } from './rules.js';
import { createChannel, recordTestDelivery, type ChannelRow } from './store.js';
import type { AlertRuntime } from './transport.js';

export type AlertConfig = Pick<Config, 'publicUrl' | 'webhookAllowPrivate' | 'telegramBotToken' | 'telegramApiUrl'>;

const PRIVATE_HINT =
  'webhooks may only reach public addresses (the server setting WEBHOOK_ALLOW_PRIVATE=true allows others)';

/**
 * Refuses a webhook URL whose host is, or resolves to, a non-public address, unless
 * private addresses are allowed. Each delivery checks again after resolving.
 */
export async function checkWebhookHost(url: string, runtime: AlertRuntime, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = new URL(url).hostname;
  const reason = forbiddenHostReason(host);
  if (reason) throw new AlertInputError(`config.url: the host ${host} is ${reason}; ${PRIVATE_HINT}`);
  if (!runtime.resolveHost || host.startsWith('[') || forbiddenAddressReason(host) !== null) return;
  let addresses: string[];
  try {
    addresses = await runtime.resolveHost(host);
  } catch {
    throw new AlertInputError(`config.url: the host ${host} does not resolve to an address`);
  }
  if (addresses.length === 0) throw new AlertInputError(`config.url: the host ${host} does not resolve to an address`);
  for (const address of addresses) {
    const why = forbiddenAddressReason(address);
    if (why) throw new AlertInputError(`config.url: the host ${host} resolves to ${address}, ${why}; ${PRIVATE_HINT}`);
  }
}

/**
 * Slack, Discord and Teams hand out https URLs only; http is refused unless private
 * addresses are allowed (a Mattermost on the private network often speaks plain http).
 */
export function checkProviderScheme(url: string, allowPrivate: boolean): void {
  if (allowPrivate || new URL(url).protocol === 'https:') return;
  throw new AlertInputError(
    `config.url must be an https URL (the server setting WEBHOOK_ALLOW_PRIVATE=true also allows http)`,
  );
}

/** Validates a POST alerts/channels body completely, then stores the channel. */
export async function addChannel(
  db: Kysely<Database>,
  projectId: number,
  body: unknown,
  config: AlertConfig,
  runtime: AlertRuntime,
  now: number,
): Promise<ChannelRow> {
  const input: ChannelInput = parseChannelInput(body);
  if (input.kind === 'webhook') await checkWebhookHost(input.config.url, runtime, config.webhookAllowPrivate);
  if (isProviderKind(input.kind) && 'url' in input.config) {
    checkProviderScheme(input.config.url, config.webhookAllowPrivate);
    await checkWebhookHost(input.config.url, runtime, config.webhookAllowPrivate);
  }
  if (input.kind === 'email' && !runtime.mail) {
    throw new AlertInputError(
      runtime.mailUnavailable ?? 'email channels need the server settings SMTP_URL and SMTP_FROM, which are not set',
    );
  }
  if (input.kind === 'telegram' && !config.telegramBotToken) {
    throw new AlertInputError('telegram channels need the server setting TELEGRAM_BOT_TOKEN, which is not set');
  }
  return createChannel(db, projectId, input, now);
}

/** Sends a test alert to the channel at once (one attempt), records it and says how it went. */
export async function sendTestAlert(
  db: Kysely<Database>,
  project: { id: number; slug: string; name: string },
  channel: ChannelRow,
  config: AlertConfig,
  runtime: AlertRuntime,
  clock: Clock,
): Promise<SendResult> {
  const now = clock.now();
  const result = await sendToChannel(
    { id: Number(channel.id), kind: channel.kind, config: channel.config },
    { type: 'test', title: 'Test alert from Faultline', triggered_at: now },
    project,
    { runtime, ...config },
  );
  await recordTestDelivery(db, project.id, Number(channel.id), result, now, Date.now());
  return result;
}
