/** Prints each step of the consumer tests with the time it took, so slow installs show up in CI logs. */
export async function step<T>(fixture: string, name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  const seconds = () => ((Date.now() - started) / 1000).toFixed(1);
  try {
    const result = await work();
    console.log(`[${fixture}] ${name}: ok (${seconds()} s)`);
    return result;
  } catch (error) {
    console.log(`[${fixture}] ${name}: FAILED (${seconds()} s)`);
    throw error;
  }
}
