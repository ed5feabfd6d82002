/**
 * Attack 12: commit a619f6e signs a new claim with the secret that keyed it (`signClaim`), because
 * `this.inForce` can regress when reads answer out of order across `keys activate`. `takeOver`
 * (src/store/postgres-claim-store.ts, `this.sign(...)` in takeOver) still signs with `this.inForce`,
 * and nothing stops the write: the claim trigger checks the format only on INSERT (migration 7),
 * and the takeover statement, unlike complete / mark-unknown / hand-back, never asks
 * `signed_by_retired()` (claim-statements.ts takeOver). A read that started before `keys activate`
 * and answers after `keys retire` puts the retired secret back in `inForce`; the next takeover (an
 * orphan re-run under vendorDedup, or taken over to ask the vendor under reconcile) is written
 * signed by the retired secret. Every worker then reads the running claim as forged
 * (IdempotencyRecordRejected, non-retryable) instead of as a live owner to wait for; if the taker
 * dies before recording, the next attempt is told the row was forged rather than orphaned, for ever
 * (until an operator resolves it with --force).
 *
 * Expected: a claim a worker takes over authenticates.
 */
import { describe, expect, it, inject } from 'vitest';
import { ClaimOperations, PostgresClaimStore } from '../../src/index.js';
import type { StoreLogger } from '../../src/index.js';
import { DeploymentSecret, keyedFormat } from '../../src/key/index.js';
import { useTestSchema } from '../support/schema.js';
import { poolWithSlowReads } from '../support/slow-reads.js';
import { keyedClaimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const OLD = 'the-secret-of-last-year-of-at-least-32-bytes-000';
const NEW = 'the-secret-rotated-to-of-at-least-32-bytes-111111';
const quiet: StoreLogger = { warn: () => undefined, error: () => undefined };

describe('a takeover after reads answered out of order across keys activate and keys retire', () => {
  it('the taken-over claim is signed with a secret the workers accept', async () => {
    const { pool, name } = schema;
    await new ClaimOperations(pool, { schema: name, secret: OLD }).activateSecret({ reason: 'first secret', force: true });

    // A slow answer to one read (a busy network or server): its result arrives later than later reads'.
    const { pool: workerPool, holdNextGet } = poolWithSlowReads(inject('databaseUrl'));
    const taker = new PostgresClaimStore({ pool: workerPool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const oldFormat = keyedFormat(new DeploymentSecret(OLD));
    const earlier = keyedClaimRequest(oldFormat);
    expect((await taker.begin(earlier, 60_000)).won).toBe(true);

    const release = holdNextGet();
    const slowRead = taker.get(earlier.key); // its snapshot: OLD in force, nothing retired
    await new Promise((resolve) => setTimeout(resolve, 200));

    const operator = new ClaimOperations(pool, { schema: name, secret: NEW, previousSecrets: [OLD] });
    await operator.activateSecret({ reason: 'rotation', force: true });

    // A call made under NEW whose worker died: its lease runs out.
    const newFormat = keyedFormat(new DeploymentSecret(NEW));
    const first = keyedClaimRequest(newFormat, { activityType: 'chargeCard' });
    const { key } = first;
    const dead = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    expect((await dead.begin(first, 300)).won).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 600));

    // Every attempt begun before the activation is over: OLD is retired, as the rotation says.
    await operator.retireSecret(new DeploymentSecret(OLD).id, { reason: 'rotation' });

    const orphan = await taker.get(key); // read now: NEW in force, OLD retired
    expect({ state: orphan?.state, ownerAlive: orphan?.ownerAlive, authenticity: orphan?.authenticity }).toEqual({
      state: 'claimed',
      ownerAlive: false,
      authenticity: 'verified',
    });
    release();
    await slowRead; // answers last, with the format of its older snapshot

    // The next attempt takes the orphan over (vendorDedup re-runs it; reconcile asks the vendor under it).
    const second = { ...first, attempt: 2, claimedBy: 'test-host/2' };
    const taken = await taker.takeOver(orphan!, second, 60_000);
    expect(taken, 'the takeover was written').not.toBeNull();

    const other = new PostgresClaimStore({ pool, schema: name, secret: NEW, previousSecrets: [OLD], logger: quiet });
    const read = await other.get(key);
    const signer = (await pool.query<{ secret_id: string }>(`SELECT secret_id FROM "${name}".claims WHERE key = $1`, [key])).rows[0];
    expect(
      { state: read?.state, ownerAlive: read?.ownerAlive, authenticity: read?.authenticity, signedBy: signer?.secret_id === newFormat.secretId ? 'NEW' : 'retired OLD' },
      'another attempt reads the running, taken-over claim',
    ).toEqual({ state: 'claimed', ownerAlive: true, authenticity: 'verified', signedBy: 'NEW' });
    await Promise.all([taker.close(), other.close(), dead.close()]);
    await workerPool.end();
  });
});
