/**
 * What `prune` asks Temporal before deleting records: how long each namespace
 * keeps a closed workflow's history (while it does, the workflow can be reset,
 * and a reset with `workflow` scope answers from the record), and whether a
 * workflow is still running or closed too recently. Connects as the signal does
 * (./temporal-connection.ts), with a deadline on every call.
 */
import type { Client, Connection } from '@temporalio/client';
import type { WorkflowRef } from '../store/index.js';
import { connectTemporal, loadClient } from './temporal-client.js';
import type { TemporalClientModule } from './temporal-client.js';
import { TemporalUnavailableError, loadTemporalTarget } from './temporal-connection.js';
import type { TemporalStep } from './temporal-connection.js';
import { errorMessage } from '../error-text.js';

const CALL_DEADLINE_MS = 10_000;

/** A workflow's answer: its records may still be needed, are no longer, or nobody can tell. */
export type WorkflowCheck = { readonly needed: boolean } | { readonly unchecked: string };

export interface TemporalRetention {
  /** Where and how the CLI reached Temporal, for messages: never a secret. */
  readonly description: string;
  /** The namespace of the profile (or TEMPORAL_NAMESPACE), else `default`. */
  readonly defaultNamespace: string;
  /** The namespace's workflow execution retention, in ms; throws a TemporalUnavailableError naming the namespace. */
  retentionOf(namespace: string): Promise<number>;
  /**
   * Needed while the workflow (its latest run) is running, or closed after `cutoff`: it can still be
   * reset, or continue, and call again. A workflow Temporal no longer has can do neither.
   */
  checkWorkflow(workflow: WorkflowRef, cutoff: Date): Promise<WorkflowCheck>;
  close(): Promise<void>;
}

/** Connects with the `temporal` CLI's settings; a TemporalUnavailableError says why Temporal cannot be used. */
export async function connectForRetention(): Promise<TemporalRetention | TemporalUnavailableError> {
  let step: TemporalStep = 'settings';
  try {
    const target = await loadTemporalTarget();
    step = 'client';
    const temporal = await loadClient();
    step = 'connect';
    const connection = await connectTemporal(temporal, target);
    return new TemporalReader(temporal, connection, target.description, target.namespace ?? 'default');
  } catch (error) {
    if (error instanceof TemporalUnavailableError) return error;
    // Anything else (envconfig's own dependency missing, a broken install) is still why Temporal cannot be asked.
    return new TemporalUnavailableError(errorMessage(error), step, { cause: error });
  }
}

class TemporalReader implements TemporalRetention {
  private readonly clients = new Map<string, Client>();

  constructor(
    private readonly temporal: TemporalClientModule,
    private readonly connection: Connection,
    readonly description: string,
    readonly defaultNamespace: string,
  ) {}

  async retentionOf(namespace: string): Promise<number> {
    let ttl: { seconds?: unknown; nanos?: number | null } | null | undefined;
    try {
      const response = await this.withDeadline(() => this.connection.workflowService.describeNamespace({ namespace }));
      ttl = response.config?.workflowExecutionRetentionTtl;
    } catch (error) {
      throw new TemporalUnavailableError(
        `cannot read the retention of namespace ${namespace} at ${this.description}: ${errorMessage(error)}`,
        'retention',
        { cause: error },
      );
    }
    const ms = Number(ttl?.seconds ?? NaN) * 1_000 + Number(ttl?.nanos ?? 0) / 1e6;
    if (!Number.isFinite(ms)) {
      throw new TemporalUnavailableError(`namespace ${namespace} at ${this.description} reports no workflow execution retention`, 'retention');
    }
    return ms;
  }

  async checkWorkflow(workflow: WorkflowRef, cutoff: Date): Promise<WorkflowCheck> {
    try {
      const description = await this.withDeadline(() => this.client(workflow.namespace).workflow.getHandle(workflow.workflowId).describe());
      return { needed: !description.closeTime || description.closeTime >= cutoff };
    } catch (error) {
      if (error instanceof this.temporal.WorkflowNotFoundError) return { needed: false };
      return { unchecked: errorMessage(error) };
    }
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  private client(namespace: string): Client {
    let client = this.clients.get(namespace);
    if (!client) this.clients.set(namespace, (client = new this.temporal.Client({ connection: this.connection, namespace })));
    return client;
  }

  private withDeadline<T>(call: () => Promise<T>): Promise<T> {
    return this.connection.withDeadline(Date.now() + CALL_DEADLINE_MS, call);
  }
}
