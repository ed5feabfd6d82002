/**
 * What a script started (servers, processes, temporary directories), stopped
 * once, newest first: at the script's end, or at the first stop signal. A
 * server that was still starting when stopping began is stopped as soon as it
 * is up, and nothing new starts after that.
 */
import { constants } from 'node:os';

export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export class StoppedError extends Error {
  constructor() {
    super('Stopping: nothing new is started.');
    this.name = 'StoppedError';
  }
}

export class Teardown {
  private readonly stops: Array<() => Promise<unknown>> = [];
  private readonly starting = new Set<Promise<void>>();
  private readonly late: Array<Promise<unknown>> = [];
  private stopping: Promise<void> | undefined;
  private readonly aborter = new AbortController();

  /** Aborted when stopping begins: hand it to whatever spawns a process. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  /**
   * Starts something and registers how to stop it. Refused once stopping has begun; if stopping
   * begins while it starts, it is stopped as soon as it is up, and `done()` waits for that.
   */
  start<T>(start: () => Promise<T>, stop: (started: T) => Promise<unknown>): Promise<T> {
    if (this.stopping) return Promise.reject(new StoppedError());
    const started = start();
    const registered = started.then(
      (value) => this.add(() => stop(value)),
      () => undefined,
    );
    this.starting.add(registered);
    void registered.then(() => this.starting.delete(registered));
    return started;
  }

  /** Registers how to stop what was just started; runs it at once if stopping already began. */
  add(stop: () => Promise<unknown>): void {
    if (this.stopping) this.late.push(stop().catch(() => undefined));
    else this.stops.push(stop);
  }

  /** Stops everything registered, newest first, each step's failure ignored; the same promise every call. */
  run(): Promise<void> {
    this.aborter.abort();
    this.stopping ??= (async () => {
      for (const stop of this.stops.reverse()) await stop().catch(() => undefined);
    })();
    return this.stopping;
  }

  /** Resolves once `run()` is done, and everything that was still starting has been stopped too. */
  async done(): Promise<void> {
    await this.run();
    while (this.starting.size > 0) await Promise.all(this.starting);
    await Promise.all(this.late);
  }
}

/**
 * Resolves with the first stop signal the process receives. From then on those
 * signals no longer end the process by themselves: a second Ctrl-C while the
 * servers stop must not leave their data behind. `onRepeat` hears the later ones.
 */
export function firstStopSignal(onRepeat: (signal: NodeJS.Signals) => void = () => undefined): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    for (const signal of STOP_SIGNALS) {
      process.on(signal, () => {
        if (received) return onRepeat(signal);
        received = true;
        resolve(signal);
      });
    }
  });
}

/** The exit code a shell reports for a process ended by `signal`. */
export function exitCodeFor(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}
