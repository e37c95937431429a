/**
 * Installs what the test suite needs ({@linkcode REQUIREMENTS}) where it is
 * missing; the test task runs it before `deno test`.
 *
 * As root: when something is missing, prints one line naming the Debian
 * packages, installs them with apt-get (output in {@linkcode LOG}) and exits
 * 1 naming the log if that fails. Not root: prints one line naming what is
 * missing, whose tests will be ignored, and exits 0. Prints nothing when
 * nothing is missing.
 *
 * ```sh
 * deno run --allow-all tests/install_deps.ts
 * ```
 *
 * @module
 */

import {
  describe,
  missing,
  packagesFor,
  packageText,
  type Requirement,
  REQUIREMENTS,
} from "./_requirements.ts";

/** Where apt-get's output goes. */
export const LOG = "/tmp/tierbench-test-deps.log";

/** Copies `from` to the end of `to`, all of it. */
async function copy(from: ReadableStream<Uint8Array>, to: Deno.FsFile): Promise<void> {
  for await (const chunk of from) {
    for (let done = 0; done < chunk.length;) done += await to.write(chunk.subarray(done));
  }
}

/** Runs apt-get non-interactively, its output appended to `log`; whether it succeeded. */
async function aptGet(args: string[], log: Deno.FsFile): Promise<boolean> {
  await log.write(new TextEncoder().encode(`$ apt-get ${args.join(" ")}\n`));
  const child = new Deno.Command("apt-get", {
    args,
    env: { DEBIAN_FRONTEND: "noninteractive" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const [status] = await Promise.all([
    child.status,
    copy(child.stdout, log),
    copy(child.stderr, log),
  ]);
  return status.success;
}

/**
 * Updates apt's lists, then installs the packages of `lacking` (a renamed
 * package chosen among its alternatives from the fresh lists); the packages,
 * or undefined when apt-get failed (its output in {@linkcode LOG}).
 */
async function install(lacking: readonly Requirement[]): Promise<string[] | undefined> {
  using log = await Deno.open(LOG, { write: true, create: true, truncate: true });
  try {
    if (!await aptGet(["update", "-qq"], log)) return undefined;
    const packages = packagesFor(lacking);
    await log.write(new TextEncoder().encode(`install_deps: ${packages.join(" ")}\n`));
    const ok = await aptGet(["install", "-y", "-qq", "--no-install-recommends", ...packages], log);
    return ok ? packages : undefined;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    await log.write(new TextEncoder().encode("apt-get is not installed\n"));
    return undefined;
  }
}

/** Does what the module says; the exit status. */
async function main(): Promise<number> {
  const lacking = missing(Object.values(REQUIREMENTS));
  if (lacking.length === 0) return 0;
  const packages = packageText(lacking);
  const fate = (some: readonly unknown[]) =>
    `the tests that need ${some.length === 1 ? "it" : "them"} will ` +
    (Deno.env.get("CI") === "true" ? "fail (CI=true)" : "be ignored");
  if (Deno.uid() !== 0) {
    const names = lacking.map((r) => r.name).join(", ");
    const pkgs = packages === "" ? "" : ` (packages: ${packages})`;
    console.log(
      `install_deps: not root, so nothing is installed; missing ${names}${pkgs}: ${fate(lacking)}`,
    );
    return 0;
  }
  const unprovided = lacking.filter((r) => r.packages.length === 0);
  const rest = unprovided.length === 0
    ? ""
    : `; missing ${describe(unprovided)}: ${fate(unprovided)}`;
  if (packages === "") {
    console.log(`install_deps: nothing to install${rest}`);
    return 0;
  }
  console.log(`install_deps: installing ${packages} (log: ${LOG})${rest}`);
  const provided = lacking.filter((r) => r.packages.length > 0);
  if (!(await install(provided))) {
    console.log(`install_deps: apt-get failed to install ${packages}; see ${LOG}`);
    return 1;
  }
  const still = missing(lacking.filter((r) => r.packages.length > 0), { fresh: true });
  if (still.length > 0) {
    const names = still.map((r) => r.name).join(", ");
    console.log(`install_deps: installed, but ${names} still missing; see ${LOG}`);
    return 1;
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
