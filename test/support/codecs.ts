/** A stand-in for an encrypting payload codec: reversible, and never leaves the plain bytes in the payload. */
import type { Payload, PayloadCodec } from '@temporalio/common';

export class XorCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: { ...payload.metadata, encoding: new TextEncoder().encode('binary/xor'), inner: payload.metadata!['encoding']! },
      data: xor(payload.data ?? new Uint8Array()),
    }));
  }
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map(({ metadata, data }) => {
      const { inner, ...rest } = metadata ?? {};
      return { metadata: { ...rest, encoding: inner! }, data: xor(data ?? new Uint8Array()) };
    });
  }
}

function xor(bytes: Uint8Array): Uint8Array {
  return bytes.map((byte) => byte ^ 0x5a);
}
