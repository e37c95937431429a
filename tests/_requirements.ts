// A real single-node Ceph (S3 through RGW, CephFS through ceph-fuse), run by tools/services/ceph/:
// the launcher's own list of packages.
import { CEPH_PACKAGES } from "../tools/services/ceph/config.ts";
// A real single-node Slurm (munged, slurmctld, slurmd; srun with PMIx), run by
// tools/services/slurm/.
import { SLURM_DAEMON_PACKAGES, SLURM_PACKAGES } from "../tools/services/slurm/config.ts";
// The names engines/ loads libaio by, newest Debian first.
import { LIBAIO_NAMES } from "../engines/libaio.ts";
/**
 * What the test suite needs from the machine, in one list: per need, how it
 * is detected and which Debian packages provide it.
 *
 * A test that needs something is defined through {@linkcode needing}: where
 * a need is missing the test is ignored, its name saying why — except under
 * `CI=true`, where it runs and fails saying what is missing (CI never skips
 * silently). `tests/install_deps.ts`, which the test task runs first, installs
 * the packages of whatever is missing when run as root.
 *
 * @module
 */

/** Something a test needs from the machine. */
export type Need =
  | "root"
  | "fio"
  | "fio-examples"
  | "gnuplot"
  | "libaio"
  | "chattr"
  | "btrfs"
  | "fuse3"
  | "chromium"
  | "script"
  | "strace"
  | "ceph"
  | "own-ceph"
  | "openmpi"
  | "mpich"
  | "slurm";

/** How a need is detected. */
export type Detection =
  /** The command is on `PATH` (or, given as an absolute path, is an executable file there). */
  | { readonly command: string }
  /** `ldconfig -p` lists a library of exactly this name (`libaio.so.1` is not `libaio.so.1t64`). */
  | { readonly library: string }
  /**
   * A plugin (a path under a library directory such as /usr/lib/x86_64-linux-gnu, or an
   * absolute path) can load
   * `library` as it does: from the directory the plugin names where that library lives, or,
   * where it names none, through the dynamic linker's search.
   */
  | { readonly loads: { readonly plugin: string; readonly library: string } }
  /** `dpkg -s` finds every one of these packages. */
  | { readonly dpkg: readonly string[] }
  /** This process runs as uid 0. */
  | { readonly root: true }
  /** The environment variable is unset or empty. */
  | { readonly unset: string }
  /** Every one of these detections. */
  | { readonly every: readonly Detection[] }
  /** One of these detections at least. */
  | { readonly some: readonly Detection[] };

/**
 * A Debian package, or alternatives for one: the first that apt knows is
 * installed (a package renamed in a later release, such as libaio1, which
 * Debian 13 calls libaio1t64).
 */
export type PackageChoice = string | readonly string[];

/** One need: how it is detected and how it is provided. */
export interface Requirement {
  /** What the need is called in a test's reason (`needs fio (…)`). */
  readonly name: string;
  /** How the need is detected. */
  readonly detection: Detection;
  /** The Debian packages that provide it; empty when none can. */
  readonly packages: readonly PackageChoice[];
  /** What to do where no package provides it. */
  readonly remedy?: string;
}

/** Everything the test suite needs, and how each need is detected and installed. */
export const REQUIREMENTS: { readonly [N in Need]: Requirement } = {
  // mounts (tmpfs, ramfs, btrfs images), loop devices, tools/services/ceph/
  root: {
    name: "root",
    detection: { root: true },
    packages: [],
    remedy: "run the test task as root",
  },
  // bench:fio's comparison runs fio beside tierbench
  fio: { name: "fio", detection: { command: "fio" }, packages: ["fio"] },
  // fio's own example job files (/usr/share/doc/fio/examples), run unchanged by the job-file tests
  "fio-examples": {
    name: "fio-examples",
    detection: { dpkg: ["fio-examples"] },
    packages: ["fio-examples"],
  },
  // fio2gnuplot and fio_generate_plots draw fio's logs with it
  gnuplot: { name: "gnuplot", detection: { command: "gnuplot" }, packages: ["gnuplot-nox"] },
  // engines/_aio_ring.ts loads it through FFI by these names (else it makes the system calls
  // itself); Debian 13 renamed the package and the library (the 64-bit time_t transition)
  libaio: {
    name: "libaio",
    detection: { some: LIBAIO_NAMES.map((library) => ({ library })) },
    packages: [["libaio1t64", "libaio1"]],
  },
  // root ignores mode bits: an immutable directory is what refuses it a write
  chattr: { name: "chattr", detection: { command: "chattr" }, packages: ["e2fsprogs"] },
  // the EIO fault test reads a file on btrfs whose data checksum no longer matches
  btrfs: { name: "btrfs", detection: { command: "mkfs.btrfs" }, packages: ["btrfs-progs"] },
  // the EIO-on-write and hung-removal fault tests mount a FUSE file system built from C
  // (tests/_faultfs.ts); /dev/fuse is the kernel's, the rest these packages
  fuse3: {
    name: "fuse3",
    detection: {
      every: [
        { command: "gcc" },
        { command: "pkg-config" },
        { dpkg: ["libfuse3-dev"] },
      ],
    },
    packages: ["gcc", "pkg-config", "libfuse3-dev"],
  },
  // headless Chromium for the report's browser test (report/_chromium.ts runs this path)
  chromium: {
    name: "chromium",
    detection: { command: "/usr/bin/chromium" },
    packages: ["chromium"],
  },
  // a terminal for the progress line's test
  script: { name: "script", detection: { command: "script" }, packages: ["bsdutils"] },
  // the system calls a stream makes, as the kernel sees them (engines/libaio_stream_test.ts);
  // `trace record` runs commands under it
  strace: { name: "strace", detection: { command: "strace" }, packages: ["strace"] },
  // the remote-tier tests' cluster (tests/_remote.ts)
  ceph: { name: "ceph", detection: { dpkg: CEPH_PACKAGES }, packages: CEPH_PACKAGES },
  // fault tests stop daemons, so they need the tests' own cluster, not a server named outside
  "own-ceph": {
    name: "own-ceph",
    detection: { unset: "TIERBENCH_S3_ENDPOINT" },
    packages: [],
    remedy: "unset TIERBENCH_S3_ENDPOINT: these tests stop daemons of the tests' own Ceph cluster",
  },
  // cluster/'s MPI transport under Open MPI's launcher (cluster/mpi_test.ts)
  openmpi: {
    name: "openmpi",
    detection: { every: [{ command: "mpirun.openmpi" }, { library: "libmpi.so.40" }] },
    packages: ["openmpi-bin"],
  },
  // cluster/'s MPI transport under MPICH's launcher (cluster/mpi_test.ts)
  mpich: {
    name: "mpich",
    detection: { every: [{ command: "mpirun.mpich" }, { library: "libmpich.so.12" }] },
    packages: ["mpich"],
  },
  // tools/services/slurm/'s cluster: munged, slurmctld, slurmd, srun (the packages hold them
  // all), and what `srun --mpi=pmix` needs: Slurm's mpi/pmix plugin dlopens the unversioned
  // libpmix.so, which only libpmix-dev provides (libpmix2, or libpmix2t64, holds libpmix.so.2
  // alone)
  slurm: {
    name: "slurm",
    detection: {
      every: [
        { dpkg: SLURM_DAEMON_PACKAGES },
        {
          some: ["slurm-wlm", "slurm"].map((dir) => ({
            loads: { plugin: `${dir}/mpi_pmix.so`, library: "libpmix.so" },
          })),
        },
      ],
    },
    packages: SLURM_PACKAGES,
  },
};

/** The directories of `PATH`, then the sbin directories a user's `PATH` may lack. */
function searchPath(): string[] {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "");
  return [...dirs, "/usr/sbin", "/sbin"];
}

function isExecutable(path: string): boolean {
  try {
    const st = Deno.statSync(path);
    return st.isFile && ((st.mode ?? 0) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** Where `command` is: itself when it names a path, else the first match in the search path. */
function which(command: string): string | undefined {
  if (command.includes("/")) return isExecutable(command) ? command : undefined;
  return searchPath().map((d) => `${d}/${command}`).find(isExecutable);
}

/** Runs a command; its status and stdout, or undefined when it cannot be started. */
function run(command: string, args: string[]): { ok: boolean; out: string } | undefined {
  try {
    const r = new Deno.Command(command, { args, stdin: "null", stdout: "piped", stderr: "null" })
      .outputSync();
    return { ok: r.success, out: new TextDecoder().decode(r.stdout) };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Whether the dynamic linker's cache (`ldconfig -p`) holds a library of exactly this name. */
function linkerHas(library: string): boolean {
  const ldconfig = which("ldconfig");
  const r = ldconfig === undefined ? undefined : run(ldconfig, ["-p"]);
  return r !== undefined && r.ok &&
    r.out.split("\n").some((line) => line.trim().split(" ")[0] === library);
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/** The library directories: /usr/lib's multiarch directories, /usr/lib64, /usr/lib. */
function libraryDirs(): string[] {
  const multiarch: string[] = [];
  try {
    for (const e of Deno.readDirSync("/usr/lib")) {
      if (e.isDirectory && /-linux-gnu/.test(e.name)) multiarch.push(`/usr/lib/${e.name}`);
    }
  } catch { /* no /usr/lib */ }
  return [...multiarch.sort(), "/usr/lib64", "/usr/lib"];
}

/**
 * The existing directories a binary names (NUL-terminated absolute paths in
 * its bytes): where a plugin built with a library's directory looks for it.
 */
export function directoriesNamedIn(bytes: Uint8Array): string[] {
  const text = new TextDecoder("latin1").decode(bytes);
  const found = new Set(text.match(/\/[\x21-\x7e]+(?=\0)/g) ?? []);
  return [...found].filter(isDirectory);
}

/**
 * Whether `plugin` (under a library directory) can load `library` as a
 * plugin that dlopens a full path built from its build-time directory does:
 * among the directories it names, the one holding a version of the library
 * (`libpmix.so.2`) must hold the unversioned name too; where it names none,
 * the dynamic linker must find the name.
 */
function pluginLoads(plugin: string, library: string): boolean {
  const paths = plugin.startsWith("/") ? [plugin] : libraryDirs().map((d) => `${d}/${plugin}`);
  const holdsVersion = (dir: string) => {
    try {
      return [...Deno.readDirSync(dir)].some((e) => e.name.startsWith(`${library}.`));
    } catch {
      return false;
    }
  };
  for (const path of paths) {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(path);
    } catch {
      continue;
    }
    const homes = directoriesNamedIn(bytes).filter(holdsVersion);
    return homes.length > 0 ? homes.some((d) => isFile(`${d}/${library}`)) : linkerHas(library);
  }
  return false;
}

function detect(d: Detection): boolean {
  if ("every" in d) return d.every.every(detect);
  if ("some" in d) return d.some.some(detect);
  if ("root" in d) return Deno.uid() === 0;
  if ("unset" in d) return !Deno.env.get(d.unset);
  if ("command" in d) return which(d.command) !== undefined;
  if ("library" in d) return linkerHas(d.library);
  if ("loads" in d) return pluginLoads(d.loads.plugin, d.loads.library);
  return run("dpkg", ["-s", ...d.dpkg])?.ok === true;
}

const known = new Map<Requirement, boolean>();

/** Options of {@linkcode missing}. */
export interface MissingOptions {
  /** Detect again rather than answer from this process's earlier detections. */
  readonly fresh?: boolean;
}

/** A need named in {@linkcode REQUIREMENTS}, or one described in place. */
export type NeedLike = Need | Requirement;

function requirementOf(need: NeedLike): Requirement {
  if (typeof need !== "string") return need;
  const r: Requirement | undefined = REQUIREMENTS[need];
  if (r === undefined) throw new TypeError(`unknown need "${need}"`);
  return r;
}

/**
 * The requirements among `needs` that this machine lacks, each detected once
 * per process unless `fresh`.
 */
export function missing(needs: readonly NeedLike[], options: MissingOptions = {}): Requirement[] {
  return needs.map(requirementOf).filter((r) => {
    let present = options.fresh === true ? undefined : known.get(r);
    if (present === undefined) {
      present = detect(r.detection);
      known.set(r, present);
    }
    return !present;
  });
}

/** Whether apt has a candidate version of `pkg` (`apt-cache policy` names one). */
function aptKnows(pkg: string): boolean {
  const r = run("apt-cache", ["policy", pkg]);
  const candidate = r?.out.match(/^\s*Candidate:\s*(\S+)/m)?.[1];
  return candidate !== undefined && candidate !== "(none)";
}

/**
 * The package a choice stands for here: itself, or the first alternative
 * that apt knows (else the first, for apt to name in its error).
 */
export function choose(choice: PackageChoice, known: (pkg: string) => boolean = aptKnows): string {
  if (typeof choice === "string") return choice;
  return choice.find(known) ?? choice[0]!;
}

/**
 * The Debian packages that provide `requirements`, each once, in order, each
 * choice among alternatives made by `known` (default: what apt knows, so
 * after `apt-get update` on a fresh machine).
 */
export function packagesFor(
  requirements: readonly Requirement[],
  known?: (pkg: string) => boolean,
): string[] {
  return [...new Set(requirements.flatMap((r) => r.packages.map((c) => choose(c, known))))];
}

/**
 * The packages of `requirements` as text, each once, in order, alternatives
 * joined by `|` (apt's notation): `fio libaio1t64|libaio1`.
 */
export function packageText(requirements: readonly Requirement[]): string {
  const texts = requirements.flatMap((r) =>
    r.packages.map((c) => typeof c === "string" ? c : c.join("|"))
  );
  return [...new Set(texts)].join(" ");
}

/**
 * Each requirement with what provides it: `fio (apt-get install fio, which
 * the test task runs as root)`, joined by commas.
 */
export function describe(requirements: readonly Requirement[]): string {
  return requirements.map((r) => {
    const how = r.remedy ??
      `apt-get install ${packageText([r])}, which the test task runs as root`;
    return `${r.name} (${how})`;
  }).join(", ");
}

/**
 * A test definition that runs only where `needs` are met. Where one is
 * missing the test is ignored and its name ends in `[ignored: needs …]`;
 * under `CI=true` it runs instead, and fails saying what is missing.
 *
 * @example
 * ```ts ignore
 * Deno.test(needing(["root", "btrfs"], {
 *   name: "EIO on read: exit 1 naming the file and offset",
 *   fn: async () => {},
 * }));
 * ```
 */
export function needing(
  needs: readonly NeedLike[],
  def: Deno.TestDefinition,
): Deno.TestDefinition {
  const lacking = missing(needs);
  if (lacking.length === 0) return def;
  const reason = `needs ${describe(lacking)}`;
  if (Deno.env.get("CI") === "true") {
    return {
      ...def,
      ignore: false,
      fn() {
        throw new Error(`CI=true and this test ${reason}`);
      },
    };
  }
  return { ...def, name: `${def.name} [ignored: ${reason}]`, ignore: true };
}
