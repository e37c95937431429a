/**
 * {@linkcode rawLoop} in a Worker, as tierbench's jobs run: it shows what
 * running on a Worker thread costs by itself. Receives the options, posts
 * back `{ bw }` or `{ error }`.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { rawLoop, type RawLoopOptions } from "./_s3_raw.ts";

self.onmessage = async (e: MessageEvent<RawLoopOptions>) => {
  try {
    self.postMessage({ bw: await rawLoop(e.data) });
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
  self.close();
};
