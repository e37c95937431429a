/**
 * A real single-node Ceph 16.2 cluster on loopback for tests and demos: S3
 * through radosgw on `http://127.0.0.1:7480` and CephFS mounted with
 * ceph-fuse, everything in one state directory. Needs root and the Debian
 * packages of {@linkcode CEPH_PACKAGES}; the command line is `main.ts`.
 *
 * @example
 * ```ts ignore
 * import { cephDown, cephUp } from "./mod.ts";
 * const env = await cephUp({ dir: "/tmp/my-ceph" });
 * console.log(env.endpoint, env.bucket, env.pfsDir);
 * await cephDown({ dir: "/tmp/my-ceph" });
 * ```
 *
 * @module
 */

export {
  cephDown,
  type CephDownOptions,
  type CephEnv,
  cephEnv,
  cephServing,
  type CephStatus,
  cephStatus,
  cephUp,
  type CephUpOptions,
  exportLines,
} from "./cluster.ts";
export { CEPH_PACKAGES, DEFAULT_CEPH_DIR, INSTALL_COMMAND } from "./config.ts";
export type { CephServiceOptions } from "./daemons.ts";
export { CephError } from "./errors.ts";
export { startRgw, stopRgw } from "./rgw.ts";
export { remountFs, stopFuse } from "./cephfs.ts";
