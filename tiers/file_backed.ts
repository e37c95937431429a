/**
 * What the memory and file tiers share: a directory, a marked scratch
 * directory inside it, one file per job, and the engines that drive files.
 *
 * @module
 */

import { join } from "node:path";
import { type JobOptions, jobReads, type TierSpec } from "../core/config.ts";
import { ConfigError, DirectIoUnsupportedError, IoError, ioErrorFrom } from "../core/errors.ts";
import { type PathFacts, pathFacts } from "../core/host.ts";
import { blockDeviceSize, deviceKindOf, devicePathLabel } from "./_device.ts";
import { cString, errnoName, lastErrno, libc, O, strerror } from "../core/libc.ts";
import { makeScratchDirSync, newRunId, removeScratchDirWithin } from "./scratch.ts";
import type {
  DirectSupport,
  JobTarget,
  Tier,
  TierCapabilities,
  TierFacts,
  TierOptions,
} from "./types.ts";
import { DEFAULT_TIMEOUT_MS } from "../core/config.ts";
import { TIMED_OUT, withinTimeout } from "../core/settle.ts";

/** Buffer alignment for every file engine: the page size. */
export const BUFFER_ALIGNMENT = 4096;

/** Identifies a laid-out region of a set of files. */
function key(paths: readonly string[], regionOffset: number): string {
  return `${paths.join("|")}@${regionOffset}`;
}

/** A tier whose I/O goes to files in a directory. */
export abstract class FileBackedTier implements Tier {
  readonly spec: TierSpec;
  readonly runId: string;
  abstract readonly capabilities: TierCapabilities;
  protected facts: PathFacts | undefined;
  #scratch: string | undefined;
  #prefilled = new Set<string>();
  #writeRuns = 0;
  #directProbed = false;
  #abandoned: string | undefined;
  readonly #timeoutMs: number;

  constructor(spec: TierSpec, runId: string = newRunId(), options: TierOptions = {}) {
    this.spec = spec;
    this.runId = runId;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * The scratch directory (after setup), made on first use: a job file's
   * jobs work on the files they name and never need one.
   */
  get scratchDir(): string {
    if (this.facts === undefined) throw new TypeError("setup() has not run");
    if (this.#scratch === undefined) {
      try {
        this.#scratch = makeScratchDirSync(this.spec.path, this.runId, this.spec.kind);
      } catch (e) {
        throw ioErrorFrom(e, "mkdir", this.spec.path);
      }
    }
    return this.#scratch;
  }

  /** Checks what lies under the path; subclasses refuse what they cannot use. */
  protected abstract check(facts: PathFacts): void;

  async setup(): Promise<void> {
    const dir = this.spec.path;
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(dir);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new ConfigError(
          "tier",
          `${dir} does not exist: create it or name an existing directory`,
          undefined,
          { cause: e },
        );
      }
      throw ioErrorFrom(e, "stat", dir);
    }
    const device = deviceKindOf(info);
    if (device) {
      throw new ConfigError(
        "tier",
        `${devicePathLabel(dir)} is a ${device}: a tier works in a scratch directory it makes, ` +
          "so a device is never written, with --allow-device or without; to read a block " +
          `device raw: run --tier ${this.spec.kind}:DIR --filename ${dir} --allow-device --rw read`,
      );
    }
    if (!info.isDirectory) {
      throw new ConfigError("tier", `${dir} is not a directory: name a directory to work in`);
    }
    this.facts = pathFacts(dir);
    this.check(this.facts);
  }

  /** The direct-I/O behaviour for a job that asked for it (or not). */
  protected directFor(job: JobOptions): DirectSupport | "off" {
    return job.direct ? this.capabilities.direct : "off";
  }

  async prepare(job: JobOptions): Promise<JobTarget[]> {
    if (!this.capabilities.engines.includes(job.engine)) {
      throw new ConfigError("engine", `${job.engine} cannot drive the ${this.spec.kind} tier`);
    }
    if (this.directFor(job) === "honoured") {
      const a = this.capabilities.alignment;
      if (job.bs % a !== 0) {
        throw new ConfigError(
          "bs",
          `${job.bs} bytes is not a multiple of ${a}, the O_DIRECT alignment of ${this.spec.path}` +
            ` (its logical block size): use a multiple of ${a}, e.g. 4k, or drop --direct`,
        );
      }
    }
    if (job.fio) return this.#fioTargets(job);
    if (job.direct) this.#probeDirect();
    if (job.filename !== undefined) return [...Array(job.numjobs)].map(() => this.#existing(job));
    const reads = jobReads(job);
    // Read jobs reuse files already laid out the same way in this run; write
    // jobs get fresh files, since overwriting laid-out blocks can be faster.
    const stem = reads ? `read-${job.size}` : `write${this.#writeRuns++}`;
    const shared = job.fileLayout === "shared";
    const targets: JobTarget[] = [];
    for (let j = 0; j < job.numjobs; j++) {
      const paths = shared
        ? [join(this.scratchDir, `${stem}-shared${job.numjobs}.dat`)]
        : Array.from(
          { length: job.nrfiles },
          (_, f) => join(this.scratchDir, `${stem}-job${j}-f${f}of${job.nrfiles}.dat`),
        );
      const regionOffset = shared ? j * job.size : 0;
      const layout = !reads
        ? "fallocate"
        : this.#prefilled.has(key(paths, regionOffset))
        ? "none"
        : "prefill";
      targets.push({ paths, regionOffset, layout });
    }
    return await Promise.resolve(targets);
  }

  /**
   * A job file's clones' targets: the files it names, each made ready as
   * fio's setup_files would (written with data for a job that reads and
   * when it is missing or too small, allocated for a write job's new file,
   * else used as it is), by the first clone that has it.
   */
  #fioTargets(job: JobOptions): Promise<JobTarget[]> {
    const fio = job.fio!;
    const owned = new Set<string>();
    const targets = fio.clones.map((clone): JobTarget => {
      const actions = clone.files.map((f) => {
        let size = 0;
        try {
          const st = Deno.statSync(f.path);
          if (!st.isFile) {
            throw new ConfigError("filename", `${f.name} is not a regular file`);
          }
          size = st.size;
        } catch (e) {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        }
        if (size >= f.size || fio.laidOut) return "none" as const;
        return fio.layout.writeData ? "data" as const : "allocate" as const;
      });
      const owner = clone.files.map((f) => !owned.has(f.path) && owned.add(f.path) !== undefined);
      return {
        paths: clone.files.map((f) => f.path),
        regionOffset: 0,
        layout: "none",
        fio: {
          sizes: clone.files.map((f) => f.size),
          actions,
          owner,
          owners: fio.clones.length,
          layout: fio.layout,
        },
      };
    });
    return Promise.resolve(targets);
  }

  /** The target of a read job on an existing file: used as is, never removed. */
  #existing(job: JobOptions): JobTarget {
    const path = job.filename!;
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(path);
    } catch (e) {
      throw new ConfigError(
        "filename",
        `${path} cannot be read: ${(e as Error).message}`,
        undefined,
        {
          cause: e,
        },
      );
    }
    const device = deviceKindOf(info);
    if (device && !job.allowDevice) {
      throw new ConfigError(
        "filename",
        `${devicePathLabel(path)} is a ${device}: reading a raw device needs --allow-device ` +
          "(it is then only read, never written)",
      );
    }
    if (device === "character device") {
      throw new ConfigError(
        "filename",
        `${devicePathLabel(path)} is a character device, which has no size to read: ` +
          "--allow-device reads block devices only",
      );
    }
    const size = device ? blockDeviceSize(path) : info.size;
    if (!(info.isFile || device) || size < job.size) {
      throw new ConfigError(
        "filename",
        `${path} is ${info.isFile || device ? `${size} bytes, smaller than --size` : "not a file"}`,
      );
    }
    return { paths: [path], regionOffset: 0, layout: "none", existing: true };
  }

  /** Records that a run's files were laid out (so later read runs reuse them). */
  markLaidOut(targets: readonly JobTarget[]): void {
    for (const t of targets) {
      if (t.layout === "prefill") this.#prefilled.add(key(t.paths, t.regionOffset));
    }
  }

  async release(targets: readonly JobTarget[]): Promise<void> {
    if (this.#abandoned !== undefined) return;
    for (const t of targets) {
      // a job file's files stay, as fio leaves them, unless it asked for unlink
      if (t.fio) {
        if (!t.fio.layout.unlink) continue;
        for (const path of t.paths) await Deno.remove(path).catch(() => {});
        continue;
      }
      if (t.layout === "none" || this.#prefilled.has(key(t.paths, t.regionOffset))) continue;
      for (const path of t.paths) {
        const gone = await withinTimeout(Deno.remove(path).catch(() => {}), this.#timeoutMs);
        if (gone === TIMED_OUT) {
          // the storage stopped answering: touch it no more, name what is left
          this.abandon(`removing ${path} took longer than ${this.#timeoutMs / 1000} s (--timeout)`);
          return;
        }
      }
    }
  }

  /** Opens a probe file with O_DIRECT once: some file systems refuse it (EINVAL). */
  #probeDirect(): void {
    if (this.#directProbed) return;
    const path = join(this.scratchDir, ".direct-probe");
    const c = libc();
    const fd = c.open(cString(path), O.RDWR | O.CREAT | O.DIRECT | O.CLOEXEC, 0o600);
    if (fd < 0) {
      const errno = lastErrno();
      try {
        Deno.removeSync(path);
      } catch { /* it may not exist */ }
      if (errno === 22) {
        throw new DirectIoUnsupportedError(this.spec.path, this.facts?.fs_type ?? "unknown");
      }
      throw new IoError({
        syscall: "open (O_DIRECT)",
        errno,
        code: errnoName(errno),
        path,
        detail: `(${strerror(errno)})`,
      });
    }
    c.close(fd);
    Deno.removeSync(path);
    this.#directProbed = true;
  }

  describe(): TierFacts {
    const out: TierFacts = {
      kind: this.spec.kind,
      path: this.spec.path,
      scratch_dir: this.#scratch ?? "",
      direct: this.capabilities.direct,
      alignment: this.capabilities.alignment,
    };
    if (this.facts) out.fs = this.facts;
    return out;
  }

  abandon(reason: string): void {
    this.#abandoned = reason;
  }

  vanished(): string | undefined {
    const scratch = this.#scratch;
    if (scratch === undefined || this.#abandoned !== undefined) return undefined;
    try {
      if (Deno.statSync(scratch).isDirectory) return undefined;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) {
        return undefined; // cannot tell: the run's own I/O said how the storage is
      }
    }
    this.#scratch = undefined; // nothing left to remove
    return `the scratch directory ${scratch} on ${this.spec.kind}:${this.spec.path} vanished ` +
      "during the run (something else deleted it): the figures are of files no longer on " +
      "that path, so the run failed";
  }

  /**
   * Removes the scratch directory (only if its marker names this run),
   * giving the file system --timeout to do it; what it cannot remove, or a
   * tier given up after a request timed out, is named on stderr with the
   * `tierbench clean` command that removes it.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const scratch = this.#scratch;
    this.#scratch = undefined;
    if (scratch === undefined) return;
    let why = this.#abandoned;
    if (why === undefined) {
      const removal = await removeScratchDirWithin(scratch, this.runId, this.#timeoutMs);
      if (removal !== "timed out") return;
      why = `its removal took longer than ${this.#timeoutMs / 1000} s (--timeout)`;
    }
    console.error(
      `tierbench: could not remove ${scratch} (${why}); remove it later with: ` +
        `deno task tierbench clean --tier ${this.spec.kind}:${this.spec.path}`,
    );
  }
}
