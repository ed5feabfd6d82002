/**
 * A TCP proxy in front of Postgres that a test can cut, to take one process's
 * database connection away while the process itself stays alive.
 */
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private severed = false;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<number> {
    this.server = createServer((client) => {
      if (this.severed) return void client.destroy();
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  /** Drops every connection through the proxy and refuses new ones. */
  cut(): void {
    this.severed = true;
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
