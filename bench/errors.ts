/**
 * The conditions a caller of tierbench may want to catch, one class each.
 *
 * The CLI turns {@linkcode ConfigError} into exit status 2 (a usage error) and
 * every other one into exit status 1 (the run failed), always as one line.
 *
 * @module
 */

/**
 * An option or configuration value is not acceptable. Names the field and,
 * where there is a fixed set, the allowed values.
 *
 * @example
 * ```ts
 * import { ConfigError } from "./errors.ts";
 * const e = new ConfigError("rw", "bogus", "read, write, randread, randwrite, randrw");
 * console.assert(e.message.includes("--rw"));
 * ```
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** The option or field at fault, without dashes (`"bs"`, `"tier"`). */
  readonly field: string;

  constructor(field: string, problem: string, allowed?: string, options?: ErrorOptions) {
    super(`--${field}: ${problem}${allowed ? ` (allowed: ${allowed})` : ""}`, options);
    this.field = field;
  }
}

/** Hints that tell the user what to do about a failed system call. */
const HINTS: Record<string, string> = {
  ENOSPC: "free space on that file system or use a smaller --size",
  EDQUOT: "the disk quota is exhausted: free space or use a smaller --size",
  EACCES: "pick a directory you may write to, or run as a user who may",
  EPERM: "pick a directory you may write to, or run as a user who may",
  EROFS: "the file system is read-only: pick a writable directory",
  EIO: "the device reported an I/O error: check `dmesg` and the device's health",
  EINVAL: "the file system or device rejected the request (alignment or flags)",
  EMFILE: "too many open files: lower --numjobs or raise `ulimit -n`",
  ENOMEM: "out of memory: lower --iodepth, --numjobs or --bs",
};

/**
 * A system call failed. Carries the call, its own errno (captured on the
 * thread that made it), the path and the offset.
 *
 * @example
 * ```ts
 * import { IoError } from "./errors.ts";
 * const e = new IoError({ syscall: "pwrite", errno: 28, code: "ENOSPC", path: "/x", offset: 0 });
 * console.assert(e.message.startsWith("pwrite /x at offset 0: ENOSPC"));
 * ```
 */
export class IoError extends Error {
  override name = "IoError";
  readonly syscall: string;
  readonly errno: number;
  readonly code: string;
  readonly path: string;
  readonly offset: number | undefined;

  constructor(
    info: {
      syscall: string;
      errno: number;
      code: string;
      path: string;
      offset?: number | undefined;
      detail?: string | undefined;
    },
    options?: ErrorOptions,
  ) {
    const where = info.offset === undefined ? "" : ` at offset ${info.offset}`;
    const detail = info.detail ? ` ${info.detail}` : "";
    const hint = HINTS[info.code];
    super(
      `${info.syscall} ${info.path}${where}: ${info.code}${detail}${hint ? `; ${hint}` : ""}`,
      options,
    );
    this.syscall = info.syscall;
    this.errno = info.errno;
    this.code = info.code;
    this.path = info.path;
    this.offset = info.offset;
  }
}

/**
 * The file system under a tier refuses O_DIRECT (open with O_DIRECT fails
 * with EINVAL), so `--direct` cannot be honoured there.
 */
export class DirectIoUnsupportedError extends Error {
  override name = "DirectIoUnsupportedError";
  readonly path: string;
  readonly fsType: string;

  constructor(path: string, fsType: string, options?: ErrorOptions) {
    super(
      `${path} (${fsType}) refuses O_DIRECT: open() failed with EINVAL; ` +
        "run without --direct or choose a directory on a file system that supports it",
      options,
    );
    this.path = path;
    this.fsType = fsType;
  }
}

/** The run was stopped by a signal (Ctrl-C / SIGTERM) before it finished. */
export class InterruptedError extends Error {
  override name = "InterruptedError";
  readonly signal: string;

  constructor(signal: string, options?: ErrorOptions) {
    super(`interrupted by ${signal}`, options);
    this.signal = signal;
  }
}
