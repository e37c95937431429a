/**
 * The null tier: no I/O at all. What it measures is the harness's own
 * ceiling (clock, counters, histograms), like fio's null engine.
 *
 * @module
 */

import type { JobOptions, TierSpec } from "../core/config.ts";
import type { JobTarget, Tier, TierCapabilities, TierFacts } from "./types.ts";

/**
 * The tier that does nothing.
 *
 * @example
 * ```ts
 * import { NullTier } from "./null.ts";
 * await using tier = new NullTier();
 * await tier.setup();
 * console.assert(tier.describe().direct === "not-applicable");
 * ```
 */
export class NullTier implements Tier {
  readonly spec: TierSpec = { kind: "null", path: "" };
  readonly capabilities: TierCapabilities = {
    direct: "not-applicable",
    alignment: 1,
    engines: ["noop"],
  };

  setup(): Promise<void> {
    return Promise.resolve();
  }

  prepare(job: JobOptions): Promise<JobTarget[]> {
    return Promise.resolve(
      Array.from({ length: job.numjobs }, () => ({
        paths: [],
        regionOffset: 0,
        layout: "none" as const,
      })),
    );
  }

  markLaidOut(): void {}

  release(): Promise<void> {
    return Promise.resolve();
  }

  describe(): TierFacts {
    return {
      kind: "null",
      path: "",
      scratch_dir: "",
      direct: "not-applicable",
      alignment: 1,
      note: "no I/O: the harness's own ceiling",
    };
  }

  [Symbol.asyncDispose](): Promise<void> {
    return Promise.resolve();
  }
}
