/**
 * A TCP proxy in front of Postgres (or any TCP service) that a test can cut, reset, stall or hold,
 * to take one process's connections away while the process itself stays alive. While stalled it
 * counts what the process sends and never delivers (`droppedFromClient`), so a harness can tell,
 * from outside, that the process has just tried to write (a record, a reply to Temporal). While
 * held it keeps what either side sends and delivers it, in order, at `heal()`: a partition that
 * TCP rides out, its segments retransmitted once the network is back.
 */
import { EventEmitter } from 'node:events';
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export class TcpProxy extends EventEmitter<{ dropped: [number]; sent: [number] }> {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private severed = false;
  private resetting = false;
  private stalled = false;
  private holding = false;
  /** What either side sent while held, in order, for `heal()` to deliver: bytes, and a close (`null`) after them. */
  private readonly held: { readonly to: Socket; readonly chunk: Buffer | null }[] = [];
  private dropped = 0;
  private sent = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    super();
  }

  async start(): Promise<number> {
    this.server = createServer((client) => {
      if (this.resetting) return void client.resetAndDestroy();
      if (this.severed) return void client.destroy();
      const upstream = connect(this.targetPort, this.targetHost);
      for (const [from, to] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.sockets.add(from);
        from.on('close', () => this.sockets.delete(from));
        from.on('error', () => undefined);
        from.on('data', (chunk: Buffer) => {
          // Bytes that arrive while stalled are dropped, as on a half-open connection after a failover.
          if (this.stalled) return;
          if (this.holding) return void this.held.push({ to, chunk });
          to.write(chunk);
        });
      }
      client.on('data', () => this.countFromClient());
      // While held, a close reaches the other side only at the heal, after what was sent before it (as a FIN does).
      client.on('close', () => (this.holding ? this.held.push({ to: upstream, chunk: null }) : upstream.destroy()));
      upstream.on('close', () => (this.holding ? this.held.push({ to: client, chunk: null }) : client.destroy()));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  /** Drops every connection through the proxy and refuses new ones. */
  cut(): void {
    this.severed = true;
    this.dropConnections();
  }

  /** Drops every connection, as a Postgres restart does; new ones are accepted. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Answers every new connection with a TCP reset (ECONNRESET), as a firewall or a crashed proxy may. */
  reset(): void {
    this.resetting = true;
  }

  /** Keeps connections open but carries nothing, in either direction, until `flow()`. */
  stall(): void {
    this.stalled = true;
  }

  flow(): void {
    this.stalled = false;
  }

  /** Keeps connections open and carries nothing, in either direction, until `heal()` delivers all of it. */
  hold(): void {
    this.holding = true;
  }

  /**
   * Undoes `cut()`, `reset()`, `stall()` and `hold()`: new connections are accepted and carried again,
   * and what was held is delivered first, in order, to the connections still open (a partition healed).
   */
  heal(): void {
    this.severed = false;
    this.resetting = false;
    this.stalled = false;
    for (const { to, chunk } of this.held.splice(0)) {
      if (to.destroyed) continue;
      if (chunk) to.write(chunk);
      else to.end();
    }
    this.holding = false;
  }

  /** Chunks the client sent that were dropped while stalled. */
  get droppedFromClient(): number {
    return this.dropped;
  }

  /** Chunks the client sent that went through. */
  get sentFromClient(): number {
    return this.sent;
  }

  private countFromClient(): void {
    if (this.stalled) this.emit('dropped', ++this.dropped);
    else this.emit('sent', ++this.sent);
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
