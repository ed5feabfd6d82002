/**
 * `IdempotencyPlugin`: the idiomatic registration, through the worker's `plugins`
 * option (in the SDK since 1.13.2, still marked experimental; so in every
 * version of this package's peer range, which starts at 1.20.1).
 * It puts the idempotency interceptor outermost (inside only Temporal's
 * OpenTelemetry interceptor, which traces and does nothing else), adds the workflow
 * interceptors (to the worker's bundle, or to `bundleWorkflowCode`), and checks
 * the per-activity settings against the activities the worker registers.
 *
 * ```ts
 * Worker.create({ ..., plugins: [new IdempotencyPlugin({ store })] });
 * ```
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Runtime } from '@temporalio/worker';
import type {
  ActivityInterceptorsFactory,
  BundleOptions,
  BundlerPlugin,
  ReplayWorkerOptions,
  Worker,
  WorkerOptions,
  WorkerPlugin,
} from '@temporalio/worker';
import { IdempotencyConfigError } from '../errors.js';
import { nearestName } from './options.js';
import type { AnyActivity, IdempotencyOptions } from './options.js';
import { idempotencyInterceptors } from './registration.js';

/** The workflow interceptors module, as the bundler needs it: a file path (compiled, or the source in this repository). */
export const WORKFLOW_INTERCEPTORS_MODULE: string = (() => {
  for (const file of ['../workflow/interceptors.js', '../workflow/interceptors.ts']) {
    const path = fileURLToPath(new URL(file, import.meta.url));
    if (existsSync(path)) return path;
  }
  return fileURLToPath(new URL('../workflow/interceptors.js', import.meta.url));
})();

export class IdempotencyPlugin<Activities extends object = Record<string, AnyActivity>> implements WorkerPlugin, BundlerPlugin {
  readonly name = 'temporal-idempotency';
  private readonly activityInterceptors: ActivityInterceptorsFactory[];
  /** The activity interceptors of Temporal's OpenTelemetry plugins configured beside this one: they start the activity's span. */
  private readonly tracingInterceptors = new WeakSet<ActivityInterceptorsFactory>();

  /** Validates the options now, like `idempotencyInterceptors()`, so a mistake fails where the worker is built. */
  constructor(private readonly options: IdempotencyOptions<Activities>) {
    this.activityInterceptors = idempotencyInterceptors(options);
  }

  configureWorker(options: WorkerOptions): WorkerOptions {
    checkActivityNames(this.options, options.activities);
    for (const factory of tracingInterceptorsOf(options.plugins ?? [])) this.tracingInterceptors.add(factory);
    const interceptors = options.interceptors ?? {};
    const activity = [...(interceptors.activity ?? [])];
    putOutermost(activity, this.activityInterceptors, this.tracingInterceptors);
    return {
      ...options,
      interceptors: {
        ...interceptors,
        activity,
        // With a prebuilt bundle the SDK ignores workflowModules (and warns): bundle with the plugin instead.
        ...(options.workflowBundle ? {} : { workflowModules: withModule(interceptors.workflowModules) }),
      },
    };
  }

  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const interceptors = options.interceptors ?? {};
    return { ...options, interceptors: { ...interceptors, workflowModules: withModule(interceptors.workflowModules) } };
  }

  configureBundler(options: BundleOptions): BundleOptions {
    return { ...options, workflowInterceptorModules: withModule(options.workflowInterceptorModules) };
  }

  runWorker(worker: Worker, next: (worker: Worker) => Promise<void>): Promise<void> {
    putOutermost(worker.options.interceptors.activity, this.activityInterceptors, this.tracingInterceptors);
    return next(worker);
  }
}

/**
 * First in the list is the outermost: idempotency sees every call before anything else acts on it.
 * Only tracing comes before it: its span must enclose ours, so the claim, a wait or a refusal shows
 * under the activity's span, and a replayed attempt has one at all.
 *
 * A plugin configured after this one may have put its own activity interceptor in front. The worker
 * reads this very array for every activity it starts, so moving ours back to the front, before the
 * worker runs, keeps idempotency outermost whatever the plugins' order.
 */
function putOutermost(
  activity: ActivityInterceptorsFactory[],
  ours: readonly ActivityInterceptorsFactory[],
  tracingInterceptors: WeakSet<ActivityInterceptorsFactory>,
): void {
  const tracing = activity.filter((factory) => tracingInterceptors.has(factory));
  const others = activity.filter((factory) => !ours.includes(factory) && !tracing.includes(factory));
  activity.splice(0, activity.length, ...tracing, ...ours, ...others);
}

const OPENTELEMETRY_PLUGIN = 'OpenTelemetryPlugin';

/**
 * `@temporalio/interceptors-opentelemetry`'s plugin adds its own factories to whatever it is given:
 * asked to configure an empty worker, it names them (a pure function of its options in every release).
 * Should a release stop answering so, tracing loses its nesting, never the worker its guard: ours stays first.
 */
function tracingInterceptorsOf(plugins: readonly WorkerPlugin[]): ActivityInterceptorsFactory[] {
  return plugins
    .filter((plugin) => plugin.name === OPENTELEMETRY_PLUGIN && plugin.configureWorker)
    .flatMap((plugin) => {
      try {
        const configured = plugin.configureWorker!({ taskQueue: 'temporal-idempotency-probe', interceptors: {} });
        if (!(configured instanceof Promise)) return configured.interceptors?.activity ?? [];
        // Too late to order by now; only kept from becoming an unhandled rejection.
        configured.catch(() => undefined);
      } catch {
        // Reported below, like an answer we cannot use.
      }
      Runtime.instance().logger.warn(
        `Idempotency: could not find the activity interceptor of ${OPENTELEMETRY_PLUGIN}; idempotency stays outermost, ` +
          "so its spans will not be under the activity's span. Register both by hand (see the README, Traces).",
      );
      return [];
    });
}

function withModule(modules: readonly string[] | undefined): string[] {
  const list = [...(modules ?? [])];
  return list.includes(WORKFLOW_INTERCEPTORS_MODULE) ? list : [...list, WORKFLOW_INTERCEPTORS_MODULE];
}

/** A setting for an activity the worker does not register is a mistake: usually a misspelling. */
function checkActivityNames(options: IdempotencyOptions<object>, activities: WorkerOptions['activities']): void {
  if (!activities) return;
  const registered = Object.keys(activities);
  for (const name of Object.keys(options.activities ?? {})) {
    if (registered.includes(name)) continue;
    const near = nearestName(name, registered);
    throw new IdempotencyConfigError(
      `activities.${name}`,
      `no activity ${name} is registered on this worker${near ? `; did you mean ${near}?` : ''} ` +
        `(registered: ${registered.join(', ') || 'none'}).`,
    );
  }
}
