/**
 * Postgres `text` cannot hold U+0000 (SQLSTATE 22021), and an error message may
 * carry one. Written as the visible escape `\u0000` instead, so a note or a
 * ledger entry is stored rather than retried until the claim is left open.
 */
export function pgText(text: string): string;
export function pgText(text: string | null): string | null;
export function pgText(text: string | null): string | null {
  return text === null || !text.includes('\u0000') ? text : text.replaceAll('\u0000', '\\u0000');
}
