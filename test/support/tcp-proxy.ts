/** The Postgres proxy the tests cut, reset or stall: it lives in dev/, beside the chaos runs that use it too. */
export { TcpProxy } from '../../dev/tcp-proxy.js';
