/** The benchmark's workflow: many trivial activities, a fixed number in flight. */
import { proxyActivities } from '@temporalio/workflow';

export interface EchoArg {
  /** Unique per workflow run, so every activity is a new claim even across runs. */
  readonly run: string;
  readonly index: number;
}

export interface BenchActivities {
  echo(arg: EchoArg): Promise<EchoArg>;
}

export interface EchoLoopsInput {
  readonly run: string;
  readonly total: number;
  readonly inFlight: number;
}

const { echo } = proxyActivities<BenchActivities>({
  startToCloseTimeout: '1 minute',
  // A failure must fail the run, not hide as a retry inside the timing.
  retry: { maximumAttempts: 1 },
});

/** `inFlight` loops, each awaiting one activity at a time, until `total` have run; returns how many ran. */
export async function echoLoops(input: EchoLoopsInput): Promise<number> {
  let started = 0;
  const loop = async () => {
    while (started < input.total) {
      await echo({ run: input.run, index: started++ });
    }
  };
  await Promise.all(Array.from({ length: input.inFlight }, loop));
  return started;
}
