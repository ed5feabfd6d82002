/**
 * The health endpoint HAProxy checks for each node, the way Patroni's REST API
 * serves `GET /primary`: 200 when the node accepts writes (not in recovery) and
 * the failover manager has put it in service, 503 otherwise, including when
 * the node does not answer. So the proxy sends the workers to whichever node
 * is the primary, and their connection string never changes.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';

export class RoleCheck {
  private server: Server | undefined;
  /**
   * A promoted node is put in service by the failover manager once it has done what it does
   * before sending writes there (here: reading what the promotion kept); the first primary starts in service.
   */
  inService: boolean;

  constructor(
    private readonly connectionString: string,
    options: { readonly inService: boolean },
  ) {
    this.inService = options.inService;
  }

  async start(): Promise<number> {
    this.server = createServer((req, res) => {
      void this.acceptsWrites().then((primary) => {
        res.writeHead(primary && this.inService ? 200 : 503).end(primary ? 'primary' : 'not primary');
      });
      req.resume();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async acceptsWrites(): Promise<boolean> {
    const client = new pg.Client({ connectionString: this.connectionString, connectionTimeoutMillis: 500, query_timeout: 500 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ primary: boolean }>('SELECT NOT pg_is_in_recovery() AS primary');
      return rows[0]?.primary === true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
