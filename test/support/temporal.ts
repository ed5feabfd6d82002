/**
 * Temporal helpers for the tests: a client, an in-process worker on the
 * pre-bundled test workflows, and a history reader for activity failures.
 */
import { readFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, inject } from 'vitest';

export interface TemporalTestContext {
  readonly client: Client;
  readonly nativeConnection: NativeConnection;
  /** The pre-bundled test workflows, for tests that create and shut down their own worker. */
  readonly workflowBundle: { code: string };
  /** Runs a worker on this process for the duration of `fn`. */
  withWorker<T>(options: Omit<WorkerOptions, 'connection' | 'workflowBundle' | 'workflowsPath'>, fn: () => Promise<T>): Promise<T>;
}

export function useTemporal(): TemporalTestContext {
  const state: { client?: Client; connection?: Connection; nativeConnection?: NativeConnection; bundle?: string } = {};
  beforeAll(async () => {
    const address = inject('temporalAddress');
    state.connection = await Connection.connect({ address });
    state.client = new Client({ connection: state.connection });
    state.nativeConnection = await NativeConnection.connect({ address });
    state.bundle = await readFile(inject('workflowBundlePath'), 'utf8');
  });
  afterAll(async () => {
    await state.nativeConnection?.close();
    await state.connection?.close();
  });
  return {
    get client() {
      return state.client!;
    },
    get nativeConnection() {
      return state.nativeConnection!;
    },
    get workflowBundle() {
      return { code: state.bundle! };
    },
    async withWorker(options, fn) {
      const worker = await Worker.create({
        ...options,
        connection: state.nativeConnection!,
        workflowBundle: { code: state.bundle! },
      });
      return worker.runUntil(fn);
    },
  };
}

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export interface PendingFailure {
  readonly type?: string | null;
  readonly nonRetryable?: boolean | null;
}

/**
 * Polls the workflow's pending activity until its last failure (of a retried attempt,
 * which the history does not record) satisfies `wanted`, and returns it.
 */
export async function pendingActivityFailure(
  handle: WorkflowHandle,
  wanted: (failure: PendingFailure, attempt: number) => boolean,
  timeoutMs = 20_000,
): Promise<PendingFailure> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) {
    const pending = (await handle.describe()).raw.pendingActivities?.[0];
    const failure = pending?.lastFailure?.applicationFailureInfo;
    if (failure && wanted(failure, pending?.attempt ?? 0)) return failure;
  }
  throw new Error(`no pending activity failure of the wanted kind within ${timeoutMs} ms`);
}

/** The failures of every failed activity attempt recorded in the workflow's history. */
export async function activityFailures(handle: WorkflowHandle): Promise<temporal.api.failure.v1.IFailure[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .map((event) => event.activityTaskFailedEventAttributes?.failure)
    .filter((failure): failure is temporal.api.failure.v1.IFailure => failure != null);
}

/**
 * The workflow task failures in the workflow's history: a nondeterminism on replay, or an error thrown
 * by workflow code. Only the first of a run of failed attempts is recorded.
 */
export async function workflowTaskFailures(handle: WorkflowHandle): Promise<temporal.api.history.v1.IWorkflowTaskFailedEventAttributes[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((event) => event.workflowTaskFailedEventAttributes ?? []);
}
