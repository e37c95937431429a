/**
 * Test helper: N tierbench processes started as a torchrun-style launcher
 * would start them on one machine (RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR, MASTER_PORT), each a node of its own
 * (TIERBENCH_NODE_PER_RANK=1).
 *
 * @module
 */

import { join } from "node:path";
import { ROOT } from "./_helpers.ts";

/** A port nothing listens on now. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Processes started by {@linkcode launchRanks}. */
export interface LaunchedRanks {
  readonly children: Deno.ChildProcess[];
  /** Each rank's exit code, stdout and stderr, once all have exited. */
  done(): Promise<{ code: number; stdout: string; stderr: string }[]>;
}

/**
 * Starts `ranks` (default: all) of `size` tierbench processes running
 * `args` (the same for all, or each rank's own), torchrun-style, every
 * process a node of its own.
 */
export function launchRanks(
  size: number,
  args: readonly string[] | ((rank: number) => readonly string[]),
  ranks: readonly number[] = [...Array(size).keys()],
): LaunchedRanks {
  const port = String(freePort());
  const children = ranks.map((rank) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-q",
        "--allow-all",
        join(ROOT, "main.ts"),
        ...(typeof args === "function" ? args(rank) : args),
      ],
      stdout: "piped",
      stderr: "piped",
      env: {
        NO_COLOR: "1",
        RANK: String(rank),
        WORLD_SIZE: String(size),
        LOCAL_RANK: String(rank),
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: port,
        TIERBENCH_NODE_PER_RANK: "1",
      },
    }).spawn()
  );
  const dec = new TextDecoder();
  return {
    children,
    done: () =>
      Promise.all(children.map(async (c) => {
        const out = await c.output();
        return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
      })),
  };
}
