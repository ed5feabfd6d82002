/**
 * The package's public entry points. This list is the one place to add one:
 * the build derives `exports`, `typesVersions`, the CommonJS build and its ESM
 * wrappers from it, and the consumer tests load whatever `exports` lists.
 */
export interface Entry {
  /** The subpath users import, as in package.json `exports`. */
  readonly subpath: '.' | `./${string}`;
  /** The module under src/, without extension. */
  readonly source: string;
}

export const ENTRIES: readonly Entry[] = [
  { subpath: '.', source: 'index' },
  { subpath: './key', source: 'key/index' },
  { subpath: './workflow', source: 'workflow/index' },
  { subpath: './workflow-interceptors', source: 'workflow/interceptors' },
  { subpath: './testing', source: 'testing/index' },
];
