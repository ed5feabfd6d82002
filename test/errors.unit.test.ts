/**
 * One error family: every error class the package exports extends
 * `IdempotencyError`, so a caller can catch the library's errors, and match on
 * their stable `code`, without knowing each class. No services.
 */
import { describe, expect, it } from 'vitest';
import * as library from '../src/index.js';
import { IdempotencyConfigError, IdempotencyError, InvalidArgumentError } from '../src/index.js';

const errorClasses = Object.entries(library as Record<string, unknown>).filter(
  (entry): entry is [string, abstract new (...args: never[]) => Error] => typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

describe('the error family', () => {
  it('finds the exported error classes', () => {
    expect(errorClasses.map(([name]) => name)).toEqual(expect.arrayContaining(['IdempotencyConfigError', 'InvalidArgumentError', 'PayloadCodecContractError']));
  });

  it.each(errorClasses.filter(([name]) => name !== 'IdempotencyError'))('%s extends IdempotencyError', (_, errorClass) => {
    expect(errorClass.prototype).toBeInstanceOf(IdempotencyError);
  });

  it('a configuration error names its option, by a reason or by a whole message', () => {
    const byReason = new IdempotencyConfigError('leaseMs', 'expected at least 1000');
    expect(byReason).toMatchObject({ code: 'invalid-configuration', option: 'leaseMs', message: 'Invalid idempotency option leaseMs: expected at least 1000' });
    const whole = new IdempotencyConfigError({ option: 'pool', message: 'PostgresClaimStore needs { pool }.' });
    expect(whole).toMatchObject({ code: 'invalid-configuration', option: 'pool', message: 'PostgresClaimStore needs { pool }.' });
  });

  it('an argument error names the argument', () => {
    expect(new InvalidArgumentError('olderThanMs', 'must be positive')).toMatchObject({ code: 'invalid-argument', argument: 'olderThanMs', name: 'InvalidArgumentError' });
  });
});
