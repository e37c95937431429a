/**
 * One member of a test group: joins the group its launcher describes, runs
 * the steps of the scenario in PROBE, and prints JSON lines (`{"joined":…}`
 * once joined, then one result line); exits 1 when a step failed.
 *
 * PROBE: "ok" (barrier, gather, broadcast, barrier), "lost" (rank
 * PROBE_VICTIM waits to be killed while the others wait at a barrier),
 * "late" (rank PROBE_VICTIM never reaches the barrier), "version" (every
 * rank joins with PROBE_VERSION or 1.0.0), "die" (rank PROBE_VICTIM kills
 * itself while the others wait at a barrier; for mpirun).
 *
 * @module
 */

import { detectLaunch, joinGroup } from "../mod.ts";

const scenario = Deno.env.get("PROBE") ?? "ok";
const victim = Number(Deno.env.get("PROBE_VICTIM") ?? "2");
const info = detectLaunch();
const enc = new TextEncoder();
const dec = new TextDecoder();
const say = (o: unknown) => console.log(JSON.stringify(o));

function describe(e: unknown) {
  if (!(e instanceof Error)) return { name: "unknown", message: String(e) };
  const x = e as Error & {
    rank?: number;
    node?: string;
    ranks?: unknown;
    mine?: unknown;
    theirs?: unknown;
  };
  return {
    name: x.name,
    message: x.message,
    rank: x.rank,
    node: x.node,
    ranks: x.ranks,
    mine: x.mine,
    theirs: x.theirs,
  };
}

/** Keeps the process alive, doing nothing, for `ms`. */
const idle = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  await using group = await joinGroup(info, {
    version: Deno.env.get("PROBE_VERSION") ?? "1.0.0",
    timeoutMs: 30_000,
  });
  say({ joined: info.rank });
  if (scenario === "ok") {
    await group.barrier("start", 30_000);
    const payload = enc.encode(`payload of rank ${info.rank}`);
    const gathered = await group.gather(payload, 30_000);
    const run = await group.broadcast(enc.encode(info.rank === 0 ? "run-42" : "ignored"), 30_000);
    await group.barrier("end", 30_000);
    say({
      rank: info.rank,
      ok: true,
      launcher: info.launcher,
      transport: info.transport,
      root: group.root,
      members: group.members,
      gathered: gathered?.map((g) => dec.decode(g)),
      broadcast: dec.decode(run),
    });
  } else if (scenario === "lost" || scenario === "late") {
    if (info.rank === victim) {
      await idle(scenario === "lost" ? 120_000 : 8_000);
      say({ rank: info.rank, ok: true });
      Deno.exit(0);
    }
    await group.barrier(
      scenario === "lost" ? "doomed" : "late step",
      scenario === "lost" ? 90_000 : 1_500,
    );
    say({ rank: info.rank, ok: true });
  } else if (scenario === "die") {
    if (info.rank === victim) Deno.kill(Deno.pid, "SIGKILL");
    await group.barrier("doomed", 60_000);
    say({ rank: info.rank, ok: true });
  } else if (scenario === "version") {
    say({ rank: info.rank, ok: true });
  }
} catch (e) {
  say({ rank: info.rank, ok: false, error: describe(e) });
  Deno.exit(1);
}
