// The providers' documented message formats, as zod schemas the tests check every
// payload against: required fields, allowed types and the length limits each provider
// enforces (a payload past them is refused or cut by the provider).
//   Slack Block Kit: https://api.slack.com/reference/block-kit/blocks (header text 150,
//     section text 3000, fields 10 × 2000, button text 75, url 3000, 50 blocks).
//   Discord webhooks: https://discord.com/developers/docs/resources/webhook#execute-webhook
//     and .../resources/message#embed-object-embed-limits (title 256, description 4096,
//     25 fields of name 256 / value 1024, footer 2048, 6000 in all, content 2000).
//   Teams Workflows webhooks: a `message` with one Adaptive Card attachment
//     (https://adaptivecards.io/explorer/, version ≤ 1.5, message ≤ 28 KB).
import { z } from 'zod';

const plainText = (max: number) =>
  z.strictObject({ type: z.literal('plain_text'), text: z.string().min(1).max(max), emoji: z.boolean().optional() });
const mrkdwn = (max: number) =>
  z.strictObject({ type: z.literal('mrkdwn'), text: z.string().min(1).max(max), verbatim: z.boolean().optional() });
const httpUrl = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^https?:\/\//);

const slackBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('header'), text: plainText(150), block_id: z.string().max(255).optional() }),
  z
    .strictObject({
      type: z.literal('section'),
      text: z.union([plainText(3000), mrkdwn(3000)]).optional(),
      fields: z
        .array(z.union([plainText(2000), mrkdwn(2000)]))
        .min(1)
        .max(10)
        .optional(),
      block_id: z.string().max(255).optional(),
    })
    .refine((s) => s.text !== undefined || s.fields !== undefined, 'a section needs text or fields'),
  z.strictObject({
    type: z.literal('actions'),
    elements: z
      .array(
        z.strictObject({
          type: z.literal('button'),
          text: plainText(75),
          url: httpUrl(3000).optional(),
          action_id: z.string().max(255).optional(),
          value: z.string().max(2000).optional(),
        }),
      )
      .min(1)
      .max(25),
  }),
  z.strictObject({
    type: z.literal('context'),
    elements: z
      .array(z.union([plainText(3000), mrkdwn(3000)]))
      .min(1)
      .max(10),
  }),
  z.strictObject({ type: z.literal('divider') }),
]);

export const slackSchema = z.strictObject({
  text: z.string().min(1).max(40_000),
  blocks: z.array(slackBlock).min(1).max(50),
});

const discordEmbed = z
  .strictObject({
    title: z.string().min(1).max(256),
    description: z.string().max(4096).optional(),
    url: httpUrl(2048).optional(),
    timestamp: z.iso.datetime().optional(),
    color: z.int().min(0).max(0xffffff).optional(),
    footer: z.strictObject({ text: z.string().min(1).max(2048), icon_url: z.string().optional() }).optional(),
    fields: z
      .array(
        z.strictObject({
          name: z.string().min(1).max(256),
          value: z.string().min(1).max(1024),
          inline: z.boolean().optional(),
        }),
      )
      .max(25)
      .optional(),
  })
  .refine(
    (e) =>
      e.title.length +
        (e.description?.length ?? 0) +
        (e.footer?.text.length ?? 0) +
        (e.fields ?? []).reduce((n, f) => n + f.name.length + f.value.length, 0) <=
      6000,
    'an embed holds at most 6000 characters in all',
  );

export const discordSchema = z
  .strictObject({
    content: z.string().max(2000).optional(),
    username: z.string().min(1).max(80).optional(),
    embeds: z.array(discordEmbed).max(10).optional(),
    allowed_mentions: z.strictObject({ parse: z.array(z.enum(['roles', 'users', 'everyone'])) }).optional(),
  })
  .refine((m) => (m.content ?? '') !== '' || (m.embeds ?? []).length > 0, 'a message needs content or an embed');

const cardElement = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('TextBlock'),
    text: z.string().min(1),
    wrap: z.boolean().optional(),
    size: z.enum(['Small', 'Default', 'Medium', 'Large', 'ExtraLarge']).optional(),
    weight: z.enum(['Lighter', 'Default', 'Bolder']).optional(),
    color: z.enum(['Default', 'Dark', 'Light', 'Accent', 'Good', 'Warning', 'Attention']).optional(),
    isSubtle: z.boolean().optional(),
  }),
  z.strictObject({
    type: z.literal('FactSet'),
    facts: z.array(z.strictObject({ title: z.string(), value: z.string() })).min(1),
  }),
]);

export const adaptiveCardSchema = z.strictObject({
  $schema: z.literal('http://adaptivecards.io/schemas/adaptive-card.json').optional(),
  type: z.literal('AdaptiveCard'),
  version: z.enum(['1.0', '1.1', '1.2', '1.3', '1.4', '1.5']),
  body: z.array(cardElement).min(1),
  actions: z
    .array(z.strictObject({ type: z.literal('Action.OpenUrl'), title: z.string().min(1), url: httpUrl(4096) }))
    .max(6)
    .optional(),
});

export const teamsSchema = z
  .strictObject({
    type: z.literal('message'),
    attachments: z
      .array(
        z.strictObject({
          contentType: z.literal('application/vnd.microsoft.card.adaptive'),
          contentUrl: z.null().optional(),
          content: adaptiveCardSchema,
        }),
      )
      .length(1),
  })
  .refine((m) => new TextEncoder().encode(JSON.stringify(m)).length <= 28_000, 'a Teams message is at most 28 KB');

/** Parses, failing the test with zod's message naming the field. */
export function expectValid<T>(schema: z.ZodType<T>, payload: unknown): T {
  const result = schema.safeParse(payload);
  if (!result.success)
    throw new Error(
      `payload does not match the provider's schema: ${z.prettifyError(result.error)}\n${JSON.stringify(payload).slice(0, 2000)}`,
    );
  return result.data;
}
