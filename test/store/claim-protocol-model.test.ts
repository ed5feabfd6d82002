/**
 * The claim protocol against its reference model (test/store/claim-protocol-model.ts), on
 * PostgresClaimStore and a real Postgres, with an operator's resolve and release among the steps:
 * fewer runs than the unit tier's, each step a real statement.
 */
import { randomUUID } from 'node:crypto';
import { describe, it } from 'vitest';
import { ClaimOperations } from '../../src/index.js';
import { useTestSchema } from '../support/schema.js';
import { PROTOCOL_KEYS, checkClaimProtocol } from './claim-protocol-model.js';

const schema = useTestSchema(import.meta.filename);

describe('the claim protocol, against its model, on Postgres', () => {
  it('answers random sequences of worker and operator steps, and races, as the model does', async () => {
    const operations = new ClaimOperations(schema.pool, { schema: schema.name });
    const force = { force: true, reason: 'model-based test' };
    await checkClaimProtocol(
      () => ({
        store: schema.store,
        keys: () => Array.from({ length: PROTOCOL_KEYS }, () => randomUUID().replace(/-/g, '')),
        operator: {
          resolve: (key, result) => operations.resolve(key, result, force),
          release: (key) => operations.release(key, force),
        },
      }),
      { numRuns: 200, maxCommands: 30 },
    );
  }, 120_000);
});
