/**
 * The network between the primary and its standby: a TCP relay that holds
 * every chunk `delayMs` before passing it on, in each direction, as a link to
 * another region does. On localhost the standby would trail the primary by well
 * under a millisecond, and an asynchronous standby would almost never miss a
 * commit; far away (or on a busy disk) it trails by tens or hundreds of
 * milliseconds, and that is the window a failover to it loses. The relay stands for the primary host's side of the
 * link: when that host dies (`sever`), what it had not yet delivered dies too.
 */
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

export class ReplicationLink {
  private readonly sockets = new Set<Socket>();
  private readonly pending = new Set<NodeJS.Timeout>();
  private server: Server | undefined;
  private severed = false;

  constructor(
    private readonly primaryPort: number,
    readonly delayMs: number,
  ) {}

  /** Listens on a free port, which the standby's primary_conninfo names. */
  async start(): Promise<number> {
    this.server = createServer((standby) => {
      if (this.severed) return void standby.destroy();
      const primary = connect(this.primaryPort, '127.0.0.1');
      this.relay(standby, primary);
      this.relay(primary, standby);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  /** The primary's host is gone: bytes still on it are lost, its connections end, none are made again. */
  sever(): void {
    this.severed = true;
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.sever();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private relay(from: Socket, to: Socket): void {
    this.sockets.add(from);
    from.on('error', () => undefined);
    from.on('close', () => {
      this.sockets.delete(from);
      // Equal delays fire in order, so the close follows the last chunk, as on a real link.
      this.later(() => to.destroy());
    });
    from.on('data', (chunk: Buffer) => this.later(() => void (to.destroyed || to.write(chunk))));
  }

  private later(deliver: () => void): void {
    if (this.severed) return;
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      deliver();
    }, this.delayMs);
    this.pending.add(timer);
  }
}
