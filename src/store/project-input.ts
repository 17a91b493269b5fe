// What a project may be, as the projects API, the dashboard and import check it: each
// field with a message naming the field and what is allowed; unknown fields are
// refused so a typo never passes silently.
import { z } from 'zod';
import { MAX_SCRUB_FIELD_LENGTH, MAX_SCRUB_LIST, NAME_MAX_LENGTH } from '../limits.js';
import { PLATFORMS, slugProblem } from './projects.js';

const MESSAGES = {
  slug: 'slug is required: a string of 1 to 64 characters (lowercase letters, digits, ".", "_" or "-")',
  name: `name must be a non-empty string of at most ${NAME_MAX_LENGTH} characters`,
  platform: `platform must be one of ${PLATFORMS.join(', ')}`,
  sample_keep_first: 'sample_keep_first must be an integer >= 0',
  sample_rate: 'sample_rate must be between 0 and 1',
  daily_quota: 'daily_quota must be an integer >= 0 (0 means unlimited)',
  scrub_defaults: 'scrub_defaults must be true or false',
  scrub_ip_addresses: 'scrub_ip_addresses must be true or false',
  scrub_fields: `scrub_fields must be a list of at most ${MAX_SCRUB_LIST} non-empty strings of at most ${MAX_SCRUB_FIELD_LENGTH} characters`,
  safe_fields: `safe_fields must be a list of at most ${MAX_SCRUB_LIST} non-empty strings of at most ${MAX_SCRUB_FIELD_LENGTH} characters`,
  storage_budget_mb: 'storage_budget_mb must be an integer >= 0 (0 means no budget)',
};

function fieldList(message: string) {
  return z
    .array(
      z.string({ error: message }).trim().min(1, { error: message }).max(MAX_SCRUB_FIELD_LENGTH, { error: message }),
      { error: message },
    )
    .max(MAX_SCRUB_LIST, { error: message })
    .optional();
}

const PATCHABLE = [
  'name',
  'platform',
  'sample_keep_first',
  'sample_rate',
  'daily_quota',
  'scrub_defaults',
  'scrub_ip_addresses',
  'scrub_fields',
  'safe_fields',
  'storage_budget_mb',
] as const;

const fields = {
  name: z
    .string({ error: MESSAGES.name })
    .trim()
    .min(1, { error: MESSAGES.name })
    .max(NAME_MAX_LENGTH, { error: MESSAGES.name })
    .optional(),
  platform: z.enum(PLATFORMS, { error: MESSAGES.platform }).optional(),
  sample_keep_first: z
    .int({ error: MESSAGES.sample_keep_first })
    .min(0, { error: MESSAGES.sample_keep_first })
    .optional(),
  sample_rate: z
    .number({ error: MESSAGES.sample_rate })
    .min(0, { error: MESSAGES.sample_rate })
    .max(1, { error: MESSAGES.sample_rate })
    .optional(),
  daily_quota: z.int({ error: MESSAGES.daily_quota }).min(0, { error: MESSAGES.daily_quota }).optional(),
  scrub_defaults: z.boolean({ error: MESSAGES.scrub_defaults }).optional(),
  scrub_ip_addresses: z.boolean({ error: MESSAGES.scrub_ip_addresses }).optional(),
  scrub_fields: fieldList(MESSAGES.scrub_fields),
  safe_fields: fieldList(MESSAGES.safe_fields),
  storage_budget_mb: z
    .int({ error: MESSAGES.storage_budget_mb })
    .min(0, { error: MESSAGES.storage_budget_mb })
    .optional(),
};

/** The privacy and storage fields of a validated body, as the projects row stores them. */
export function privacyColumns(input: {
  scrub_defaults?: boolean;
  scrub_ip_addresses?: boolean;
  scrub_fields?: string[];
  safe_fields?: string[];
  storage_budget_mb?: number;
}) {
  const bit = (b: boolean | undefined) => (b === undefined ? undefined : b ? 1 : 0);
  const list = (l: string[] | undefined) => (l === undefined ? undefined : JSON.stringify([...new Set(l)]));
  return {
    scrub_defaults: bit(input.scrub_defaults),
    scrub_ip_addresses: bit(input.scrub_ip_addresses),
    scrub_fields: list(input.scrub_fields),
    safe_fields: list(input.safe_fields),
    storage_budget_mb: input.storage_budget_mb,
  };
}

function unknownFields(allowed: readonly string[]) {
  return (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys'
      ? `unknown field${issue.keys!.length > 1 ? 's' : ''} ${issue.keys!.map((k) => `"${k}"`).join(', ')}; allowed fields are ${allowed.join(', ')}`
      : undefined;
}

export const createSchema = z.strictObject(
  {
    slug: z.string({ error: MESSAGES.slug }).superRefine((slug, ctx) => {
      const problem = slugProblem(slug);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    ...fields,
  },
  { error: unknownFields(['slug', ...PATCHABLE]) },
);

export const patchSchema = z.strictObject(fields, { error: unknownFields(PATCHABLE) });
