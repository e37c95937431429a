/**
 * `tierbench trace replay TRACE --map PREFIX=TIER,… [--speed max|1x]`: a
 * trace (or a fio iolog) run again on real tiers, recorded beside replayed.
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { parseTierSpec, type TierSpec } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { replayTrace, type TraceMap } from "../bench/trace_replay.ts";
import { addOutputOptions, timeoutOption, verifyOption } from "./_options.ts";
import { parseTimeout } from "../core/config.ts";
import { resolvePath } from "./_paths.ts";
import { reportSession } from "./_session.ts";

/**
 * `--map` text as maps: `PREFIX=TIER` pairs split at commas, each prefix
 * and tier directory resolved from where the user stands.
 *
 * @throws {ConfigError} naming the pair that is not one.
 *
 * @example
 * ```ts
 * import { parseMaps } from "./trace_replay.ts";
 * const m = parseMaps("/var/tmp/dsnvme=file:/mnt/nvme,/scratch=memory:");
 * console.assert(m.length === 2 && m[0]!.prefix === "/var/tmp/dsnvme" && m[1]!.tier.kind === "memory");
 * ```
 */
export function parseMaps(text: string): TraceMap[] {
  const maps = text.split(",").map((p) => p.trim()).filter((p) => p !== "").map((pair) => {
    const eq = pair.indexOf("=");
    if (eq <= 0) {
      throw new ConfigError(
        "map",
        `"${pair}" is not PREFIX=TIER`,
        "e.g. /var/tmp/dsnvme=file:/mnt/nvme",
      );
    }
    const prefix = resolvePath(pair.slice(0, eq)).replace(/(.)\/+$/, "$1");
    const tier: TierSpec = parseTierSpec(pair.slice(eq + 1));
    return {
      prefix,
      tier: "path" in tier && tier.kind !== "s3" ? { ...tier, path: resolvePath(tier.path) } : tier,
    };
  });
  if (maps.length === 0) throw new ConfigError("map", "names no PREFIX=TIER");
  const seen = new Set<string>();
  for (const m of maps) {
    if (seen.has(m.prefix)) throw new ConfigError("map", `${m.prefix} is mapped twice`);
    seen.add(m.prefix);
  }
  return maps as TraceMap[];
}

/** `trace replay`. */
export function traceReplayCommand() {
  const cmd = new Command("replay")
    .description("run a trace (or a fio iolog) again on the tiers, recorded beside replayed")
    .argument("<trace>", "a trace, or a fio iolog")
    .requiredOption(
      "--map <list>",
      "comma list of PREFIX=TIER: the trace's files under PREFIX go to TIER (memory:DIR, file:DIR, pfs:DIR)",
    )
    .addOption(
      new Option(
        "--speed <speed>",
        "max: each thread's ops back to back; 1x: with the recorded think time before each",
      ).choices(["max", "1x"] as const).default("max" as const),
    )
    .addOption(timeoutOption("fail the replay when one call takes longer than this"))
    .addOption(
      verifyOption(
        "writes carry a pattern fixed by file and offset; reads are checked where the thread wrote or the layout put it",
      ),
    );
  return addOutputOptions(cmd).action(async (trace, o) => {
    const maps = parseMaps(o.map);
    const timeoutMs = parseTimeout(o.timeout);
    const path = resolvePath(trace);
    await reportSession(o, async ({ runId, signal, progress }) =>
      await replayTrace({
        trace: path,
        maps,
        speed: o.speed,
        verify: o.verify,
        timeoutMs,
        signal,
        runId,
        onProgress: (p) => progress.update(p),
      }));
  });
}
