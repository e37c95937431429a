/**
 * The global scope of a Worker module, typed without `/// <reference lib="deno.worker" />`
 * (JSR refuses triple-slash directives that change globals, and a package's users
 * would otherwise have to name that lib themselves).
 *
 * @module
 */

/** What a Worker module uses of its global scope: `In` arrives, `Out` is sent back. */
export interface WorkerScope<In, Out> {
  /** Called with each message from the thread that started the Worker. */
  onmessage: ((event: MessageEvent<In>) => void | Promise<void>) | null;
  /** Sends a message to the thread that started the Worker. */
  postMessage(message: Out): void;
  /** Ends the Worker. */
  close(): void;
}

/**
 * The running Worker's global scope as a {@linkcode WorkerScope}; only meaningful
 * inside a Worker.
 *
 * @example
 * ```ts ignore
 * const scope = workerScope<number, string>();
 * scope.onmessage = (e) => scope.postMessage(String(e.data));
 * ```
 */
export function workerScope<In, Out>(): WorkerScope<In, Out> {
  return globalThis as unknown as WorkerScope<In, Out>;
}
