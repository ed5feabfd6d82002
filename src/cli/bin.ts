#!/usr/bin/env node
/** The `temporal-idempotency` executable. */
import { failureOf, main } from './main.js';

// `list | head` closes the pipe early: that ends the output, not with a stack trace.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    const { code, message } = failureOf(error);
    console.error(message);
    process.exitCode = code;
  },
);
