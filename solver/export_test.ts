import assert from "node:assert/strict";
import {
  DEEPSPEED_0_13_3,
  DEEPSPEED_0_16_9,
  DEEPSPEED_KEY_SETS,
  type KeyType,
  MLP_OFFLOAD_FORK,
} from "./deepspeed_keys.ts";
import {
  DEEPSPEED_VERSIONS,
  deepspeedConfig,
  deepspeedKeySet,
  DEFAULT_DEEPSPEED_VERSION,
  keyProblems,
  mlpOffloadSettings,
} from "./export.ts";
import {
  PLAN_SCHEMA,
  type PlanDocument,
  type PlannedPath,
  type Prediction,
} from "../schema/plan.ts";

const prediction: Prediction = {
  update_s: 10,
  read_s: 8,
  write_s: 6,
  compute_s: 4,
  overlap_s: 8,
  bytes: { "local:read": 1e12, "local:write": 1e12 },
  feasible: true,
};

const path = (
  name: string,
  tier: string,
  subgroups: number,
  extra: Partial<PlannedPath> = {},
): PlannedPath => ({
  name,
  tier,
  subgroups,
  ratio: subgroups / 179,
  cache_subgroups: 2,
  readers: 1,
  writers: 1,
  bs: 2 << 20,
  iodepth: 8,
  ...extra,
});

/** A 70B plan on 4 ranks: 179 subgroups of 1e8 elements, 119 local, 60 on a PFS. */
function samplePlan(over: Partial<PlanDocument["placement"]> = {}): PlanDocument {
  return {
    schema: PLAN_SCHEMA,
    created: "2026-11-21T12:00:00.000Z",
    profile: {
      source: "results/node-1.json",
      host: "node-1",
      tiers: ["memory:/dev/shm", "file:/mnt/nvme", "pfs:/mnt/lustre/scratch"],
    },
    setup: { model: "70b", parameters: 71.3e9, ranks_per_node: 4, subgroup_elements: 1e8 },
    inputs: { host_cache_bytes: 64 * 2 ** 30 },
    placement: {
      host_subgroups: 0,
      paths: [path("local", "file", 119), path("remote", "pfs", 60)],
      order: "alternating",
      ...over,
    },
    predictions: { zero_offload: prediction, zero_infinity: prediction, plan: prediction },
    why: ["the local path's write bandwidth binds"],
    exports: { deepspeed: {}, mlp_offload: {} },
  };
}

/** A plan DeepSpeed can run as it is: every subgroup on the local path, no cache. */
const localOnly = () =>
  samplePlan({
    paths: [{
      name: "local",
      tier: "file",
      subgroups: 179,
      ratio: 1,
      cache_subgroups: 0,
      bs: 2 << 20,
      iodepth: 8,
    }],
    order: "ascending",
  });

const isType = (v: unknown, t: KeyType) =>
  t === "bool"
    ? typeof v === "boolean"
    : t === "int"
    ? Number.isSafeInteger(v)
    : t === "float"
    ? typeof v === "number"
    : t === "object"
    ? typeof v === "object" && v !== null
    : typeof v === "string";

/** Every key of `block` is in `allowed`, with its type. */
function assertInSet(
  block: Record<string, unknown>,
  allowed: Readonly<Record<string, KeyType>>,
  where: string,
) {
  for (const [k, v] of Object.entries(block)) {
    const type = allowed[k];
    assert.ok(type !== undefined, `${where}.${k} is not in the runtime's key set`);
    assert.ok(isType(v, type), `${where}.${k} = ${JSON.stringify(v)} is not a ${type}`);
  }
}

Deno.test("deepspeedConfig() defaults to the newest verified version, 0.16.9", () => {
  assert.equal(DEFAULT_DEEPSPEED_VERSION, "0.16.9");
  assert.deepEqual([...DEEPSPEED_VERSIONS], Object.keys(DEEPSPEED_KEY_SETS));
  const ds = deepspeedConfig(localOnly());
  assert.equal(ds.deepspeed_version, "0.16.9");
  assert.deepEqual(ds.sources, DEEPSPEED_0_16_9.sources);
  // the version goes beside the config, never into it
  assert.deepEqual(Object.keys(ds.config).sort(), ["aio", "zero_optimization"]);
});

for (const version of DEEPSPEED_VERSIONS) {
  Deno.test(`deepspeedConfig() for ${version}: every key is one the runtime reads, with its type`, () => {
    const keys = DEEPSPEED_KEY_SETS[version]!;
    for (const plan of [localOnly(), samplePlan()]) {
      const { config } = deepspeedConfig(plan, { deepspeedVersion: version });
      const zero = config.zero_optimization as Record<string, unknown>;
      assertInSet(zero, keys.zeroOptimization, "zero_optimization");
      assertInSet(
        config.zero_optimization.offload_optimizer,
        keys.offloadOptimizer,
        "offload_optimizer",
      );
      assert.ok(config.aio);
      assertInSet(config.aio, keys.aio, "aio");
      assert.equal("offload_param" in zero, false);
      assert.equal("pipeline" in config.zero_optimization.offload_optimizer, false);
    }
  });
}

Deno.test("deepspeedConfig(): booleans are booleans and counts are integers, in the JSON too", () => {
  for (const version of DEEPSPEED_VERSIONS) {
    const { config } = deepspeedConfig(localOnly(), { deepspeedVersion: version });
    const oo = config.zero_optimization.offload_optimizer;
    const aio = config.aio!;
    for (const b of [oo.pin_memory, oo.pipeline_read, oo.pipeline_write, oo.fast_init]) {
      assert.equal(typeof b, "boolean");
    }
    for (const b of [aio.single_submit, aio.overlap_events]) assert.equal(typeof b, "boolean");
    const threads = aio[DEEPSPEED_KEY_SETS[version]!.threadKey];
    for (const n of [aio.block_size, aio.queue_depth, threads, oo.buffer_count]) {
      assert.ok(Number.isSafeInteger(n), `${n}`);
    }
    assert.ok(Number.isSafeInteger(config.zero_optimization.sub_group_size));
    assert.equal(config.zero_optimization.stage, 3);
    const json = JSON.stringify(config);
    assert.doesNotMatch(json, /"(true|false)"/, "a boolean written as a string");
    assert.doesNotMatch(json, /\d[eE][+-]?\d/, "a number in exponent form");
    assert.deepEqual(JSON.parse(json), config);
  }
});

Deno.test("deepspeedConfig(): thread_count for 0.13.3, intra_op_parallelism and use_gds for 0.16.9", () => {
  const old = deepspeedConfig(localOnly(), { deepspeedVersion: "0.13.3", aioThreads: 4 });
  assert.equal(old.config.aio!.thread_count, 4);
  assert.equal("intra_op_parallelism" in old.config.aio!, false);
  assert.equal("use_gds" in old.config.aio!, false);
  const now = deepspeedConfig(localOnly(), { deepspeedVersion: "0.16.9", aioThreads: 4 });
  assert.equal(now.config.aio!.intra_op_parallelism, 4);
  assert.equal("thread_count" in now.config.aio!, false);
  assert.equal(now.config.aio!.use_gds, false);
  // the key sets agree: each version's thread key is its own
  assert.equal(DEEPSPEED_0_13_3.threadKey, "thread_count");
  assert.equal(DEEPSPEED_0_16_9.threadKey, "intra_op_parallelism");
  assert.equal("intra_op_parallelism" in DEEPSPEED_0_13_3.aio, false);
  assert.equal("thread_count" in DEEPSPEED_0_16_9.aio, false);
  // the default is one thread (DeepSpeed's default, and what tierbench measured)
  assert.equal(deepspeedConfig(localOnly()).config.aio!.intra_op_parallelism, 1);
});

Deno.test("deepspeedConfig(): nvme on the local path's directory, aio at its bs and iodepth", () => {
  const ds = deepspeedConfig(localOnly());
  assert.deepEqual(ds.config, {
    zero_optimization: {
      stage: 3,
      offload_optimizer: {
        device: "nvme",
        nvme_path: "/mnt/nvme",
        pin_memory: true,
        buffer_count: 16,
        pipeline_read: true,
        pipeline_write: true,
        fast_init: false,
      },
      sub_group_size: 100000000,
    },
    aio: {
      block_size: 2097152,
      queue_depth: 8,
      intra_op_parallelism: 1,
      single_submit: false,
      overlap_events: true,
      use_gds: false,
    },
  });
  assert.equal(ds.matches_plan, true);
  assert.deepEqual(ds.notes, []);
  const moved = deepspeedConfig(localOnly(), { dirs: { local: "/scratch/ds" }, bufferCount: 24 });
  assert.equal(moved.config.zero_optimization.offload_optimizer.nvme_path, "/scratch/ds");
  assert.equal(moved.config.zero_optimization.offload_optimizer.buffer_count, 24);
});

Deno.test("deepspeedConfig(): what stock DeepSpeed cannot do is noted, not silently dropped", () => {
  const ds = deepspeedConfig(samplePlan({ host_subgroups: 4, dos_stride: 4 }));
  assert.equal(ds.matches_plan, false);
  assert.equal(ds.config.zero_optimization.offload_optimizer.nvme_path, "/mnt/nvme");
  for (
    const re of [/60 subgroups per rank on the remote path/, /cache/, /alternating/, /host/, /GPU/]
  ) {
    assert.ok(ds.notes.some((n) => re.test(n)), `no note matches ${re}: ${ds.notes.join(" | ")}`);
  }
});

Deno.test("deepspeedConfig(): a plan that keeps everything in host memory is ZeRO-Offload, without aio", () => {
  const ds = deepspeedConfig(
    samplePlan({ host_subgroups: 179, paths: [path("local", "file", 0)] }),
  );
  assert.deepEqual(ds.config, {
    zero_optimization: {
      stage: 3,
      offload_optimizer: { device: "cpu", pin_memory: true, ratio: 1 },
      sub_group_size: 100000000,
    },
  });
  assert.equal(ds.matches_plan, true);
});

Deno.test("deepspeedConfig() refuses what it cannot write correctly", () => {
  assert.throws(
    () => deepspeedConfig(localOnly(), { deepspeedVersion: "0.9" }),
    /"0\.9" is not a DeepSpeed release/,
  );
  const noSize = localOnly();
  delete noSize.setup.subgroup_elements;
  assert.throws(() => deepspeedConfig(noSize), /subgroup_elements/);
  const noDir = localOnly();
  noDir.profile.tiers = ["file"];
  assert.throws(() => deepspeedConfig(noDir), /pass it as dirs\.local/);
  const s3 = samplePlan({ paths: [path("remote", "s3", 179)] });
  s3.profile.tiers = ["s3://bucket/prefix"];
  assert.throws(() => deepspeedConfig(s3), /S3 bucket/);
  assert.throws(() => deepspeedConfig(localOnly(), { aioThreads: 0 }), /aioThreads is 0/);
});

Deno.test("keyProblems() catches what DeepSpeed's aio tuner prints: string booleans, num_threads", () => {
  // ds_nvme_tune (deepspeed/nvme/perf_generate_param.py) prints this shape
  const tuned = {
    single_submit: "false",
    overlap_events: "true",
    num_threads: 8,
    queue_depth: 32,
    block_size: 1048576,
  };
  const problems = keyProblems(tuned, DEEPSPEED_0_16_9.aio, "aio");
  assert.equal(problems.length, 3);
  assert.ok(problems.some((p) => /aio\.single_submit = "false" is not a bool/.test(p)));
  assert.ok(problems.some((p) => /aio\.num_threads is not a key the runtime reads/.test(p)));
  assert.deepEqual(keyProblems({ block_size: 1048576 }, DEEPSPEED_0_16_9.aio, "aio"), []);
  assert.equal(keyProblems({ block_size: 1.5 }, DEEPSPEED_0_16_9.aio, "aio").length, 1);
});

Deno.test("mlpOffloadSettings() for the sample plan: two paths, one in three remote, its runs' settings", () => {
  const m = mlpOffloadSettings(samplePlan());
  assert.equal(m.deepspeed_version, "0.13.3+5486420c");
  assert.equal(m.fork, "DataStates/DeepSpeed@dist_nvme_opt");
  assert.deepEqual(m.config, {
    zero_optimization: {
      stage: 3,
      offload_optimizer: {
        device: "nvme",
        nvme_path: "/mnt/nvme;/mnt/lustre/scratch",
        buffer_count: 12,
        pipeline_read: true,
        pipeline_write: true,
        pin_memory: true,
        dist_opt_ratio: 3,
      },
      sub_group_size: 100000000,
    },
    aio: {
      block_size: 2097152,
      queue_depth: 8,
      thread_count: 4,
      single_submit: false,
      overlap_events: true,
    },
  });
  assert.equal(m.remote_share, 1 / 3);
  assert.equal(m.matches_plan, true);
  // what the sources leave open is said, without failing the match
  assert.ok(m.notes.some((n) => /not in the sources/.test(n)));
  assert.ok(m.notes.some((n) => /dist_cpu_caching .* is left out/.test(n)));
});

Deno.test("mlpOffloadSettings(): every key is one the fork reads, with its type, and has a source", () => {
  const m = mlpOffloadSettings(samplePlan());
  const { zero_optimization: zero, aio } = m.config;
  assertInSet(
    zero as Record<string, unknown>,
    MLP_OFFLOAD_FORK.zeroOptimization,
    "zero_optimization",
  );
  assertInSet(zero.offload_optimizer, MLP_OFFLOAD_FORK.offloadOptimizer, "offload_optimizer");
  assertInSet(aio, MLP_OFFLOAD_FORK.aio, "aio");
  const keys = [
    "zero_optimization.stage",
    "zero_optimization.sub_group_size",
    ...Object.keys(zero.offload_optimizer).map((k) => `zero_optimization.offload_optimizer.${k}`),
    ...Object.keys(aio).map((k) => `aio.${k}`),
  ];
  assert.deepEqual(Object.keys(m.sources).sort(), keys.sort());
  assert.doesNotMatch(JSON.stringify(m.config), /"(true|false)"/);
});

Deno.test("mlpOffloadSettings(): nothing remote is its one-path run, dist_opt_ratio 0", () => {
  const plan = samplePlan({ paths: [path("local", "file", 179), path("remote", "pfs", 0)] });
  const m = mlpOffloadSettings(plan);
  const oo = m.config.zero_optimization.offload_optimizer;
  assert.equal(oo.nvme_path, "/mnt/nvme");
  assert.equal(oo.dist_opt_ratio, 0);
  assert.equal(m.remote_share, 0);
});

Deno.test("mlpOffloadSettings(): a share 1/K cannot express is rounded and said", () => {
  // 1 in 4 remote: K = 4 exactly
  const quarter = samplePlan({ paths: [path("local", "file", 135), path("remote", "pfs", 45)] });
  const q = mlpOffloadSettings(quarter);
  assert.equal(q.config.zero_optimization.offload_optimizer.dist_opt_ratio, 4);
  assert.equal(q.matches_plan, true);
  // two in three remote: K would be 1.5, at least 2
  const most = samplePlan({ paths: [path("local", "file", 60), path("remote", "pfs", 119)] });
  const m = mlpOffloadSettings(most);
  assert.equal(m.config.zero_optimization.offload_optimizer.dist_opt_ratio, 2);
  assert.equal(m.remote_share, 1 / 2);
  assert.equal(m.matches_plan, false);
  assert.ok(m.notes.some((n) => /puts about 90 of 179 .* the plan puts 119/.test(n)), m.notes[0]);
});

Deno.test("mlpOffloadSettings(): limits and sizes it cannot say make matches_plan false", () => {
  const plan = samplePlan({
    paths: [
      path("local", "file", 119, { readers: 2, iodepth: 16 }),
      path("remote", "pfs", 60, { bs: 1 << 20 }),
    ],
  });
  const m = mlpOffloadSettings(plan, { dirs: { remote: "/mnt/other" } });
  assert.equal(m.config.zero_optimization.offload_optimizer.nvme_path, "/mnt/nvme;/mnt/other");
  assert.equal(m.config.aio.queue_depth, 16);
  assert.equal(m.matches_plan, false);
  for (const re of [/2 readers at a time/, /block_size is the local path's/, /queue_depth is/]) {
    assert.ok(m.notes.some((n) => re.test(n)), `no note matches ${re}`);
  }
  assert.throws(
    () => mlpOffloadSettings(samplePlan({ paths: [path("remote", "pfs", 179)] })),
    /needs subgroups on the local path/,
  );
});

Deno.test("the key sets name their sources, with full commits where one was read", () => {
  for (const set of [...Object.values(DEEPSPEED_KEY_SETS), MLP_OFFLOAD_FORK]) {
    assert.ok(set.sources.length >= 3);
    for (const s of set.sources) {
      assert.ok(s.repo && s.path && s.shows);
      if (s.commit !== undefined) assert.match(s.commit, /^[0-9a-f]{40}$/);
    }
  }
  for (const set of Object.values(DEEPSPEED_KEY_SETS)) {
    assert.ok(set.threadKey in set.aio);
    assert.ok(set.doubts.length > 0);
  }
});

/** The `aio` and `offload_optimizer` keys the export writes for `version`, nvme and cpu plans. */
function exportedKeys(version: string) {
  const nvme = deepspeedConfig(samplePlan(), { deepspeedVersion: version }).config;
  const cpu = deepspeedConfig(samplePlan({ host_subgroups: 179, paths: [] }), {
    deepspeedVersion: version,
  }).config;
  return {
    aio: Object.keys(nvme.aio ?? {}).sort(),
    cpu: Object.keys(cpu.zero_optimization.offload_optimizer).sort(),
  };
}
const AIO_BASE = ["block_size", "overlap_events", "queue_depth", "single_submit"];

Deno.test("DeepSpeed below 0.12.4: thread_count, no use_gds, no offload_optimizer.ratio", () => {
  for (const v of ["0.10.3", "0.12.3"]) {
    const k = exportedKeys(v);
    assert.deepEqual(k.aio, [...AIO_BASE, "thread_count"].sort());
    assert.deepEqual(k.cpu, ["device", "pin_memory"]);
    assert.equal(deepspeedKeySet(v).offloadOptimizer.ratio, undefined);
  }
});

Deno.test("DeepSpeed 0.12.4 to 0.14.x: ratio parsed, thread_count, no use_gds", () => {
  for (const v of ["0.12.4", "0.14.5"]) {
    const k = exportedKeys(v);
    assert.deepEqual(k.aio, [...AIO_BASE, "thread_count"].sort());
    assert.deepEqual(k.cpu, ["device", "pin_memory", "ratio"]);
  }
});

Deno.test("DeepSpeed 0.15.0 to 0.16.3: use_gds beside thread_count", () => {
  for (const v of ["0.15.0", "0.16.3"]) {
    assert.deepEqual(exportedKeys(v).aio, [...AIO_BASE, "thread_count", "use_gds"].sort());
  }
});

Deno.test("DeepSpeed 0.16.4 on: intra_op_parallelism replaces thread_count", () => {
  for (const v of ["0.16.4", "0.17.1", "1.0.0"]) {
    assert.deepEqual(
      exportedKeys(v).aio,
      [...AIO_BASE, "intra_op_parallelism", "use_gds"].sort(),
    );
  }
});

Deno.test("a DeepSpeed version that is not x.y.z is refused naming --deepspeed-version", () => {
  for (const v of ["0.16", "latest", "0.16.x", ""]) {
    assert.throws(
      () => deepspeedConfig(samplePlan(), { deepspeedVersion: v }),
      /deepspeed-version.*is not a DeepSpeed release/,
    );
  }
});

Deno.test("the MLP-Offload export has exactly the keys its public fork accepts, none it refuses", () => {
  const forkOwn = ["dist_cpu_caching", "dist_opt_ratio"];
  assert.deepEqual(
    Object.keys(MLP_OFFLOAD_FORK.offloadOptimizer).filter((k) =>
      !(k in DEEPSPEED_0_13_3.offloadOptimizer)
    ).sort(),
    forkOwn,
  );
  const oo = mlpOffloadSettings(samplePlan()).config.zero_optimization.offload_optimizer;
  assert.deepEqual(Object.keys(oo).sort(), [
    "buffer_count",
    "device",
    "dist_opt_ratio",
    "nvme_path",
    "pin_memory",
    "pipeline_read",
    "pipeline_write",
  ]);
  for (const k of Object.keys(oo)) assert.ok(k in MLP_OFFLOAD_FORK.offloadOptimizer, k);
  for (const gone of ["dist_opt_enable_caching", "dist_opt_grad_skip", "dist_opt_one_at_time"]) {
    assert.ok(!(gone in oo), gone);
  }
  const paths = String(oo.nvme_path).split(";");
  assert.ok(paths.length <= 2);
  assert.ok(Number.isInteger(oo.dist_opt_ratio));
});
