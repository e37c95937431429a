/**
 * The scaffold of the local services that tests and users start (Ceph,
 * Slurm): process helpers (running commands, /proc, signals, exits, ports)
 * and the launchers' shared command line.
 *
 * @module
 */

export * from "./process.ts";
export * from "./cli.ts";
export * from "./daemon_files.ts";
