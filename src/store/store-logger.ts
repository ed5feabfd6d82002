/**
 * Where the store reports what it survives (a lost connection, a failed renewal).
 * A store given no logger uses the process default: the console, until a worker
 * registers the interceptors and routes it to Temporal's Runtime logger.
 */
export interface StoreLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

const consoleLogger: StoreLogger = {
  warn: (message, meta) => console.warn(message, meta ?? ''),
  error: (message, meta) => console.error(message, meta ?? ''),
};

let processDefault: StoreLogger = consoleLogger;

/** Routes stores without a logger of their own (called by the worker registration). */
export function setDefaultStoreLogger(logger: StoreLogger): void {
  processDefault = logger;
}

/** A logger that resolves the process default at each call, so a later registration still applies. */
export const defaultStoreLogger: StoreLogger = {
  warn: (message, meta) => processDefault.warn(message, meta),
  error: (message, meta) => processDefault.error(message, meta),
};
