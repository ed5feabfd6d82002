import { hostname } from 'node:os';

/** Names the worker process in claims, so a refusal tells an operator where to look. */
export function defaultWorkerIdentity(): string {
  return `${hostname()}/${process.pid}`;
}
