/**
 * An operator's decision killed mid-command. The charge's worker is killed before or after the
 * vendor acted (no reconciler), the workflow is refused and waits in `resumable()`; the person checks
 * the vendor and runs the real CLI (`resolve` with the vendor's receipt, or `release`), whose Postgres
 * (or Temporal) connection goes through a proxy held at a drawn moment, and is SIGKILLed there. Then
 * the person looks at the claim and finishes: the same decision again if nothing changed, else
 * `resume` to tell the workflow.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { lookUpByKey } from '../../../activities/index.js';
import type { TcpProxy } from '../../../dev/tcp-proxy.js';
import { proxyTo, temporalAddressOf } from './proxy-to.js';
import { before } from './crash-point.js';
import type { AfterCrashContext, CrashPoint } from './crash-point.js';
import { killAfterTheVendor } from './first-kill.js';
import { runCli, startCli } from './operator-cli.js';
import { between } from '../../../dev/seeded-random.js';
import { untilRefused } from './run-observations.js';

/**
 * Chunks each decision sends to Postgres, from the connection's start to its last statement, less
 * one (measured on pg 8.23 and Postgres 18, the suite's own: resolve 18, release 14, the last after
 * the workflow was signalled; Postgres 17 took one more of each, so on it the last is never held). A
 * drawn number past this means "when it connects to Temporal to signal", with the decision committed.
 * Measure again after a change of either: a number one too high draws the last chunk, which the CLI
 * does not wait on, and the run is reported as not reached.
 */
const POSTGRES_CHUNKS: Readonly<Record<string, number>> = { resolve: 17, release: 13 };
/** How long a statement whose answer is held has to run in Postgres before the kill. */
const POSTGRES_ACTS_MS = 100;

export const operatorResolve: CrashPoint = {
  id: 'operator-resolve',
  name: 'during an operator resolve or release',
  reconcile: 'off',
  waitForPerson: true,
  crash: killAfterTheVendor,
  async afterCrash(context) {
    const { handle, observations, vendor, signal, note } = context;
    if (!(await untilRefused(handle, signal))) return false;
    const [claim] = await observations.claims();
    if (!claim) return false;
    // The person checks the vendor, as the runbook says, and decides from its answer. `--force`: they
    // know the worker is gone, so they need not wait out the attempt's deadline (start-to-close + 30 s).
    const answer = await lookUpByKey(vendor.url, claim.key);
    if (answer.outcome === 'unknown') {
      note(`the vendor could not tell: ${answer.reason ?? ''}`);
      return false;
    }
    const decision =
      answer.outcome === 'happened'
        ? ['resolve', claim.key, '--result', JSON.stringify(answer.result), '--force', '--reason', 'crash-points: the vendor has it']
        : ['release', claim.key, '--force', '--reason', 'crash-points: the vendor has no such request'];
    const killed = await killMidCommand(context, decision);
    if (!killed) {
      note(`${decision[0]} was not killed mid-command`);
      return false;
    }
    const [after] = await observations.claims();
    const changed = after === undefined || after.state === 'completed';
    note(`${decision[0]} killed at ${killed}; the claim was then ${after?.state ?? 'gone'}`);
    // The killed command's last statement can still commit after that look (its backend outlives it), and the
    // workflow then goes on: the decision is then refused as the claim's state no longer allows it (exit 3 or 4),
    // and the person runs `resume`, as its message says.
    const decidedAgain = !changed && (await runCli(decision, context.cli, [3, 4])) === 0;
    if (!decidedAgain) await runCli(['resume', claim.key], context.cli);
    return true;
  },
};

/** Runs `args` with its connections held at a drawn moment, and kills it there; where it was, or null if it finished first. */
async function killMidCommand(context: AfterCrashContext, args: readonly string[]): Promise<string | null> {
  const postgres = await proxyTo(context.cli.databaseUrl);
  const temporal = await proxyTo(`grpc://${context.cli.temporalAddress}`);
  try {
    const chunks = POSTGRES_CHUNKS[args[0]!]!;
    const heldAt = between(context.random, 1, chunks + 1);
    const atTemporal = heldAt > chunks;
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
