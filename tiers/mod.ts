/**
 * Tiers: where I/O goes. One file per tier.
 *
 * @module
 */

import type { TierSpec } from "../bench/config.ts";
import { FileTier } from "./file.ts";
import { MemoryTier } from "./memory.ts";
import { NullTier } from "./null.ts";
import { PfsTier } from "./pfs.ts";
import type { Tier } from "./types.ts";

export { FileTier } from "./file.ts";
export { MemoryTier } from "./memory.ts";
export { NullTier } from "./null.ts";
export { PfsTier } from "./pfs.ts";
export type { DirectSupport, JobTarget, Tier, TierCapabilities, TierFacts } from "./types.ts";

/**
 * The tier for a spec (not yet set up).
 *
 * @example
 * ```ts
 * import { openTier } from "./mod.ts";
 * await using tier = openTier({ kind: "null", path: "" });
 * await tier.setup();
 * ```
 */
export function openTier(spec: TierSpec, runId?: string): Tier {
  switch (spec.kind) {
    case "null":
      return new NullTier();
    case "memory":
      return new MemoryTier(spec, runId);
    case "file":
      return new FileTier(spec, runId);
    case "pfs":
      return new PfsTier(spec, runId);
    case "s3":
      throw new TypeError("the s3 tier is not part of this build yet");
  }
}
