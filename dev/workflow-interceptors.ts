import { fileURLToPath } from 'node:url';

/**
 * The library's workflow interceptors, from source: the demo, the tests and the benchmark bundle
 * them as users do with `require.resolve('temporal-idempotency/workflow-interceptors')`.
 */
export const workflowInterceptorModules: string[] = [fileURLToPath(new URL('../src/workflow/interceptors.ts', import.meta.url))];
