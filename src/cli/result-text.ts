/** A recorded payload (a result, a note) as an operator reads it. */
import type { Payload } from '@temporalio/common';
import type { ResultCodec } from '../worker/result-codec.js';

/**
 * Decoded with the workers' converter and codecs (from --worker-config) when they can; bytes as
 * base64; otherwise a placeholder naming the encoding, never the raw bytes.
 */
export async function describePayload(payload: Payload, codec: ResultCodec): Promise<unknown> {
  let value: unknown;
  try {
    value = await codec.decode(payload);
  } catch {
    const encoding = payload.metadata?.['encoding'];
    return `<${encoding ? Buffer.from(encoding).toString() : 'unknown'} payload: give --worker-config the workers' codecs to read it>`;
  }
  if (value instanceof Uint8Array) return { bytes_base64: Buffer.from(value).toString('base64') };
  return value === undefined ? '(undefined)' : value;
}
