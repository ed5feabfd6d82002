/**
 * `ledger`: the calls that went out, newest first, and what the ledger cannot
 * say. A worker without the audit ledger (`audit: true`) writes no entry, so
 * for its claims an empty answer does not mean "no call went out": `ledger`
 * says so, and exits 7, whenever a claim asked about was made without it.
 */
import type { ClaimOperations, LedgerFilter } from '../store/index.js';
import { EXIT } from './errors.js';
import { ledgerRow, mapPages, printRowPages } from './output.js';
import type { Row } from './output.js';

const LEDGER_COLUMNS = ['key', 'activity_type', 'workflow_id', 'attempt', 'worker', 'started_at', 'finished_at', 'outcome'];

export async function ledger(operations: ClaimOperations, filter: LedgerFilter, json: boolean): Promise<number> {
  let printed = 0;
  await printRowPages(counted(mapPages(operations.ledgerPages(filter), ledgerRow), (rows) => (printed += rows)), LEDGER_COLUMNS, json);
  const { claims, unaudited } = await operations.ledgerCoverage(filter);
  const scope = filter.key !== undefined ? `for key ${filter.key}` : filter.workflowId !== undefined ? `of workflow ${filter.workflowId}` : 'in the table';
  if (unaudited > 0) {
    console.error(
      `${unaudited} of the ${claims} claim(s) ${scope} were made by workers without the audit ledger (idempotencyInterceptors ` +
        "({ audit: true })): the ledger cannot say whether their calls went out. Check the vendor; do not read a missing " +
        'entry as "not sent".',
    );
    return EXIT.ledgerSilent;
  }
  if (claims === 0 && printed === 0 && (filter.key !== undefined || filter.workflowId !== undefined)) {
    console.error(
      `No ledger entry and no claim ${scope}: nothing here says whether a call went out (its claim may have been ` +
        'released, pruned or deleted, or made on another schema). Check the vendor.',
    );
    return EXIT.ledgerSilent;
  }
  if (printed === 0 && claims > 0) {
    console.error(
      `Every claim ${scope} was made with the audit ledger on, and it has no entry: no call went out under a claim ` +
        'without an outcome (entries of completed claims may have been pruned past their retention).',
    );
  }
  return EXIT.ok;
}

async function* counted(pages: AsyncIterable<Row[]>, count: (rows: number) => void): AsyncGenerator<Row[]> {
  for await (const page of pages) {
    count(page.length);
    yield page;
  }
}
