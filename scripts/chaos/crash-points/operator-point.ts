/**
 * An operator's `resolve` killed mid-command. The charge's worker is killed after the vendor acted
 * (no reconciler), the workflow is refused and waits in `resumable()`; the person checks the vendor
 * and runs the real CLI, whose Postgres (or Temporal) connection goes through a proxy held at a drawn
 * moment, and is SIGKILLed there. Then the person looks (`show`) and finishes: `resolve` again if
 * nothing changed, else `resume` to tell the workflow.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { lookUpByKey } from '../../../activities/index.js';
import type { TcpProxy } from '../../../dev/tcp-proxy.js';
import { proxyTo, temporalAddressOf } from './proxy-to.js';
import { before } from './crash-point.js';
import type { AfterCrashContext, CrashPoint } from './crash-point.js';
import { vendorActed } from './attempt-points.js';
import { runCli, startCli } from './operator-cli.js';
import { between } from './seeded-random.js';
import { untilRefused } from './run-observations.js';

/**
 * Chunks a `resolve` sends to Postgres, from the connection's start to its last statement, less one:
 * 19 measured (pg 8.23, Postgres 17), the last after the workflow was signalled. A drawn number past
 * this means "when it connects to Temporal to signal", with the record committed.
 */
const RESOLVE_POSTGRES_CHUNKS = 18;
/** How long a statement whose answer is held has to run in Postgres before the kill. */
const POSTGRES_ACTS_MS = 100;

export const operatorResolve: CrashPoint = {
  id: 'operator-resolve',
  name: 'during an operator resolve',
  reconcile: 'off',
  waitForPerson: true,
  crash: vendorActed.crash,
  async afterCrash(context) {
    const { handle, observations, vendor, signal, note } = context;
    if (!(await untilRefused(handle, signal))) return false;
    const [claim] = await observations.claims();
    if (!claim) return false;
    // The person checks the vendor, as the runbook says, and decides from its answer.
    const answer = await lookUpByKey(vendor.url, claim.key);
    const decision =
      answer.outcome === 'happened'
        ? ['resolve', claim.key, '--result', JSON.stringify(answer.result), '--force', '--reason', 'crash-points: the vendor has it']
        : ['release', claim.key, '--force', '--reason', 'crash-points: the vendor has no such request'];
    const killed = await killMidCommand(context, decision);
    if (!killed) {
      note(`${decision[0]} was not killed mid-command`);
      return false;
    }
    const shown = JSON.parse(await runCli(['show', claim.key, '--json'], context.cli)) as { state: string };
    note(`${decision[0]} killed at ${killed}; the claim was then ${shown.state}`);
    await runCli(shown.state === 'completed' ? ['resume', claim.key] : decision, context.cli);
    return true;
  },
};

/** Runs `args` with its connections held at a drawn moment, and kills it there; where it was, or null if it finished first. */
async function killMidCommand(context: AfterCrashContext, args: readonly string[]): Promise<string | null> {
  const postgres = await proxyTo(context.cli.databaseUrl);
  const temporal = await proxyTo(`grpc://${context.cli.temporalAddress}`);
  try {
    const heldAt = between(context.random, 1, RESOLVE_POSTGRES_CHUNKS + 1);
    const atTemporal = heldAt > RESOLVE_POSTGRES_CHUNKS;
    const held = atTemporal ? holdFirst(temporal.proxy) : holdAt(postgres.proxy, heldAt);
    const cli = startCli(args, { ...context.cli, databaseUrl: postgres.url, temporalAddress: temporalAddressOf(temporal) });
    let finished = false;
    void cli.exited.then(() => (finished = true));
    const reached = (await before(context.signal, Promise.race([held, cli.exited]))) && !finished;
    await cli.kill();
    if (!reached) context.note(finished ? `the CLI finished first, after ${postgres.proxy.sentFromClient} chunks to Postgres` : 'the CLI was not held in time');
    return reached ? (atTemporal ? 'its Temporal connection' : `its Postgres chunk ${heldAt}`) : null;
  } finally {
    await Promise.all([postgres.proxy.stop(), temporal.proxy.stop()]);
  }
}

/** Held from the start: resolves when the first bytes are dropped. */
function holdFirst(proxy: TcpProxy): Promise<unknown> {
  proxy.stall();
  return once(proxy, 'dropped');
}

/**
 * Lets `chunk` chunks through and holds from then on: the last one reaches Postgres and runs (a
 * COMMIT commits), its answer never comes back. Resolves a moment later, for Postgres to act on it.
 */
function holdAt(proxy: TcpProxy, chunk: number): Promise<unknown> {
  return new Promise((resolve) => {
    const onSent = (count: number) => {
      if (count < chunk) return;
      proxy.stall();
      proxy.off('sent', onSent);
      resolve(sleep(POSTGRES_ACTS_MS));
    };
    proxy.on('sent', onSent);
  });
}
