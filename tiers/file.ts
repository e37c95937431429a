/**
 * The file tier: files in a directory on a local file system (NVMe, SSD,
 * disk), read and written through libc with O_DIRECT when asked, so the page
 * cache stays out of the measurement.
 *
 * @module
 */

import type { PathFacts } from "../core/host.ts";
import { BUFFER_ALIGNMENT, FileBackedTier } from "./file_backed.ts";
import type { TierCapabilities } from "./types.ts";

/** File systems that keep data in memory: O_DIRECT does not reach a device there. */
const IN_MEMORY_FS = ["tmpfs", "ramfs", "hugetlbfs"];

/**
 * A local file system directory.
 *
 * @example
 * ```ts
 * import { FileTier } from "./file.ts";
 * await using tier = new FileTier({ kind: "file", path: Deno.cwd() });
 * await tier.setup();
 * console.assert(tier.capabilities.alignment >= 512);
 * ```
 */
export class FileTier extends FileBackedTier {
  #capabilities: TierCapabilities = {
    direct: "honoured",
    alignment: BUFFER_ALIGNMENT,
    engines: ["psync", "libaio", "io_uring"],
  };

  get capabilities(): TierCapabilities {
    return this.#capabilities;
  }

  protected check(facts: PathFacts): void {
    // O_DIRECT needs offsets and sizes aligned to the device's logical block
    // size; without a known device, assume the page size.
    const lbs = facts.device?.logical_block_size;
    this.#capabilities = {
      ...this.#capabilities,
      direct: IN_MEMORY_FS.includes(facts.fs_type) ? "ignored" : "honoured",
      alignment: lbs && lbs >= 512 ? lbs : BUFFER_ALIGNMENT,
    };
  }
}
