/**
 * What each call was made with, for the operator who checks the vendor. Never
 * edit after release: add a new migration instead.
 *
 * `claims.call_arguments`: the canonical text of the semantic arguments (what
 * the fingerprint is the hash of), as a payload through the worker's converter
 * and codecs, so with an encrypting codec it is as private as a result. Null
 * when the activity type does not record arguments (`recordArguments: false`)
 * or the worker's release predates this migration.
 *
 * Additive: workers that know migration 7 keep working (they leave it null).
 */
export default (schema: string): string => `
ALTER TABLE ${schema}.claims ADD COLUMN call_arguments jsonb;
`;
