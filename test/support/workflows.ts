/** Workflows the tests run: the example's, plus small ones that call any activity. */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { resumable } from '../../src/workflow/index.js';

export { orderWorkflow } from '../../workflows/index.js';

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

export interface ResultShape {
  readonly isUndefined: boolean;
  readonly isUint8Array: boolean;
  readonly bytes: number[] | null;
  readonly json: string | null;
}

/** Runs one activity and reports the exact shape of its result, which JSON alone would blur. */
export async function describeActivityResult(input: CallActivityInput): Promise<ResultShape> {
  const [result] = await callActivity({ ...input, times: 1 });
  const isUint8Array = result instanceof Uint8Array;
  return {
    isUndefined: result === undefined,
    isUint8Array,
    bytes: isUint8Array ? Array.from(result) : null,
    json: result === undefined || isUint8Array ? null : JSON.stringify(result),
  };
}

/** Runs `count` activities at once, the i-th with argument i. */
export async function fanOut(input: { activity: string; count: number; startToCloseTimeoutMs?: number }): Promise<unknown[]> {
  const activities: Record<string, (index: number) => Promise<unknown>> = proxyActivities({
    startToCloseTimeout: input.startToCloseTimeoutMs ?? 60_000,
    retry: { maximumAttempts: 1 },
  });
  const activity = activities[input.activity];
  if (!activity) throw new Error(`no activity ${input.activity}`);
  return Promise.all(Array.from({ length: input.count }, (_, index) => activity(index)));
}

/** `callActivity`, but a refusal as orphaned waits for an operator's decision instead of failing. */
export async function resumableCallActivity(input: CallActivityInput): Promise<unknown[]> {
  return resumable(() => callActivity(input));
}

export { chaosBatchWorkflow } from '../../scripts/chaos/workflows.js';
