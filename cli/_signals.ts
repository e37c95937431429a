/**
 * SIGINT and SIGTERM during a run: the first stops it (jobs end, scratch
 * files are removed, partial results written), a second only says so.
 *
 * @module
 */

/** Relays SIGINT/SIGTERM to an AbortController for as long as `body` runs. */
export async function withSignals<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let received: string | undefined;
  const handlers = (["SIGINT", "SIGTERM"] as const).map((sig) => {
    const h = () => {
      if (received) {
        console.error(`tierbench: ${sig} again: still stopping jobs and removing scratch files`);
        return;
      }
      received = sig;
      controller.abort(sig);
    };
    Deno.addSignalListener(sig, h);
    return [sig, h] as const;
  });
  try {
    return await body(controller.signal);
  } finally {
    for (const [sig, h] of handlers) Deno.removeSignalListener(sig, h);
  }
}
