/**
 * Paths as the user typed them: relative to where they stood, which
 * `deno task` does not keep as the working directory.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { parseTierSpec, type TierSpec } from "../core/config.ts";

/** Where the user stood when they typed the command (deno task changes cwd). */
export function userCwd(): string {
  return Deno.env.get("INIT_CWD") ?? Deno.cwd();
}

/** `p` resolved from where the user stands. */
export function resolvePath(p: string): string {
  return isAbsolute(p) ? p : join(userCwd(), p);
}

/** The result file of run `runId` when `--output` is not given: results/<host>-<run id>.json. */
export function defaultOutput(runId: string): string {
  return join(userCwd(), "results", `${Deno.hostname()}-${runId}.json`);
}

/** `--output` resolved, or the default result file of run `runId`. */
export function outputPath(output: string | undefined, runId: string): string {
  return output ? resolvePath(output) : defaultOutput(runId);
}

/** Splits `--tiers` text into tier specs, directories resolved from where the user stands. */
export function parseTierList(text: string): TierSpec[] {
  return text.split(",").map((t) => t.trim()).filter((t) => t !== "").map((t) => {
    const spec = parseTierSpec(t);
    return spec.kind === "s3" || spec.kind === "null"
      ? spec
      : { ...spec, path: resolvePath(spec.path) };
  });
}
