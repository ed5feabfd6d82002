/**
 * The example's activities: real-looking external writes to a vendor over HTTP.
 * Written as plain activities; the idempotency interceptor on the worker makes
 * each one at-most-once.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { NotSentError, OutcomeUnknownError, idempotencyHeaders } from '../src/index.js';

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
    });
    // The body is part of the answer: a timeout while it arrives means the vendor may have acted.
    text = await response.text();
  } catch (error) {
    if (neverConnected(error)) throw new NotSentError(`Vendor unreachable at ${baseUrl}; nothing was sent.`, { cause: error });
    throw new OutcomeUnknownError(`No complete answer from the vendor for ${path}; it may have acted.`, { cause: error });
  }
  if (response.status >= 500) {
    // This vendor documents 5xx as "nothing was done": safe to retry.
    throw new Error(`Vendor answered ${response.status} for ${path}: ${text}`);
  }
  if (response.status === 409) {
    // Our own earlier request with this key is still being processed: nothing new happened; retry later.
    throw new Error(`Vendor is still processing an earlier request for ${path} with this key.`);
  }
  if (!response.ok) {
    throw ApplicationFailure.nonRetryable(`Vendor rejected ${path} with ${response.status}: ${text}`, 'VendorRejected');
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
