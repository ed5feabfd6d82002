/**
 * The campaign's workflow worker, in the harness's own process and never killed: the crashes under
 * test are of the workers that run the charges, and a workflow cached on a killed worker would wait
 * out its sticky queue's timeout before any other worker could go on with it.
 */
import { readFile } from 'node:fs/promises';
import { NativeConnection, Worker } from '@temporalio/worker';

export class WorkflowWorker {
  private constructor(
    private readonly connection: NativeConnection,
    private readonly worker: Worker,
    private readonly running: Promise<void>,
  ) {}

  static async start(temporalAddress: string, workflowBundlePath: string, taskQueue: string): Promise<WorkflowWorker> {
    const connection = await NativeConnection.connect({ address: temporalAddress });
    try {
      const worker = await Worker.create({ connection, taskQueue, workflowBundle: { code: await readFile(workflowBundlePath, 'utf8') } });
      const running = worker.run();
      running.catch(() => undefined); // heard in stop(); until then a failure must not end the harness unheard
      return new WorkflowWorker(connection, worker, running);
    } catch (error) {
      await connection.close();
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.worker.shutdown();
    await this.running;
    await this.connection.close();
  }
}
