/** What workers in this test process logged at WARN and above (see runtime.ts). */
import type { LogEntry } from '@temporalio/worker';

export function loggedLines(): readonly LogEntry[] {
  return (globalThis as { __idempotencyTestLogs?: LogEntry[] }).__idempotencyTestLogs ?? [];
}

/** Log entries whose message matches, with their metadata. */
export function logsMatching(pattern: RegExp): LogEntry[] {
  return loggedLines().filter((entry) => pattern.test(entry.message));
}
