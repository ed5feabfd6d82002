/**
 * The workflow interceptors: register this module in `interceptors.workflowModules`
 * (IdempotencyPlugin does it for you). Workflow code, sandbox-safe.
 *
 * - At workflow start, installs the operator-decision signal and the pending query,
 *   so the query answers from the first moment and after continue-as-new.
 * - On the call `resumable()` makes after an operator's decision, attaches the refused
 *   call's key as a header, so the record decides whatever the scope or the arguments.
 * - On every activity of a cron workflow, attaches its schedule, so a `workflow`-scoped
 *   activity (which would merge the runs) can warn.
 */
import { defaultPayloadConverter, setHandler, workflowInfo } from '@temporalio/workflow';
import type {
  ActivityInput,
  LocalActivityInput,
  Next,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptorsFactory,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { CRON_SCHEDULE_HEADER, RESUME_KEY_HEADER } from '../call-headers.js';
import { decisions } from './decisions.js';
import { operatorDecisionSignal, pendingRefusalsQuery } from './definitions.js';
import { resumeContext, workflowState } from './resume-context.js';

class IdempotencyWorkflowInbound implements WorkflowInboundCallsInterceptor {
  execute(...[input, next]: Parameters<NonNullable<WorkflowInboundCallsInterceptor['execute']>>): Promise<unknown> {
    setHandler(operatorDecisionSignal, (decision) => decisions.receive(decision));
    setHandler(pendingRefusalsQuery, () => decisions.pendingRefusals());
    return next(input);
  }
}

class IdempotencyWorkflowOutbound implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
    return next({ ...input, headers: withIdempotencyHeaders(input, input.options.activityId ?? String(input.seq)) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): Promise<unknown> {
    return next({ ...input, headers: withIdempotencyHeaders(input, String(input.seq)) });
  }
}

function withIdempotencyHeaders(
  { activityType, args, headers }: ActivityInput | LocalActivityInput,
  activityId: string,
): ActivityInput['headers'] {
  const added: ActivityInput['headers'] = {};
  // Inside resumable(): every activity is noted; the refused one, scheduled again, carries its key.
  const resumedKey = resumeContext.getStore()?.schedule(activityType, activityId, args);
  if (resumedKey !== undefined) added[RESUME_KEY_HEADER] = defaultPayloadConverter.toPayload({ key: resumedKey, activityType });
  const { cronSchedule } = workflowInfo();
  if (cronSchedule) added[CRON_SCHEDULE_HEADER] = defaultPayloadConverter.toPayload(cronSchedule);
  return Object.keys(added).length === 0 ? headers : { ...headers, ...added };
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  workflowState.interceptorsInstalled = true;
  return { inbound: [new IdempotencyWorkflowInbound()], outbound: [new IdempotencyWorkflowOutbound()] };
};
