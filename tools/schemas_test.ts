import assert from "node:assert/strict";
import { join } from "node:path";
import { SCHEMAS, SCHEMAS_DIR, schemaText } from "./schemas.ts";

Deno.test("the committed schemas/ equal a fresh `deno task schemas` generation from the TS and zod definitions", async () => {
  for (const target of SCHEMAS) {
    const committed = await Deno.readTextFile(join(SCHEMAS_DIR, target.file));
    assert.ok(
      committed === schemaText(target),
      `schemas/${target.file} is stale: run \`deno task schemas\` and commit it`,
    );
  }
});

Deno.test("each schema names its $id, the URI the documents carry as $schema", () => {
  for (const target of SCHEMAS) {
    const schema = JSON.parse(schemaText(target));
    assert.equal(schema.$id, target.id);
    assert.match(target.id, /^https:\/\/tierbench\.dev\/schemas\/[a-z]+-1\.json$/);
    // a trace's schema describes one line: its header is one of the forms a line takes
    const props = schema.properties ?? schema.definitions.TraceHeader.properties;
    assert.equal(props.$schema.const, target.id);
    assert.equal(props.schema.const, target.title);
  }
});
