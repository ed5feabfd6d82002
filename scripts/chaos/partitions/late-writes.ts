/**
 * What the partitioned worker said, in its own log, about the writes it made after its claims were
 * taken over: its settling write refused by its token (`did not …`) or taken after all (obeyed over
 * the new holder), and its lease renewal refused (`lost its claim`). Read from the worker's output,
 * per key, so nothing is added to the library or the worker.
 */

/** CallSettlement's warning when a settling write found the claim no longer this attempt's. */
const REFUSED = 'the claim was changed by someone else while the call ran; did not ';
/** CallSettlement's note when a write kept in the background took effect once the store was back. */
const TAKEN = 'after all, once the store was back';
/** CallSettlement's notice when a lease renewal (a write guarded by the token too) found the claim another's. */
const LOST = 'lost its claim while its call ran';
/** Where the next log entry begins: the default logger starts each with an ISO timestamp. */
const NEXT_ENTRY = /\n\d{4}-\d\d-\d\dT\d\d:\d\d/;
const KEY = /idempotencyKey: '([0-9a-f]+)'/;

export interface LateWrites {
  /** Keys with a write the store refused by token, as the worker logged it. */
  readonly refused: ReadonlySet<string>;
  /** Keys with a late write the store took. */
  readonly taken: ReadonlySet<string>;
  /** Keys whose lease renewal the store refused by its token, the worker's call still running. */
  readonly lost: ReadonlySet<string>;
}

export function lateWritesIn(output: string): LateWrites {
  return { refused: keysAfter(output, REFUSED), taken: keysAfter(output, TAKEN), lost: keysAfter(output, LOST) };
}

/** The `idempotencyKey` of every log entry that contains `marker`. */
function keysAfter(output: string, marker: string): Set<string> {
  const keys = new Set<string>();
  for (let at = output.indexOf(marker); at !== -1; at = output.indexOf(marker, at + marker.length)) {
    const rest = output.slice(at);
    const end = rest.search(NEXT_ENTRY);
    const key = KEY.exec(end === -1 ? rest : rest.slice(0, end))?.[1];
    if (key) keys.add(key);
  }
  return keys;
}
