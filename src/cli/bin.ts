#!/usr/bin/env node
/** The `temporal-idempotency` executable. */
import { failureOf, main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    const { code, message } = failureOf(error);
    console.error(message);
    process.exitCode = code;
  },
);
