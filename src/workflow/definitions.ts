/** The signal and query `resumable()` answers, as SDK definitions. Workflow code. */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { OPERATOR_DECISION_SIGNAL, PENDING_REFUSALS_QUERY } from '../operator-decision.js';
import type { OperatorDecision } from '../operator-decision.js';
import type { PendingRefusal } from './decisions.js';

export const operatorDecisionSignal = defineSignal<[OperatorDecision]>(OPERATOR_DECISION_SIGNAL);
export const pendingRefusalsQuery = defineQuery<PendingRefusal[]>(PENDING_REFUSALS_QUERY);
