/**
 * Found in review, on what the operator reads at 3 a.m.: `show` and `list` print a claim's fields as they
 * are, and Temporal accepts any text as a workflow id (escape sequences, line breaks, bidi
 * overrides). A workflow id made from user input (`order-${reference}`) can then move the
 * cursor and rewrite the operator's screen: here it makes an `unknown` claim whose call may have
 * gone out print `state  completed` over the real line, and adds a fake `arguments_check`, so
 * the operator may release a call that happened. Printed for people, every control character
 * must be shown escaped, one field a line.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { useTestSchema } from '../support/schema.js';
import { claimRequest } from '../support/claims.js';

const schema = useTestSchema(import.meta.filename);
const HOSTILE_WORKFLOW_ID = 'order-\u001b[3A\r\u001b[2Kstate             completed\u001b[3B\r\narguments_check   matches\u202e';
const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('show and list print hostile text from the claims table escaped', () => {
  it('a workflow id with escape sequences and a line break cannot rewrite what the operator reads', async () => {
    const { claim } = await schema.store.begin(claimRequest({ workflowId: HOSTILE_WORKFLOW_ID }), 60_000);
    await schema.store.markUnknown(claim, { summary: 'timeout after the request went out', detail: null });
    await schema.store.addWaiter({ key: claim.key, namespace: 'default', workflowId: HOSTILE_WORKFLOW_ID, runId: 'run-1', activityType: 'chargeCard' });

    const show = await runCli(['show', claim.key, '--schema', schema.name]);
    expect(show.code).toBe(0);
    expect(show.stdout).not.toMatch(CONTROLS);
    expect(show.stdout.split('\n').filter((line) => /^arguments_check\b/.test(line))).toHaveLength(1);

    const list = await runCli(['list', '--schema', schema.name]);
    expect(list.code).toBe(0);
    expect(list.stdout).not.toMatch(CONTROLS);
    expect(list.stdout.trimEnd().split('\n')).toHaveLength(2); // the header and the one claim
  });
});
