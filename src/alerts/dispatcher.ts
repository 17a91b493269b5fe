// The alert dispatcher: takes recorded alerts out of the outbox (claiming each rule's
// cooldown), then sends the deliveries that are due, each on its own with its own
// timeout, so a slow or dead channel holds up nothing else (at most PER_CHANNEL of
// its deliveries are under way at once). Every claim is made in the database
// (src/alerts/store.ts), so any number of processes may run a dispatcher on one
// database; deliveries left pending by a stopped process are sent by the next one.
// Ingest never waits for it: the ingest batch only writes the outbox row.
//
// Times: alert times (cooldowns, created_at, sent_at) follow the app's clock;
// retry schedules and leases follow the wall clock, so that they work whatever clock
// a test injects for the alerts themselves.
import type { Logger } from '../logger.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import { sendToChannel, type AlertContent, type SendResult } from './channels.js';
import { runCrashSpikeCheck, type SpikeCheckResult } from './spike.js';
import { assigneeHearsOf, assigneeMail } from './assignee-mail.js';
import {
  anyDeliveryDue,
  claimDeliveries,
  deliveryContext,
  dispatchAlert,
  dueDigests,
  sendDigest,
  markDelivered,
  markFailed,
  nextDeliveryDue,
  pendingAlertIds,
  pendingAssigneeMails,
  claimAssigneeMail,
  finishAssigneeMail,
  assignedIssue,
  scheduleRetry,
  type AlertOutcome,
  type ClaimedDelivery,
} from './store.js';
import type { AlertRuntime } from './transport.js';
import { feedbackEmail, parseFeedbackAlertPayload, type AssigneeMailState } from './assignee.js';

export interface DispatcherDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'publicUrl' | 'webhookAllowPrivate' | 'telegramBotToken' | 'telegramApiUrl'>;
  runtime: AlertRuntime;
  /**
   * Ends the time snoozes that are over and says how many (src/triage/snooze.ts
   * endTimeSnoozes), part of the periodic job. Passed in, as src/triage sits above
   * alerts: the rule that ends a snooze is ingest's, and ingest writes the alert outbox.
   */
  endTimeSnoozes: (store: Store, now: number) => Promise<number>;
}

export interface DispatcherOptions {
  /** How often the outbox and the deliveries are looked at (ms). */
  pollMs: number;
  /** Waits before the second and third attempts (ms): about 2 s and 10 s (docs/api.md "Alerts"). */
  retryDelaysMs: number[];
  /** Deliveries under way at once, in all. */
  concurrency: number;
  /** Deliveries under way at once to one channel. */
  perChannel: number;
  /** How long a claimed delivery belongs to this process (longer than any attempt). */
  leaseMs: number;
  /** Period of the crash-spike check; null for none (test and embedded servers). */
  spikeCheckMs: number | null;
  /** The first crash-spike check runs this long after start. */
  firstSpikeCheckMs: number;
  /** The wall clock (retry schedules, leases). */
  wallClock: () => number;
}

export const DEFAULT_DISPATCHER_OPTIONS: DispatcherOptions = {
  pollMs: 1000,
  retryDelaysMs: [2000, 10_000],
  concurrency: 16,
  perChannel: 2,
  leaseMs: 60_000,
  spikeCheckMs: null,
  firstSpikeCheckMs: 60_000,
  wallClock: () => Date.now(),
};

/** `serve` checks crash spikes this often (docs/api.md "Alerts"). */
export const SPIKE_CHECK_INTERVAL_MS = 10 * 60_000;

/** The dispatcher's polls end time snoozes this often (a snooze ends within a minute, docs/api.md "Snoozing"). */
export const SNOOZE_CHECK_INTERVAL_MS = 30_000;

export interface PassSummary {
  alerts: Record<AlertOutcome, number>;
  /** Digests of held-back alerts sent out. */
  digests: number;
  /** Emails to the assignees of regressed issues the mail server took. */
  assignee_emails: number;
  sent: number;
  failed: number;
  retried: number;
}

function emptySummary(): PassSummary {
  return {
    alerts: { sent: 0, taken: 0, disabled: 0, no_channel: 0, held: 0, filtered: 0 },
    digests: 0,
    assignee_emails: 0,
    sent: 0,
    failed: 0,
    retried: 0,
  };
}

function randomHolder(): string {
  const bytes = new Uint8Array(8);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export class AlertDispatcher {
  readonly options: DispatcherOptions;
  private readonly holder = randomHolder();
  private readonly inFlight = new Map<number, Promise<void>>();
  private readonly assigneeMails = new Set<Promise<void>>();
  private readonly perChannel = new Map<number, number>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private spikeTimer: ReturnType<typeof setTimeout> | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private started = false;
  private stopped = false;
  private summary = emptySummary();
  private snoozesCheckedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: DispatcherDeps,
    options: Partial<DispatcherOptions> = {},
  ) {
    this.options = { ...DEFAULT_DISPATCHER_OPTIONS, ...options };
  }

  /** Starts polling (and the periodic crash-spike check when configured). */
  start(): this {
    this.started = true;
    this.schedule(0);
    const every = this.options.spikeCheckMs;
    if (every !== null) {
      const run = () => {
        this.spikeTimer = null;
        void this.checkSpikes()
          .catch((err) => this.deps.logger.error({ err }, 'crash-spike check failed'))
          .finally(() => {
            if (!this.stopped) {
              this.spikeTimer = setTimeout(run, every);
              this.spikeTimer.unref?.();
            }
          });
      };
      this.spikeTimer = setTimeout(run, this.options.firstSpikeCheckMs);
      this.spikeTimer.unref?.();
    }
    return this;
  }

  /**
   * Looks at the outbox and the deliveries now instead of at the next poll. A dispatcher
   * that was never started (one pass: `runAlertsOnce`) polls nothing: its pass does it all.
   */
  wake(): void {
    if (this.started && !this.stopped) this.schedule(0);
  }

  /** Stops claiming; waits for the attempts under way (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.spikeTimer) clearTimeout(this.spikeTimer);
    this.timer = this.spikeTimer = null;
    await this.ticking;
    await Promise.allSettled([...this.inFlight.values(), ...this.assigneeMails]);
  }

  /**
   * Emails the assignee of a regressed issue (src/alerts/assignee-mail.ts), beside the
   * deliveries: one attempt, its outcome logged, nothing else waits for it.
   */
  private mailAssignee(alertId: number): void {
    const { store, logger, config, runtime } = this.deps;
    const sending = (async () => {
      const mail = await assigneeMail(store.db, alertId, config.publicUrl);
      if (!mail || !runtime.mail) return;
      try {
        const result = await runtime.mail.send(mail.message);
        this.summary.assignee_emails += 1;
        logger.info(
          { alert_id: alertId, user_id: mail.userId, accepted: result.accepted.length },
          'regression emailed to its assignee',
        );
      } catch (err) {
        logger.warn(
          { alert_id: alertId, user_id: mail.userId, error: (err as Error).message },
          'the email to the assignee of a regressed issue failed',
        );
      }
    })()
      .catch((err) =>
        logger.error({ err, alert_id: alertId }, 'could not prepare the email to the assignee of a regressed issue'),
      )
      .finally(() => this.assigneeMails.delete(sending));
    this.assigneeMails.add(sending);
  }

  /** One crash-spike check at the app's clock; the alerts it records are sent by the next pass. */
  async checkSpikes(): Promise<SpikeCheckResult> {
    const result = await runCrashSpikeCheck(this.deps.store, this.deps.clock.now());
    if (result.spikes.length > 0) {
      this.deps.logger.info({ spikes: result.spikes }, 'crash spikes found');
      this.wake();
    }
    return result;
  }

  /**
   * For `faultline alerts`: takes every recorded alert and sends every due delivery,
   * waiting for retries that fall due within `waitMs`, then returns what happened.
   */
  async drain(waitMs = 15_000): Promise<PassSummary> {
    this.summary = emptySummary();
    const until = this.options.wallClock() + waitMs;
    for (;;) {
      await this.takeAlerts();
      while (await this.claimAndSend()) await Promise.allSettled([...this.inFlight.values()]);
      await Promise.allSettled([...this.inFlight.values()]);
      const due = await nextDeliveryDue(this.deps.store.db);
      const now = this.options.wallClock();
      if (due === null || due > until) break;
      if (due > now) await new Promise((resolve) => setTimeout(resolve, due - now));
    }
    await Promise.allSettled([...this.assigneeMails]);
    return this.summary;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.ticking) {
      if (ms === 0) this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
        const soon = this.again;
        this.again = false;
        this.schedule(soon ? 0 : this.options.pollMs);
      });
    }, ms);
    this.timer.unref?.();
  }

  /** Ends the time snoozes that are over (deps.endTimeSnoozes): part of the periodic job. */
  async endSnoozes(): Promise<number> {
    const now = this.deps.clock.now();
    this.snoozesCheckedAt = this.options.wallClock();
    const ended = await this.deps.endTimeSnoozes(this.deps.store, now);
    if (ended > 0) this.deps.logger.info({ issues: ended }, 'snoozes ended');
    return ended;
  }

  private async tick(): Promise<void> {
    try {
      if (this.options.wallClock() - this.snoozesCheckedAt >= SNOOZE_CHECK_INTERVAL_MS) await this.endSnoozes();
      await this.takeAlerts();
      await this.sendAssigneeMails();
      await this.claimAndSend();
    } catch (err) {
      this.deps.logger.error({ err }, 'alert dispatcher pass failed; trying again at the next poll');
    }
  }

  /**
   * The digests whose cooldown is over first (so an alert recorded after the cooldown
   * ended goes out on its own rather than joining a late digest), then every recorded
   * alert: cooldown claimed and deliveries created, held for a digest, or set aside.
   */
  private async takeAlerts(): Promise<void> {
    await this.sendDigests();
    for (;;) {
      const ids = await pendingAlertIds(this.deps.store.db, 100);
      if (ids.length === 0) return;
      for (const id of ids) {
        if (this.stopped) return;
        const outcome = await dispatchAlert(this.deps.store, id, this.deps.clock.now(), this.options.wallClock());
        this.summary.alerts[outcome] += 1;
        if (this.deps.runtime.mail && assigneeHearsOf(outcome)) this.mailAssignee(id);
        if (outcome !== 'taken') this.deps.logger.debug({ alert_id: id, outcome }, 'alert taken from the outbox');
      }
      if (ids.length < 100) return;
    }
  }

  /**
   * Assignee emails (src/alerts/assignee.ts): each claimed in the database, then sent to
   * the issue's assignee as the issue is now; one attempt (the outbox row says how it ended).
   */
  private async sendAssigneeMails(): Promise<void> {
    const { store, runtime, config, clock, logger } = this.deps;
    for (const row of await pendingAssigneeMails(store.db, 50)) {
      if (this.stopped) return;
      if (!(await claimAssigneeMail(store, row.id))) continue;
      let state: AssigneeMailState;
      const issue = row.issue_id === null ? null : await assignedIssue(store.db, row.issue_id);
      if (!issue) state = 'no_assignee';
      else if (!runtime.mail) state = 'no_mail';
      else {
        try {
          const result = await runtime.mail.send({
            to: [issue.to],
            ...feedbackEmail(issue, parseFeedbackAlertPayload(row.payload), config.publicUrl),
          });
          state = result.accepted.length > 0 ? 'sent' : 'failed';
        } catch (err) {
          logger.warn(
            { alert_id: row.id, err: err instanceof Error ? err.message : String(err) },
            'assignee email not sent',
          );
          state = 'failed';
        }
      }
      await finishAssigneeMail(store, row.id, state, clock.now());
      logger.debug({ alert_id: row.id, state }, 'assignee email');
    }
  }

  private async sendDigests(): Promise<void> {
    const due = await dueDigests(this.deps.store.db, this.deps.clock.now(), 100);
    for (const { project_id, type } of due) {
      if (this.stopped) return;
      const outcome = await sendDigest(
        this.deps.store,
        project_id,
        type,
        this.deps.clock.now(),
        this.options.wallClock(),
      );
      if (outcome === 'sent') this.summary.digests += 1;
      if (outcome !== 'taken') this.deps.logger.debug({ project_id, type, outcome }, 'digest of held-back alerts');
    }
  }

  /** Claims what the free slots allow and starts those attempts. True when it claimed any. */
  private async claimAndSend(): Promise<boolean> {
    let any = false;
    for (;;) {
      const free = this.options.concurrency - this.inFlight.size;
      if (free <= 0 || this.stopped) return any;
      const wallNow = this.options.wallClock();
      if (!(await anyDeliveryDue(this.deps.store.db, wallNow))) return any;
      const busy = [...this.perChannel].filter(([, n]) => n >= this.options.perChannel).map(([id]) => id);
      // At most one delivery per channel each round; rounds go on while slots are free.
      const claimed = await claimDeliveries(
        this.deps.store,
        this.holder,
        wallNow,
        wallNow + this.options.leaseMs,
        free,
        busy,
      );
      if (claimed.length === 0) return any;
      any = true;
      for (const d of claimed) this.launch(d);
    }
  }

  private launch(d: ClaimedDelivery): void {
    this.perChannel.set(d.channel_id, (this.perChannel.get(d.channel_id) ?? 0) + 1);
    const attempt = this.attempt(d)
      .catch((err) =>
        this.deps.logger.error(
          { err, delivery_id: d.id },
          'alert delivery attempt failed unexpectedly; its lease runs out and it is tried again',
        ),
      )
      .finally(() => {
        this.inFlight.delete(d.id);
        const n = (this.perChannel.get(d.channel_id) ?? 1) - 1;
        if (n <= 0) this.perChannel.delete(d.channel_id);
        else this.perChannel.set(d.channel_id, n);
        this.wake();
      });
    this.inFlight.set(d.id, attempt);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const { store, logger, config } = this.deps;
    const db = store.db;
    const ctx = await deliveryContext(db, d);
    const log = {
      delivery_id: d.id,
      alert_id: d.alert_id,
      project_id: d.project_id,
      channel_id: d.channel_id,
      type: d.type,
      attempt: d.attempts,
    };
    if (!ctx.project) return; // the project is gone, and its deliveries with it
    let result: SendResult;
    if (!ctx.channel) {
      result = { delivered: false, status: null, error: 'the channel was deleted' };
    } else {
      let payload: Record<string, unknown> = {};
      try {
        payload = ctx.alert ? (JSON.parse(ctx.alert.payload) as Record<string, unknown>) : {};
      } catch {
        payload = {};
      }
      const content = {
        ...payload,
        type: d.type,
        triggered_at: ctx.alert?.triggered_at ?? this.deps.clock.now(),
      } as AlertContent;
      result = await sendToChannel(ctx.channel, content, ctx.project, {
        runtime: this.deps.runtime,
        publicUrl: config.publicUrl,
        webhookAllowPrivate: config.webhookAllowPrivate,
        telegramBotToken: config.telegramBotToken,
        telegramApiUrl: config.telegramApiUrl,
        deliveryId: d.id,
      });
    }
    if (result.delivered) {
      if (await markDelivered(db, d, this.holder, result.status, this.deps.clock.now())) {
        this.summary.sent += 1;
        logger.info({ ...log, status: result.status }, 'alert delivered');
      }
      return;
    }
    const maxAttempts = this.options.retryDelaysMs.length + 1;
    const error = result.error ?? 'not delivered';
    if (!ctx.channel || d.attempts >= maxAttempts) {
      const { gaveBack } = await markFailed(store, d, this.holder, result.status, error);
      this.summary.failed += 1;
      logger.warn(
        { ...log, status: result.status, error, cooldown_given_back: gaveBack },
        'alert delivery failed for good',
      );
      return;
    }
    const delay = result.retryAfterMs ?? this.options.retryDelaysMs[d.attempts - 1];
    if (await scheduleRetry(db, d, this.holder, result.status, error, this.options.wallClock() + delay)) {
      this.summary.retried += 1;
      logger.warn(
        { ...log, status: result.status, error, retry_in_ms: delay },
        'alert delivery attempt failed; trying again later',
      );
    }
  }
}

/**
 * One crash-spike check and one pass over the outbox and the due deliveries (waiting for
 * retries due within `waitMs`), with no timer left behind: `faultline alerts` and the
 * serverless edition's 10-minute cron. `onSpikes` reports the check before the pass.
 */
export async function runAlertsOnce(
  deps: DispatcherDeps,
  options: {
    dispatcher?: Partial<DispatcherOptions>;
    waitMs?: number;
    onSpikes?: (spikes: SpikeCheckResult) => void;
  } = {},
): Promise<{ spikes: SpikeCheckResult; pass: PassSummary }> {
  const dispatcher = new AlertDispatcher(deps, options.dispatcher);
  try {
    await dispatcher.endSnoozes();
    const spikes = await dispatcher.checkSpikes();
    options.onSpikes?.(spikes);
    const pass = await dispatcher.drain(options.waitMs);
    return { spikes, pass };
  } finally {
    await dispatcher.stop();
  }
}
