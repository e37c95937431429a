/**
 * The sentences of a plan's `why` (solve.ts): what bounds the phase, how the
 * subgroups are split and cached, each path's readers and writers, how the
 * baselines were costed, host memory and Deep Optimizer States.
 *
 * @module
 */

import type { PlannedPath, Prediction } from "../schema/plan.ts";
import { describeHostMemory, gb } from "./host_memory.ts";
import { concurrentBandwidth, hasCurve } from "./concurrency.ts";
import { FLAT_CONCURRENCY_NOTE } from "../schema/profile.ts";
import type { SolverTier } from "./solver_tier.ts";
import type { SolveInput } from "./_solve_input.ts";
import { buffersOf, type Limit, type SolveContext } from "./_solve_context.ts";
import type { RefinedPlacement } from "./_solve_place.ts";

/**
 * Why the plan is what it is, up to its host memory: what bounds the phase,
 * the split and the cache, each path's readers and writers against the
 * counts `tried`, how the baselines were costed, and a host cache cut short
 * by the swap buffers.
 */
export function explainPlacement(
  c: SolveContext,
  best: RefinedPlacement,
  tried: readonly RefinedPlacement[],
): string[] {
  const { input, tiers, slow, R } = c;
  const { k, contended } = best.rates;
  const busyOf = best.plan.path_s ?? {};
  // what each path moves while both run, reading and writing at once, for the why
  const rates = contended.map((t, i) => ({
    read: (t.mixedReadBw ?? t.readBw) / slow[i]!.read,
    write: (t.mixedWriteBw ?? t.writeBw) / slow[i]!.write,
  }));
  const why = explain(best.paths, tiers, k, rates, c.computeS, busyOf, c.maxCached, c.cacheBytes);
  why.push(...explainLimits(best.paths, tiers, R, best, tried));
  why.push(
    `ZeRO-Infinity costed with all ${R} ranks on ${input.local.label} at once: ${
      concurrentBandwidth(input.local, "read", R).basis
    }; ${concurrentBandwidth(input.local, "write", R).basis}`,
  );
  if (input.remote && tiers.some(hasCurve)) {
    why.push(
      `MLP-Offload's fixed ratio costed with one reader and one writer per path node-wide (its locks): ${
        tiers.map((t) =>
          `${t.label} ${gbps(concurrentBandwidth(t, "read", 1).total)} read, ${
            gbps(concurrentBandwidth(t, "write", 1).total)
          } write at 1`
        ).join("; ")
      }`,
    );
  }
  if (c.cacheBytes < input.hostCacheBytes) {
    why.push(
      `the host cache is cut from ${gb(input.hostCacheBytes)} to ${
        gb(c.cacheBytes)
      }: the pinned swap buffers (${gb(buffersOf(c, c.tierCount))}) leave no more of the ${
        gb(c.available)
      } of host memory available`,
    );
  }
  return why;
}

/** Why the gradients are swapped to the paths or kept in host memory (`mem`: the plan's use). */
export function explainGradients(
  c: SolveContext,
  mem: NonNullable<Prediction["host_memory"]>,
): string {
  const { input, setup, R, P, cacheBytes, gradientNode, available } = c;
  const buffers = buffersOf(c, c.tierCount);
  return c.gradientsSwapped
    ? `gradients swapped to the paths, as ZeRO-Infinity does, and read back in the update: keeping them needs ${
      gb(gradientNode)
    } of fp32 gradients (${setup.bytesPerState} B/param × ${R} ranks × ${
      (P / 1e9).toFixed(2)
    } G params) beside ${gb(cacheBytes)} of host cache and ${gb(buffers)} of pinned swap buffers, ${
      gb(gradientNode + cacheBytes + buffers)
    } in all, more than the ${gb(available)} of host memory available${reserveText(input)}`
    : `gradients kept in host memory (no gradient I/O): ${describeHostMemory(mem)}${
      reserveText(input)
    }`;
}

/** Whether Deep Optimizer States' stride `dosStride` was taken, and why (none without a GPU). */
export function explainDos(c: SolveContext, dosStride: number | undefined): string[] {
  const { dos } = c;
  if (!dos) return [];
  if (dosStride !== undefined) {
    return [
      `Deep Optimizer States, one subgroup in ${dosStride} on the GPU: compute ${
        c.computeS.toFixed(2)
      } s → ${dos.computeS.toFixed(2)} s (CPU and GPU in parallel)`,
    ];
  }
  return [
    dos.stride === undefined
      ? "no Deep Optimizer States stride: the GPU path is no faster than CPU Adam here"
      : `no Deep Optimizer States stride: one subgroup in ${dos.stride} on the GPU would cut compute to ${
        dos.computeS.toFixed(2)
      } s, but the phase waits for I/O, not for compute`,
  ];
}

/** Sentences: each path's readers and writers, their bandwidth at 1 and at R, and what the others would take. */
function explainLimits(
  paths: readonly PlannedPath[],
  tiers: readonly SolverTier[],
  ranks: number,
  chosen: { limits: readonly Limit[]; plan: Prediction },
  tried: readonly { limits: readonly Limit[]; plan: Prediction }[],
): string[] {
  const out: string[] = [];
  const count = (n: number, one: string) =>
    n === 1
      ? `one ${one} at a time`
      : n >= ranks
      ? `all ${n} ${one}s at once`
      : `${n} ${one}s at once`;
  paths.forEach((p, i) => {
    if (p.subgroups === 0) return;
    const t = tiers[i]!;
    const l = chosen.limits[i]!;
    if (!hasCurve(t)) {
      out.push(
        `${p.name} (${t.label}): ${count(l.readers, "reader")}, ${
          count(l.writers, "writer")
        } (MLP-Offload's): ${FLAT_CONCURRENCY_NOTE}`,
      );
      return;
    }
    const fig = (d: "read" | "write", n: number) => {
      const b = concurrentBandwidth(t, d, n);
      return `${gbps(b.total)}${n > 1 ? ` in all (${gbps(b.perProcess)} each)` : ""}`;
    };
    const others = tried.filter((x) => x !== chosen).map((x) =>
      `${x.plan.update_s.toFixed(2)} s with ${
        x.limits.map((m, j) => `${paths[j]!.name} ${m.readers}×${m.writers}`).join(", ")
      }`
    );
    out.push(
      `${p.name} (${t.label}): ${count(l.readers, "reader")}, ${
        count(l.writers, "writer")
      } — read ${fig("read", 1)} at 1 against ${fig("read", ranks)} at ${ranks}, write ${
        fig("write", 1)
      } at 1 against ${fig("write", ranks)} at ${ranks} (${
        concurrentBandwidth(t, "read", l.readers).source
      }); the update ${chosen.plan.update_s.toFixed(2)} s${
        others.length > 0 ? ` against ${others.join(", ")}` : ""
      }`,
    );
  });
  return out;
}

/** Sentences that say why the plan is what it is. */
function explain(
  paths: PlannedPath[],
  tiers: SolverTier[],
  k: number[],
  rates: { read: number; write: number }[],
  computeS: number,
  busyOf: Record<string, number>,
  maxCached: number,
  cacheBytes: number,
): string[] {
  const out: string[] = [];
  const used = paths.filter((p) => p.subgroups > 0);
  const busy = used.map((p) => busyOf[p.name] ?? 0);
  const longest = Math.max(0, ...busy);
  if (computeS >= longest) {
    out.push(
      `compute-bound: CPU Adam takes ${computeS.toFixed(2)} s per rank; the paths are busy ${
        used.map((p, i) => `${p.name} ${busy[i]!.toFixed(2)} s`).join(", ")
      }, hidden under it`,
    );
  } else {
    const p = used[busy.indexOf(longest)]!;
    out.push(
      `I/O-bound on ${p.name} (${p.tier}): ${longest.toFixed(2)} s of reads and writes against ${
        computeS.toFixed(2)
      } s of CPU Adam`,
    );
  }
  const cost = (i: number) =>
    `${k[i]!.toFixed(3)} s a subgroup on ${tiers[i]!.label} (read ${gbps(rates[i]!.read)}, write ${
      gbps(rates[i]!.write)
    }, contention included)`;
  if (paths.length > 1 && used.length > 1) {
    const [a, b] = paths as [PlannedPath, PlannedPath];
    out.push(
      `split ${a.subgroups}:${b.subgroups} between ${a.tier} and ${b.tier} to even their busy times: ${
        cost(0)
      } against ${cost(1)}`,
    );
  } else if (paths.length > 1) {
    const unused = paths.findIndex((p) => p.subgroups === 0);
    const other = 1 - unused;
    out.push(
      `everything on ${paths[other]!.tier}: ${cost(unused)} would lengthen the phase beyond ${
        cost(other)
      }`,
    );
  }
  const cached = paths.reduce((t, p) => t + p.cache_subgroups, 0);
  out.push(
    cached >= maxCached
      ? `the host cache is the binding limit: ${cached} subgroups per rank fit in ${
        (cacheBytes / 2 ** 30).toFixed(0)
      } GiB; more would cut I/O further`
      : `${cached} subgroups per rank cached in host memory (room for ${maxCached})`,
  );
  return out;
}

/** ", the node's N GiB less a reserve of M GiB" where a reserve is set. */
export function reserveText(input: SolveInput): string {
  if (input.hostMemoryBytes === undefined) return "";
  const reserve = input.hostReserveBytes ?? 0;
  return ` (the node's ${(input.hostMemoryBytes / 2 ** 30).toFixed(1)} GiB less ${
    (reserve / 2 ** 30).toFixed(1)
  } GiB reserved)`;
}

/** Bandwidth in GB/s, two decimals. */
function gbps(x: number): string {
  return `${(x / 1e9).toFixed(2)} GB/s`;
}
