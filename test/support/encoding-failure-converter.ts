/**
 * The failure converter the README recommends with an encrypting codec: error
 * messages and stack traces travel as encoded attributes, not plain text.
 * Loaded by path (`failureConverterPath`), as the SDK requires.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
