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
    return next({ ...input, headers: withIdempotencyHeaders(input) });
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): Promise<unknown> {
    return next({ ...input, headers: withIdempotencyHeaders(input) });
  }
}

function withIdempotencyHeaders({ activityType, args, headers }: ActivityInput | LocalActivityInput): ActivityInput['headers'] {
  const added: ActivityInput['headers'] = {};
  const resume = resumeContext.getStore();
  // Only the first activity of the refused type in the resumed call is the refused action again; the
  // SDK schedules a local activity again after a long backoff with the same `args` array, so that too.
  if (resume && resume.activityType === activityType && (resume.args === undefined || resume.args === args)) {
    resume.args = args;
    added[RESUME_KEY_HEADER] = defaultPayloadConverter.toPayload({ key: resume.key, activityType });
  }
  const { cronSchedule } = workflowInfo();
  if (cronSchedule) added[CRON_SCHEDULE_HEADER] = defaultPayloadConverter.toPayload(cronSchedule);
  return Object.keys(added).length === 0 ? headers : { ...headers, ...added };
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  workflowState.interceptorsInstalled = true;
  return { inbound: [new IdempotencyWorkflowInbound()], outbound: [new IdempotencyWorkflowOutbound()] };
};
