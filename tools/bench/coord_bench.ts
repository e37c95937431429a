/**
 * What coordinating a multi-process run costs: starts 3 processes on
 * loopback under each transport at hand (torchrun-style TCP; Open MPI's and
 * MPICH's mpirun when installed), times 200 barriers and 50 gathers of a
 * ~64 KiB result document on rank 0, and prints per-step medians and p99 and
 * the share of a 10 s phase that one barrier plus one gather take.
 *
 * Run: `deno task bench:coord`. (With `--worker` it is one member of a group
 * its launcher describes; the launcher part starts those.)
 *
 * @example
 * ```sh
 * deno task bench:coord
 * ```
 *
 * @module
 */

import { detectLaunch, joinGroup } from "../../cluster/mod.ts";

const BARRIERS = 200;
const GATHERS = 50;
const DOC_BYTES = 64 * 1024;
const PHASE_MS = 10_000;
const SIZE = 3;
const TIMEOUT_MS = 60_000;

interface Samples {
  barrier: number[];
  gather: number[];
}

async function worker(): Promise<void> {
  const info = detectLaunch();
  await using group = await joinGroup(info, { version: "bench", timeoutMs: TIMEOUT_MS });
  const doc = new TextEncoder().encode(
    JSON.stringify({ rank: info.rank, pad: "x".repeat(DOC_BYTES) }).slice(0, DOC_BYTES),
  );
  for (let i = 0; i < 10; i++) await group.barrier("warm-up", TIMEOUT_MS);
  const s: Samples = { barrier: [], gather: [] };
  for (let i = 0; i < BARRIERS; i++) {
    const t0 = performance.now();
    await group.barrier(`b${i}`, TIMEOUT_MS);
    s.barrier.push(performance.now() - t0);
  }
  for (let i = 0; i < GATHERS; i++) {
    // a barrier first, so each gather starts with every member ready, as after a phase
    await group.barrier(`g${i}`, TIMEOUT_MS);
    const t0 = performance.now();
    const got = await group.gather(doc, TIMEOUT_MS);
    s.gather.push(performance.now() - t0);
    if (got !== undefined && got.some((g) => g.length !== doc.length)) {
      throw new Error("a gathered document has the wrong size");
    }
  }
  if (info.rank === 0) console.log(`SAMPLES ${JSON.stringify(s)}`);
}

function which(cmd: string): boolean {
  return (Deno.env.get("PATH") ?? "").split(":").some((d) => {
    try {
      return Deno.statSync(`${d}/${cmd}`).isFile;
    } catch {
      return false;
    }
  });
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

const self = new URL(import.meta.url).pathname;
const deno = Deno.execPath();
const clean = { TIERBENCH_NODE_PER_RANK: "1" };

async function samplesOf(children: Deno.ChildProcess[]): Promise<Samples> {
  const outs = await Promise.all(children.map((c) => c.output()));
  const bad = outs.find((o) => !o.success);
  if (bad !== undefined) throw new Error(new TextDecoder().decode(bad.stderr));
  const line = outs.map((o) => new TextDecoder().decode(o.stdout)).join("\n").split("\n")
    .find((l) => l.startsWith("SAMPLES "));
  if (line === undefined) throw new Error("rank 0 printed no samples");
  return JSON.parse(line.slice(8));
}

function torchrun(): Promise<Samples> {
  const port = String(freePort());
  return samplesOf(Array.from({ length: SIZE }, (_, rank) =>
    new Deno.Command(deno, {
      args: ["run", "-A", self, "--worker"],
      env: {
        ...clean,
        RANK: String(rank),
        WORLD_SIZE: String(SIZE),
        LOCAL_RANK: String(rank),
        MASTER_ADDR: "127.0.0.1",
        MASTER_PORT: port,
      },
      stdout: "piped",
      stderr: "piped",
    }).spawn()));
}

function mpirun(cmd: string, flags: string[]): Promise<Samples> {
  return samplesOf([
    new Deno.Command(cmd, {
      args: [...flags, "-np", String(SIZE), deno, "run", "-A", self, "--worker"],
      env: clean,
      stdout: "piped",
      stderr: "piped",
    }).spawn(),
  ]);
}

async function main(): Promise<void> {
  const runs: [string, () => Promise<Samples>][] = [["tcp (torchrun-style)", torchrun]];
  if (which("mpirun.openmpi")) {
    runs.push(["mpi (Open MPI)", () =>
      mpirun("mpirun.openmpi", [
        "--allow-run-as-root",
        "--oversubscribe",
        "-x",
        "TIERBENCH_NODE_PER_RANK",
      ])]);
  }
  if (which("mpirun.mpich")) {
    runs.push([
      "mpi (MPICH)",
      () => mpirun("mpirun.mpich", ["-env", "TIERBENCH_NODE_PER_RANK", "1"]),
    ]);
  }
  console.log(
    `${SIZE} processes on loopback; ${BARRIERS} barriers, ${GATHERS} gathers of ${
      DOC_BYTES / 1024
    } KiB; times on rank 0 in ms`,
  );
  console.log(
    "transport              barrier p50   p99    gather p50   p99    share of a 10 s phase",
  );
  for (const [name, run] of runs) {
    const s = await run();
    const b50 = quantile(s.barrier, 0.5), b99 = quantile(s.barrier, 0.99);
    const g50 = quantile(s.gather, 0.5), g99 = quantile(s.gather, 0.99);
    const share = (b50 + g50) / PHASE_MS * 100;
    console.log(
      `${name.padEnd(22)} ${b50.toFixed(3).padStart(10)} ${b99.toFixed(3).padStart(7)} ${
        g50.toFixed(3).padStart(11)
      } ${g99.toFixed(3).padStart(7)}    ${share.toFixed(4)} %`,
    );
  }
}

if (import.meta.main) {
  if (Deno.args.includes("--worker")) await worker();
  else await main();
}
