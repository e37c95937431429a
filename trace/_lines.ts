/**
 * Text files line by line in flat memory, gzipped or not (told by the gzip
 * magic bytes, not the name), and text files written through a temporary
 * name, gzipped when the name ends in `.gz`.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { TraceError } from "./errors.ts";

/** Whether `head` starts with gzip's magic bytes. */
export function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/**
 * Opens `path` for reading, or says in one line why it cannot be read. The
 * file is opened once and its first bytes looked at in the stream, so a
 * named pipe (`trace record` reads strace's output through one) works too.
 */
async function openText(path: string): Promise<ReadableStream<string>> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch (e) {
    throw new TraceError(path, 0, `cannot be read (${(e as Error).name})`, { cause: e });
  }
  const reader = file.readable.getReader();
  const first = await reader.read();
  const head = first.done ? new Uint8Array() : first.value;
  let bytes: ReadableStream<Uint8Array> = new ReadableStream<Uint8Array>({
    start(c) {
      if (head.length > 0) c.enqueue(head);
      if (first.done) c.close();
    },
    async pull(c) {
      const r = await reader.read();
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  if (isGzip(head)) {
    bytes = bytes.pipeThrough(
      new DecompressionStream("gzip") as ReadableWritablePair<
        Uint8Array,
        Uint8Array
      >,
    );
  }
  return bytes.pipeThrough(new TextDecoderStream());
}

/**
 * The lines of `path` (gzipped or not), a batch at a time, without their
 * line ends; the last line too when it has none. A gzip stream that ends
 * early is a {@linkcode TraceError} ("truncated").
 *
 * @example
 * ```ts
 * import { lineBatches } from "./_lines.ts";
 * const p = await Deno.makeTempFile();
 * await Deno.writeTextFile(p, "a\nb\n");
 * const lines: string[] = [];
 * for await (const batch of lineBatches(p)) lines.push(...batch);
 * console.assert(lines.join(",") === "a,b");
 * await Deno.remove(p);
 * ```
 */
export async function* lineBatches(path: string): AsyncGenerator<string[]> {
  const text = await openText(path);
  let rest = "";
  try {
    for await (const chunk of text) {
      const parts = (rest + chunk).split("\n");
      rest = parts.pop()!;
      if (parts.length > 0) yield parts;
    }
  } catch (e) {
    if (e instanceof TraceError) throw e;
    throw new TraceError(
      path,
      0,
      `is truncated or damaged: ${(e as Error).message.split("\n")[0]}`,
      { cause: e },
    );
  }
  if (rest !== "") yield [rest];
}

/** A text file being written: lines go through a buffer; {@linkcode TextSink.close} publishes it. */
export class TextSink {
  /** Where the file goes once closed. */
  readonly path: string;
  readonly #tmp: string;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #done: Promise<void>;
  readonly #encoder = new TextEncoder();
  #buffer: string[] = [];
  #buffered = 0;
  #closed = false;

  private constructor(path: string, tmp: string, file: Deno.FsFile, gzip: boolean) {
    this.path = path;
    this.#tmp = tmp;
    if (gzip) {
      const gz = new CompressionStream("gzip") as ReadableWritablePair<Uint8Array, Uint8Array>;
      this.#done = gz.readable.pipeTo(file.writable);
      this.#writer = gz.writable.getWriter();
    } else {
      const ts = new TransformStream<Uint8Array, Uint8Array>();
      this.#done = ts.readable.pipeTo(file.writable);
      this.#writer = ts.writable.getWriter();
    }
    this.#done.catch(() => {});
  }

  /**
   * Starts writing `path` (gzipped when it ends in `.gz`) under a temporary
   * name beside it. Refuses a path that exists: nothing is overwritten.
   */
  static async create(path: string, field = "output"): Promise<TextSink> {
    const exists = await Deno.lstat(path).then(() => true, () => false);
    if (exists) throw new TraceError(path, 0, `exists already; give another --${field}`);
    const tmp = join(dirname(path), `.${basename(path)}.${crypto.randomUUID().slice(0, 8)}.part`);
    let file: Deno.FsFile;
    try {
      await Deno.mkdir(dirname(path), { recursive: true });
      file = await Deno.open(tmp, { write: true, createNew: true });
    } catch (e) {
      throw new TraceError(path, 0, `cannot be written (${(e as Error).message})`, { cause: e });
    }
    return new TextSink(path, tmp, file, path.endsWith(".gz"));
  }

  /** Adds one line (its end added here) to the buffer, without writing. */
  push(text: string): void {
    this.#buffer.push(text);
    this.#buffered += text.length + 1;
  }

  /** Adds one line, writing the buffer out once it holds 64 KiB. */
  async line(text: string): Promise<void> {
    this.push(text);
    if (this.#buffered >= 1 << 16) await this.#flush();
  }

  async #flush(): Promise<void> {
    if (this.#buffer.length === 0) return;
    const text = this.#buffer.join("\n") + "\n";
    this.#buffer = [];
    this.#buffered = 0;
    await this.#writer.ready;
    await this.#writer.write(this.#encoder.encode(text));
  }

  /** Writes what is buffered, closes the file and moves it to its name. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#flush();
      await this.#writer.close();
      await this.#done;
      await Deno.rename(this.#tmp, this.path);
    } catch (e) {
      await Deno.remove(this.#tmp).catch(() => {});
      throw e;
    }
  }

  /** Gives the file up: removes what was written. */
  async abort(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writer.abort().catch(() => {});
    await this.#done.catch(() => {});
    await Deno.remove(this.#tmp).catch(() => {});
  }
}
