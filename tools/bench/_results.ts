/**
 * Where the comparisons of tools/bench/ write their figures: a JSON document
 * under `results/` (or the path the user gave), announced in one line.
 *
 * @module
 */

import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `output` when given, else `results/<name>-<UTC time>.json` in the
 * repository, e.g. `results/scale-20261126T221500Z.json`.
 *
 * @example
 * ```ts
 * import { resultsPath } from "./_results.ts";
 * console.assert(/results\/scale-\d{8}T\d{6}Z\.json$/.test(resultsPath("scale")));
 * console.assert(resultsPath("scale", "/tmp/x.json") === "/tmp/x.json");
 * ```
 */
export function resultsPath(name: string, output?: string): string {
  if (output !== undefined) return output;
  const time = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "Z");
  return fileURLToPath(new URL(`../../results/${name}-${time}.json`, import.meta.url));
}

/** Writes `doc` as JSON to `path` (making its directory) and says where. */
export async function writeResults(path: string, doc: unknown): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(doc, null, 2) + "\n");
  console.log(`results: ${path}`);
}
