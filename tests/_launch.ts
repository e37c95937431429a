/**
 * Test helper: N tierbench processes started as a torchrun-style launcher
 * would start them on one machine (RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR, MASTER_PORT), each a node of its own
 * (TIERBENCH_NODE_PER_RANK=1).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { partialPathOf } from "../core/output_file.ts";
import type { ResultDocument } from "../schema/result.ts";
import { ROOT } from "./_helpers.ts";

const host = Deno.hostname();

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

/**
 * Waits for every rank to exit 0 and returns the document written at `out`,
 * its `cluster` checked: launched torchrun-style, every process a node of
 * its own (`HOST#RANK`).
 */
export async function clusterDoc(ranks: LaunchedRanks, out: string): Promise<ResultDocument> {
  const results = await ranks.done();
  for (const [rank, r] of results.entries()) assert.equal(r.code, 0, `rank ${rank}: ${r.stderr}`);
  const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
  const c = doc.cluster!;
  assert.equal(c.launcher, "torchrun");
  assert.equal(c.processes_count, results.length);
  assert.deepEqual(c.nodes, results.map((_, rank) => `${host}#${rank}`));
  return doc;
}

/**
 * Kills rank `victim` (SIGKILL) and checks how the run ends: rank `writer`
 * exits 1 with a last line that names the lost rank (followed, where `then`
 * is given, by what matches it), every other rank fails too, and the
 * partial document beside `out` says failed with `victim` lost. Returns
 * that document.
 */
export async function killRank(
  ranks: LaunchedRanks,
  victim: number,
  out: string,
  { writer = 0, then = "" }: { writer?: number; then?: string } = {},
): Promise<ResultDocument> {
  ranks.children[victim]!.kill("SIGKILL");
  const results = await ranks.done();
  assert.equal(results[writer]!.code, 1, results[writer]!.stderr);
  const line = results[writer]!.stderr.trim().split("\n").at(-1)!;
  assert.match(line, new RegExp(`rank ${victim} on ${host}#${victim} was lost${then}`));
  for (const [rank, r] of results.entries()) {
    if (rank !== victim && rank !== writer) assert.notEqual(r.code, 0, `rank ${rank}`);
  }
  const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out))) as ResultDocument;
  assert.equal(doc.status, "failed");
  assert.deepEqual(doc.cluster!.lost!.map((l) => l.rank), [victim]);
  return doc;
}
