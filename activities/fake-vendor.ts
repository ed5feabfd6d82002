/**
 * A local stand-in for a payments / telephony vendor: an HTTP server that
 * performs "actions" (charges, calls) and counts every request it receives,
 * so tests and the demo can check how many times a write really went out.
 * Faults are scripted per route: fail before performing, or perform and hang.
 */
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface VendorAction {
  readonly route: string;
  readonly id: string;
  readonly body: unknown;
  readonly at: Date;
}

type Fault = 'unavailable' | 'hang-after-performing';

export class FakeVendor extends EventEmitter<{ performed: [VendorAction]; request: [string] }> {
  /** Every request received, per route, whatever became of it. */
  readonly requests = new Map<string, number>();
  /** Actions actually performed: a charge made, a call placed. */
  readonly actions: VendorAction[] = [];
  private readonly faults = new Map<string, Fault[]>();
  private readonly hanging = new Set<ServerResponse>();
  private server: Server | undefined;
  private nextId = 1;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this.url;
  }

  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error('FakeVendor is not started.');
    return `http://127.0.0.1:${address.port}`;
  }

  /** The next requests to `route` get these faults, one per request, in order. */
  script(route: string, ...faults: Fault[]): void {
    this.faults.set(route, [...(this.faults.get(route) ?? []), ...faults]);
  }

  actionsOn(route: string): VendorAction[] {
    return this.actions.filter((action) => action.route === route);
  }

  requestsTo(route: string): number {
    return this.requests.get(route) ?? 0;
  }

  /** Resolves with the next action performed on `route`. */
  nextAction(route: string): Promise<VendorAction> {
    return new Promise((resolve) => {
      const onAction = (action: VendorAction) => {
        if (action.route !== route) return;
        this.off('performed', onAction);
        resolve(action);
      };
      this.on('performed', onAction);
    });
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const route = `${req.method} ${req.url}`;
    this.requests.set(route, this.requestsTo(route) + 1);
    this.emit('request', route);
    const body = await readJson(req);
    const fault = this.faults.get(route)?.shift();
    if (fault === 'unavailable') return reply(res, 503, { error: 'temporarily unavailable; nothing was done' });
    const action: VendorAction = { route, id: `act_${this.nextId++}`, body, at: new Date() };
    this.actions.push(action);
    this.emit('performed', action);
    if (fault === 'hang-after-performing') {
      this.hanging.add(res); // the action happened; the caller never hears back
      return;
    }
    reply(res, 200, { id: action.id, status: 'done' });
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : null;
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
