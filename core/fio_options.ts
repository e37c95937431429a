/**
 * What tierbench does with each of fio's options in a job file: runs it with
 * fio's meaning (`supported`), reads it and leaves it without effect because
 * it changes nothing tierbench measures (`accepted`, with why that is
 * honest), or refuses the file naming it (`refused`, with why). Every option
 * of core/fio_option_table.ts has an entry; docs/jobfiles.md prints this
 * table, and a test keeps the two the same.
 *
 * Some options are supported for some values only: {@linkcode FIO_OPTIONS}
 * says so in the note, and the resolver (core/jobfile_resolve.ts) refuses
 * the other values by name.
 *
 * @module
 */

import { FIO_OPTION_FACTS, type FioOptionFacts } from "./fio_option_table.ts";

/** What tierbench does with an option. */
export type FioTreatment = "supported" | "accepted" | "refused";

/** An option's treatment and the one line that says what or why. */
export interface FioOptionUse {
  readonly how: FioTreatment;
  readonly note: string;
}

const S = (note: string): FioOptionUse => ({ how: "supported", note });
const A = (note: string): FioOptionUse => ({ how: "accepted", note });
const R = (note: string): FioOptionUse => ({ how: "refused", note });

const DEVICE = "applies to block devices only; tierbench works on files";
const REPORT = "changes what fio reports, not the I/O; tierbench reports its own figures";
const PROFILE = "a profile's option: without profile= fio ignores it too";
const NOT_YET = "not implemented in tierbench";
const SCHED = "sets the priority or NUMA placement of fio's threads, which tierbench does not do";

/** fio's options (by fio's name) and what tierbench does with each. */
export const FIO_OPTIONS: Readonly<Record<string, FioOptionUse>> = {
  description: S("a label, kept in the results"),
  name: S("the job's name (default: the section's)"),
  wait_for: S("the job starts once the named job has ended"),
  filename: S(
    "the job's files, `:`-separated (`\\:` for a colon); relative names under directory; " +
      "created and laid out as fio does; shared by the job's numjobs clones",
  ),
  directory: S(
    "where the job's files are (default: the current directory); `:`-separated directories " +
      "take the files in turn; must exist, as fio requires",
  ),
  filename_format: S("names of generated files: $jobname, $jobnum, $filenum ($clientuid: empty)"),
  unique_filename: S(
    "across processes (mpirun, srun), each process's files start rank<R>. (fio: the client's " +
      "address); 0: every process uses the same files",
  ),
  lockfile: S("none only: exclusive and readwrite serialise I/O across jobs, refused"),
  opendir: R(NOT_YET),
  rw: S(
    "read, write, randread, randwrite, rw/readwrite, randrw, with :N (sequential holes or " +
      "random runs); trim modes refused: trim is a device command (BLKDISCARD)",
  ),
  rw_sequencer: S("sequential or identical"),
  ioengine: S(
    "psync; sync, vsync and pvsync run as psync (the same synchronous I/O, one call per I/O); " +
      "libaio; io_uring; null (the null tier). Other engines refused by name",
  ),
  iodepth: S("I/Os in flight per job with libaio and io_uring; synchronous engines keep 1"),
  iodepth_batch: S("1 only (fio's default): tierbench submits each I/O as a slot frees"),
  iodepth_batch_complete_min: S("1 only (fio's default): tierbench reaps whatever is ready"),
  iodepth_batch_complete_max: S("iodepth only (fio's default)"),
  iodepth_low: S("iodepth only (fio's default): tierbench refills the queue as a slot frees"),
  serialize_overlap: S("0 only (fio's default)"),
  io_submit_mode: S(
    "inline; offload is accepted: fio hands submission to a helper thread so a job's issue " +
      "times do not wait on its completions, which tierbench's paced jobs already do " +
      "(each request goes at its intended start while completions are reaped)",
  ),
  size: S("total bytes of the job's files; N% of an existing file's size"),
  io_size: S("bytes moved when not time-based (default: size)"),
  fill_device: R("writes until the file system is full; tierbench moves a size instead"),
  filesize: S("size of each file, or a LOW-HIGH range (drawn per file)"),
  file_append: R(NOT_YET),
  offset: S("where I/O starts in each file (bytes or %)"),
  offset_align: S("alignment of a % offset"),
  offset_increment: S("each numjobs clone starts this much further (offset + clone × increment)"),
  number_ios: S("a job ends after this many I/Os"),
  bs: S("block size; bs=R,W per direction"),
  ba: S("offset alignment of random I/O; R,W per direction"),
  bsrange: S("block sizes drawn between LOW and HIGH (multiples of LOW); R,W per direction"),
  bssplit: S("block sizes drawn by weight (4k/60:64k/40); R,W per direction"),
  bs_unaligned: S("drawn sizes not rounded to the smallest block size"),
  bs_is_seq_rand: S("bs=SEQ,RAND instead of bs=READ,WRITE"),
  randrepeat: S("1: offsets repeat run to run (seeded from randseed); 0: a new seed each run"),
  randseed: S("seed of every random stream of the job"),
  norandommap: S("random offsets drawn with replacement (blocks may repeat, some never come)"),
  softrandommap: A("fio only falls back to it when a random map cannot be allocated"),
  random_generator: A(
    "tierbench draws with its own generator: uniform offsets, and every block once per pass " +
      "without norandommap, as fio's tausworthe and lfsr give",
  ),
  random_distribution: S(
    "random, zipf:θ, pareto:h, normal:σ% (gauss), zoned:…, zoned_abs:…, each with fio's " +
      "meaning (a ,center suffix too)",
  ),
  percentage_random: S("% of I/Os at a random offset, the rest sequential; R,W per direction"),
  percentage_sequential: R("deprecated: fio refuses it"),
  allrandrepeat: A("tierbench seeds every random stream from randseed: always repeatable"),
  nrfiles: S("files per job (size split over them)"),
  openfiles: A(
    "tierbench keeps every file of a job open: the I/O is the same, fio's opens and closes " +
      "between files are not made",
  ),
  file_service_type: S(
    "roundrobin[:N], sequential, random[:N]; zipf, pareto, normal and gauss are refused",
  ),
  fallocate: S("none, native, posix, keep, truncate, 0, 1: how write jobs' files are laid out"),
  fadvise_hint: S("0, 1, sequential, random: posix_fadvise on each file"),
  fsync: S("fsync a file after every N writes to it"),
  fdatasync: S("fdatasync a file after every N writes to it"),
  write_barrier: R(DEVICE),
  sync_file_range: R(NOT_YET),
  direct: S("O_DIRECT"),
  atomic: R("O_ATOMIC writes are a device feature"),
  buffered: S("the opposite of direct"),
  overwrite: S("write jobs lay their files out first, so writes overwrite existing blocks"),
  loops: S("the job runs this many times over its files"),
  numjobs: S("clones of the job, each a thread of its own"),
  startdelay: S("the job starts this long after the run (or a LOW-HIGH range, drawn)"),
  runtime: S("time-based: measured time; size-based: a cap (timeout is fio's alias)"),
  time_based: S("the job loops over its files until runtime ends"),
  verify_only: R("fio's verify is not available (tierbench checks data with --verify)"),
  ramp_time: S("warm-up excluded from the results"),
  clocksource: A(
    "tierbench reads CLOCK_MONOTONIC, nanosecond resolution, whatever fio clock is named",
  ),
  mem: S("malloc only; other buffer memory (shm, mmap, hugepages, cudamalloc) refused"),
  iomem_align: S("up to the page size (tierbench aligns buffers to the page)"),
  verify: S("0 or none only: fio's verify formats are not available (tierbench has --verify)"),
  do_verify: A("only acts with verify, which is refused"),
  verifysort: A("soft-deprecated: fio ignores it"),
  verifysort_nr: A("soft-deprecated: fio ignores it"),
  verify_interval: A("only acts with verify, which is refused"),
  verify_offset: A("only acts with verify, which is refused"),
  verify_pattern: R("fio's verify is not available (tierbench checks data with --verify)"),
  verify_fatal: A("only acts with verify, which is refused"),
  verify_dump: A("only acts with verify, which is refused"),
  verify_async: A("only acts with verify, which is refused"),
  verify_backlog: A("only acts with verify, which is refused"),
  verify_backlog_batch: A("only acts with verify, which is refused"),
  verify_async_cpus: A("only acts with verify, which is refused"),
  experimental_verify: A("only acts with verify, which is refused"),
  verify_state_load: A("only acts with verify, which is refused"),
  verify_state_save: A("only acts with verify, which is refused"),
  trim_percentage: R(DEVICE),
  trim_verify_zero: R(DEVICE),
  trim_backlog: R(DEVICE),
  trim_backlog_batch: R(DEVICE),
  write_iolog: R("fio's iolog is not written by job files yet"),
  read_iolog: R("fio's iolog replay is not available in job files yet"),
  read_iolog_chunked: R("fio's iolog replay is not available in job files yet"),
  replay_no_stall: R("fio's iolog replay is not available in job files yet"),
  replay_redirect: R("fio's iolog replay is not available in job files yet"),
  replay_scale: R("fio's iolog replay is not available in job files yet"),
  replay_align: R("fio's iolog replay is not available in job files yet"),
  replay_time_scale: R("fio's iolog replay is not available in job files yet"),
  replay_skip: R("fio's iolog replay is not available in job files yet"),
  merge_blktrace_file: R("blktrace merging is not available"),
  merge_blktrace_scalars: R("blktrace merging is not available"),
  merge_blktrace_iters: R("blktrace merging is not available"),
  exec_prerun: R("tierbench runs no commands named by a job file"),
  exec_postrun: R("tierbench runs no commands named by a job file"),
  ioscheduler: R(DEVICE),
  zonemode: S("none only: zbd is a device feature (zoned block devices), strided is refused"),
  zonesize: R("zones need zonemode, which is refused"),
  zonecapacity: R(DEVICE),
  zonerange: R("zones need zonemode, which is refused"),
  zoneskip: R("zones need zonemode, which is refused"),
  read_beyond_wp: R(DEVICE),
  max_open_zones: R(DEVICE),
  job_max_open_zones: R(DEVICE),
  ignore_zone_limits: R(DEVICE),
  zone_reset_threshold: R(DEVICE),
  zone_reset_frequency: R(DEVICE),
  lockmem: R("locks memory away from the run, which tierbench does not do"),
  rwmixread: S("% of reads in a mixed job"),
  rwmixwrite: S("% of writes in a mixed job"),
  rwmixcycle: R("deprecated: fio refuses it"),
  nice: R(SCHED),
  prio: R(SCHED),
  prioclass: R(SCHED),
  thinktime: S(
    "a pause (µs) after every thinktime_blocks I/Os; with libaio or io_uring at iodepth above 1 " +
      "refused (fio lets the I/Os in flight complete first)",
  ),
  thinktime_spin: S("the part of thinktime spent spinning"),
  thinktime_blocks: S("I/Os between pauses"),
  thinktime_blocks_type: S("complete or issue"),
  thinktime_iotime: R(NOT_YET),
  rate: S(
    "bytes/s per job, for a job of one direction and one block size (a mixed job's per-direction " +
      "rates, and a byte rate with varying sizes, are refused)",
  ),
  rate_min: S("the job fails when its bandwidth over rate_cycle falls below this"),
  rate_iops: S("I/Os per second per job, for a job of one direction"),
  rate_iops_min: S("the job fails when its IOPS over rate_cycle fall below this"),
  rate_process: S("linear or poisson"),
  rate_cycle: S("the window of rate_min and rate_iops_min (ms)"),
  rate_ignore_thinktime: R(NOT_YET),
  max_latency: R("fio's latency target mode is not available"),
  latency_target: R("fio's latency target mode is not available"),
  latency_window: R("fio's latency target mode is not available"),
  latency_percentile: R("fio's latency target mode is not available"),
  latency_run: R("fio's latency target mode is not available"),
  invalidate: S("drops the files' page cache before the job (posix_fadvise DONTNEED)"),
  sync: S("0/none, 1/sync (O_SYNC), dsync (O_DSYNC)"),
  write_hint: R(DEVICE),
  create_serialize: A("tierbench lays files out before any job starts, one job at a time"),
  create_fsync: S("fsync a file after laying it out (fio's default)"),
  create_on_open: A(
    "files are created before the clock starts either way; fio's flag only moves when",
  ),
  create_only: S("the job lays its files out and does no I/O"),
  allow_file_create: S("0: a file the job names must exist"),
  allow_mounted_write: A("only guards block devices, which tierbench never writes"),
  pre_read: S("buffered read jobs read their files once before the clock starts"),
  cpumask: S("pins each clone's thread to CPUs 0-31 given as a bit mask"),
  cpus_allowed: S("pins each clone's thread to these CPUs (0,5,8-15)"),
  cpus_allowed_policy: S("shared: every clone on every CPU of the set; split: one CPU each"),
  numa_cpu_nodes: R(SCHED),
  numa_mem_policy: R(SCHED),
  gpu_dev_id: R("GPU buffers (cudamalloc) are not available"),
  end_fsync: S("fsync every file when the job ends"),
  fsync_on_close: S("fsync every file when the job closes it"),
  unlink: S("remove the job's files when it ends"),
  unlink_each_loop: R(NOT_YET),
  exitall: S("when one job ends, every job ends (see exit_what)"),
  exit_what: S("group, stonewall or all: which jobs exitall ends"),
  exitall_on_error: S("when one job fails, every job ends"),
  stonewall: S("the job starts once every job before it has ended; a new reporting group"),
  new_group: S("a new reporting group (fio-json groupid)"),
  thread: A("tierbench runs every job as a thread (a Worker); fio's default is a process"),
  per_job_logs: S("0: one log per job name instead of one per clone"),
  write_bw_log: S("fio's bandwidth log (NAME_bw.N.log), as fio writes it"),
  write_lat_log: S("fio's latency logs (NAME_lat/clat/slat.N.log), as fio writes them"),
  write_iops_log: S("fio's IOPS log (NAME_iops.N.log), as fio writes it"),
  log_entries: A("the initial size of fio's log buffers; tierbench grows its own"),
  log_avg_msec: S("0: an entry per I/O; N: averages over N ms"),
  log_hist_msec: R("histogram logs are not written yet"),
  log_hist_coarseness: R("histogram logs are not written yet"),
  write_hist_log: R("histogram logs are not written yet"),
  log_max_value: S("averaged logs record the window's maximum instead of its mean"),
  log_offset: S("each log entry carries its offset"),
  log_prio: A("every I/O has the default priority: the column fio adds is 0 throughout"),
  log_compression: R("compressed logs are not written"),
  log_compression_cpus: R("compressed logs are not written"),
  log_store_compressed: R("compressed logs are not written"),
  log_unix_epoch: R(NOT_YET),
  log_alternate_epoch: R(NOT_YET),
  log_alternate_epoch_clock_id: R(NOT_YET),
  block_error_percentiles: A(REPORT),
  bwavgtime: A(REPORT),
  iopsavgtime: A(REPORT),
  group_reporting: A("tierbench always reports a job's numjobs clones together"),
  stats: A(REPORT),
  zero_buffers: S("write buffers hold zeros"),
  refill_buffers: S("write buffers are refilled before every write"),
  scramble_buffers: S("write buffers are lightly changed before every write (default 1)"),
  buffer_pattern: S('write buffers repeat this pattern (number, 0x…, or "string")'),
  buffer_compress_percentage: S("write buffers compress by about this much (zeros in each chunk)"),
  buffer_compress_chunk: S("the size of the chunks buffer_compress_percentage fills"),
  dedupe_percentage: S("% of writes that repeat an earlier block's contents"),
  dedupe_global: S("repeated contents are drawn from every job's, not the job's own"),
  dedupe_mode: S("repeat or working_set"),
  dedupe_working_set_percentage: S("the share of the file the working set of repeats comes from"),
  clat_percentiles: A(REPORT),
  lat_percentiles: A(REPORT),
  slat_percentiles: A(REPORT),
  percentile_list: A(REPORT),
  significant_figures: A(REPORT),
  disk_util: A(REPORT),
  gtod_reduce: A(
    "fio then skips its latency clock reads to save CPU; tierbench reads the clock anyway " +
      "(the results have latencies where fio's would be zero)",
  ),
  disable_lat: A(REPORT),
  disable_clat: A(REPORT),
  disable_slat: A(REPORT),
  disable_bw_measurement: A(REPORT),
  gtod_cpu: A("tierbench has no time-keeping thread to pin"),
  unified_rw_reporting: A(REPORT),
  continue_on_error: S(
    "none, read, write, io, verify, all: the job counts those errors and goes on",
  ),
  ignore_error: S("errors (by name or number) each direction goes on after"),
  error_dump: A("how fio words each error; tierbench says the first in one line"),
  profile: R("fio's profiles are not available"),
  cgroup: R("tierbench does not place jobs in cgroups"),
  cgroup_nodelete: R("tierbench does not place jobs in cgroups"),
  cgroup_weight: R("tierbench does not place jobs in cgroups"),
  uid: R("tierbench does not change user"),
  gid: R("tierbench does not change group"),
  kb_base: S("1024 or 1000: how k, m, g and kib, mib, gib are read"),
  unit_base: A(REPORT),
  "hugepage-size": A("only acts with mem=mmaphuge, which is refused"),
  flow_id: S("jobs with the same flow_id share one flow counter"),
  flow: S("weighted flow between jobs: each job keeps its share of the I/Os of its flow_id"),
  flow_watermark: A("soft-deprecated: fio ignores it"),
  flow_sleep: S("how long (µs) a job ahead of its flow share waits"),
  steadystate: R(NOT_YET),
  steadystate_duration: R(NOT_YET),
  steadystate_ramp_time: R(NOT_YET),
  // libaio
  userspace_reap: A(
    "tierbench reaps completions with io_getevents: the same completions, read by a system call",
  ),
  cmdprio_percentage: R(SCHED),
  cmdprio_class: R(SCHED),
  cmdprio: R(SCHED),
  cmdprio_bssplit: R(SCHED),
  nowait: R(NOT_YET),
  // io_uring
  hipri: R("polled I/O needs the device's poll queues"),
  fixedbufs: S("registered buffers (READ_FIXED/WRITE_FIXED)"),
  registerfiles: S("registered files (IOSQE_FIXED_FILE)"),
  sqthread_poll: S("a kernel thread polls the submission queue (SQPOLL)"),
  sqthread_poll_cpu: R(SCHED),
  nonvectored: A("tierbench issues non-vectored READ and WRITE whatever the value"),
  uncached: R(NOT_YET),
  force_async: R(NOT_YET),
  cmd_type: R("io_uring_cmd passes NVMe commands to a device"),
  // pvsync2 (refused as an engine)
  hipri_percentage: R("pvsync2 is not available"),
  // profiles
  block: A(PROFILE),
  numruns: A(PROFILE),
  dir: A(PROFILE),
  threads: A(PROFILE),
  "device-names": A(PROFILE),
  load: A(PROFILE),
  "test-duration": A(PROFILE),
  "threads-per-queue": A(PROFILE),
  "read-req-num-512-blocks": A(PROFILE),
  "large-block-op-kbytes": A(PROFILE),
  prep: A(PROFILE),
};

/** The facts of the option a job file's key names (its name or alias), for `ioengine`. */
export function findFioOption(key: string, ioengine: string): FioOptionFacts | undefined {
  const match = (o: FioOptionFacts) => o.name === key || o.alias === key;
  const main = FIO_OPTION_FACTS.find((o) => !o.engine && match(o));
  if (main) return main;
  return FIO_OPTION_FACTS.find((o) => o.engine === ioengine && match(o));
}

/** An option's use; refused for one of another engine. */
export function fioOptionUse(o: FioOptionFacts): FioOptionUse {
  if (o.engine === "pvsync2") return R("pvsync2 is not available");
  return FIO_OPTIONS[o.name] ?? R(NOT_YET);
}

/** fio's options tierbench's own keys are spelled like, none: the keys tierbench adds to a job file. */
export const TIERBENCH_KEYS: Readonly<Record<string, string>> = {
  tier: "where the job's I/O goes: file, memory, pfs (with directory) or a whole tier spec; " +
    "on s3 a job takes the options of one pattern (rw, one bs, size, rates, order) and refuses " +
    "those only files give a meaning",
  file_layout: "files (one set per clone) or shared (one file, a region per clone)",
  request_timeout: "fail the run when one request takes longer (tierbench's --timeout)",
  endpoint: "s3: endpoint URL",
  region: "s3: region",
  object_size: "s3: object size",
  part_size: "s3: multipart part size",
  multipart_threshold: "s3: multipart threshold",
};
