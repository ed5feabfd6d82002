/** An error as one line for messages and notes: `TypeError: cannot read orderId`. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message || '(no message)'}`;
  return String(error);
}
