/**
 * The example's activities: real-looking external writes to a vendor over HTTP.
 * Written as plain activities; the idempotency interceptor on the worker makes
 * each one at-most-once.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { NotSentError, OutcomeUnknownError, idempotencyHeaders } from '../src/index.js';
import type { ActivityIdempotencyOptions, Reconciliation } from '../src/index.js';

export interface ChargeRequest {
  readonly orderId: string;
  readonly customerId: string;
  readonly amountCents: number;
  readonly currency: string;
}

export interface CallRequest {
  readonly to: string;
  readonly message: string;
}

export interface VendorReceipt {
  readonly id: string;
  readonly status: string;
}

export const CHARGE_ROUTE = 'POST /v1/charges';
export const CALL_ROUTE = 'POST /v1/calls';

/** A factory, so the vendor's address is passed in rather than read from a global. */
export function createActivities(options: { vendorUrl: string; requestTimeoutMs?: number }) {
  const post = (path: string, body: unknown) => postToVendor(options.vendorUrl, path, body, options.requestTimeoutMs ?? 30_000);
  return {
    async chargeCard(charge: ChargeRequest): Promise<VendorReceipt> {
      return post('/v1/charges', charge);
    },
    async placeCall(call: CallRequest): Promise<VendorReceipt> {
      return post('/v1/calls', call);
    },
  };
}

export type ExampleActivities = ReturnType<typeof createActivities>;

/**
 * Settings for the example activities: each is reconciled by asking the vendor, by the idempotency
 * key the call carried, what became of it, before a claim without an outcome is refused.
 */
export function exampleActivitySettings(options: { vendorUrl: string }): {
  chargeCard: ActivityIdempotencyOptions<Parameters<ExampleActivities['chargeCard']>>;
  placeCall: ActivityIdempotencyOptions<Parameters<ExampleActivities['placeCall']>>;
} {
  const reconcile = ({ key, signal }: { key: string; signal: AbortSignal }) => lookUpByKey(options.vendorUrl, key, signal);
  return { chargeCard: { reconcile }, placeCall: { reconcile } };
}

/**
 * "Did the request with this key happen?" The vendor dedups on the same key, and the call always
 * carries it, so "no request with this key" means nothing the orphaned call sent can still act.
 */
export async function lookUpByKey(baseUrl: string, key: string, signal?: AbortSignal): Promise<Reconciliation> {
  const response = await fetch(new URL(`/v1/requests/${encodeURIComponent(key)}`, baseUrl), signal ? { signal } : {});
  if (response.status === 404) return { outcome: 'not-happened' };
  if (!response.ok) return { outcome: 'unknown', reason: `the vendor's lookup answered ${response.status}` };
  const { response: receipt } = (await response.json()) as { response: VendorReceipt };
  return { outcome: 'happened', result: receipt };
}

async function postToVendor(baseUrl: string, path: string, body: unknown, timeoutMs: number): Promise<VendorReceipt> {
  // Abort on our own timeout, or when Temporal cancels the activity (worker shutdown, workflow cancel).
  const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), Context.current().cancellationSignal]);
  if (signal.aborted) throw new NotSentError(`Cancelled before ${path} was sent.`);
  let response: Response;
  let text: string;
  try {
    response = await fetch(new URL(path, baseUrl), {
      method: 'POST',
      // Pass the key explicitly: an SDK that invents a random key per request dedups only its own retries.
      headers: { 'content-type': 'application/json', ...idempotencyHeaders() },
      body: JSON.stringify(body),
      signal,
      // A write follows no redirect: a 3xx is the vendor's answer, and a failing later hop would look like "nothing sent".
      redirect: 'manual',
    });
    // The body is part of the answer: a timeout while it arrives means the vendor may have acted.
    text = await response.text();
  } catch (error) {
    if (neverConnected(error)) throw new NotSentError(`Vendor unreachable at ${baseUrl}; nothing was sent.`, { cause: error });
    throw new OutcomeUnknownError(`No complete answer from the vendor for ${path}; it may have acted.`, { cause: error });
  }
  if (response.status >= 500) {
    // This vendor documents 5xx as "nothing was done": safe to retry.
    // The body stays out of the message: messages are logged and kept in history, bodies can carry customer data.
    throw new Error(`Vendor answered ${response.status} for ${path}; nothing was done.`);
  }
  if (response.status >= 300 && response.status < 400) {
    // It answered the write with a redirect (post/redirect/get): it may well have acted.
    throw new OutcomeUnknownError(`Vendor answered ${path} with a redirect (${response.status}); it may have acted.`);
  }
  if (response.status === 409) {
    // Our own earlier request with this key is still being processed: nothing new happened; retry later.
    throw new Error(`Vendor is still processing an earlier request for ${path} with this key.`);
  }
  if (!response.ok) {
    throw ApplicationFailure.nonRetryable(`Vendor rejected ${path} with ${response.status}.`, 'VendorRejected');
  }
  try {
    return JSON.parse(text) as VendorReceipt;
  } catch (error) {
    // A 2xx means it acted; an unreadable receipt does not make it not happen.
    throw new OutcomeUnknownError(`The vendor accepted ${path} but its receipt is not JSON.`, { cause: error });
  }
}

/** Nothing left the process: the connection itself failed (refused, no such host). */
function neverConnected(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}
