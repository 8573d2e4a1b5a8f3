/**
 * The drains of the agent bench's references (sdk-alone.ts, agent-alone.ts): a process that
 * makes model calls and nothing else, run by agents.ts with MODEL_URL, WARM_UP, SETTLE, CALLS
 * and AT_ONCE in its environment. It makes WARM_UP calls, SETTLE more, then CALLS, `AT_ONCE`
 * at a time, and prints as JSON the last drain's seconds, and the CPU milliseconds of the
 * first drain and of the last.
 */
export const modelUrl = process.env.MODEL_URL!;

/** Runs the drains, each call made by `call(n)` (n: the call's number within its drain, from 1). */
export async function measureAlone(call: (n: number) => Promise<void>): Promise<void> {
  const calls = Number(process.env.CALLS);
  const warmUp = Number(process.env.WARM_UP);
  const settle = Number(process.env.SETTLE ?? 0);
  const atOnce = Number(process.env.AT_ONCE);
  /** Makes `n` calls, `atOnce` at a time; its CPU milliseconds. */
  const drain = async (n: number): Promise<number> => {
    const cpuBefore = process.cpuUsage();
    let made = 0;
    await Promise.all(
      Array.from({ length: atOnce }, async () => {
        while (made < n) await call(++made);
      }),
    );
    const cpu = process.cpuUsage(cpuBefore);
    return (cpu.user + cpu.system) / 1000;
  };
  // Cold: the first calls of a fresh process, as the workers' first tasks are (agents.ts).
  const coldCpuMs = await drain(warmUp);
  await drain(settle);
  const started = performance.now();
  const cpuMs = await drain(calls);
  console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000, cpuMs, coldCpuMs }));
}
