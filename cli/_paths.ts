/**
 * Paths as the user typed them: relative to where they stood, which
 * `deno task` does not keep as the working directory.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { parseTierSpec, type TierSpec } from "../core/config.ts";
import { splitList } from "../core/list.ts";
import { ConfigError, InputError } from "../core/errors.ts";

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

/**
 * Splits `--tiers` text into tier specs, directories resolved from where the
 * user stands; an empty item is refused.
 */
export function parseTierList(text: string, field = "tiers"): TierSpec[] {
  return splitList(field, text, "e.g. memory:,file:/mnt/nvme").map((t) => {
    const spec = parseTierSpec(t);
    return spec.kind === "s3" || spec.kind === "null"
      ? spec
      : { ...spec, path: resolvePath(spec.path) };
  });
}

/**
 * Checks that `dir`, given as `--flag` (or, with `InputError`, as an
 * environment variable), is an existing directory, before anything starts.
 *
 * @throws {ConfigError} naming the flag and what is wrong.
 */
export function checkDirectory(flag: string, dir: string, fromEnv = false): void {
  const refuse = (problem: string) => {
    throw fromEnv ? new InputError(flag, problem) : new ConfigError(flag, problem);
  };
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(dir);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) {
      return refuse(`${dir} does not exist: create it or name an existing directory`);
    }
    return refuse(`${dir} cannot be read (${(e as Error).name})`);
  }
  if (!info.isDirectory) refuse(`${dir} is not a directory: name a directory to work in`);
}
