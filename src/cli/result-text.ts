/** A recorded result as an operator reads it. */
import { defaultPayloadConverter } from '@temporalio/common';
import type { Payload } from '@temporalio/common';

/** Decoded with the default converter when it can be (not when a codec encrypted it); bytes as base64. */
export function describeResult(payload: Payload | null): unknown {
  if (!payload) return null;
  let value: unknown;
  try {
    value = defaultPayloadConverter.fromPayload(payload);
  } catch {
    const encoding = payload.metadata?.['encoding'];
    return `<${encoding ? Buffer.from(encoding).toString() : 'unknown'} payload: decode it with the worker's codec>`;
  }
  if (value instanceof Uint8Array) return { bytes_base64: Buffer.from(value).toString('base64') };
  return value === undefined ? '(undefined)' : value;
}
