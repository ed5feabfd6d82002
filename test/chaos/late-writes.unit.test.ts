/**
 * The partition runs read, from the partitioned worker's own log, what became of the writes it made
 * after its claims were taken over: refused by their token, or taken. Entries are built as the SDK's
 * default logger prints them (an ISO time, the level, the message, the meta by `util.format`). No services.
 */
import { format } from 'node:util';
import { describe, expect, it } from 'vitest';
import { lateWritesIn } from '../../scripts/chaos/partitions/late-writes.js';

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(32);

function entry(level: string, message: string, meta: Record<string, unknown>): string {
  return `${format(new Date('2026-12-04T15:40:00.000Z'))} [${level}] ${message} ${format(meta)}\n`;
}

/** What an activity's context adds to every entry: long enough that `util.format` breaks the meta over lines. */
const activityMeta = { sdkComponent: 'activity', activityType: 'chargeCard', workflowId: 'partition-6f1c0b3e-2d4a-4c6e-9a57-1b2c3d4e5f60', taskQueue: 'partition-1a2b3c4d', attempt: 1 };

describe("the partitioned worker's late writes, from its log", () => {
  it('names the key of each settling write refused by its token, with the meta on one line or many', () => {
    const output =
      entry('WARN', 'Idempotency: the claim was changed by someone else while the call ran; did not record its result', { idempotencyKey: KEY_A }) +
      entry('WARN', 'Idempotency: the claim was changed by someone else while the call ran; did not mark its outcome unknown', {
        ...activityMeta,
        idempotencyKey: KEY_B,
      });
    expect(output.split('\n').length).toBeGreaterThan(3);
    expect(lateWritesIn(output)).toEqual({ refused: new Set([KEY_A, KEY_B]), taken: new Set(), lost: new Set() });
  });

  it('names the key of a write kept in the background that took effect once the store was back', () => {
    const output =
      entry('ERROR', 'Idempotency: could not record the result in time; trying on in the background for 10 minutes.', { idempotencyKey: KEY_A, error: 'Connection terminated' }) +
      entry('INFO', 'Idempotency: could record the result after all, once the store was back', { ...activityMeta, idempotencyKey: KEY_A });
    expect(lateWritesIn(output)).toEqual({ refused: new Set(), taken: new Set([KEY_A]), lost: new Set() });
  });

  it("takes each key from its own entry, never from the next one's", () => {
    const output =
      entry('WARN', 'Idempotency: the claim was changed by someone else while the call ran; did not record its result', { error: 'no key here' }) +
      entry('ERROR', 'Idempotency: this attempt lost its claim while its call ran (another attempt took it over)', { ...activityMeta, idempotencyKey: KEY_B });
    expect(lateWritesIn(output)).toEqual({ refused: new Set(), taken: new Set(), lost: new Set([KEY_B]) });
  });

  it('finds nothing in a log that says nothing of late writes', () => {
    expect(lateWritesIn('worker ready pid=123\n')).toEqual({ refused: new Set(), taken: new Set(), lost: new Set() });
  });
});
