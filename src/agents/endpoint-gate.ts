/** The longest an endpoint's Retry-After is honoured: a wrong header must not park every run for hours. */
export const MAX_PAUSE_MS = 60_000;

/** Why a call waited at the gate, and how long. */
export interface GateWait {
  waitedMs: number;
}

/**
 * One process's view of which model endpoints asked it to wait (429 or 503 with Retry-After).
 * Every run of the process calling a paused endpoint waits until the time it named; then one
 * run goes first (a probe) while the others wait for its answer, so an endpoint that is still
 * overloaded sees one call per pause, not one per waiting run. Other endpoints go on.
 */
export interface EndpointGate {
  /** Waits until `endpoint` may be called; rejects with the signal's reason if it aborts first. */
  enter(endpoint: string, signal: AbortSignal): Promise<GateTicket>;
}

export interface GateTicket extends GateWait {
  /** The call answered: `pauseMs` when the endpoint asked to wait again, else undefined. */
  leave(pauseMs?: number): void;
}

interface Pause {
  until: number;
  /** A probe is out (since then): the others wait for its answer. */
  probing: boolean;
  probeSince: number;
  /** Runs waiting for the pause to end or the probe to answer. */
  waiters: Set<() => void>;
}

export function createEndpointGate(now: () => number = Date.now): EndpointGate {
  const pauses = new Map<string, Pause>();

  function pause(endpoint: string, ms: number): void {
    const until = now() + Math.min(Math.max(ms, 0), MAX_PAUSE_MS);
    const current = pauses.get(endpoint);
    if (current) {
      current.until = Math.max(current.until, until);
      current.probing = false;
      wake(current);
    } else {
      pauses.set(endpoint, { until, probing: false, probeSince: 0, waiters: new Set() });
    }
  }

  function wake(p: Pause): void {
    const waiters = [...p.waiters];
    p.waiters.clear();
    for (const resume of waiters) resume();
  }

  /** Resolves when `p` changes (probe answered, pause renewed) or `ms` pass, whichever is first. */
  function wait(p: Pause, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        p.waiters.delete(done);
        signal.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        clearTimeout(timer);
        p.waiters.delete(done);
        reject(signal.reason);
      };
      const timer = setTimeout(done, ms);
      p.waiters.add(done);
      signal.addEventListener('abort', aborted, { once: true });
    });
  }

  return {
    async enter(endpoint, signal) {
      const started = now();
      let probe = false;
      let waited = false;
      for (;;) {
        signal.throwIfAborted();
        const p = pauses.get(endpoint);
        if (!p) break;
        const left = p.until - now();
        if (left > 0) {
          waited = true;
          await wait(p, left, signal);
        } else if (!p.probing || now() - p.probeSince >= MAX_PAUSE_MS) {
          // First after the pause, or after a probe that never answered: this call is the probe.
          Object.assign(p, { probing: true, probeSince: now() });
          probe = true;
          break;
        } else {
          waited = true;
          await wait(p, p.probeSince + MAX_PAUSE_MS - now(), signal);
        }
      }
      let left = false;
      return {
        waitedMs: waited ? now() - started : 0,
        leave(pauseMs) {
          if (left) return;
          left = true;
          if (pauseMs !== undefined) return pause(endpoint, pauseMs);
          if (!probe) return;
          // The endpoint answered the probe: it takes calls again.
          const p = pauses.get(endpoint);
          if (p?.probing && p.until <= now()) {
            pauses.delete(endpoint);
            wake(p);
          }
        },
      };
    },
  };
}

/**
 * How long a 429 or 503 answer asks the caller to wait, from `retry-after-ms` or `Retry-After`
 * (seconds or an HTTP date); undefined without either, or for another status.
 */
export function retryAfterMs(status: number, headers: Headers, at: number = Date.now()): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - at);
}
