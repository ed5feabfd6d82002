/** A short, stable name for this checkout, for scratch folders that two checkouts must not share. */
import { createHash } from 'node:crypto';

export function checkoutTag(root: string): string {
  return createHash('sha256').update(root).digest('hex').slice(0, 10);
}
