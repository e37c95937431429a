import assert from "node:assert/strict";
import { withTempDir } from "../tests/_helpers.ts";
import { errorLine, IoError, S3Error, sizeHintNaming } from "./errors.ts";

Deno.test("errorLine() writes a failed Deno call as call and path, errno name, description and hint", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/missing/x`;
    const e = await Deno.mkdir(path).then(() => undefined, (x: unknown) => x);
    assert.equal(errorLine(e), `mkdir '${path}': ENOENT (No such file or directory)`);
    await Deno.writeTextFile(`${dir}/f`, "");
    const notDir = await Deno.readDir(`${dir}/f`)[Symbol.asyncIterator]().next()
      .then(() => undefined, (x: unknown) => x);
    assert.match(errorLine(notDir), /: ENOTDIR \(Not a directory\)/);
  });
});

Deno.test("errorLine() adds the hint tierbench gives for the same errno", () => {
  const full = Object.assign(
    new Error("No space left on device (os error 28): mkdir '/mnt/r1'"),
    { code: "ENOSPC" },
  );
  assert.equal(
    errorLine(full),
    "mkdir '/mnt/r1': ENOSPC (No space left on device); " +
      "free space on that file system or use a smaller --size",
  );
  assert.match(
    new IoError({ syscall: "mkdir", errno: 28, code: "ENOSPC", path: "/mnt/r1" }).message,
    /; free space on that file system/,
  );
});

Deno.test("sizeHintNaming() names what sets the run's size where the user started it, in the full-disk hints only", () => {
  const full = new IoError({ syscall: "pwrite", errno: 28, code: "ENOSPC", path: "/d/f" }).message;
  assert.equal(
    sizeHintNaming(full, "--scale"),
    "pwrite /d/f: ENOSPC; free space on that file system or use a smaller --scale",
  );
  const quota = new IoError({ syscall: "pwrite", errno: 122, code: "EDQUOT", path: "/d/f" });
  assert.match(sizeHintNaming(quota.message, "size= in j.fio"), /use a smaller size= in j\.fio$/);
  const other = new IoError({ syscall: "open", errno: 13, code: "EACCES", path: "/d/f" }).message;
  assert.equal(sizeHintNaming(other, "--scale"), other);
});

Deno.test("errorLine() leaves every other error's message and non-errors as they are", () => {
  assert.equal(errorLine(new Error("plain")), "plain");
  assert.equal(
    errorLine(Object.assign(new Error("x (os error 2)"), { code: 2 })),
    "x (os error 2)",
  );
  assert.equal(
    errorLine(Object.assign(new Error("no (os error 111)"), { code: "ECONNREFUSED" })),
    "ECONNREFUSED (no)",
  );
  assert.equal(errorLine("text"), "text");
  assert.equal(errorLine(7), "7");
});

Deno.test("S3Error says a refused connection cannot reach the server, and an answer that never came was not in time", () => {
  const at = (code: string) =>
    new S3Error({
      operation: "GetObject",
      bucket: "b",
      key: "k",
      code,
      attempts: 4,
      endpoint: "http://127.0.0.1:7480",
    });
  assert.match(at("ECONNREFUSED").message, /; cannot reach http:\/\/127\.0\.0\.1:7480: is the S3/);
  for (const code of ["TimeoutError", "ETIMEDOUT"]) {
    const e = at(code);
    assert.match(
      e.message,
      /after 4 attempts; no answer from http:\/\/127\.0\.0\.1:7480 in time: /,
    );
    assert.ok(e.unreachable);
  }
});
