/** What a chaos run found, and whether it kept the promise. */

export interface ChaosReport {
  readonly activities: number;
  readonly workflows: number;
  readonly kills: number;
  /** Postgres restarts that happened mid-run, and how many the run asked for (the issue's bar is 2). */
  readonly postgresRestarts: number;
  readonly postgresRestartsWanted: number;
  /** Why restarts could not happen at all (a DATABASE_URL server this run does not own); null when they could. */
  readonly postgresRestartsImpossible: string | null;
  readonly seconds: number;
  /** How many keys the vendor acted on once, and the keys it acted on more than once. */
  readonly keysActedOnce: number;
  readonly keysActedTwice: readonly { key: string; actions: number }[];
  /**
   * Keys of activity types not declared `vendorDedup` that reached the vendor again after it had
   * taken them: a second call, which this vendor's dedup hid (it acts once per key whatever it is
   * sent) and a vendor without idempotency keys would have acted on.
   */
  readonly keysSentTwice: readonly { key: string; route: string; requests: number }[];
  /**
   * Requests the vendor acted on more than once, whatever keys they carried: every chaos call is a
   * distinct action (its own order or line), so one acted on twice is a doubled call even under two keys.
   */
  readonly actionsRepeated: readonly { route: string; body: string; actions: number }[];
  /** Requests the vendor answered from its own idempotency store (vendorDedup re-runs). */
  readonly vendorReplays: number;
  /** How every workflow ended: `completed`, or the failure type it failed with. */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly openClaims: readonly { key: string; state: string; claimedBy: string; matchesKilledAttempt: boolean }[];
  /** Whether the workers reconciled orphaned calls with the vendor, and what it answered. */
  readonly reconcile: boolean;
  readonly reconciliations: Readonly<Record<string, number>>;
  /** Worker processes that exited without being killed on purpose (a crash): must be none. */
  readonly unexpectedExits: readonly { pid: number; code: number | null; signal: string | null; lastOutput: string }[];
}

export const ACCEPTED_OUTCOMES = new Set(['completed', 'IdempotencyOrphanedClaim', 'IdempotencyClaimBusy', 'IdempotencyStoreUnavailable']);

export function problemsIn(report: ChaosReport): string[] {
  const problems: string[] = [];
  if (report.postgresRestarts < report.postgresRestartsWanted) {
    // A run that never lost its database proves nothing about surviving a restart: it must not pass as one that did.
    problems.push(
      `Postgres was restarted ${report.postgresRestarts} time(s) mid-run, not the ${report.postgresRestartsWanted} asked for: ` +
        (report.postgresRestartsImpossible ??
          'the workflows finished first; run more of them (--workflows) or more activities per workflow'),
    );
  }
  for (const { key, actions } of report.keysActedTwice) problems.push(`key ${key} was acted on ${actions} times`);
  for (const { route, body, actions } of report.actionsRepeated) problems.push(`${route} ${body} was acted on ${actions} times`);
  for (const { key, route, requests } of report.keysSentTwice) {
    problems.push(`key ${key} was sent to ${route} ${requests} times, though its activity type is not vendorDedup`);
  }
  for (const [outcome, count] of Object.entries(report.outcomes)) {
    if (!ACCEPTED_OUTCOMES.has(outcome)) problems.push(`${count} workflow(s) ended with ${outcome}, not a named refusal`);
  }
  for (const exit of report.unexpectedExits) {
    problems.push(`worker ${exit.pid} exited on its own (code ${exit.code}, signal ${exit.signal}):\n${exit.lastOutput}`);
  }
  for (const claim of report.openClaims) {
    if (!claim.matchesKilledAttempt) problems.push(`claim ${claim.key} (${claim.state}, ${claim.claimedBy}) matches no killed attempt`);
  }
  return problems;
}

/** The actions on the same route with the same body, more than once: as `actionsRepeated` reports them. */
export function repeatedActions(actions: readonly { readonly route: string; readonly body: unknown }[]): ChaosReport['actionsRepeated'] {
  const counts = new Map<string, { route: string; body: string; actions: number }>();
  for (const { route, body } of actions) {
    const text = JSON.stringify(body);
    const entry = counts.get(`${route} ${text}`) ?? { route, body: text, actions: 0 };
    entry.actions++;
    counts.set(`${route} ${text}`, entry);
  }
  return [...counts.values()].filter((entry) => entry.actions > 1);
}

export function printReport(report: ChaosReport, log: (line: string) => void): void {
  log(`Chaos${report.reconcile ? ' (reconcile on)' : ''}: ${report.activities} activities in ${report.workflows} workflows, ` +
    `${report.seconds.toFixed(0)} s, ${report.kills} SIGKILLs, ${report.postgresRestarts} of ${report.postgresRestartsWanted} Postgres restart(s)`);
  log(`Vendor: ${report.keysActedOnce} keys acted on once, ${report.keysActedTwice.length} more than once` +
    ` (${report.vendorReplays} repeats answered from the vendor's own idempotency store)`);
  for (const { key, actions } of report.keysActedTwice) log(`  ${key}: ${actions} actions`);
  log(`Requests acted on more than once, whatever their keys: ${report.actionsRepeated.length}`);
  log(`Sent again without vendorDedup: ${report.keysSentTwice.length} keys (each a second call a vendor without idempotency keys would act on)`);
  for (const { key, route, requests } of report.keysSentTwice) log(`  ${key}: ${requests} requests to ${route}`);
  log(`Workflows: ${Object.entries(report.outcomes).map(([outcome, count]) => `${outcome} ${count}`).join(', ')}`);
  if (report.reconcile) {
    const answers = Object.entries(report.reconciliations).map(([answer, count]) => `${answer} ${count}`).join(', ');
    log(`Reconciliations with the vendor: ${answers || 'none'}`);
  }
  log(`Worker processes that exited on their own: ${report.unexpectedExits.length}`);
  const matched = report.openClaims.filter((claim) => claim.matchesKilledAttempt).length;
  log(`Claims without an outcome: ${report.openClaims.length}, of which ${matched} held by a killed attempt`);
  for (const claim of report.openClaims.filter((c) => !c.matchesKilledAttempt)) log(`  unmatched: ${claim.key} ${claim.state} ${claim.claimedBy}`);
  const problems = problemsIn(report);
  log(problems.length === 0 ? 'Every key at most once; every workflow completed or refused by name.' : `PROBLEMS:\n  ${problems.join('\n  ')}`);
}
