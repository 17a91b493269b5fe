// The `alert_rule_channel` line: one channel a rule is limited to (the rule's `channels`
// list, docs/api.md "Alert rules"). The list holds this instance's channel ids, so the
// line names the channel by what identifies it in the file, its kind and config (as the
// alert_channel line does), and the import turns that back into the target's id.
import { z } from 'zod';
import { ALERT_TYPES, storedRuleFilters } from '../alerts/rules.js';
import { describeZodError } from './format.js';
import type { BatchItem, BatchOutcome, Cursor, ExportContext, LineType, Parsed, Problem } from './line-type.js';
import { missingProject } from './table-line-type.js';

interface RuleChannelValue {
  project: string;
  alert: string;
  kind: string;
  config: string;
}

const schema = z.object({
  project: z.string().min(1),
  alert: z.enum(ALERT_TYPES),
  kind: z.string().min(1),
  config: z.record(z.string(), z.unknown()),
});

/** A channel's config as the file and the lookup compare it: parsed and written again. */
function canonicalConfig(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch {
    return text;
  }
}

/** The (project, rule type, channel id) links of the rules limited to channels, in key order. */
async function links(ctx: ExportContext): Promise<{ project_id: number; type: string; channel_id: number }[]> {
  let query = ctx.db.selectFrom('alert_rules').select(['project_id', 'type', 'channels']).where('channels', '<>', '[]');
  if (ctx.projectId !== undefined) query = query.where('project_id', '=', ctx.projectId);
  const rules: { project_id: number; type: string; channels: string }[] = await query.execute();
  const out = rules.flatMap((r) =>
    storedRuleFilters(r).channels.map((id) => ({ project_id: Number(r.project_id), type: r.type, channel_id: id })),
  );
  return out.sort(
    (a, b) =>
      a.project_id - b.project_id || (a.type < b.type ? -1 : a.type > b.type ? 1 : 0) || a.channel_id - b.channel_id,
  );
}

const after = (a: Cursor, b: Cursor) =>
  (a[0] as number) - (b[0] as number) ||
  (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) ||
  (a[2] as number) - (b[2] as number);

export const alertRuleChannelLineType: LineType<RuleChannelValue> = {
  type: 'alert_rule_channel',

  async count(ctx) {
    return (await links(ctx)).filter((l) => ctx.projectSlugs.has(l.project_id)).length;
  },

  async *read(ctx, from) {
    const all = (await links(ctx)).filter((l) => !from || after([l.project_id, l.type, l.channel_id], from) > 0);
    const wanted = all.filter((l) => ctx.projectSlugs.has(l.project_id));
    if (wanted.length === 0) return;
    const ids = [...new Set(wanted.map((l) => l.channel_id))];
    const channels = new Map<number, { project_id: number; kind: string; config: string }>();
    for (let i = 0; i < ids.length; i += 500) {
      const rows = await ctx.db
        .selectFrom('alert_channels')
        .select(['id', 'project_id', 'kind', 'config'])
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const r of rows)
        channels.set(Number(r.id), { project_id: Number(r.project_id), kind: r.kind, config: r.config });
    }
    const lines: Record<string, unknown>[] = [];
    for (const l of wanted) {
      const channel = channels.get(l.channel_id);
      if (!channel || channel.project_id !== l.project_id) continue; // deleted meanwhile
      lines.push({
        type: 'alert_rule_channel',
        project: ctx.projectSlugs.get(l.project_id),
        alert: l.type,
        kind: channel.kind,
        config: JSON.parse(channel.config),
      });
    }
    const last = wanted[wanted.length - 1];
    yield { lines, last: [last.project_id, last.type, last.channel_id] };
  },

  parse(line): Parsed<RuleChannelValue> {
    const result = schema.safeParse(line);
    if (!result.success) return { ok: false, message: describeZodError(result.error) };
    const { project, alert, kind, config } = result.data;
    return { ok: true, value: { project, alert, kind, config: JSON.stringify(config) } };
  },

  async write(ctx, batch: BatchItem<RuleChannelValue>[]): Promise<BatchOutcome> {
    const problems: Problem[] = [];
    const projects = await ctx.projectIds(batch.map((b) => b.value.project));
    // Per project: its channels by kind and config, and each rule's list as it stands.
    const byProject = new Map<
      number,
      { channels: Map<string, number>; rules: Map<string, number[]>; changed: Set<string> }
    >();
    let added = 0;
    let kept = 0;
    for (const item of batch) {
      const projectId = projects.get(item.value.project);
      if (projectId === undefined) {
        problems.push({ line: item.line, message: missingProject(item.value.project) });
        continue;
      }
      let state = byProject.get(projectId);
      if (!state) {
        const channels = await ctx.db
          .selectFrom('alert_channels')
          .select(['id', 'kind', 'config'])
          .where('project_id', '=', projectId)
          .execute();
        const rules = await ctx.db
          .selectFrom('alert_rules')
          .select(['type', 'channels'])
          .where('project_id', '=', projectId)
          .execute();
        state = {
          channels: new Map(
            channels.map((c: { id: number; kind: string; config: string }) => [
              `${c.kind}\u0000${canonicalConfig(c.config)}`,
              Number(c.id),
            ]),
          ),
          rules: new Map(rules.map((r: { type: string; channels: string }) => [r.type, storedRuleFilters(r).channels])),
          changed: new Set(),
        };
        byProject.set(projectId, state);
      }
      const channelId = state.channels.get(`${item.value.kind}\u0000${item.value.config}`);
      const list = state.rules.get(item.value.alert);
      if (channelId === undefined) {
        problems.push({
          line: item.line,
          message: `the ${item.value.kind} channel it names is not a channel of project "${item.value.project}" (its alert_channel line must come before it)`,
        });
      } else if (list === undefined) {
        problems.push({
          line: item.line,
          message: `the ${item.value.alert} rule of project "${item.value.project}" is not in the database (its alert_rule line must come before it)`,
        });
      } else if (list.includes(channelId)) {
        kept += 1;
      } else {
        list.push(channelId);
        state.changed.add(item.value.alert);
        added += 1;
      }
    }
    for (const [projectId, state] of byProject) {
      for (const type of state.changed) {
        const list = [...state.rules.get(type)!].sort((a, b) => a - b);
        await ctx.db
          .updateTable('alert_rules')
          .set({ channels: JSON.stringify(list) })
          .where('project_id', '=', projectId)
          .where('type', '=', type)
          .execute();
      }
    }
    return { added, kept, problems };
  },
};
