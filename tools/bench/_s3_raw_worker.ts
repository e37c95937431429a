/**
 * {@linkcode rawLoop} in a Worker, as tierbench's jobs run: it shows what
 * running on a Worker thread costs by itself. Receives the options, posts
 * back its {@linkcode RawFigures} or `{ error }`.
 *
 * @module
 */

import { type RawFigures, rawLoop, type RawLoopOptions } from "./_s3_raw.ts";
import { workerScope } from "../../core/worker_scope.ts";

const scope = workerScope<RawLoopOptions, RawFigures | { error: string }>();

scope.onmessage = async (e: MessageEvent<RawLoopOptions>) => {
  try {
    scope.postMessage(await rawLoop(e.data));
  } catch (err) {
    scope.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  scope.close();
};
