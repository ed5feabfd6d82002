/**
 * Scopes: which executions share a key for the same activity and arguments.
 * See README "Scopes and their traps".
 */
export const SCOPES = ['workflow', 'run', 'call'] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling, in engine-neutral terms. */
export interface CallSite {
  /** Absent for an activity started on its own, outside any workflow. */
  readonly workflowId?: string | undefined;
  readonly runId?: string | undefined;
  readonly activityId: string;
}

export type ScopeMaterial =
  | { readonly scope: 'workflow'; readonly workflowId: string }
  | { readonly scope: 'run'; readonly runId: string }
  | { readonly scope: 'call'; readonly workflowId: string; readonly runId: string; readonly activityId: string }
  | { readonly scope: 'standalone'; readonly activityId: string };

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}

/** The part of the call site that a scope keys on. The scope name is included so that two scopes never collide. */
export function scopeMaterial(scope: Scope, site: CallSite): ScopeMaterial {
  if (site.workflowId === undefined || site.runId === undefined) {
    return { scope: 'standalone', activityId: site.activityId };
  }
  switch (scope) {
    case 'workflow':
      return { scope, workflowId: site.workflowId };
    case 'run':
      return { scope, runId: site.runId };
    case 'call':
      return { scope, workflowId: site.workflowId, runId: site.runId, activityId: site.activityId };
  }
}
