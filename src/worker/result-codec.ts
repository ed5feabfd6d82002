/**
 * Encodes an activity's result the way the worker does (payload converter,
 * then codecs in order), so a replayed result equals the original and an
 * encrypting codec keeps secrets out of the claims table.
 */
import type { Payload, PayloadCodec, PayloadConverter } from '@temporalio/common';
import { IdempotencyError } from '../errors.js';

export class ResultCodec {
  constructor(
    private readonly converter: PayloadConverter,
    private readonly codecs: readonly PayloadCodec[],
  ) {}

  async encode(value: unknown): Promise<Payload> {
    let payloads = [this.converter.toPayload(value)];
    for (const codec of this.codecs) payloads = await codec.encode(payloads);
    return single(payloads);
  }

  async decode(payload: Payload): Promise<unknown> {
    let payloads = [payload];
    for (const codec of [...this.codecs].reverse()) payloads = await codec.decode(payloads);
    return this.converter.fromPayload(single(payloads));
  }
}

/** A payload codec that breaks the contract the worker relies on. */
export class PayloadCodecContractError extends IdempotencyError {
  override readonly name = 'PayloadCodecContractError';
  readonly code = 'payload-codec-contract';
}

function single(payloads: Payload[]): Payload {
  const [payload] = payloads;
  if (payloads.length !== 1 || payload === undefined) {
    throw new PayloadCodecContractError(`A payload codec returned ${payloads.length} payloads for one; codecs must map one to one.`);
  }
  return payload;
}
