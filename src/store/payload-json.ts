/**
 * Temporal payloads as JSON for a `jsonb` column: binary fields in base64,
 * so an operator can read the encoding (and, without a codec, the data) in psql.
 */
import type { Payload } from '@temporalio/common';

export interface PayloadJson {
  readonly metadata: Record<string, string>;
  readonly data: string;
}

export function payloadToJson(payload: Payload): PayloadJson {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(payload.metadata ?? {})) {
    metadata[name] = Buffer.from(value).toString('base64');
  }
  return { metadata, data: Buffer.from(payload.data ?? new Uint8Array()).toString('base64') };
}

export function payloadFromJson(json: PayloadJson): Payload {
  const metadata: Record<string, Uint8Array> = {};
  for (const [name, value] of Object.entries(json.metadata)) {
    metadata[name] = new Uint8Array(Buffer.from(value, 'base64'));
  }
  return { metadata, data: new Uint8Array(Buffer.from(json.data, 'base64')) };
}
