/**
 * HAProxy, for the failover test: Debian's `haproxy` package (.ci/run installs it). Where it is
 * missing the test skips, saying why, unless REQUIRE_HAPROXY is set (CI sets it), when it fails.
 */
import { haproxyInstalled } from '../../scripts/failover/haproxy.js';

export function haproxyAvailable(): boolean {
  if (haproxyInstalled()) return true;
  if (process.env['REQUIRE_HAPROXY']) throw new Error('haproxy is not installed: apt-get install haproxy (REQUIRE_HAPROXY is set).');
  console.warn('haproxy is not installed (Debian: apt-get install -y --no-install-recommends haproxy): the failover test is skipped.');
  return false;
}
