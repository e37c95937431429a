/**
 * The memory tier: files on tmpfs (host memory), by default in /dev/shm.
 * O_DIRECT is accepted there and ignored: every byte lives in the page cache,
 * which is the point. Results say so.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import type { PathFacts } from "../core/host.ts";
import { BUFFER_ALIGNMENT, FileBackedTier } from "./file_backed.ts";
import type { TierCapabilities, TierFacts } from "./types.ts";

const MEMORY_FS = ["tmpfs", "ramfs", "hugetlbfs"];

/**
 * Host memory through a tmpfs directory.
 *
 * @example
 * ```ts
 * import { MemoryTier } from "./memory.ts";
 * await using tier = new MemoryTier({ kind: "memory", path: "/dev/shm" });
 * await tier.setup();
 * console.assert(tier.describe().direct === "ignored");
 * ```
 */
export class MemoryTier extends FileBackedTier {
  readonly capabilities: TierCapabilities = {
    direct: "ignored",
    alignment: BUFFER_ALIGNMENT,
    engines: ["psync", "libaio", "io_uring"],
  };

  protected check(facts: PathFacts): void {
    if (!MEMORY_FS.includes(facts.fs_type)) {
      throw new ConfigError(
        "tier",
        `memory:${this.spec.path} is on ${facts.fs_type}, not tmpfs: ` +
          "name a tmpfs directory (such as /dev/shm) or use file:DIR for a disk",
      );
    }
  }

  override describe(): TierFacts {
    return {
      ...super.describe(),
      note: "tmpfs: O_DIRECT is accepted and not honoured; every access is a memory copy",
    };
  }
}
