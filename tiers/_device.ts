/**
 * Raw devices: what tierbench refuses to write and, with `--allow-device`,
 * only reads.
 *
 * A tier works inside a scratch directory it makes, so a device can never be
 * a tier: there is no scratch area on a raw device, and any write lands on
 * whatever the device holds (a file system, a partition table). Writing to a
 * device cannot be made safe, so `--allow-device` permits exactly one thing:
 * reading a block device named by `--filename` (opened read-only).
 *
 * @module
 */

/** What kind of device `info` describes, or undefined for anything else. */
export function deviceKindOf(info: Deno.FileInfo): "block device" | "character device" | undefined {
  if (info.isBlockDevice) return "block device";
  if (info.isCharDevice) return "character device";
  return undefined;
}

/**
 * How `path` reads in a message: itself, or itself and the device a symlink
 * leads to.
 */
export function devicePathLabel(path: string): string {
  try {
    const real = Deno.realPathSync(path);
    return real === path ? path : `${path} (→ ${real})`;
  } catch {
    return path;
  }
}

/** The size in bytes of a block device (opened read-only, never written). */
export function blockDeviceSize(path: string): number {
  using file = Deno.openSync(path, { read: true });
  return file.seekSync(0, Deno.SeekMode.End);
}
