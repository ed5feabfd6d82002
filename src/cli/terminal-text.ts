/**
 * Text from the claims table as a terminal may show it. Workflow ids, activity types, worker
 * names and notes can carry anything Temporal accepted (often user input): escape sequences
 * that move the cursor and rewrite what the operator reads, line breaks that add fields, bidi
 * overrides that reorder them. Each is shown as a `\uXXXX` escape instead.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function terminalText(text: string): string {
  return text.replace(UNSAFE, (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
