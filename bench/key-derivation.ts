/**
 * Key derivation on large arguments: `deriveCallKeys` (canonical text, key and
 * fingerprint) against `JSON.stringify` of the same arguments, in the same
 * process, rounds alternated so drift hits both alike. Issue 15's target:
 * at most 2x for 1 MB of arguments.
 */
import { randomBytes } from 'node:crypto';
import { KeySalt, deriveCallKeys } from '../src/key/index.js';

export interface KeyDerivationResult {
  readonly shape: string;
  readonly bytes: number;
  /** Medians over the rounds, in ms. */
  readonly deriveMs: number;
  readonly stringifyMs: number;
  readonly ratio: number;
}

/** About 1 MB of JSON in each of the shapes activities send. */
export function largeArguments(): Record<string, unknown[]> {
  const lineItems = Array.from({ length: 6_500 }, (_, index) => ({
    sku: `SKU-${index.toString().padStart(6, '0')}`,
    quantity: (index % 7) + 1,
    unitPriceCents: 1_999 + index,
    description: `Replacement part ${index} for model X`,
    tags: ['spare', index % 2 ? 'fragile' : 'bulk'],
  }));
  const document = 'Lorem ipsum dolor sit amet, "consectetur" adipiscing elit.\n'.repeat(17_500);
  const wide = Object.fromEntries(Array.from({ length: 20_000 }, (_, index) => [`field_${(index * 7919) % 20_000}`, index * 1.5]));
  return {
    'an order with 6,500 line items': [{ orderId: 'ord_1', lineItems }],
    'a 1 MB document body': [{ to: 'legal@example.com', body: document }],
    'an object with 20,000 keys': [wide],
  };
}

export function benchKeyDerivation(rounds = 15): KeyDerivationResult[] {
  const input = { namespace: 'default', scopeMaterial: { scope: 'workflow', workflowId: 'wf-1' }, activityType: 'send' } as const;
  const salt = new KeySalt(randomBytes(32));
  return Object.entries(largeArguments()).map(([shape, args]) => {
    const derive: number[] = [];
    const stringify: number[] = [];
    let bytes = 0;
    for (let round = 0; round < rounds; round++) {
      let started = performance.now();
      bytes = JSON.stringify(args).length;
      stringify.push(performance.now() - started);
      started = performance.now();
      deriveCallKeys({ ...input, semanticArgs: args }, salt);
      derive.push(performance.now() - started);
    }
    const deriveMs = median(derive);
    const stringifyMs = median(stringify);
    return { shape, bytes, deriveMs, stringifyMs, ratio: deriveMs / stringifyMs };
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function printKeyDerivation(results: readonly KeyDerivationResult[]): void {
  console.log('\nKey derivation on large arguments: deriveCallKeys (canonical text, key, fingerprint) against JSON.stringify');
  for (const result of results) {
    console.log(
      `${result.shape.padEnd(32)} ${(result.bytes / 1e6).toFixed(2)} MB  derive ${result.deriveMs.toFixed(1)} ms  ` +
        `JSON.stringify ${result.stringifyMs.toFixed(1)} ms  ${result.ratio.toFixed(2)}x ${result.ratio <= 2 ? 'met' : 'missed'} (target <= 2x)`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printKeyDerivation(benchKeyDerivation());
