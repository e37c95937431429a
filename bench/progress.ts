/**
 * The live progress line on stderr (cli-progress), only on a terminal.
 *
 * @module
 */

import cliProgress from "cli-progress";
import process from "node:process";
import type { RunProgress } from "./runner.ts";
import { formatRate } from "./units.ts";

/** Draws one bar per run; silent when stderr is not a terminal or when quiet. */
export class ProgressLine {
  readonly #bar: cliProgress.SingleBar | undefined;
  #active = false;
  #label = "";

  constructor(quiet = false) {
    if (quiet || !Deno.stderr.isTerminal()) return;
    this.#bar = new cliProgress.SingleBar({
      stream: process.stderr,
      format: "{label} |{bar}| {percentage}% {phase} {rate} {iops} IOPS",
      barsize: 24,
      hideCursor: true,
      clearOnComplete: true,
      noTTYOutput: false,
    }, cliProgress.Presets.shades_classic);
  }

  /** Whether anything is drawn. */
  get enabled(): boolean {
    return this.#bar !== undefined;
  }

  update(p: RunProgress): void {
    if (!this.#bar) return;
    const payload = {
      label: p.name,
      phase: p.phase === "measure" && p.totalMs !== undefined
        ? `${Math.max(0, (p.totalMs - p.elapsedMs) / 1000).toFixed(0)}s left`
        : p.phase,
      rate: formatRate(p.bwBytes),
      iops: Math.round(p.iops).toLocaleString("en-US"),
    };
    if (!this.#active || this.#label !== p.name) {
      if (this.#active) this.#bar.stop();
      this.#bar.start(1000, 0, payload);
      this.#active = true;
      this.#label = p.name;
    }
    this.#bar.update(Math.round(p.fraction * 1000), payload);
  }

  stop(): void {
    if (this.#active) this.#bar?.stop();
    this.#active = false;
  }
}
