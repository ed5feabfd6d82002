/** A stand-in for an encrypting payload codec: reversible, and never leaves the plain bytes in the payload. */
import type { Payload, PayloadCodec } from '@temporalio/common';

export class XorCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => ({
      metadata: { ...payload.metadata, encoding: new TextEncoder().encode('binary/xor'), inner: payload.metadata!['encoding']! },
      data: xor(payload.data ?? new Uint8Array()),
    }));
  }
  /** Like a real codec, it leaves alone what it did not encode (strict codecs refuse it; see StrictXorCodec). */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const { inner, ...rest } = payload.metadata ?? {};
      if (new TextDecoder().decode(rest['encoding']) !== 'binary/xor' || inner === undefined) return payload;
      return { metadata: { ...rest, encoding: inner }, data: xor(payload.data ?? new Uint8Array()) };
    });
  }
}

function xor(bytes: Uint8Array): Uint8Array {
  return bytes.map((byte) => byte ^ 0x5a);
}
