/**
 * What DeepSpeed v0.14.5 refuses, or fails on, for a model and a config:
 * the optimizer swapper running out of its buffer_count pinned buffers,
 * writes its aio threads cannot split, and parameter-offload buffers too few
 * or too small. Each refusal names the setting, DeepSpeed's own words and
 * the source line.
 *
 * @module
 */

import { type Zero3Layout, zero3Layout, type Zero3Settings } from "./zero3.ts";
import type { TrainingSetup } from "./setup.ts";
import { settingError } from "./zero3.ts";

const OO = "zero_optimization.offload_optimizer";
const OP = "zero_optimization.offload_param";

/** Layouts already checked, per setup and settings (a program asks for one per phase). */
const checked = new WeakMap<TrainingSetup, Map<string, Zero3Layout>>();

/** The layout, refused where DeepSpeed would fail with it. */
export function checkedLayout(setup: TrainingSetup, settings: Zero3Settings): Zero3Layout {
  let mine = checked.get(setup);
  if (!mine) checked.set(setup, mine = new Map());
  const key = JSON.stringify(settings);
  const known = mine.get(key);
  if (known) return known;
  const layout = zero3Layout(setup, settings);
  checkSwapBuffers(layout, settings);
  checkThreads(setup, layout, settings);
  checkParamBuffers(layout, settings);
  mine.set(key, layout);
  return layout;
}

/** Where a simulated step ran out of buffers. */
interface Shortage {
  readonly step: number;
  readonly subgroup: number;
  readonly words: string;
  readonly source: string;
}

/**
 * Plays the first two optimizer steps' buffer use with `count` buffers:
 * each swap-in takes one buffer per state tensor and one for the gradients
 * (partitioned_optimizer_swapper.py L71–76, pipelined_optimizer_swapper.py
 * L205–211); the first step's new states take more at swap-out
 * (optimizer_utils.py L356–377; pipelined L171–180); the pipelined swapper
 * holds the next subgroup's read and the last one's write at once.
 */
function shortage(layout: Zero3Layout, s: Zero3Settings, count: number): Shortage | undefined {
  const swapped = layout.subgroups.filter((sg) => sg.swapped);
  for (const step of [1, 2]) {
    const tensors = step === 1 ? 1 : 1 + s.states.length;
    let free = count;
    let held = 0; // the pipelined swapper's prefetched read
    let writing = 0; // and its write in flight
    for (const [k, sg] of swapped.entries()) {
      const at = (words: string, source: string): Shortage => ({
        step,
        subgroup: sg.index,
        words,
        source,
      });
      const next = k + 1 < swapped.length;
      if (!s.pipeline) {
        if (tensors + 1 > free) {
          return at("assert pinned_buffers is not None", "partitioned_optimizer_swapper.py L73–76");
        }
        if (step === 1 && free - 2 < 1) {
          return at("ValueError: range() arg 3 must not be zero", "optimizer_utils.py L358–361");
        }
        continue;
      }
      const pipelined =
        "PipelinedOptimizerSwapper ran out of swap buffers, try increasing 'buffer_count'";
      let mine = held;
      if (mine === 0) {
        if (tensors + 1 > free) return at(pipelined, "pipelined_optimizer_swapper.py L207–211");
        free -= mine = tensors + 1;
      }
      held = 0;
      if (s.pipelineRead && next) {
        if (tensors + 1 > free) return at(pipelined, "pipelined_optimizer_swapper.py L207–211");
        free -= held = tensors + 1;
      }
      free += writing; // swap_out waits for the write before
      writing = 0;
      const fresh = step === 1 ? s.states.length : 0;
      if (fresh > free) {
        return at(
          "assert new_alloc_buffers is not None",
          "pipelined_optimizer_swapper.py L173–177",
        );
      }
      free -= fresh;
      if (s.pipelineWrite && next) writing = mine + fresh;
      else free += mine + fresh;
    }
  }
  return undefined;
}

/**
 * Refuses a buffer_count DeepSpeed's optimizer swapper runs out of, with
 * the smallest count that is enough.
 */
export function checkSwapBuffers(layout: Zero3Layout, s: Zero3Settings): void {
  const short = shortage(layout, s, s.bufferCount);
  if (short === undefined) return;
  let enough = s.bufferCount + 1;
  while (shortage(layout, s, enough) !== undefined) enough++;
  const swapper = s.pipeline ? "pipelined" : "serial";
  const n = layout.subgroups.filter((sg) => sg.swapped).length;
  throw settingError(
    s,
    "buffer-count",
    `${OO}.buffer_count`,
    `${s.bufferCount} is too few for the ${swapper} swapper with ${n} swapped subgroup${
      n === 1 ? "" : "s"
    }: it needs ${enough} (DeepSpeed fails in step ${short.step} at subgroup ${short.subgroup}: ` +
      `"${short.words}", deepspeed/runtime/swap_tensor/${short.source})`,
  );
}

/**
 * With T aio threads each transfer is split in T equal parts; the serial
 * swapper writes the fp32 partition unpadded, so a subgroup whose bytes T
 * does not divide makes DeepSpeed's write fail (`_is_valid_parallel_aio_op`,
 * csrc/aio/py_lib/deepspeed_py_aio_handle.cpp L197–208, then the assert in
 * swap_tensor/utils.py L26).
 */
function checkThreads(setup: TrainingSetup, layout: Zero3Layout, s: Zero3Settings): void {
  if (s.pipeline || s.threads === 1) return;
  const odd = layout.subgroups.find((sg) =>
    sg.swapped && (sg.elements * setup.bytesPerState) % s.threads !== 0
  );
  if (odd === undefined) return;
  throw settingError(
    s,
    "threads",
    "aio.thread_count",
    `${s.threads} does not divide subgroup ${odd.index}'s ${
      odd.elements * setup.bytesPerState
    } bytes, ` +
      'which the serial swapper writes unpadded (DeepSpeed: "not divisible by thread count", ' +
      "csrc/aio/py_lib/deepspeed_py_aio_handle.cpp L197–208)",
  );
}

/**
 * offload_param: every parameter partition swapped to NVMe takes one buffer
 * of buffer_size elements, and must be smaller than it (`get_buffer`,
 * swap_tensor/partitioned_param_swapper.py L343–345); a module's
 * parameters are read at once, one buffer each (`swap_in`, L298–300).
 */
function checkParamBuffers(layout: Zero3Layout, s: Zero3Settings): void {
  const op = s.offloadParam;
  if (op === undefined) return;
  const big = layout.params.find((p) => p.swappable && p.partition >= op.bufferSize);
  if (big !== undefined) {
    throw settingError(
      s,
      "deepspeed-config",
      `${OP}.buffer_size`,
      `${op.bufferSize} elements is not more than ${big.name}'s partition (${big.partition}): ` +
        'DeepSpeed asserts "More elements than buffer size" ' +
        "(deepspeed/runtime/swap_tensor/partitioned_param_swapper.py L345)",
    );
  }
  const perModule = new Map<string, number>();
  for (const p of layout.params) {
    if (p.onNvme) perModule.set(p.module, (perModule.get(p.module) ?? 0) + 1);
  }
  const most = Math.max(0, ...perModule.values());
  if (most > op.bufferCount || (layout.params.some((p) => p.swappable) && op.bufferCount < 1)) {
    const name = [...perModule.entries()].find(([, n]) => n === most)?.[0] ?? "";
    throw settingError(
      s,
      "deepspeed-config",
      `${OP}.buffer_count`,
      `${op.bufferCount} is too few: module ${name} reads ${most} parameters from NVMe at once ` +
        '(DeepSpeed asserts "Not enough buffers … for swapping", ' +
        "deepspeed/runtime/swap_tensor/partitioned_param_swapper.py L298–300)",
    );
  }
}
