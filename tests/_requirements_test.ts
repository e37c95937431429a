import assert from "node:assert/strict";
import { join } from "node:path";
import {
  choose,
  describe,
  missing,
  needing,
  packagesFor,
  packageText,
  type Requirement,
  REQUIREMENTS,
} from "./_requirements.ts";

/** A need whose detection really fails: no such command is on PATH. */
const ABSENT: Requirement = {
  name: "tierbench-absent",
  detection: { command: `tierbench-absent-${crypto.randomUUID()}` },
  packages: ["tierbench-absent-pkg"],
};

/** A need every machine the suite runs on meets: a POSIX shell. */
const SHELL: Requirement = { name: "sh", detection: { command: "sh" }, packages: ["dash"] };

const REASON = "needs tierbench-absent (apt-get install tierbench-absent-pkg, " +
  "which the test task runs as root)";

/** Runs `fn` with CI set to `value` (or unset), restoring it afterwards. */
function withCi<T>(value: string | undefined, fn: () => T): T {
  const before = Deno.env.get("CI");
  if (value === undefined) Deno.env.delete("CI");
  else Deno.env.set("CI", value);
  try {
    return fn();
  } finally {
    if (before === undefined) Deno.env.delete("CI");
    else Deno.env.set("CI", before);
  }
}

Deno.test("needing() ignores a test whose need is missing and says why in its name", () => {
  let ran = false;
  const def = withCi(undefined, () =>
    needing([ABSENT], {
      name: "uses the absent tool",
      fn: () => {
        ran = true;
      },
    }));
  assert.equal(def.ignore, true);
  assert.equal(def.name, `uses the absent tool [ignored: ${REASON}]`);
  assert.equal(ran, false);
});

Deno.test("needing() under CI=true runs the test, which fails naming what is missing", async (t) => {
  let ran = false;
  const def = withCi("true", () =>
    needing([ABSENT], {
      name: "uses the absent tool",
      sanitizeOps: false,
      fn: () => {
        ran = true;
      },
    }));
  assert.notEqual(def.ignore, true);
  assert.equal(def.name, "uses the absent tool");
  assert.equal(def.sanitizeOps, false, "the definition's other options are kept");
  await assert.rejects(async () => await def.fn(t), {
    message: `CI=true and this test ${REASON}`,
  });
  assert.equal(ran, false, "the test's own function does not run");
});

Deno.test("needing() returns the definition unchanged when every need is met", () => {
  const def: Deno.TestDefinition = { name: "uses sh", fn: () => {} };
  assert.equal(withCi(undefined, () => needing([SHELL], def)), def);
  assert.equal(withCi("true", () => needing([SHELL], def)), def);
  assert.equal(needing([], def), def);
});

Deno.test("needing() names every missing need, met ones left out", () => {
  const other: Requirement = {
    name: "tierbench-unset",
    detection: { dpkg: [`tierbench-absent-${crypto.randomUUID()}`] },
    packages: [],
    remedy: "do something else",
  };
  const def = withCi(undefined, () => needing([ABSENT, SHELL, other], { name: "t", fn: () => {} }));
  assert.equal(def.name, `t [ignored: ${REASON}, tierbench-unset (do something else)]`);
});

Deno.test("missing() detects commands, libraries, packages and environment variables", () => {
  const variable = `TIERBENCH_TEST_${crypto.randomUUID().slice(0, 8).toUpperCase()}`;
  const need = (name: string, detection: Requirement["detection"]): Requirement => ({
    name,
    detection,
    packages: [],
  });
  const present = [
    need("sh", { command: "sh" }),
    need("/bin/sh", { command: "/bin/sh" }),
    need("libc", { library: "libc.so.6" }),
    need("unset", { unset: variable }),
  ];
  assert.deepEqual(missing(present), []);
  const absent = [
    need("command", { command: `tierbench-absent-${crypto.randomUUID()}` }),
    need("path", { command: `/nonexistent/${crypto.randomUUID()}` }),
    need("library", { library: `libtierbench-absent-${crypto.randomUUID()}.so.1` }),
    need("package", { dpkg: [`tierbench-absent-${crypto.randomUUID()}`] }),
  ];
  assert.deepEqual(missing(absent).map((r) => r.name), ["command", "path", "library", "package"]);
  const set = need("set", { unset: variable });
  Deno.env.set(variable, "1");
  try {
    assert.deepEqual(missing([set]).map((r) => r.name), ["set"]);
  } finally {
    Deno.env.delete(variable);
  }
});

Deno.test("missing() refuses an unknown need name", () => {
  assert.throws(() => missing(["nonsense" as never]), TypeError);
});

Deno.test("every requirement names its packages or else what to do", () => {
  for (const [key, r] of Object.entries(REQUIREMENTS)) {
    assert.equal(r.name, key);
    assert.ok(r.packages.length > 0 || r.remedy !== undefined, key);
  }
  assert.match(describe([REQUIREMENTS.root]), /^root \(run the test task as root\)$/);
  assert.deepEqual(packagesFor([REQUIREMENTS.fio, REQUIREMENTS.fio, REQUIREMENTS.btrfs]), [
    "fio",
    "btrfs-progs",
  ]);
});

Deno.test("a library is detected by its exact name, not a longer one that starts with it", () => {
  const need = (library: string): Requirement => ({
    name: library,
    detection: { library },
    packages: [],
  });
  assert.deepEqual(missing([need("libc.so.6")], { fresh: true }), []);
  // libc.so.6 starts with "libc.so": the unversioned name is another file (libc6-dev's)
  assert.deepEqual(missing([need("libc.so.")], { fresh: true }).map((r) => r.name), ["libc.so."]);
  const either: Requirement = {
    name: "either",
    detection: {
      some: [{ library: `libtierbench-absent-${crypto.randomUUID()}.so.1` }, {
        library: "libc.so.6",
      }],
    },
    packages: [],
  };
  assert.deepEqual(missing([either], { fresh: true }), [], "one of the alternatives is enough");
});

Deno.test("a plugin's library is detected where the plugin dlopens it: the unversioned name in its directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-plugin-" });
  try {
    const lib = join(dir, "pmix", "lib");
    await Deno.mkdir(lib, { recursive: true });
    await Deno.writeTextFile(join(lib, "libfake.so.2.6.2"), "");
    await Deno.symlink("libfake.so.2.6.2", join(lib, "libfake.so.2"));
    // a plugin built with its library's directory names it among its strings, as Slurm's does
    const plugin = join(dir, "mpi_fake.so");
    const bytes = new TextEncoder().encode(`\x7fELF\0/nonexistent/dir\0${lib}\0libfake.so\0`);
    await Deno.writeFile(plugin, bytes);
    const need: Requirement = {
      name: "fake",
      detection: { loads: { plugin, library: "libfake.so" } },
      packages: ["libfake-dev"],
    };
    assert.deepEqual(missing([need], { fresh: true }).map((r) => r.name), ["fake"], "only .so.2");
    await Deno.symlink("libfake.so.2", join(lib, "libfake.so"));
    assert.deepEqual(
      missing([need], { fresh: true }),
      [],
      "the unversioned name, as -dev gives it",
    );
    const absent: Requirement = {
      name: "no-plugin",
      detection: { loads: { plugin: join(dir, "absent.so"), library: "libfake.so" } },
      packages: [],
    };
    assert.deepEqual(missing([absent], { fresh: true }).map((r) => r.name), ["no-plugin"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a renamed package is chosen among its alternatives: the first apt knows", () => {
  const known = (pkg: string) => pkg === "libaio1";
  assert.equal(choose(["libaio1t64", "libaio1"], known), "libaio1");
  assert.equal(choose("fio", known), "fio");
  assert.equal(choose(["a", "b"], () => false), "a", "none known: the first, for apt to name");
  assert.deepEqual(packagesFor([REQUIREMENTS.libaio, REQUIREMENTS.fio], known), ["libaio1", "fio"]);
  assert.equal(packageText([REQUIREMENTS.libaio, REQUIREMENTS.fio]), "libaio1t64|libaio1 fio");
  // apt itself, where it runs: dash is in every Debian, the other name in none
  const apt = new Deno.Command("sh", { args: ["-c", "command -v apt-cache"], stdout: "null" });
  if (apt.outputSync().success) {
    assert.equal(choose([`tierbench-absent-${crypto.randomUUID()}`, "dash"]), "dash");
  }
});

Deno.test("srun --mpi=pmix's need: the slurm requirement installs libpmix-dev and checks the plugin's load", () => {
  assert.ok(REQUIREMENTS.slurm.packages.includes("libpmix-dev"));
  const text = JSON.stringify(REQUIREMENTS.slurm.detection);
  assert.match(text, /mpi_pmix\.so/);
  assert.match(text, /"library":"libpmix\.so"/);
});
