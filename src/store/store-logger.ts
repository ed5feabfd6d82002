/**
 * Where the store reports what it survives (a lost connection, a failed renewal).
 * A store given no logger writes to the console; a worker's Runtime logger fits
 * as is (`logger: Runtime.instance().logger`).
 */
export interface StoreLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

export const consoleStoreLogger: StoreLogger = {
  warn: (message, meta) => console.warn(message, meta ?? ''),
  error: (message, meta) => console.error(message, meta ?? ''),
};
