/**
 * The live progress line of a workload on stderr (cli-progress): iteration,
 * bytes moved and the current read and write bandwidth; silent when stderr is
 * not a terminal or when quiet.
 *
 * @module
 */

import cliProgress from "cli-progress";
import process from "node:process";
import { formatRate, formatSize } from "../bench/units.ts";
import type { WorkloadProgress } from "./run.ts";

/** One bar over the iterations of a workload. */
export class WorkloadProgressLine {
  readonly #bar: cliProgress.SingleBar | undefined;
  readonly #name: string;
  #active = false;
  #last: { t: number; r: number; w: number } | undefined;

  constructor(quiet: boolean, name: string) {
    this.#name = name;
    if (quiet || !Deno.stderr.isTerminal()) return;
    this.#bar = new cliProgress.SingleBar({
      stream: process.stderr,
      format: "{name} |{bar}| iteration {it}/{total} · {moved} · read {rbw} · write {wbw}",
      barsize: 24,
      hideCursor: true,
      clearOnComplete: true,
    }, cliProgress.Presets.shades_classic);
  }

  update(p: WorkloadProgress): void {
    if (!this.#bar) return;
    const last = this.#last ?? { t: 0, r: 0, w: 0 };
    const dt = Math.max(1e-3, (p.elapsedMs - last.t) / 1000);
    const payload = {
      name: this.#name,
      it: Math.min(p.iterations, p.iteration + 1),
      total: p.iterations,
      moved: formatSize(p.bytesRead + p.bytesWritten),
      rbw: formatRate((p.bytesRead - last.r) / dt),
      wbw: formatRate((p.bytesWritten - last.w) / dt),
    };
    this.#last = { t: p.elapsedMs, r: p.bytesRead, w: p.bytesWritten };
    if (!this.#active) {
      this.#bar.start(p.iterations, 0, payload);
      this.#active = true;
    }
    this.#bar.update(p.iteration, payload);
  }

  stop(): void {
    if (this.#active) this.#bar?.stop();
    this.#active = false;
  }
}
