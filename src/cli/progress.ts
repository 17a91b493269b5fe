// Progress of long CLI work on standard error, through cli-progress: on a terminal a
// bar with the rate and the time left, redrawn a few times a second; otherwise (a log
// file, CI) the same figures as one line every few seconds.
import cliProgress from 'cli-progress';

/** Seconds between lines when standard error is not a terminal. */
export const NON_TTY_INTERVAL_MS = 5000;

export interface ProgressReporter {
  /** Sets the work done (and the total, when it became known or grew); `detail` is shown after the figures. */
  update(done: number, total: number, detail?: string): void;
  stop(): void;
}

export function progressReporter(
  label: string,
  unit: string,
  stream: NodeJS.WriteStream = process.stderr,
): ProgressReporter {
  const started = Date.now();
  const tty = stream.isTTY === true;
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: tty
        ? `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {rate} ${unit}/s | ETA {eta_formatted} {detail}`
        : `${label}: {value}/{total} ${unit} ({percentage}%), {rate} ${unit}/s, ETA {eta_formatted} {detail}`,
      noTTYOutput: true,
      notTTYSchedule: NON_TTY_INTERVAL_MS,
      etaBuffer: 100,
      fps: 5,
      hideCursor: false,
      gracefulExit: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let begun = false;
  return {
    update(done, total, detail = '') {
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const payload = { rate: Math.round(done / seconds), detail };
      const shownTotal = Math.max(total, done, 1);
      if (!begun) {
        bar.start(shownTotal, done, payload);
        begun = true;
        return;
      }
      if (shownTotal !== bar.getTotal()) bar.setTotal(shownTotal);
      bar.update(done, payload);
    },
    stop() {
      if (begun) bar.stop();
    },
  };
}
