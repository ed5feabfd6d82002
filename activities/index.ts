/**
 * The example's activities: real-looking external writes to a vendor over HTTP.
 * Written as plain activities; the idempotency interceptor on the worker makes
 * each one at-most-once.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { OutcomeUnknownError, idempotencyHeaders } from '../src/index.js';

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
  let response: Response;
  try {
    response = await fetch(new URL(path, baseUrl), {
      method: 'POST',
      // Pass the key explicitly: an SDK that invents a random key per request dedups only its own retries.
      headers: { 'content-type': 'application/json', ...idempotencyHeaders() },
      body: JSON.stringify(body),
      // Abort on our own timeout, or when Temporal cancels the activity (worker shutdown, workflow cancel).
      signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), Context.current().cancellationSignal]),
    });
  } catch (error) {
    if (neverConnected(error)) throw new Error(`Vendor unreachable at ${baseUrl}; nothing was sent.`, { cause: error });
    // The request may have reached the vendor: retrying could do it twice.
    throw new OutcomeUnknownError(`No answer from the vendor for ${path}; it may have acted.`, { cause: error });
  }
  if (response.status >= 500) {
    // This vendor documents 5xx as "nothing was done": safe to retry.
    throw new Error(`Vendor answered ${response.status} for ${path}: ${await response.text()}`);
  }
  if (response.status === 409) {
    // Our own earlier request with this key is still being processed: nothing new happened; retry later.
    throw new Error(`Vendor is still processing an earlier request for ${path} with this key.`);
  }
  if (!response.ok) {
    throw ApplicationFailure.nonRetryable(`Vendor rejected ${path} with ${response.status}: ${await response.text()}`, 'VendorRejected');
  }
  return (await response.json()) as VendorReceipt;
}

function neverConnected(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}
