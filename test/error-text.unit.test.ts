/**
 * The one formatter, form by form: what each lets through is what decides where
 * its text may go (history and traces, the worker's log, or only through the
 * codec). No services.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { errorClass, errorMessage, errorSummary, errorText, failureType, storeFailureText } from '../src/error-text.js';
import { ClaimContendedError } from '../src/index.js';

/** A driver's error as `pg` throws it: the message names the host and the user. */
const pgError = (code: string) => Object.assign(new Error(`password authentication failed for user "ops" at 10.1.2.3`), { code });
const withSecret = () => new TypeError('fetch https://api.example.com/?api_key=sk_live_123 failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });

describe('forms safe anywhere', () => {
  it('errorClass names the class alone, never the message', () => {
    expect(errorClass(withSecret())).toBe('TypeError');
    expect(errorClass(Object.assign(new Error('x'), { name: '' }))).toBe('Error');
    expect([errorClass('sk_live_123'), errorClass(null), errorClass(undefined)]).toEqual(['string', 'null', 'undefined']);
  });

  it("failureType prefers a Temporal failure's type, else the class", () => {
    expect(failureType(ApplicationFailure.create({ type: 'CardDeclined', message: 'card 4242 declined' }))).toBe('CardDeclined');
    expect(failureType(withSecret())).toBe('TypeError');
  });

  it("errorSummary keeps a library error's message (it names no user data) and only the class of anyone else's", () => {
    expect(errorSummary(new ClaimContendedError('ab12', 3))).toMatch(/^Key ab12 was claimed and released 3 times/);
    expect(errorSummary(withSecret())).toBe('TypeError');
  });
});

describe('storeFailureText: a store failure for history', () => {
  it('names a driver error by its code, never its host or user', () => {
    expect(storeFailureText(pgError('28P01'))).toBe('authentication failed [28P01]');
    expect(storeFailureText(pgError('XX999'))).toBe('database error [XX999]');
  });

  it("keeps a library error's message without its full stop, and says when the pool timed out", () => {
    expect(storeFailureText(new ClaimContendedError('ab12', 3))).toMatch(/nothing was claimed$/);
    expect(storeFailureText(new Error('timeout exceeded when trying to connect'))).toBe('timed out waiting for a connection');
    expect(storeFailureText('down')).toBe('unknown failure');
  });
});

describe('forms that carry the text', () => {
  it("errorMessage is the error's own message, for the operator's terminal and the worker's log", () => {
    expect(errorMessage(pgError('28P01'))).toContain('10.1.2.3');
    expect(errorMessage(42)).toBe('42');
  });

  it('errorText has everything, the first cause and codes too: it goes only through the codec', () => {
    expect(errorText(withSecret())).toBe(
      'TypeError: fetch https://api.example.com/?api_key=sk_live_123 failed (cause: Error: other side closed [UND_ERR_SOCKET])',
    );
    expect(errorText(new Error(''))).toBe('Error: (no message)');
  });
});
