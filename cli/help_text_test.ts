import assert from "node:assert/strict";
import { Command } from "@commander-js/extra-typings";
import { EXAMPLES, polishHelp } from "./help_text.ts";

Deno.test("polishHelp: defaults and choices read as values, units noted, 2–3 examples last", () => {
  const program = new Command().name("tierbench");
  program.addCommand(
    new Command("run")
      .option("--bs <size>", "block size", "4k")
      .option("--runtime <seconds>", "measured time")
      .option("--rw <mode>", "pattern", "read")
      .option("--quiet", "no progress line", false),
  );
  polishHelp(program);
  const help = program.commands[0]!.helpInformation();
  let text = "";
  program.commands[0]!.configureOutput({ writeOut: (s) => (text += s) });
  program.commands[0]!.outputHelp();
  assert.match(help, /block size \(default: 4k\)/);
  assert.match(help, /no progress line \(default: false\)/);
  assert.doesNotMatch(help, /default: "/);
  assert.match(text, /Durations: seconds, or a number with ms, s, m or h/);
  assert.match(text, /Sizes: bytes, or a number with k, m, g or t/);
  assert.match(text, /\nExamples:\n {2}tierbench run .*\n[\s\S]*\n$/);
});

Deno.test("every command has 2 or 3 examples, each a tierbench command line", () => {
  for (const [name, lines] of Object.entries(EXAMPLES)) {
    assert.ok(lines.length >= 2 && lines.length <= 3, name);
    for (const line of lines) assert.match(line, /^tierbench /, name);
  }
});
