/**
 * Found in review (operator output): `release`, `resolve`, `resume` and `release-absent` print each waiting
 * workflow's id escaped (terminalText), and then the error Temporal answered with, raw. The server's
 * answer echoes the workflow id ("workflow not found for ID: <id>"), so the escape sequences the
 * id carries (Temporal accepts any text; ids are often built from user input, `order-${reference}`)
 * reach the operator's terminal after all: here the line that says the workflow is NOT running (its
 * waiter row is then forgotten) is erased and replaced with "Signalled workflow order-1: released.",
 * the line a delivered signal prints. The operator believes the workflow was told and goes on.
 * (The failure branch prints `outcome.error` and the waiter's namespace raw too.)
 *
 * Real Postgres, real Temporal dev server, the real CLI.
 */
import { describe, expect, inject, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
/** Erase the line, return to its start, print what a delivered signal prints. */
const HOSTILE_WORKFLOW_ID = 'order-\u001b[2K\rSignalled workflow order-1: released.\u001b[8m';
const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("the CLI's report of the workflows it signalled", () => {
  it("shows a hostile workflow id escaped in Temporal's own error text too", async () => {
    const { claim } = await schema.store.begin(claimRequest({ workflowId: HOSTILE_WORKFLOW_ID }), 60_000);
    await schema.store.markUnknown(claim, { summary: 'timeout after the request went out', detail: null });
    const release = await runCli(['release', claim.key, '--schema', schema.name, '--reason', 'vendor shows nothing'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
    });
    expect(release.code).toBe(0);
    // Before a fix: stderr has "Workflow order-\u001b[2K… is not running (workflow not found for ID: order-<ESC>[2K<CR>Signalled
    // workflow order-1: released.<ESC>[8m); reset or start it again …", which a terminal shows as "Signalled workflow order-1: released."
    expect(release.stderr).not.toMatch(CONTROLS);
  });
});
