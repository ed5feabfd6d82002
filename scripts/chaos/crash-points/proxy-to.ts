/** A TcpProxy in front of the service a URL names, and that URL rewritten to go through it. */
import { TcpProxy } from '../../../dev/tcp-proxy.js';

export interface ProxyTo {
  readonly proxy: TcpProxy;
  /** The URL given, through the proxy. */
  readonly url: string;
}

/** `url`: a connection string or `http://` address; a Temporal `host:port` as `grpc://host:port`. */
export async function proxyTo(url: string): Promise<ProxyTo> {
  const target = new URL(url);
  const proxy = new TcpProxy(target.hostname, Number(target.port));
  const port = await proxy.start();
  target.hostname = '127.0.0.1';
  target.port = String(port);
  return { proxy, url: target.toString().replace(/\/$/, '') };
}

/** A Temporal address (`host:port`) through `proxy`. */
export function temporalAddressOf({ url }: ProxyTo): string {
  return new URL(url).host;
}
