// What a project may be, as the projects API, the dashboard and import check it: each
// field with a message naming the field and what is allowed; unknown fields are
// refused so a typo never passes silently.
import { z } from 'zod';
import { NAME_MAX_LENGTH } from '../limits.js';
import { PLATFORMS, slugProblem } from './projects.js';

const MESSAGES = {
  slug: 'slug is required: a string of 1 to 64 characters (lowercase letters, digits, ".", "_" or "-")',
  name: `name must be a non-empty string of at most ${NAME_MAX_LENGTH} characters`,
  platform: `platform must be one of ${PLATFORMS.join(', ')}`,
  sample_keep_first: 'sample_keep_first must be an integer >= 0',
  sample_rate: 'sample_rate must be between 0 and 1',
  daily_quota: 'daily_quota must be an integer >= 0 (0 means unlimited)',
};

const PATCHABLE = ['name', 'platform', 'sample_keep_first', 'sample_rate', 'daily_quota'] as const;

const fields = {
  name: z
    .string({ error: MESSAGES.name })
    .trim()
    .min(1, { error: MESSAGES.name })
    .max(NAME_MAX_LENGTH, { error: MESSAGES.name })
    .optional(),
  platform: z.enum(PLATFORMS, { error: MESSAGES.platform }).optional(),
  sample_keep_first: z.int({ error: MESSAGES.sample_keep_first }).min(0, { error: MESSAGES.sample_keep_first }).optional(),
  sample_rate: z.number({ error: MESSAGES.sample_rate }).min(0, { error: MESSAGES.sample_rate }).max(1, { error: MESSAGES.sample_rate }).optional(),
  daily_quota: z.int({ error: MESSAGES.daily_quota }).min(0, { error: MESSAGES.daily_quota }).optional(),
};

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
