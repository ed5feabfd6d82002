/**
 * The claim protocol against its reference model (test/store/claim-protocol-model.ts), on the
 * in-memory store of `temporal-idempotency/testing`: many random runs in seconds.
 */
import { randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import { InMemoryClaimStore, ManualClock } from '../../src/testing/index.js';
import { PROTOCOL_KEYS, checkClaimProtocol } from './claim-protocol-model.js';

describe('the claim protocol, against its model, on the in-memory store', () => {
  it('answers every random sequence of begins, renewals, lapses, outcomes, takeovers and waiters as the model does', async () => {
    await checkClaimProtocol(
      () => {
        const clock = new ManualClock(new Date('2030-01-02T03:04:05.000Z'));
        const store = new InMemoryClaimStore({ clock });
        return {
          store,
          keys: () => Array.from({ length: PROTOCOL_KEYS }, () => randomUUID()),
          // A refusal and the telling of it a millisecond apart, as any two statements are in Postgres.
          tick: () => clock.advance(1),
        };
      },
      { numRuns: 400, maxCommands: 40 },
    );
  });
});
