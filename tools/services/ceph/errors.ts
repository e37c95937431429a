/**
 * The error of the Ceph launcher.
 *
 * @module
 */

/** Something about the local cluster failed; the message is one line and names a log to read. */
export class CephError extends Error {
  override name = "CephError";
}
