/**
 * Tiers: where I/O goes. One file per tier.
 *
 * @module
 */

import type { TierSpec } from "../core/config.ts";
import { FileTier } from "./file.ts";
import { MemoryTier } from "./memory.ts";
import { NullTier } from "./null.ts";
import { PfsTier } from "./pfs.ts";
import { S3Tier, type S3TierOptions } from "./s3.ts";
import type { Tier, TierOptions } from "./types.ts";

export { FileTier } from "./file.ts";
export { MemoryTier } from "./memory.ts";
export { NullTier } from "./null.ts";
export { PfsTier } from "./pfs.ts";
export { S3Tier, type S3TierOptions } from "./s3.ts";
export { checkSpace, spaceNeeded } from "./space.ts";
export type {
  DirectSupport,
  JobTarget,
  Tier,
  TierCapabilities,
  TierFacts,
  TierOptions,
} from "./types.ts";

/**
 * The tier for a spec (not yet set up); `s3` says where an s3 tier's server is
 * when the environment should not decide; `options` how long one request to
 * it may take (its clean-up included).
 *
 * @example
 * ```ts
 * import { openTier } from "./mod.ts";
 * await using tier = openTier({ kind: "null", path: "" });
 * await tier.setup();
 * ```
 */
export function openTier(
  spec: TierSpec,
  runId?: string,
  s3?: S3TierOptions,
  options: TierOptions = {},
): Tier {
  switch (spec.kind) {
    case "null":
      return new NullTier();
    case "memory":
      return new MemoryTier(spec, runId, options);
    case "file":
      return new FileTier(spec, runId, options);
    case "pfs":
      return new PfsTier(spec, runId, options);
    case "s3":
      return new S3Tier(spec, runId, s3, options);
  }
}
