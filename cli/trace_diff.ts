/**
 * `tierbench trace diff TRACE --workload zero-infinity --model-tensors M
 * --deepspeed-config C`: a recording of DeepSpeed beside zero-infinity's op
 * stream for the same model and config, exported as a trace, step by step.
 * Exit 1 when a statistic is beyond tolerance (trace/swap_diff.ts says
 * which are judged and how).
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import Table from "cli-table3";
import { ConfigError } from "../core/errors.ts";
import { TraceReader } from "../trace/reader.ts";
import { type DiffRow, diffSteps, SwapDigest } from "../trace/swap_diff.ts";
import { TraceWriter } from "../trace/writer.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { checkedLayout, zeroInfinity, zeroInfinitySettings } from "../workloads/zero_infinity.ts";
import { zeroInfinityTrace } from "../workloads/zero_infinity_trace.ts";
import { EXIT_FAILED } from "./_exit.ts";
import {
  type DeepSpeedInputs,
  optionsWithDeepSpeed,
  readDeepSpeedInputs,
  setupWithDeepSpeed,
} from "./_deepspeed.ts";
import { parseInteger } from "./_options.ts";
import { resolvePath } from "./_paths.ts";

/** `--tolerance`: a percentage (`1%`, `0.5%`) or a fraction (`0.01`). */
function parseTolerance(text: string): number {
  const pct = text.trim().endsWith("%");
  const n = Number(pct ? text.trim().slice(0, -1) : text);
  const f = pct ? n / 100 : n;
  if (!Number.isFinite(f) || f < 0 || f >= 1) {
    throw new ConfigError("tolerance", `"${text}" is not a share in [0, 1)`, "e.g. 1%, 0.5%, 0.02");
  }
  return f;
}

/** The ranks whose swap folders a digest saw (`optimizer/rank3/…` → 3). */
function ranksOf(digest: SwapDigest): number {
  let most = 0;
  for (const s of digest.steps.values()) {
    for (const st of s.states.values()) {
      for (const f of st.files) {
        const m = /(?:^|\/)rank(\d+)\//.exec(f);
        if (m) most = Math.max(most, Number(m[1]) + 1);
      }
    }
  }
  return Math.max(1, most);
}

/** `trace diff`. */
export function traceDiffCommand() {
  return new Command("diff")
    .description(
      "a recording of DeepSpeed beside zero-infinity's op stream for the same model and config, " +
        "step by step; exit 1 when a statistic is beyond tolerance",
    )
    .argument("<trace>", "a trace of a DeepSpeed run with STEP markers (trace import strace)")
    .requiredOption("--workload <name>", "the generator to compare with: zero-infinity")
    .requiredOption(
      "--model-tensors <file>",
      "the model's parameters (name, shape) in registration order, JSON",
    )
    .requiredOption("--deepspeed-config <file>", "the DeepSpeed config the recording ran with")
    .option("--tolerance <share>", "bytes per state and phase may differ by this much", "1%")
    .option("--steps <n>", "compare the first n steps (default: every step recorded)")
    .option("--export <trace>", "also write the generator's op stream as a trace here")
    .action(async (trace, o) => {
      if (o.workload !== "zero-infinity") {
        throw new ConfigError("workload", `"${o.workload}": trace diff compares zero-infinity`);
      }
      const tolerance = parseTolerance(o.tolerance);
      const inputs = await readDeepSpeedInputs("zero-infinity", o);
      // with gradient accumulation a marked step is a micro-step
      const micro = inputs.config!.gradientAccumulationSteps ?? 1;
      const recorded = new SwapDigest(undefined, micro);
      const reader = await TraceReader.open(resolvePath(trace));
      for await (const batch of reader.batches()) for (const e of batch) recorded.add(e);
      const steps = stepsToCompare(recorded, trace, o.steps, micro);
      const model = await modelDigest(o, inputs, recorded, steps.at(-1)!);
      const rows = diffSteps(recorded.steps, model, {
        bytesTolerance: tolerance,
        steps,
        modelTimed: false,
      });
      console.log(formatDiff(rows, trace));
      const bad = rows.filter((r) => r.ok === false).length;
      const judged = rows.filter((r) => r.ok !== undefined).length;
      console.log(
        `trace diff: ${bad} of ${judged} statistics beyond tolerance (bytes ±${+(tolerance * 100)
          .toFixed(3)} %, the rest exact); ${rows.length - judged} shown, not judged`,
      );
      if (bad > 0) Deno.exit(EXIT_FAILED);
    });
}

/** The steps to compare: 1 … n, each recorded. */
function stepsToCompare(
  recorded: SwapDigest,
  trace: string,
  steps: string | undefined,
  micro: number,
): number[] {
  if (recorded.markers === 0) {
    throw new ConfigError(
      "trace",
      `${trace}: no STEP markers (write "TBMARK STEP n forward|backward|optimizer-step" as kit/train_tiny.py does)`,
    );
  }
  // a step is complete when its last micro-step was marked
  let n = Math.floor(recorded.markedSteps / micro);
  if (steps !== undefined) {
    const k = parseInteger("steps", steps, 1);
    if (k > n) throw new ConfigError("steps", `${k}: ${trace} has ${n} steps`);
    n = k;
  }
  if (n === 0) {
    throw new ConfigError("trace", `${trace}: no swap I/O under zero_stage_3/ in any step`);
  }
  return Array.from({ length: n }, (_, i) => i + 1);
}

/** The generator's steps 1 … `last` for the recording's model, config and ranks, digested. */
async function modelDigest(
  o: { export?: string | undefined },
  inputs: DeepSpeedInputs,
  recorded: SwapDigest,
  last: number,
): Promise<SwapDigest["steps"]> {
  const config = inputs.config!;
  const ranks = ranksOf(recorded);
  const given = () => undefined;
  const setup = resolveSetup(setupWithDeepSpeed(
    {
      ranksPerNode: ranks,
      scale: 1,
      iterations: last,
      warmup: 0,
    },
    inputs,
    given,
  ));
  const options = optionsWithDeepSpeed({}, setup, inputs, given);
  const settings = zeroInfinitySettings(options);
  const program = zeroInfinity.build(setup, { local: ["local"] }, options);
  const events = zeroInfinityTrace({
    program,
    setup,
    settings,
    layout: checkedLayout(setup, settings),
    nvme: { optimizer: config.nvmePath, param: config.offloadParam?.nvmePath ?? config.nvmePath },
    local: "local",
  });
  const digest = new SwapDigest();
  const writer = o.export === undefined ? undefined : await TraceWriter.create(
    resolvePath(o.export),
    { source: { kind: "generator", tool: "tierbench zero-infinity" }, origin: "" },
    "export",
  );
  try {
    for (const e of events) {
      digest.add(e);
      await writer?.write(e);
    }
    await writer?.close();
  } catch (e) {
    await writer?.abort();
    throw e;
  }
  return digest.steps;
}

/** A count of bytes as the table shows it: exact, and in MiB beside. */
function bytesText(b: string): string {
  const n = Number(b);
  return n >= 1 << 20 ? `${b} (${(n / 2 ** 20).toFixed(1)} MiB)` : b;
}

/**
 * The diff as a table per step: a line per state and direction (bytes,
 * requests, request sizes, files), per phase, and per structure; `DIFFERS:
 * what` names the statistics beyond tolerance.
 */
export function formatDiff(rows: readonly DiffRow[], trace: string): string {
  const out: string[] = [];
  for (const step of [...new Set(rows.map((r) => r.step))]) {
    const t = new Table({
      head: [`step ${step}${step === 1 ? " (first)" : ""}`, trace, "zero-infinity", ""],
      style: { head: [], border: [] },
      colWidths: [34, 44, 44, 22],
      wordWrap: true,
    });
    const mine = rows.filter((x) => x.step === step);
    for (const group of [...new Set(mine.map((r) => r.group))]) {
      const g = mine.filter((r) => r.group === group);
      const text = (side: "recorded" | "model") =>
        g.map((r) => {
          const v = r.aspect === "bytes" ? bytesText(r[side]) : r[side];
          return r.aspect === "" ? v : `${r.aspect}: ${v}`;
        }).join("\n");
      const bad = g.filter((r) => r.ok === false).map((r) => r.aspect || "differs");
      const verdict = g.every((r) => r.ok === undefined)
        ? "shown"
        : bad.length === 0
        ? "ok"
        : `DIFFERS: ${bad.join(", ")}`;
      t.push([group, text("recorded"), text("model"), verdict]);
    }
    out.push(t.toString());
  }
  return out.join("\n");
}
