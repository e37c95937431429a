/**
 * The command line every local service's launcher shares: a commander
 * program with `--dir`, a `status` command that prints one line per daemon,
 * usage errors as one line and the help (exit status 2), failures as one
 * line (exit status 1).
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { message } from "./process.ts";

/** Exit status for usage errors. */
export const EXIT_USAGE = 2;

/** What a launcher says of itself. */
export interface ServiceProgram {
  /** The script, as users run it (`deno run -A tools/services/ceph/main.ts`). */
  script: string;
  usage: string;
  description: string;
  /** `--dir`'s help. */
  dirHelp: string;
}

/**
 * A commander program with a service's name, usage, `--dir` and quiet errors.
 *
 * @example
 * ```ts
 * import { serviceProgram } from "./cli.ts";
 * const program = serviceProgram({
 *   script: "demo.ts",
 *   usage: "<up|down> [--dir DIR]",
 *   description: "A demo service.",
 *   dirHelp: "state directory",
 * });
 * if (program.name() !== "demo.ts") throw new Error("the program is named for its script");
 * ```
 */
export function serviceProgram(s: ServiceProgram) {
  return new Command()
    .name(s.script)
    .usage(s.usage)
    .description(s.description)
    .option("--dir <DIR>", s.dirHelp)
    .configureHelp({ helpWidth: 100, showGlobalOptions: true })
    .exitOverride()
    .configureOutput({ writeErr: () => {}, outputError: () => {} });
}

/** `{ dir }` as the program's `--dir` gave it, `{}` without one. */
export function dirOption(program: { opts(): { dir?: string } }): { dir?: string } {
  const dir = program.opts().dir;
  return dir === undefined ? {} : { dir };
}

/** What a service's status says: one line per daemon, and whether all are up. */
export interface ServiceStatus {
  lines: string[];
  up: boolean;
}

/** The exit status a command's action sets (0 unless it says otherwise). */
export interface ExitStatus {
  code: number;
}

/**
 * Adds `status`: prints one line per daemon; exits 1 when one is down or
 * when `dirOf`'s directory holds no cluster.
 */
export function addStatusCommand(
  program: Command<[], { dir?: string }>,
  description: string,
  status: (opts: { dir?: string }) => Promise<ServiceStatus | undefined>,
  dirOf: (dir: string | undefined) => string,
  exit: ExitStatus,
): void {
  program.command("status")
    .description(description)
    .action(async () => {
      const s = await status(dirOption(program));
      if (s === undefined) {
        console.log(`no cluster in ${dirOf(program.opts().dir)}`);
        exit.code = 1;
        return;
      }
      console.log(s.lines.join("\n"));
      exit.code = s.up ? 0 : 1;
    });
}

/**
 * Parses `args` and runs the command; resolves to the exit status. A usage
 * error prints one line, prefixed with `name`, and the help.
 */
export async function parseService(
  program: Command<[], { dir?: string }>,
  args: string[],
  name: string,
  exit: ExitStatus,
): Promise<number> {
  try {
    await program.parseAsync(args, { from: "user" });
    return exit.code;
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    if (e.exitCode === 0) return 0; // --help
    // "commander.help": no command given (commander would print the help as its error)
    const why = e.code === "commander.help" ? "no command given" : e.message;
    console.error(`${name}: ${why.replace(/^error: /, "")}`);
    console.error(program.helpInformation().trimEnd());
    return EXIT_USAGE;
  }
}

/** A launcher: its program, its `status`, and the directory `--dir` names. */
export interface ServiceSpec extends ServiceProgram {
  /** The prefix of its error lines ("ceph", "slurm"). */
  name: string;
  /** `status`'s help. */
  statusHelp: string;
  status: (opts: { dir?: string }) => Promise<ServiceStatus | undefined>;
  /** The state directory `--dir` (or its default) names. */
  dirOf: (dir: string | undefined) => string;
}

/**
 * Runs a launcher's command line: its program with `--dir`, the commands
 * `define` adds, and `status`; resolves to the exit status.
 */
export async function runService(
  spec: ServiceSpec,
  args: string[],
  define: (program: Command<[], { dir?: string }>, exit: ExitStatus) => void,
): Promise<number> {
  const exit: ExitStatus = { code: 0 };
  const program = serviceProgram(spec);
  define(program, exit);
  addStatusCommand(program, spec.statusHelp, spec.status, spec.dirOf, exit);
  return await parseService(program, args, spec.name, exit);
}

/** Runs a launcher's `main` on the process's arguments and exits with its status (1, with one line, on a failure). */
export async function runMain(name: string, main: (args: string[]) => Promise<number>) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`${name}: ${message(e)}`);
    Deno.exit(1);
  }
}
