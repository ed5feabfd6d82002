/**
 * The refusal in the real Web UI: headless Chromium opens the refused
 * workflow's page on the dev server's UI and finds IdempotencyOrphanedClaim
 * and the key there; for a workflow waiting in resumable(), the Running
 * workflow's current details with the commands to paste. The screenshots are
 * saved under test-output/ (docs/ shows them).
 */
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { IdempotencyOrphanedClaim, OutcomeUnknownError, idempotencyInterceptors } from '../../src/index.js';
import type { RefusalDetails } from '../../src/index.js';
import { ensureChromium } from '../../dev/chromium.js';
import { useTestSchema } from '../support/schema.js';
import { uniqueName, useTemporal } from '../support/temporal.js';
import { activityFailureOf } from '../support/failures.js';
import { waitingOn } from '../support/pending-refusal.js';

const schema = useTestSchema(import.meta.filename);
const temporal = useTemporal();
const OUTPUT = fileURLToPath(new URL('../../test-output/', import.meta.url));

let browser: Browser | undefined;
let skipReason: string | undefined;
beforeAll(async () => {
  const uiUrl = inject('temporalUiUrl');
  if (!uiUrl) return void (skipReason = 'the Temporal server in use has no Web UI address (set TEMPORAL_UI_URL)');
  const chromiumFound = await ensureChromium((line) => console.log(line));
  if ('reason' in chromiumFound) return void (skipReason = chromiumFound.reason);
  browser = await chromium.launch({
    executablePath: chromiumFound.path,
    // Root in CI needs --no-sandbox; the rest keeps Chromium off the (closed) network.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 300_000);
afterAll(async () => browser?.close());

describe('the Web UI', () => {
  it('shows the refused activity with IdempotencyOrphanedClaim and its key on the workflow page', async (context) => {
    if (!browser) {
      console.log(`Skipping the Web UI test: ${skipReason}`);
      return context.skip();
    }
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('refused');
    const activities = { placeCall: async () => Promise.reject(new OutcomeUnknownError('the line dropped after dialing')) };
    const failure = await temporal.withWorker(
      { taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } },
      () => activityFailureOf(temporal.client.workflow.execute('callActivity', { taskQueue, workflowId, args: [{ activity: 'placeCall', args: [] }] })),
    );
    expect(failure.type).toBe(IdempotencyOrphanedClaim);
    const { key } = failure.details?.[0] as RefusalDetails;

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`${inject('temporalUiUrl')}/namespaces/default/workflows/${workflowId}`, { waitUntil: 'networkidle' });
    const failureType = page.getByText(IdempotencyOrphanedClaim).first();
    await failureType.waitFor({ timeout: 30_000 });
    await page.getByText(key).first().waitFor({ timeout: 30_000 });
    await failureType.scrollIntoViewIfNeeded();
    await mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: `${OUTPUT}web-ui-refusal.png`, fullPage: true });
  });

  it('shows a workflow waiting in resumable() as Running, its current details naming the key and the commands to paste', async (context) => {
    if (!browser) {
      console.log(`Skipping the Web UI test: ${skipReason}`);
      return context.skip();
    }
    const taskQueue = uniqueName('tq');
    const workflowId = uniqueName('waiting');
    const activities = { chargeCard: async () => Promise.reject(new OutcomeUnknownError('the line dropped after the charge was sent')) };
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await temporal.withWorker({ taskQueue, activities, interceptors: { activity: idempotencyInterceptors({ store: schema.store }) } }, async () => {
      const handle = await temporal.client.workflow.start('resumableCallActivity', { taskQueue, workflowId, args: [{ activity: 'chargeCard', args: [] }] });
      const { key } = await waitingOn(handle);
      // A running workflow's page keeps polling: the network is never idle.
      await page.goto(`${inject('temporalUiUrl')}/namespaces/default/workflows/${workflowId}`, { waitUntil: 'domcontentloaded' });
      await page.getByText('Running').first().waitFor({ timeout: 30_000 });
      // The workflow's current details: the UI shows them under User Metadata.
      await page.getByText('User Metadata').first().click();
      // Rendered as Markdown in a sandboxed frame: the commands are code there, key and all.
      const details = page.frameLocator('iframe').first().getByText(`npx temporal-idempotency release ${key}`).first();
      await details.waitFor({ state: 'visible', timeout: 30_000 });
      await mkdir(OUTPUT, { recursive: true });
      await page.screenshot({ path: `${OUTPUT}web-ui-waiting.png`, fullPage: false });
      await handle.terminate('screenshot taken');
    });
  });
});
