/**
 * Reading what the interceptor counted, from the test process's Prometheus
 * endpoint (test/support/runtime.ts): what an operator's dashboard would see
 * for an in-process worker.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** The endpoint's text once `ready(body)` holds, or after about 5 s whatever it says. */
export async function scrapeMetrics(ready: (body: string) => boolean): Promise<string> {
  let body = '';
  for (let i = 0; i < 50; i++) {
    body = await (await fetch(process.env['TEST_PROMETHEUS_URL']!)).text();
    if (ready(body)) return body;
    await sleep(100);
  }
  return body;
}

/** The value of the one sample of `name` whose labels include all of `labels` (`'type="…"'`), or undefined. */
export function metricSample(text: string, name: string, labels: readonly string[]): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && labels.every((label) => candidate.includes(label)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** The sample of `name` on `taskQueue` with `labels`, waiting (about 5 s) for it to be exported. */
export async function counted(name: string, taskQueue: string, ...labels: string[]): Promise<number | undefined> {
  const wanted = [`taskQueue="${taskQueue}"`, ...labels];
  const text = await scrapeMetrics((body) => metricSample(body, name, wanted) !== undefined);
  return metricSample(text, name, wanted);
}
