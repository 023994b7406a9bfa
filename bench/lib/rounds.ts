import { execSync, spawnSync } from 'node:child_process';

/**
 * The order in which `count` systems measured together take their turn in one round: shuffled anew every round
 * (mulberry32, a small, well-mixed generator, seeded with the round: the same in every run), so each follows each
 * of the others about as often and the machine's other work weighs on all of them alike. A rotation would put the
 * same system before each one in almost every round, and what ran just before matters: a server that always follows
 * another finds the shared code still in the caches.
 */
export function roundOrder(count: number, round: number): number[] {
  let state = (round * 0x9e3779b9) >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const order = Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * Thousands of device sockets on both ends need more descriptors than a shell usually grants: below `needed`,
 * the benchmark runs itself again under a raised limit (which its server and reader children inherit) and exits
 * with that run's status.
 */
export function raiseDescriptorLimit(needed: number): void {
  const softLimit = Number(execSync('ulimit -n', { shell: '/bin/bash' }).toString().trim()) || 0;
  if (softLimit >= needed || process.env.BENCH_REEXEC) return;
  const result = spawnSync(
    '/bin/bash',
    ['-c', `ulimit -n ${needed} 2>/dev/null || ulimit -n $(ulimit -Hn); exec "$@"`, 'bash', process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    { stdio: 'inherit', env: { ...process.env, BENCH_REEXEC: '1' } },
  );
  process.exit(result.status ?? 1);
}
