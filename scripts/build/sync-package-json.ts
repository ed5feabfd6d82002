/**
 * Keeps package.json's entry fields equal to what ENTRIES derives. Rewrites
 * them when they differ (adding an entry is then a one-line change plus a
 * build) and says so, so the change is seen and committed; CI fails on a
 * package.json left out of sync.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { resolve } from 'node:path';
import type { Entry } from './entries.js';
import { derivedFields } from './package-fields.js';

export async function syncPackageJson(root: string, entries: readonly Entry[]): Promise<boolean> {
  const path = resolve(root, 'package.json');
  const manifest = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const derived = derivedFields(entries);
  const stale = Object.entries(derived).filter(([field, value]) => !isDeepStrictEqual(manifest[field], value));
  if (stale.length === 0) return false;
  for (const [field, value] of stale) manifest[field] = value;
  await writeFile(path, `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`package.json: rewrote ${stale.map(([field]) => field).join(', ')} from scripts/build/entries.ts; commit it.`);
  return true;
}
