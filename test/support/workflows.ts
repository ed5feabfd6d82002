/** Workflows the tests run: the example's, plus small ones that call any activity. */
import {
  ActivityFailure,
  CancellationScope,
  condition,
  continueAsNew,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
  sleep,
  uuid4,
} from '@temporalio/workflow';
import {
  IdempotencyKeyReuse,
  IdempotencyOrphanedClaim,
  idempotencyRefusalOf,
  isIdempotencyRefusal,
  resumable,
} from '../../src/workflow/index.js';
import { callActivity } from './call-activity.js';
import type { CallActivityInput } from './call-activity.js';

export { orderWorkflow } from '../../workflows/index.js';
export { callActivity };
export type { CallActivityInput };

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

/** `resumable()` around a call whose arguments are rebuilt each time: a fresh request id, as many workflows do. */
export async function resumableFreshRequest(input: CallActivityInput): Promise<unknown[]> {
  return resumable(() => callActivity({ ...input, args: [...input.args, { requestId: uuid4() }] }));
}

/** Two `resumable()` calls of one action at once (one key), as `Promise.all` of identical calls gives. */
export async function resumableTwice(input: CallActivityInput): Promise<unknown[][]> {
  return Promise.all([resumable(() => callActivity(input)), resumable(() => callActivity(input))]);
}

export const cancelWaitSignal = defineSignal('cancelWait');

/**
 * A `resumable()` wait that the test can cancel (signal `cancelWait`) while the workflow lives on,
 * so the pending query and current details can be read after the cancellation.
 */
export async function cancellableResumable(input: CallActivityInput): Promise<string> {
  const scope = new CancellationScope();
  setHandler(cancelWaitSignal, () => scope.cancel());
  try {
    await scope.run(() => resumable(() => callActivity(input)));
    return 'completed';
  } catch (error) {
    if (!isCancellation(error)) throw error;
    await condition(() => false, '1 hour');
    return 'cancelled';
  }
}

/** Sleeps, continuing as new once first: the pending query must answer in every run, before any call. */
export async function idleThenContinue(input: { continued?: boolean }): Promise<void> {
  if (!input.continued) {
    await sleep(500);
    await continueAsNew<typeof idleThenContinue>({ continued: true });
  }
  await sleep(3_600_000);
}

export { chaosBatchWorkflow, crashPointWorkflow } from '../../scripts/chaos/workflows.js';

/**
 * For review-found cases: two different actions of one activity type in one `resumable()` (a reminder, then a
 * confirmation), each with its own arguments, so workflow scope gives each its own key.
 */
export async function resumableTwoActions(input: { activity: string; first: unknown; second: unknown }): Promise<unknown[]> {
  const activities: Record<string, (arg: unknown) => Promise<unknown>> = proxyActivities({
    startToCloseTimeout: 30_000,
    retry: { initialInterval: 100, maximumAttempts: 5 },
  });
  const activity = activities[input.activity]!;
  return resumable(async () => [await activity(input.first), await activity(input.second)]);
}

/** `resumableTwoActions` whose closure catches each ActivityFailure and rethrows its cause, as error-mapping code does. */
export async function resumableTwoActionsRethrowingCause(input: { activity: string; first: unknown; second: unknown }): Promise<unknown[]> {
  const activities: Record<string, (arg: unknown) => Promise<unknown>> = proxyActivities({
    startToCloseTimeout: 30_000,
    retry: { initialInterval: 100, maximumAttempts: 5 },
  });
  const activity = activities[input.activity]!;
  const unwrapped = (arg: unknown) => activity(arg).catch((error: unknown) => Promise.reject(error instanceof ActivityFailure ? error.cause : error));
  return resumable(async () => [await unwrapped(input.first), await unwrapped(input.second)]);
}

/** For review-found cases: a charge added while `resumableByPriority` waits for an operator. */
export const addChargeSignal = defineSignal<[{ order: string; priority: number }]>('attack.addCharge');

/**
 * For review-found cases: charges a list in priority order inside one `resumable()`; a signal may add a charge
 * while the workflow waits for a decision, and the next pass takes it in its place.
 */
export async function resumableByPriority(input: { activity: string; charges: Array<{ order: string; priority: number }> }): Promise<unknown[]> {
  const charges = [...input.charges];
  setHandler(addChargeSignal, (charge) => void charges.push(charge));
  const activities: Record<string, (arg: unknown) => Promise<unknown>> = proxyActivities({
    startToCloseTimeout: 30_000,
    retry: { initialInterval: 100, maximumAttempts: 5 },
  });
  const activity = activities[input.activity]!;
  return resumable(async () => {
    const receipts: unknown[] = [];
    for (const charge of [...charges].sort((a, b) => a.priority - b.priority)) receipts.push(await activity({ order: charge.order }));
    return receipts;
  });
}

/** What `branchOnRefusal` made of one call: the branch it took, and what the helpers said. */
export interface RefusalBranch {
  readonly branch: 'completed' | 'ask a person' | 'fix the key' | 'other refusal' | 'not a refusal';
  readonly type: string | null;
  readonly nonRetryable: boolean | null;
  /** The refused call's key, from the refusal's details. */
  readonly key: string | null;
  /** What the helpers say of the ApplicationFailure itself (the ActivityFailure's cause). */
  readonly causeType: string | null;
  readonly isRefusal: boolean;
}

/**
 * Calls each activity in turn and branches on how it failed with the sandbox-safe helpers of
 * `temporal-idempotency/workflow`, as workflow code that handles refusals does.
 */
export async function branchOnRefusal(input: { calls: Array<{ activity: string; args: unknown[] }> }): Promise<RefusalBranch[]> {
  const activities: Record<string, (...args: unknown[]) => Promise<unknown>> = proxyActivities({
    startToCloseTimeout: 30_000,
    retry: { initialInterval: 100, maximumAttempts: 2 },
  });
  const branches: RefusalBranch[] = [];
  for (const call of input.calls) {
    try {
      await activities[call.activity]!(...call.args);
      branches.push({ branch: 'completed', type: null, nonRetryable: null, key: null, causeType: null, isRefusal: false });
    } catch (error) {
      const refusal = idempotencyRefusalOf(error);
      const branch: RefusalBranch['branch'] = isIdempotencyRefusal(error, IdempotencyOrphanedClaim)
        ? 'ask a person'
        : isIdempotencyRefusal(error, IdempotencyKeyReuse)
          ? 'fix the key'
          : isIdempotencyRefusal(error)
            ? 'other refusal'
            : 'not a refusal';
      branches.push({
        branch,
        type: refusal?.type ?? null,
        nonRetryable: refusal?.nonRetryable ?? null,
        key: (refusal?.details?.[0] as { key?: string } | undefined)?.key ?? null,
        causeType: idempotencyRefusalOf(error instanceof ActivityFailure ? error.cause : undefined)?.type ?? null,
        isRefusal: isIdempotencyRefusal(error),
      });
    }
  }
  return branches;
}
