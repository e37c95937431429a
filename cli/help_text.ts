/**
 * What every command's `--help` shows beyond its options: 2–3 examples, the
 * suffixes its durations and sizes take, and defaults printed as values
 * (`default: 4k`, not commander's quoted `default: "4k"`).
 *
 * @module
 */

import type { Command, Option } from "@commander-js/extra-typings";

/** Examples shown at the end of each command's `--help`, by command name. */
export const EXAMPLES: Readonly<Record<string, readonly string[]>> = {
  tierbench: [
    "tierbench bench --quick                      # a 30-second profile of this node",
    "tierbench run --tier file:/mnt/nvme --rw randread --bs 4k --iodepth 32 --runtime 10",
    "tierbench plan --profile results/reference/polaris-4gpu-nvme-lustre.json --model 70b",
  ],
  run: [
    "tierbench run --tier null: --rw randread --bs 4k --runtime 5       # the harness's ceiling",
    "tierbench run --tier file:/mnt/nvme --rw read --bs 1m --iodepth 8 --direct --size 1g \\\n" +
    "  --runtime 10 --ramp 1 --output read.json",
    "tierbench run --tier s3://bucket/prefix --endpoint http://127.0.0.1:7480 --rw write --bs 8m \\\n" +
    "  --iodepth 8 --size 512m",
  ],
  clean: [
    "tierbench clean --tier file:/mnt/nvme                 # every marked scratch directory there",
    "tierbench clean --tier s3://bucket/prefix --endpoint http://127.0.0.1:7480 --run-id RUN_ID",
  ],
  bench: [
    "tierbench bench --quick                      # about 40 s: a smoke test, not for planning",
    "tierbench bench --file-dir /mnt/nvme/tb --output node.json",
    "tierbench bench --file-dir /mnt/nvme/tb --pfs /lustre/$USER/tb --runtime 5",
  ],
  contention: [
    "tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme",
    "tierbench contention --tiers memory:,file:/mnt/nvme,pfs:/mnt/cephfs --runtime 5 --output c.json",
  ],
  sweep: [
    "tierbench sweep --tier file:/mnt/nvme --bs 128k,1m --iodepth 1,8,32 --numjobs 1,4",
    "tierbench sweep --tier file:/mnt/nvme --rw write --steady --ss-limit 2% --output sweep.json",
  ],
  workload: [
    "tierbench workload zero-infinity --model 7b --scale 0.01 --tiers memory:,file:/mnt/nvme",
    "tierbench workload mlp-offload --model 70b --scale 0.001 \\\n" +
    "  --tiers memory:/dev/shm,file:/mnt/nvme,pfs:/mnt/cephfs --iterations 3 --output w.json",
  ],
  plan: [
    "tierbench plan --profile node.json --model 70b --ranks-per-node 4 --host-cache 64g",
    "tierbench plan --profile results/reference/polaris-4gpu-nvme-lustre.json --model 280b \\\n" +
    "  --nodes 1,2,4,8 --output plan.json",
  ],
  replay: [
    "tierbench replay plan.json --tiers file:/mnt/nvme,pfs:/mnt/lustre --scale 0.02",
    "tierbench replay plan.json --tiers file:/mnt/nvme --activations --output replay.json",
  ],
  report: [
    "tierbench report node.json                   # results/report-node/: HTML, Markdown, CSV",
    "tierbench report node.json plan.json --output report/",
  ],
  compare: [
    "tierbench compare before.json after.json",
    "tierbench compare a.json b.json c.json --match name --html compare.html",
  ],
};

const DURATIONS = new Set(["<seconds>"]);
const SIZES = new Set(["<size>", "<sizes>", "<bytes>"]);

/** The lines on units a command's help ends with, for the placeholders its options use. */
function unitNotes(
  cmd: Command<unknown[], Record<string, unknown>, Record<string, unknown>>,
): string[] {
  const placeholders = cmd.options.flatMap((o) => o.flags.match(/<[a-z-]+>/g) ?? []);
  const notes: string[] = [];
  if (placeholders.some((p) => DURATIONS.has(p))) {
    notes.push("Durations: seconds, or a number with ms, s, m or h (0.5, 500ms, 2m).");
  }
  if (placeholders.some((p) => SIZES.has(p))) {
    notes.push("Sizes: bytes, or a number with k, m, g or t, binary (4k = 4096; 1m, 1.5g).");
  }
  return notes;
}

function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** commander's option description, with choices and defaults as values rather than JSON strings. */
function optionDescription(option: Option): string {
  const extra: string[] = [];
  if (option.argChoices) extra.push(`choices: ${option.argChoices.join(", ")}`);
  const showDefault = option.required || option.optional ||
    (option.isBoolean() && typeof option.defaultValue === "boolean");
  if (option.defaultValue !== undefined && showDefault) {
    extra.push(`default: ${option.defaultValueDescription ?? shown(option.defaultValue)}`);
  }
  if (option.presetArg !== undefined && option.optional) {
    extra.push(`preset: ${shown(option.presetArg)}`);
  }
  if (option.envVar !== undefined) extra.push(`env: ${option.envVar}`);
  if (extra.length === 0) return option.description;
  return option.description
    ? `${option.description} (${extra.join(", ")})`
    : `(${extra.join(", ")})`;
}

/**
 * Gives `program` and each of its commands the help tail (units, then
 * examples), and shows string defaults as the values they are.
 */
// deno-lint-ignore no-explicit-any
export function polishHelp(program: Command<any, any, any>): void {
  for (const cmd of [program, ...program.commands]) {
    cmd.configureHelp({ optionDescription });
    for (const arg of cmd.registeredArguments) {
      if (typeof arg.defaultValue === "string" && arg.defaultValueDescription === undefined) {
        arg.defaultValueDescription = arg.defaultValue;
      }
    }
    const notes = unitNotes(cmd);
    const examples = EXAMPLES[cmd.name()] ?? [];
    const tail = [
      ...(notes.length > 0 ? ["", ...notes] : []),
      ...(examples.length > 0
        ? ["", "Examples:", ...examples.map((e) => `  ${e.replaceAll("\n", "\n  ")}`)]
        : []),
    ];
    if (tail.length > 0) cmd.addHelpText("after", tail.join("\n") + "\n");
  }
}
