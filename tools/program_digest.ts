/**
 * Digests of the op programs every workload builds, for a fixed grid of
 * setups and options: one line per case, `workload setup options → digest
 * length`. Two trees whose lines are equal build the same programs (JSON with
 * sorted keys), so a refactoring of the generators can be checked to change
 * no op.
 *
 * ```sh
 * deno run -A tools/program_digest.ts > after.txt                       # this tree
 * deno run -A --config deno.json tools/program_digest.ts /tmp/before > before.txt   # another checkout
 * diff before.txt after.txt
 * ```
 *
 * @module
 */

import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const SETUPS = [
  { model: "7b", scale: 0.001 },
  { model: "13b", scale: 0.0005, iterations: 2, warmupIterations: 1 },
  { model: "7b", scale: 0.002, ranksPerNode: 2 },
];

const OPTIONS = [
  {},
  { pipeline: true, bufferCount: 12 },
  { swapGradients: true },
  { stride: 2 },
  { offloadOptimizer: true },
  { snapshotBlocking: "none" },
  { flushMode: "pwrite-fsync" },
  { checkpointEvery: 2 },
  { bufferCount: 7, threads: 2 },
  { distOptRatio: 2, cacheSubgroups: 1 },
  { prefetch: 2 },
  { hostCacheBytes: 2 ** 34 },
  { remoteRatio: 0.5, locks: "both" },
  { locks: "both", lockScope: "transfer", swapGradients: true },
];

const PATHS = { host: "host", local: ["local"], remote: "remote" };

/** JSON with every object's keys sorted, so that key order does not count. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v) =>
      v && typeof v === "object" && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
        : v,
  );
}

async function digest(text: string): Promise<string> {
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(hash.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

if (import.meta.main) {
  const root =
    pathToFileURL(resolve(Deno.args[0] ?? resolve(import.meta.dirname ?? ".", ".."))).href;
  const { WORKLOADS } = await import(`${root}/workloads/registry.ts`);
  const { resolveSetup } = await import(`${root}/workloads/setup.ts`);
  for (const w of WORKLOADS) {
    for (const [si, s] of SETUPS.entries()) {
      for (const o of OPTIONS) {
        let text: string;
        try {
          text = canonicalJson(w.build(resolveSetup(s), PATHS, o));
        } catch (e) {
          text = `error: ${e instanceof Error ? e.message : e}`;
        }
        console.log(`${w.name} s${si} ${JSON.stringify(o)} ${await digest(text)} ${text.length}`);
      }
    }
  }
}
