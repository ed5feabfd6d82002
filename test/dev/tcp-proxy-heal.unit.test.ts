/**
 * A partition heals: after `cut()` (connections dropped, new ones refused), `stall()` (nothing
 * carried, dropped) or `hold()` (nothing carried yet), `heal()` lets new connections through and
 * carries bytes again, delivering what was held first. A local echo server, no services.
 */
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '../../dev/tcp-proxy.js';

let echo: Server;
let proxy: TcpProxy;
let port: number;

beforeAll(async () => {
  echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  proxy = new TcpProxy('127.0.0.1', (echo.address() as AddressInfo).port);
  port = await proxy.start();
});
afterAll(async () => {
  await proxy.stop();
  await new Promise((resolve) => echo.close(resolve));
});

/** Sends `text` through the proxy; what came back within `ms` (empty when nothing did, or the connection closed). */
async function roundTrip(text: string, ms = 300): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let heard = '';
  socket.on('data', (chunk: Buffer) => (heard += chunk.toString()));
  await once(socket, 'connect');
  socket.write(text);
  await new Promise((resolve) => setTimeout(resolve, ms));
  socket.destroy();
  return heard;
}

describe('a proxy partition, healed', () => {
  it('carries again after a cut', async () => {
    expect(await roundTrip('before')).toBe('before');
    proxy.cut();
    expect(await roundTrip('during')).toBe('');
    proxy.heal();
    expect(await roundTrip('after')).toBe('after');
  });

  it('carries again after a stall, on new connections', async () => {
    proxy.stall();
    expect(await roundTrip('during')).toBe('');
    proxy.heal();
    expect(await roundTrip('after')).toBe('after');
  });

  it('delivers what was sent while held, in order, on the same connection, once healed', async () => {
    const socket = connect(port, '127.0.0.1');
    let heard = '';
    socket.on('data', (chunk: Buffer) => (heard += chunk.toString()));
    await once(socket, 'connect');
    proxy.hold();
    socket.write('one,');
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write('two');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(heard).toBe('');
    proxy.heal();
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.write(',three');
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    expect(heard).toBe('one,two,three');
  });

  it('delivers what a connection sent while held before telling the other side it closed', async () => {
    const received: string[] = [];
    const sink = createServer((socket) => {
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => received.push(`${text}|end`));
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    const toSink = new TcpProxy('127.0.0.1', (sink.address() as AddressInfo).port);
    const sinkPort = await toSink.start();
    const socket = connect(sinkPort, '127.0.0.1');
    await once(socket, 'connect');
    toSink.hold();
    socket.write('late statement');
    socket.destroy(); // the sender gave up on it, as a client does after its own timeout
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received).toEqual([]);
    toSink.heal();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(received).toEqual(['late statement|end']);
    await toSink.stop();
    await new Promise((resolve) => sink.close(resolve));
  });
});
