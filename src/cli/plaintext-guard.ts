/**
 * Keeps `resolve` from storing an operator's result in plain text where the
 * workers encrypt theirs: the claim's recorded arguments show how the workers
 * encode payloads, and a result this CLI encodes without their codecs would be
 * the one plain-text record in the table (a card number, say), signed and
 * obeyed like the rest.
 */
import type { ClaimOperations } from '../store/index.js';
import type { ResultCodec } from '../worker/result-codec.js';
import { CliError, EXIT } from './errors.js';
import { terminalText } from './terminal-text.js';

export async function refusePlaintextAmongCodecs(operations: ClaimOperations, key: string, codec: ResultCodec, plaintext: boolean): Promise<void> {
  if (plaintext) return;
  const recorded = await operations.recordedArguments(key);
  // Without recorded arguments (recordArguments: false) there is nothing to tell by: README says so.
  if (!recorded) return;
  try {
    await codec.decode(recorded);
  } catch {
    const encoding = recorded.metadata?.['encoding'];
    const name = encoding ? Buffer.from(encoding).toString() : 'an unknown encoding';
    throw new CliError(
      `The workers encode payloads with codecs this CLI was not given: key ${key}'s recorded arguments are ` +
        `${terminalText(name)}. Give --worker-config (their payload converter and codecs), so the result is encoded as ` +
        'theirs are, not stored in plain text; or --plaintext if plain text is what you mean. Nothing was changed.',
      EXIT.usage,
    );
  }
}
