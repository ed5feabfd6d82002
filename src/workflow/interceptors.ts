/**
 * The workflow interceptors: register this module in `interceptors.workflowModules`
 * (IdempotencyPlugin does it for you). Workflow code, sandbox-safe.
 *
 * - At workflow start, installs the operator-decision signal and the pending query,
 *   so the query answers from the first moment and after continue-as-new.
 * - On the calls `resumable()` makes after an operator's decision, attaches the refused
 *   call's key and whether the call sits in the refused call's place, so the record decides
 *   for that call whatever its new activity id; on every call after the first in a closure,
 *   the types called before it, so `call` scope beside other writes is refused early.
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
import { CRON_SCHEDULE_HEADER, RESUMABLE_EARLIER_HEADER, RESUME_KEY_HEADER } from '../call-headers.js';
import type { ResumableEarlier } from '../call-headers.js';
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
  // Inside resumable(): every activity is noted; on a pass after a decision, each carries the refused key.
  const resumableCall = resumeContext.getStore();
  const resumeKey = resumableCall?.schedule(activityType, activityId, args);
  if (resumeKey !== undefined) added[RESUME_KEY_HEADER] = defaultPayloadConverter.toPayload(resumeKey);
  const earlier = resumableCall?.earlierActivityTypes(activityType, args) ?? [];
  if (earlier.length > 0) {
    added[RESUMABLE_EARLIER_HEADER] = defaultPayloadConverter.toPayload({ activityTypes: earlier } satisfies ResumableEarlier);
  }
  const { cronSchedule } = workflowInfo();
  if (cronSchedule) added[CRON_SCHEDULE_HEADER] = defaultPayloadConverter.toPayload(cronSchedule);
  return Object.keys(added).length === 0 ? headers : { ...headers, ...added };
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  workflowState.interceptorsInstalled = true;
  return { inbound: [new IdempotencyWorkflowInbound()], outbound: [new IdempotencyWorkflowOutbound()] };
};
