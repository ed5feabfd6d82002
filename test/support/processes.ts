/** What a test of a process tree checks after it stopped: ports freed, processes gone, its group empty. */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';

export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process of the group must be gone (a few seconds' grace); what is left, as `ps` lists it, else ''. */
export async function processesLeftInGroup(groupId: number): Promise<string> {
  for (let waited = 0; waited < 5_000 && isRunning(-groupId); waited += 250) await new Promise((resolve) => setTimeout(resolve, 250));
  if (!isRunning(-groupId)) return '';
  const listing = execFileSync('ps', ['-e', '-o', 'pgid=,pid=,args='], { encoding: 'utf8' });
  const left = listing.split('\n').filter((line) => line.trim().split(/\s+/)[0] === String(groupId));
  return left.join('\n') || `(a process in group ${groupId} that ps does not show)`;
}
