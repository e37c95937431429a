/**
 * `tierbench run`: one fio-style job on one tier.
 *
 * ```sh
 * deno task tierbench run --tier file:/mnt/nvme --rw read --bs 1m --iodepth 8 \
 *   --engine libaio --direct --size 512m --runtime 5 --ramp 1 --output out.json
 * ```
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { DEFAULTS, ENGINES, FILE_LAYOUTS, parseJobOptions, RW_MODES } from "../core/config.ts";
import { RATE_PROCESSES } from "../core/rate.ts";
import {
  addOutputOptions,
  addS3Options,
  bsOption,
  checkOutputTarget,
  directOption,
  fioAlias,
  iodepthOption,
  ioengineOption,
  outputFormatOption,
  rampOf,
  rampOption,
  rampTimeOption,
  runtimeOption,
  sizeOption,
  timeoutOption,
  verifyOption,
} from "./_options.ts";
import { ConfigError } from "../core/errors.ts";
import { chooseAsyncEngine } from "../engines/engine_choice.ts";
import { resolvePath } from "./_paths.ts";
import { runAndReport } from "./_session.ts";
import { launchedBy, runAcross } from "./_cluster.ts";
import { runJobFile } from "./_jobfile.ts";
import { findFioOption } from "../core/fio_options.ts";
import { parseDuration } from "../core/units.ts";
import { CPUS_POLICIES } from "../core/cpu_affinity.ts";

/**
 * `run`'s options beside a job file, as the fio options they are (fio's
 * command-line options: defaults for every job, under the file's own).
 */
const AS_FIO: Record<string, string> = {
  tier: "tier",
  rw: "rw",
  rwmixread: "rwmixread",
  bs: "bs",
  size: "size",
  ioSize: "io_size",
  io_size: "io_size",
  runtime: "runtime",
  ramp: "ramp_time",
  ramp_time: "ramp_time",
  iodepth: "iodepth",
  numjobs: "numjobs",
  direct: "direct",
  engine: "ioengine",
  ioengine: "ioengine",
  fixedbufs: "fixedbufs",
  registerfiles: "registerfiles",
  sqthreadPoll: "sqthread_poll",
  sqthread_poll: "sqthread_poll",
  rate: "rate",
  rateIops: "rate_iops",
  rate_iops: "rate_iops",
  rateProcess: "rate_process",
  rate_process: "rate_process",
  cpusAllowed: "cpus_allowed",
  cpus_allowed: "cpus_allowed",
  cpusAllowedPolicy: "cpus_allowed_policy",
  cpus_allowed_policy: "cpus_allowed_policy",
  seed: "randseed",
  randseed: "randseed",
  logAvgMsec: "log_avg_msec",
  log_avg_msec: "log_avg_msec",
  nrfiles: "nrfiles",
  fileLayout: "file_layout",
  filename: "filename",
  endFsync: "end_fsync",
  objectSize: "object_size",
  partSize: "part_size",
  multipartThreshold: "multipart_threshold",
  timeout: "request_timeout",
  endpoint: "endpoint",
  region: "region",
  name: "name",
};

/** `run`'s own options with no fio meaning: refused beside a job file. */
const NOT_WITH_JOB_FILE = ["verify", "allowDevice", "stonewalling"] as const;

/**
 * The job file and fio options among `run`'s extra arguments: `--key=value`,
 * `--key value` (the next word, for an option fio reads a value of) or a
 * bare `--key`, and one job file.
 */
function splitExtra(args: readonly string[]) {
  let jobfile: string | undefined;
  const options: { key: string; value: string | undefined }[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) {
      if (jobfile !== undefined) {
        throw new ConfigError("jobfile", `one job file at a time (${jobfile}, ${a})`);
      }
      jobfile = a;
      continue;
    }
    const eq = a.indexOf("=");
    const key = eq < 0 ? a.slice(2) : a.slice(2, eq);
    if (eq >= 0) {
      options.push({ key, value: a.slice(eq + 1) });
      continue;
    }
    const facts = findFioOption(key, "");
    const takesValue = facts !== undefined && facts.type !== "STR_SET" &&
      i + 1 < args.length && !args[i + 1]!.startsWith("--");
    options.push({ key, value: takesValue ? args[++i] : undefined });
  }
  return { jobfile, options };
}

/** The options given on the command line, as fio options (source "cli" only). */
function fioOptionsOf(
  o: Record<string, unknown>,
  command: { getOptionValueSource(k: string): string | undefined },
): { key: string; value: string | undefined }[] {
  const out: { key: string; value: string | undefined }[] = [];
  for (const [attr, key] of Object.entries(AS_FIO)) {
    if (command.getOptionValueSource(attr) !== "cli") continue;
    const v = o[attr];
    out.push({ key, value: typeof v === "boolean" ? (v ? "1" : "0") : String(v) });
  }
  return out;
}

/** How `run` words the S3 options: it spells the defaults out. */
const RUN_S3_HELP = {
  endpoint:
    "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)",
  region: "s3: region to sign for (default: $AWS_REGION, else us-east-1)",
};

/** The `run` command's options, after parsing. */
type RunFlags = ReturnType<ReturnType<typeof runOptions>["opts"]>;

/** The `run` command with its argument and its first options: the job file, the tier, the pattern. */
function runJobOptions() {
  return new Command("run")
    .description(
      "run one fio-style job on one tier, or the jobs of a fio job file (docs/jobfiles.md)",
    )
    .argument("[jobfile]", "a fio job file (.fio): run its jobs as fio would")
    .allowUnknownOption()
    .allowExcessArguments()
    .option(
      "--section <name>",
      "with a job file: run only this job (and [global]); repeatable (fio's --section)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), v],
    )
    .option(
      "--trigger-timeout <time>",
      "with a job file: end every job this long after the jobs start (once their files are " +
        "laid out), as a normal end (fio's --trigger-timeout; seconds, or with ms, s, m, h)",
    )
    .option(
      "--tier <spec>",
      "where to do I/O: file:DIR, memory:[DIR] (default /dev/shm), pfs:DIR, " +
        "s3://BUCKET[/PREFIX], null: (required without a job file)",
    )
    .addOption(new Option("--rw <mode>", "access pattern").choices(RW_MODES).default(DEFAULTS.rw))
    .option("--rwmixread <pct>", "percentage of reads for randrw", DEFAULTS.rwmixread)
    .addOption(bsOption("block size (k, m, g suffixes, binary)").default(DEFAULTS.bs))
    .addOption(sizeOption("size of each job's file").default(DEFAULTS.size))
    .option("--io-size <size>", "bytes each job moves when not time-based (default: --size)")
    .addOption(fioAlias("--io_size <size>", "--io-size").conflicts("ioSize"))
    .addOption(runtimeOption("measure for this long, looping over the file (time-based)"))
    .addOption(
      rampOption("warm-up before measuring, excluded from results").default(DEFAULTS.ramp),
    )
    .addOption(rampTimeOption())
    .addOption(
      iodepthOption(
        "I/Os in flight per job (file tiers: above 1 without --engine picks io_uring where the " +
          "kernel allows it, else libaio; s3: requests)",
      ).default(DEFAULTS.iodepth),
    )
    .option("--numjobs <n>", "parallel jobs, each on its own file and Worker", DEFAULTS.numjobs);
}

/**
 * `run`'s options of how the I/O is done: O_DIRECT, the engine and its
 * io_uring flags, the open loop's rate, the seed and the time series, and
 * the job's files.
 */
function addRunIoOptions(cmd: ReturnType<typeof runJobOptions>) {
  return cmd
    .addOption(
      directOption("open files with O_DIRECT (bypass the page cache); also fio's --direct=1/0")
        .default(false),
    )
    .addOption(
      new Option(
        "--engine <name>",
        `I/O engine (default: ${DEFAULTS.engine}; with --iodepth above 1 on file tiers: io_uring ` +
          "where the kernel allows it, else libaio, said in options.engine_choice)",
      ).choices(ENGINES),
    )
    .addOption(ioengineOption(ENGINES))
    .option("--fixedbufs", "io_uring: register the I/O buffers (READ_FIXED/WRITE_FIXED)")
    .option("--registerfiles", "io_uring: register the job's files (IOSQE_FIXED_FILE)")
    .option("--sqthread-poll", "io_uring: a kernel thread polls the submission queue (SQPOLL)")
    .addOption(fioAlias("--sqthread_poll", "--sqthread-poll").conflicts("sqthreadPoll"))
    .option(
      "--rate <bytes>",
      "open loop: each job issues bs-sized requests at this many bytes/s (k, m, g; fio's rate); " +
        "lat counts from each request's intended start",
    )
    .option("--rate-iops <n>", "open loop: each job issues this many requests/s (fio's rate_iops)")
    .addOption(
      new Option(
        "--rate-process <process>",
        "with --rate or --rate-iops: linear (even gaps) or poisson (exponential gaps drawn from " +
          "--seed); fio's rate_process, default linear",
      ).choices(RATE_PROCESSES),
    )
    .addOption(fioAlias("--rate_iops <n>", "--rate-iops").conflicts("rateIops"))
    .addOption(
      fioAlias("--rate_process <process>", "--rate-process").choices(RATE_PROCESSES)
        .conflicts("rateProcess"),
    )
    .option("--seed <n>", "seed for random offsets and the read/write mix", DEFAULTS.seed)
    .addOption(fioAlias("--randseed <n>", "--seed").conflicts("seed"))
    .option("--log-avg-msec <ms>", "interval of the bandwidth time series", DEFAULTS.logAvgMsec)
    .addOption(fioAlias("--log_avg_msec <ms>", "--log-avg-msec").conflicts("logAvgMsec"))
    .option(
      "--nrfiles <n>",
      "files per job, blocks striped round-robin over them",
      DEFAULTS.nrfiles,
    )
    .addOption(
      new Option(
        "--file-layout <layout>",
        "a file set per job, or one shared file with a region each",
      )
        .choices(FILE_LAYOUTS).default(DEFAULTS.fileLayout),
    )
    .option("--filename <file>", "read an existing file instead of laying one out (never written)")
    .option(
      "--allow-device",
      "--filename may be a block device: read only, never written (devices are refused otherwise)",
    )
    .option("--end-fsync", "fsync every file when a job ends (default for pfs)")
    .option("--no-end-fsync", "do not fsync at the end of a job")
    .option("--cpus-allowed <cpus>", "pin each job's thread to these CPUs (0,5,8-15; fio's)")
    .addOption(fioAlias("--cpus_allowed <cpus>", "--cpus-allowed").conflicts("cpusAllowed"))
    .addOption(
      new Option(
        "--cpus-allowed-policy <how>",
        "with --cpus-allowed: shared (every job on every CPU listed, the default) or split " +
          "(one CPU each, handed round the list)",
      ).choices(CPUS_POLICIES),
    )
    .addOption(
      fioAlias("--cpus_allowed_policy <how>", "--cpus-allowed-policy").choices(CPUS_POLICIES)
        .conflicts("cpusAllowedPolicy"),
    );
}

/** The `run` command with all its options and no action yet: the S3, checking and output ones last. */
function runOptions() {
  const cmd = addRunIoOptions(runJobOptions());
  return addOutputOptions(
    addS3Options(cmd, RUN_S3_HELP)
      .option("--object-size <size>", "s3: size of the objects reads GET from (default: --bs)")
      .option("--part-size <size>", "s3: part size of multipart uploads", DEFAULTS.partSize)
      .option(
        "--multipart-threshold <size>",
        "s3: objects larger than this are written by multipart upload",
        DEFAULTS.multipartThreshold,
      )
      .addOption(
        timeoutOption(
          "fail the run when one request (an I/O, an S3 request) takes longer than this",
        ),
      )
      .addOption(
        verifyOption(
          "stamp every block written with a header and checksum, check every block read",
        ),
      )
      .option("--name <name>", "label for the table and results")
      .addOption(outputFormatOption())
      .option(
        "--stonewalling",
        "across processes (mpirun, srun): stop every process when the first finishes its " +
          "--io-size (IOR's stonewalling, not fio's stonewall)",
      ),
  );
}

/** The `run` command. */
export function runCommand() {
  return runOptions().action(async (_jobfile, o, command) => {
    checkOutputTarget(o);
    const extra = splitExtra(command.args);
    const jobfile = extra.jobfile;
    if (jobfile === undefined && extra.options.length > 0) {
      throw new ConfigError(
        extra.options[0]!.key,
        "is not an option of run (fio's other options go beside a job file: run JOB.fio --KEY=VALUE)",
      );
    }
    if (jobfile !== undefined) {
      const given = NOT_WITH_JOB_FILE.find((k) => command.getOptionValueSource(k) === "cli");
      if (given !== undefined) {
        const flag = command.options.find((opt) => opt.attributeName() === given)?.long ?? given;
        throw new ConfigError(flag.replace(/^--/, ""), "has no meaning beside a job file");
      }
      const trigger = o.triggerTimeout === undefined ? undefined : parseDuration(o.triggerTimeout);
      if (o.triggerTimeout !== undefined && trigger === undefined) {
        throw new ConfigError("trigger-timeout", `"${o.triggerTimeout}" is not a duration`);
      }
      const commandLine = [
        ...fioOptionsOf(o as Record<string, unknown>, command),
        ...extra.options,
      ];
      await runJobFile(
        resolvePath(jobfile),
        o,
        {
          ...(o.section ? { sections: o.section } : {}),
          ...(trigger !== undefined ? { triggerTimeoutMs: trigger } : {}),
          commandLine,
        },
        launchedBy(),
      );
      return;
    }
    await runOneJob(o);
  });
}

/**
 * `run` without a job file: the one job its options give, checked against
 * how it was launched, run here or across the launcher's processes.
 */
async function runOneJob(o: RunFlags): Promise<void> {
  if (o.section || o.triggerTimeout !== undefined) {
    throw new ConfigError(
      o.section ? "section" : "trigger-timeout",
      "applies beside a job file only",
    );
  }
  const job = jobOf(o);
  const launch = launchedBy();
  if (launch && job.rate) {
    throw new ConfigError(
      o.rate !== undefined ? "rate" : "rate-iops",
      "is not available across processes yet: the aggregate has no schedule figures",
      "a run in one process",
    );
  }
  if (o.stonewalling && !launch) {
    throw new ConfigError(
      "stonewalling",
      "stops the other processes of a run across processes, and no launcher started this one",
      "mpirun, srun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT set",
    );
  }
  if (o.stonewalling && job.runtimeMs !== undefined) {
    throw new ConfigError(
      "stonewalling",
      "a time-based run (--runtime) already stops every process together",
      "a run of --size or --io-size bytes",
    );
  }
  if (launch) await runAcross(launch, [job], "run", o, o.stonewalling === true);
  else await runAndReport([job], "run", o);
}

/** The one job `run`'s options give, fio's spellings beside tierbench's. */
function jobOf(o: RunFlags): ReturnType<typeof parseJobOptions> {
  return parseJobOptions({
    timeout: o.timeout,
    name: o.name,
    tier: o.tier,
    rw: o.rw,
    rwmixread: o.rwmixread,
    bs: o.bs,
    size: o.size,
    ioSize: o.io_size ?? o.ioSize,
    runtime: o.runtime,
    ramp: rampOf(o),
    iodepth: o.iodepth,
    numjobs: o.numjobs,
    direct: o.direct,
    engine: o.ioengine ?? o.engine,
    fixedbufs: o.fixedbufs,
    registerfiles: o.registerfiles,
    sqthreadPoll: o.sqthread_poll ?? o.sqthreadPoll,
    seed: o.randseed ?? o.seed,
    logAvgMsec: o.log_avg_msec ?? o.logAvgMsec,
    nrfiles: o.nrfiles,
    fileLayout: o.fileLayout,
    endFsync: o.endFsync,
    filename: o.filename === undefined ? undefined : resolvePath(o.filename),
    allowDevice: o.allowDevice,
    verify: o.verify,
    endpoint: o.endpoint,
    region: o.region,
    objectSize: o.objectSize,
    partSize: o.partSize,
    multipartThreshold: o.multipartThreshold,
    rate: o.rate,
    rateIops: o.rateIops ?? o.rate_iops,
    rateProcess: o.rateProcess ?? o.rate_process,
    cpusAllowed: o.cpus_allowed ?? o.cpusAllowed,
    cpusAllowedPolicy: o.cpus_allowed_policy ?? o.cpusAllowedPolicy,
  }, chooseAsyncEngine);
}
