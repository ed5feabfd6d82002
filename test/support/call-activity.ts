/** The workflow body most tests run: one activity by name. Workflow code. */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

export interface CallActivityInput {
  readonly activity: string;
  readonly args: unknown[];
  readonly local?: boolean;
  readonly startToCloseTimeoutMs?: number;
  readonly maximumAttempts?: number;
  /** Call the same activity this many times in a row (to see replays within one run). */
  readonly times?: number;
}

/** Runs one activity by name with the given args and returns what it returned. */
export async function callActivity(input: CallActivityInput): Promise<unknown[]> {
  const options = {
    startToCloseTimeout: input.startToCloseTimeoutMs ?? 30_000,
    retry: { initialInterval: 100, backoffCoefficient: 1.5, maximumInterval: 1_000, maximumAttempts: input.maximumAttempts ?? 20 },
  };
  const activities: Record<string, (...args: unknown[]) => Promise<unknown>> = input.local
    ? proxyLocalActivities(options)
    : proxyActivities(options);
  const activity = activities[input.activity];
  if (!activity) throw new Error(`no activity ${input.activity}`);
  const results: unknown[] = [];
  for (let i = 0; i < (input.times ?? 1); i++) results.push(await activity(...input.args));
  return results;
}
