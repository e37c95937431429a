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

/**
 * Input that is not an option is not acceptable: a file given as an argument
 * (`plan.json`), an environment variable (`SLURM_JOB_NODELIST`), a field of
 * a file (`plan.json: setup.model`). Named as the user wrote it, never as a
 * `--flag` they did not type; a usage error like {@linkcode ConfigError}
 * (exit status 2).
 *
 * @example
 * ```ts
 * import { InputError } from "./errors.ts";
 * const e = new InputError("SLURM_JOB_NODELIST", '"node[1-" has unbalanced brackets');
 * console.assert(e.message === 'SLURM_JOB_NODELIST: "node[1-" has unbalanced brackets');
 * ```
 */
export class InputError extends ConfigError {
  override name = "InputError";

  constructor(what: string, problem: string, allowed?: string, options?: ErrorOptions) {
    super(what, problem, allowed, options);
    this.message = `${what}: ${problem}${allowed ? ` (allowed: ${allowed})` : ""}`;
  }
}

/** How the hints name what sets a run's size ({@linkcode sizeHintNaming} renames it). */
const SMALLER_SIZE = "use a smaller --size";

/** Hints that tell the user what to do about a failed system call. */
const HINTS: Record<string, string> = {
  ENOSPC: `free space on that file system or ${SMALLER_SIZE}`,
  EDQUOT: `the disk quota is exhausted: free space or ${SMALLER_SIZE}`,
  EACCES: "pick a directory you may write to, or run as a user who may",
  EPERM: "pick a directory you may write to, or run as a user who may",
  EROFS: "the file system is read-only: pick a writable directory",
  EIO: "the device reported an I/O error: check `dmesg` and the device's health",
  EINVAL: "the file system or device rejected the request (alignment or flags)",
  EMFILE: "too many open files: lower --numjobs or raise `ulimit -n`",
  ENOMEM: "out of memory: lower --iodepth, --numjobs or --bs",
  ENOTCONN: "the file system's client lost its connection (a network or FUSE mount died): " +
    "check and remount it",
  ECONNABORTED: "the file system's client lost its connection (a network or FUSE mount died): " +
    "check and remount it",
  ESTALE: "the network file system dropped the file handle: check and remount it",
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

/**
 * One request to storage took longer than `--timeout`: the storage stopped
 * answering. Names the request, the file (or object) and the offset. The
 * thread that made the request may still be blocked in the kernel, so
 * whatever it was touching is left alone.
 *
 * @example
 * ```ts
 * import { RequestTimeoutError } from "./errors.ts";
 * const e = new RequestTimeoutError({ request: "pwrite (aio)", path: "/x", offset: 0, timeoutMs: 3000 });
 * console.assert(e.message === "pwrite (aio) /x at offset 0 timed out after 3 s (--timeout): " +
 *   "the storage stopped answering");
 * ```
 */
export class RequestTimeoutError extends Error {
  override name = "RequestTimeoutError";
  readonly path: string;
  readonly timeoutMs: number;

  constructor(
    info: { request: string; path: string; offset?: number | undefined; timeoutMs: number },
    options?: ErrorOptions,
  ) {
    const where = info.offset === undefined ? "" : ` at offset ${info.offset}`;
    super(
      `${info.request} ${info.path}${where} timed out after ${info.timeoutMs / 1000} s ` +
        "(--timeout): the storage stopped answering",
      options,
    );
    this.path = info.path;
    this.timeoutMs = info.timeoutMs;
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

/** Hints for S3 error codes and network failures. */
const S3_HINTS: Record<string, string> = {
  NoSuchBucket: "create the bucket or name an existing one",
  AccessDenied: "check the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or " +
    "AWS_PROFILE) and the bucket's policy",
  InvalidAccessKeyId: "check AWS_ACCESS_KEY_ID (or AWS_PROFILE)",
  SignatureDoesNotMatch: "check AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) and --region",
  SlowDown: "the server throttled requests: lower --iodepth or --numjobs",
};

/** Codes of failures to reach the server at all. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EPIPE",
  "TimeoutError",
]);

/** Of those, the ones where no answer came in time: a server down or one that stalls. */
const TIMED_OUT = new Set(["ETIMEDOUT", "TimeoutError"]);

/** Of those, the ones of a connection that was made and then dropped. */
const DROPPED = new Set(["ECONNRESET", "EPIPE", "ERR_STREAM_PREMATURE_CLOSE"]);

/**
 * An S3 request failed for good (after any retries). Names the operation, the
 * object, the error code and HTTP status, never a credential.
 *
 * @example
 * ```ts
 * import { S3Error } from "./errors.ts";
 * const e = new S3Error({
 *   operation: "GetObject",
 *   bucket: "b",
 *   key: "k",
 *   code: "NoSuchBucket",
 *   status: 404,
 *   endpoint: "http://127.0.0.1:7480",
 * });
 * console.assert(e.message.startsWith("s3 GetObject s3://b/k: NoSuchBucket (HTTP 404)"));
 * ```
 */
export class S3Error extends Error {
  override name = "S3Error";
  /** The S3 API operation, e.g. `PutObject`. */
  readonly operation: string;
  readonly bucket: string;
  /** The object key, or `""` for bucket operations. */
  readonly key: string;
  /** The S3 error code (`NoSuchBucket`) or the network error (`ECONNREFUSED`). */
  readonly code: string;
  /** The HTTP status, when a response came. */
  readonly status: number | undefined;
  /** Requests made, retries included. */
  readonly attempts: number;
  /** Whether the server could not be reached at all. */
  readonly unreachable: boolean;

  constructor(
    info: {
      operation: string;
      bucket: string;
      key?: string | undefined;
      code: string;
      status?: number | undefined;
      attempts?: number | undefined;
      endpoint: string;
      detail?: string | undefined;
    },
    options?: ErrorOptions,
  ) {
    const unreachable = info.status === undefined && UNREACHABLE.has(info.code);
    const status = info.status === undefined ? "" : ` (HTTP ${info.status})`;
    const attempts = (info.attempts ?? 1) > 1 ? ` after ${info.attempts} attempts` : "";
    const detail = info.detail ? ` ${info.detail}` : "";
    const hint = DROPPED.has(info.code) && info.status === undefined
      ? `the connection to ${info.endpoint} was dropped mid-request: cannot reach the server ` +
        "reliably (is it running, or a proxy before it failing?)"
      : unreachable && TIMED_OUT.has(info.code)
      ? `no answer from ${info.endpoint} in time: is the S3 server running, and not stalled ` +
        "or overloaded (--endpoint)?"
      : unreachable
      ? `cannot reach ${info.endpoint}: is the S3 server running (--endpoint)?`
      : S3_HINTS[info.code] ??
        (info.status !== undefined && info.status >= 500
          ? "the server failed: see its logs"
          : undefined);
    super(
      `s3 ${info.operation} s3://${info.bucket}/${info.key ?? ""}: ${info.code}${status}` +
        `${detail}${attempts}${hint ? `; ${hint}` : ""}`,
      options,
    );
    this.operation = info.operation;
    this.bucket = info.bucket;
    this.key = info.key ?? "";
    this.code = info.code;
    this.status = info.status;
    this.attempts = info.attempts ?? 1;
    this.unreachable = unreachable;
  }
}

/**
 * A Deno file-system error (one with a `code`, such as `EACCES`) as an
 * {@linkcode IoError} naming the call and path; anything else as it is.
 *
 * @example
 * ```ts
 * import { ioErrorFrom, IoError } from "./errors.ts";
 * const e = Object.assign(new Error("denied"), { code: "EACCES" });
 * console.assert(ioErrorFrom(e, "mkdir", "/x") instanceof IoError);
 * ```
 */
export function ioErrorFrom(e: unknown, syscall: string, path: string): unknown {
  const code = (e as { code?: unknown })?.code;
  if (typeof code !== "string") return e;
  return new IoError({ syscall, errno: 0, code, path }, { cause: e });
}

/**
 * `line` with its hint on a full file system (ENOSPC, EDQUOT) naming
 * `option`, what sets the run's size where the user started it (a
 * workload's `--scale`, a job file's `size=`), instead of `run`'s `--size`.
 *
 * @example
 * ```ts
 * import { IoError, sizeHintNaming } from "./errors.ts";
 * const e = new IoError({ syscall: "pwrite", errno: 28, code: "ENOSPC", path: "/x" });
 * console.assert(sizeHintNaming(e.message, "--scale").endsWith("use a smaller --scale"));
 * ```
 */
export function sizeHintNaming(line: string, option: string): string {
  return line.replaceAll(SMALLER_SIZE, `use a smaller ${option}`);
}

/** Deno's wording of a failed system call: `<description> (os error <n>): <call> '<path>'`. */
const OS_ERROR = /^(.+?) \(os error \d+\)(?:: (.+))?$/s;

/**
 * The one line that says why `e` failed: its message, or, for an error out
 * of Deno's own calls that carries an errno name (`No space left on device
 * (os error 28): mkdir '/x'`), the same facts in the order tierbench's own
 * {@linkcode IoError} gives them: the call and path, the errno name, the
 * description and the hint.
 *
 * @example
 * ```ts
 * import { errorLine } from "./errors.ts";
 * const e = Object.assign(
 *   new Error("No space left on device (os error 28): mkdir '/x'"),
 *   { code: "ENOSPC" },
 * );
 * console.assert(errorLine(e).startsWith("mkdir '/x': ENOSPC (No space left on device)"));
 * console.assert(errorLine(new Error("plain")) === "plain");
 * ```
 */
export function errorLine(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const code = (e as { code?: unknown }).code;
  const parts = typeof code === "string" && /^E[A-Z0-9]+$/.test(code)
    ? OS_ERROR.exec(e.message)
    : null;
  if (!parts) return e.message;
  const [, description, call] = parts;
  const hint = HINTS[code as string];
  return `${call ? `${call}: ` : ""}${code} (${description})${hint ? `; ${hint}` : ""}`;
}
