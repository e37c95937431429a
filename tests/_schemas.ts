/**
 * Test helper: validates documents against the published JSON Schemas
 * (schemas/*.schema.json) with ajv, picking the schema by the document's
 * `schema` field.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { ROOT } from "./_helpers.ts";
import { PLAN_SCHEMA } from "../schema/plan.ts";
import { PROFILE_SCHEMA } from "../schema/profile.ts";
import { RESULT_SCHEMA } from "../schema/result.ts";

const FILES: Record<string, string> = {
  [RESULT_SCHEMA]: "result.schema.json",
  [PLAN_SCHEMA]: "plan.schema.json",
  [PROFILE_SCHEMA]: "profile.schema.json",
};

// strict: an unknown keyword or format in a generated schema is an error, not ignored
const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
// deno-lint-ignore no-explicit-any
(addFormats as any)(ajv);
for (const file of Object.values(FILES)) {
  ajv.addSchema(JSON.parse(Deno.readTextFileSync(join(ROOT, "schemas", file))));
}

/**
 * Asserts that `doc` (read from `source`) validates against the schema its
 * `schema` field names, and that its `$schema`, when present, is that
 * schema's `$id`.
 */
export function assertValidDocument(doc: unknown, source: string): void {
  const id = (doc as { schema?: unknown })?.schema;
  assert.ok(typeof id === "string" && id in FILES, `${source}: no known "schema" field`);
  const schema = JSON.parse(Deno.readTextFileSync(join(ROOT, "schemas", FILES[id]!)));
  const validate = ajv.getSchema(schema.$id);
  assert.ok(validate, schema.$id);
  const ok = validate(doc);
  assert.ok(
    ok,
    `${source} against ${schema.$id}:\n${
      ajv.errorsText(validate.errors, { separator: "\n", dataVar: "doc" })
    }`,
  );
  const ref = (doc as { $schema?: unknown }).$schema;
  if (ref !== undefined) assert.equal(ref, schema.$id, `${source}: "$schema"`);
}

/** Reads a JSON document and {@linkcode assertValidDocument}s it. */
export async function assertValidFile(path: string): Promise<unknown> {
  const doc = JSON.parse(await Deno.readTextFile(path));
  assertValidDocument(doc, path);
  return doc;
}
