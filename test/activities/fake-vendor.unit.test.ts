/** The example vendor honours Idempotency-Key the way Stripe documents it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeVendor, LOOKUP_ROUTE } from '../../activities/fake-vendor.js';
import { CHARGE_ROUTE } from '../../activities/index.js';

const vendor = new FakeVendor();
beforeAll(() => vendor.start());
afterAll(() => vendor.stop());

function charge(key: string | null, body: object) {
  return fetch(`${vendor.url}/v1/charges`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
    body: JSON.stringify(body),
  });
}

describe('the example vendor', () => {
  it('answers a repeat with the same key and body with the stored response, performing nothing new', async () => {
    const first = await charge('k-same', { amount: 10 });
    const again = await charge('k-same', { amount: 10 });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    expect(vendor.actions.filter((a) => a.idempotencyKey === 'k-same')).toHaveLength(1);
  });

  it('rejects the same key with a different body with 422', async () => {
    await charge('k-other', { amount: 10 });
    const conflicting = await charge('k-other', { amount: 99 });
    expect(conflicting.status).toBe(422);
    expect(vendor.actions.filter((a) => a.idempotencyKey === 'k-other')).toHaveLength(1);
  });

  it('answers 409 to a repeat that arrives while the first is still being processed', async () => {
    vendor.script(CHARGE_ROUTE, 'slow');
    const first = charge('k-slow', { amount: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const concurrent = await charge('k-slow', { amount: 10 });
    expect(concurrent.status).toBe(409);
    expect((await first).status).toBe(200);
    expect(vendor.actions.filter((a) => a.idempotencyKey === 'k-slow')).toHaveLength(1);
  });

  it('performs every request without a key: an SDK that invents a new key each time gets no dedup', async () => {
    const before = vendor.actions.length;
    await charge(null, { amount: 10 });
    await charge(null, { amount: 10 });
    expect(vendor.actions.length - before).toBe(2);
  });

  it('names the keys it was sent again after taking them, which its dedup hid, but not a retry of a 503', async () => {
    await charge('k-twice', { amount: 10 });
    await charge('k-twice', { amount: 10 });
    vendor.script(CHARGE_ROUTE, 'unavailable');
    await charge('k-after-503', { amount: 10 });
    await charge('k-after-503', { amount: 10 });
    const again = vendor.keysSentAgain(CHARGE_ROUTE);
    expect(again.get('k-twice')).toBe(2);
    expect(again.has('k-after-503')).toBe(false);
    expect(vendor.actions.filter((a) => a.idempotencyKey === 'k-twice')).toHaveLength(1);
  });

  it('holds a lookup when scripted, so a harness can kill the asker while it waits, and answers the next one', async () => {
    await charge('k-asked', { amount: 10 });
    const held = vendor.nextHeld(LOOKUP_ROUTE);
    vendor.script(LOOKUP_ROUTE, 'hang-before-performing');
    const asker = new AbortController();
    const first = fetch(`${vendor.url}/v1/requests/k-asked`, { signal: asker.signal }).catch((error: unknown) => error);
    await held;
    asker.abort(); // as a killed worker's connection ends
    expect(await first).toBeInstanceOf(Error);
    const second = await fetch(`${vendor.url}/v1/requests/k-asked`);
    expect(second.status).toBe(200);
  });

  it('performs a request scripted to answer when released, answers lookups at once, and the caller only on release', async () => {
    vendor.script(CHARGE_ROUTE, 'answer-when-released');
    const performed = vendor.nextAction(CHARGE_ROUTE);
    const answered = charge('k-held', { amount: 10 });
    let heard = false;
    void answered.then(() => (heard = true));
    const action = await performed;
    const lookup = await fetch(`${vendor.url}/v1/requests/k-held`);
    expect(lookup.status).toBe(200);
    expect(heard).toBe(false);
    expect(vendor.releaseAnswers()).toBe(1);
    const response = await answered;
    expect(await response.json()).toEqual({ id: action.id, status: 'done' });
    expect(vendor.releaseAnswers()).toBe(0);
  });
});
