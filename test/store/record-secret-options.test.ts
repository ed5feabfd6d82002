/**
 * A worker's record secrets, as its settings give them. Without a secret a worker obeys unsigned
 * rows, which anyone who can write the table can make: so a secret that is missing by mistake is
 * refused when the store is made (given as undefined: a secret manager that answered nothing;
 * previous secrets without the signing one), and a worker that runs without one in a deployment
 * whose rows are signed says so in its log. Found in review: both mistakes made a worker obey a
 * forged unsigned receipt, silently.
 */
import { randomUUID } from 'node:crypto';
import { DefaultLogger } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { InvalidSecretError, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { IdempotentActivityEnvironment } from '../../src/testing/index.js';
import { useTestSchema } from '../support/schema.js';

const schema = useTestSchema(import.meta.filename);
const SECRET = 'record-secret-options-secret-of-32-bytes-or-more!';

describe("a worker's record secrets", () => {
  it('a secret given as undefined, or previous secrets without one, are refused before any claim', () => {
    const make = (options: object) => () => new PostgresClaimStore({ pool: schema.pool, schema: schema.name, ...options });
    expect(make({ secret: undefined })).toThrow(InvalidSecretError);
    expect(make({ secret: undefined })).toThrow(/your secret manager returned nothing/);
    expect(make({ previousSecrets: [SECRET] })).toThrow(/previousSecrets without secret.*previousSecrets: \['unsigned', …\]/);
    expect(make({ previousSecrets: ['unsigned', SECRET] })).not.toThrow();
    expect(make({})).not.toThrow();
  });

  it('a worker without a secret, among signed rows, refuses them and says once in its log that it lacks the secret', async () => {
    const workflowId = `wf-${randomUUID()}`;
    const info = { namespace: 'default', workflowExecution: { workflowId, runId: 'run-1' } };
    const charge = async (order: string) => ({ charged: order });
    const signing = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, secret: SECRET });
    await new IdempotentActivityEnvironment({ store: signing, info }).run(charge, 'o-1');
    const warnings: string[] = [];
    const logger: StoreLogger = { warn: (message) => void warnings.push(message), error: () => undefined };
    const unsigned = new PostgresClaimStore({ pool: schema.pool, schema: schema.name, logger });
    const environment = new IdempotentActivityEnvironment({ store: unsigned, info, mockOptions: { logger: new DefaultLogger('ERROR') } });
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(environment.run(charge, 'o-1')).rejects.toMatchObject({ type: 'IdempotencyRecordUnverifiable' });
    }
    expect(warnings.filter((message) => /has no record secret, but records in schema .* are signed/.test(message))).toHaveLength(1);
  });
});
