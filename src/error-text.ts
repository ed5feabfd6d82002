/**
 * An error as one line for messages and notes: `TypeError: fetch failed (cause: SocketError: other side
 * closed [UND_ERR_SOCKET])`. The first cause is included: a transport's top-level error rarely says what broke.
 */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (cause: ${oneError(error.cause)})` : '';
  return `${oneError(error)}${cause}`;
}

function oneError(error: Error): string {
  const code = (error as { code?: unknown }).code;
  return `${error.name}: ${error.message || '(no message)'}${typeof code === 'string' ? ` [${code}]` : ''}`;
}
