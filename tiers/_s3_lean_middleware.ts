/**
 * Middleware of the SDK done with less work per request, for the s3 tier's
 * client, each in place of the SDK's own under the same name and place:
 *
 * - the serializer and deserializer ({@linkcode leanSerde}): the SDK's copy
 *   the client's whole resolved configuration (some seventy members) into
 *   a new object on every request; these hand the SDK's same protocol a
 *   context that inherits the configuration instead;
 * - the endpoint ({@linkcode fixedEndpoint}): the SDK's resolves a dozen
 *   endpoint parameters through as many promises and parses the endpoint's
 *   URL twice, though for a fixed endpoint with path-style addressing the
 *   answer depends on the bucket alone;
 * - the auth scheme ({@linkcode reuseAuthScheme}): the SDK's choice, kept
 *   per command and bucket;
 * - S3's check of 200 answers that carry an error ({@linkcode leanErrorCheck}),
 *   which hands on the bytes it read;
 * - the REST protocol's Content-Type per input schema
 *   ({@linkcode memoizeContentType}), picked once.
 *
 * @module
 */

import type { S3Client } from "@aws-sdk/client-s3";
import { toEndpointV1 } from "@smithy/core/endpoints";
import type {
  EndpointV2,
  HandlerExecutionContext,
  MiddlewareStack,
  RelativeMiddlewareOptions,
} from "@smithy/types";

/** The part of an operation's schema tuple the protocol is given, as the SDK builds it. */
interface Operation {
  readonly name: unknown;
  readonly namespace: unknown;
  readonly traits: unknown;
  readonly input: unknown;
  readonly output: unknown;
}

/** What the middleware reads of the client's configuration. */
interface SerdeConfig {
  readonly protocol: {
    serializeRequest(op: Operation, input: unknown, context: object): Promise<unknown>;
    deserializeResponse(op: Operation, context: object, response: unknown): Promise<unknown>;
  };
  readonly endpoint?: unknown;
}

type Context = Omit<HandlerExecutionContext, "authSchemes"> & {
  endpointV2?: EndpointV2;
  authSchemes?: unknown;
  __smithy_context?: { operationSchema?: readonly unknown[] };
};

/** A middleware's arguments, and the next handler, as far as these read them. */
interface Args {
  readonly input: { readonly Bucket?: string };
  readonly request?: unknown;
}
type Next = (args: Args) => Promise<{ response: unknown; output?: unknown }>;

/** Operations by their schema: the SDK makes this object anew per request. */
const operations = new WeakMap<object, Operation>();

function operationOf(context: Context): Operation {
  const schema = context.__smithy_context?.operationSchema ?? [];
  let op = operations.get(schema);
  if (op === undefined) {
    const [, namespace, name, traits, input, output] = schema;
    op = { name, namespace, traits, input, output };
    operations.set(schema, op);
  }
  return op;
}

/**
 * The serde context the SDK gives its protocol (`{...config, ...context}`),
 * as an object that inherits the configuration and holds the handler
 * context's own members: the same values read, without copying the
 * configuration's.
 */
function serdeContext(config: object, context: object): Record<string, unknown> {
  return Object.assign(Object.create(config), context);
}

/**
 * Replaces the client's serializer and deserializer middleware (under the
 * same names and step) with ones that call the same protocol with a
 * {@linkcode serdeContext}. Errors are decorated as the SDK's deserializer
 * decorates them: `$response`, and `$metadata` with the status when the
 * protocol set none.
 */
export function leanSerde(client: S3Client): void {
  const config = client.config as unknown as SerdeConfig;
  const { protocol } = config;
  const serializer = (next: Next, context: Context) => async (args: Args) => {
    const ctx = serdeContext(config, context);
    ctx.endpoint = context.endpointV2
      ? () => Promise.resolve(toEndpointV1(context.endpointV2!))
      : config.endpoint;
    const request = await protocol.serializeRequest(operationOf(context), args.input, ctx);
    return next({ ...args, request });
  };
  const deserializer = (next: Next, context: Context) => async (args: Args) => {
    const { response } = await next(args);
    try {
      const ctx = serdeContext(config, context);
      return {
        response,
        output: await protocol.deserializeResponse(operationOf(context), ctx, response),
      };
    } catch (e) {
      throw withResponse(e, response);
    }
  };
  const stack = client.middlewareStack;
  stack.add(serializer as never, {
    name: "serializerMiddleware",
    step: "serialize",
    tags: ["SERIALIZER"],
    override: true,
  });
  stack.add(deserializer as never, {
    name: "deserializerMiddleware",
    step: "deserialize",
    tags: ["DESERIALIZER"],
    override: true,
  });
}

/**
 * A deserialization error as the SDK's middleware leaves it: with
 * `$response`, and, when the protocol set none, `$metadata` with the status
 * and request ids of the answer.
 */
function withResponse(e: unknown, response: unknown): unknown {
  if (typeof e !== "object" || e === null) return e;
  Object.defineProperty(e, "$response", { value: response, enumerable: false });
  if (!("$metadata" in e)) {
    const r = response as { statusCode?: number; headers?: Record<string, string> } | undefined;
    const headers = Object.entries(r?.headers ?? {});
    const find = (re: RegExp) => headers.find(([k]) => re.test(k))?.[1];
    Object.assign(e, {
      $metadata: {
        httpStatusCode: r?.statusCode,
        requestId: find(/^x-[\w-]+-request-?id$/),
        extendedRequestId: find(/^x-[\w-]+-id-2$/),
        cfId: find(/^x-[\w-]+-cf-id$/),
      },
    });
  }
  return e;
}

/** The SDK's options of its endpoint middleware (which middleware S3's others are placed by). */
const ENDPOINT_MIDDLEWARE: RelativeMiddlewareOptions & { step: "serialize" } = {
  step: "serialize",
  tags: ["ENDPOINT_PARAMETERS", "ENDPOINT_V2", "ENDPOINT"],
  name: "endpointV2Middleware",
  override: true,
  relation: "before",
  toMiddleware: "serializerMiddleware",
};

/**
 * Calls `edit` on every command's stack as the SDK makes it: the SDK adds
 * the middleware of each command (endpoint, S3's checks) to the command's own
 * stack, which it joins to the client's (`concat`) when it resolves the
 * command's handler (once per command class with `cacheMiddleware`); the
 * join is where replacements for those go in.
 */
function onCommandStacks(
  client: S3Client,
  edit: (joined: MiddlewareStack<object, object>) => void,
): void {
  const stack = client.middlewareStack as unknown as MiddlewareStack<object, object>;
  const concat = stack.concat.bind(stack);
  stack.concat = ((from: MiddlewareStack<object, object>) => {
    const joined = concat(from);
    edit(joined);
    return joined;
  }) as typeof stack.concat;
}

/**
 * Puts in place of the SDK's endpoint middleware, in every command's stack,
 * one that sets the endpoint `endpointOf` gives for the command's bucket,
 * under the same name and place.
 */
export function fixedEndpoint(
  client: S3Client,
  endpointOf: (bucket: string | undefined) => EndpointV2,
): void {
  const middleware = (next: Next, context: Context) => (args: Args) => {
    context.endpointV2 = endpointOf(args.input.Bucket);
    context.authSchemes = undefined;
    return next(args);
  };
  onCommandStacks(
    client,
    (joined) => joined.addRelativeTo(middleware as never, ENDPOINT_MIDDLEWARE),
  );
}

/** Commands whose 200 answer with no body at all S3 means as an error (the SDK's list). */
const EMPTY_IS_ERROR = new Set([
  "CopyObjectCommand",
  "UploadPartCopyCommand",
  "CompleteMultipartUploadCommand",
]);

/** What the 200-error check reads of the client's configuration. */
interface CheckConfig {
  readonly streamCollector: (body: unknown) => Promise<Uint8Array>;
  readonly utf8Encoder: (bytes: Uint8Array) => string;
}

/**
 * Puts in place of S3's check of 200 answers that carry an error (the SDK's
 * throw200ExceptionsMiddleware, in the commands that have it: PUTs, multipart
 * uploads, deletes, copies) the same check, which leaves the body it has read
 * as bytes for the deserializer instead of wrapping them in a new node:stream
 * Readable (which the deserializer then reads again through a pipe): a 200
 * whose body ends in `</Error>` becomes a 503, which the SDK retries; an empty
 * 200 to a copy or a completed upload is an InternalError.
 */
export function leanErrorCheck(client: S3Client): void {
  const config = client.config as unknown as CheckConfig;
  const middleware = (next: Next, context: Context) => async (args: Args) => {
    const result = await next(args);
    const response = result.response as { statusCode?: number; body?: unknown } | undefined;
    const status = response?.statusCode;
    if (response === undefined || status === undefined || status < 200 || status >= 300) {
      return result;
    }
    const body = response.body instanceof Uint8Array
      ? response.body
      : (await config.streamCollector(response.body)) ?? new Uint8Array();
    response.body = body;
    if (body.byteLength === 0 && EMPTY_IS_ERROR.has(context.commandName ?? "")) {
      throw Object.assign(new Error("S3 aborted request"), {
        name: "InternalError",
        $metadata: { httpStatusCode: 503 },
      });
    }
    if (config.utf8Encoder(body.subarray(body.byteLength - 16)).endsWith("</Error>")) {
      response.statusCode = 503;
    }
    return result;
  };
  onCommandStacks(client, (joined) => {
    const sdk = entryOf(joined, "throw200ExceptionsMiddleware");
    if (sdk !== undefined) joined.addRelativeTo(middleware as never, sdk.options);
  });
}

/** A middleware of a stack as the stack holds it: the function and its options. */
interface Entry {
  readonly middleware: (next: Next, context: Context) => (args: Args) => Promise<unknown>;
  readonly options: RelativeMiddlewareOptions & { step?: string };
}

/** The entry named `name` in `stack`, read by having the stack copy itself into a recorder. */
function entryOf(stack: MiddlewareStack<object, object>, name: string): Entry | undefined {
  let found: Entry | undefined;
  const record = (middleware: Entry["middleware"], options: Entry["options"]) => {
    if (options.name === name) {
      const { middleware: _, ...rest } = options as Entry["options"] & { middleware?: unknown };
      found = { middleware, options: rest };
    }
  };
  stack.applyToStack({ add: record, addRelativeTo: record } as never);
  return found;
}

/** What the SDK's auth scheme middleware leaves in the context for the signer. */
interface SelectedScheme {
  readonly httpAuthOption: { readonly schemeId: string; readonly identityProperties?: object };
  readonly signer: unknown;
  readonly identity: unknown;
}

/** Auth schemes whose identity is the client's credentials (the SDK's S3 client says so). */
const CREDENTIAL_SCHEMES = new Set(["aws.auth#sigv4", "aws.auth#sigv4a"]);

/**
 * Keeps, per command and bucket, the auth scheme the SDK's own auth scheme
 * middleware chose: that middleware resolves the dozen endpoint parameters
 * and runs S3's endpoint rules (which cache their answer) on every request,
 * to choose an answer that for a fixed endpoint depends on the bucket
 * alone. The SDK's middleware still chooses, on the first request of each
 * command and bucket; later ones reuse its choice and fetch the identity (the
 * credentials, which may rotate) anew, as it does. A scheme whose identity is
 * not the credentials is chosen by the SDK's middleware every time.
 */
export function reuseAuthScheme(client: S3Client): void {
  const stack = client.middlewareStack as unknown as MiddlewareStack<object, object>;
  const sdk = entryOf(stack, "httpAuthSchemeMiddleware");
  if (sdk === undefined) return;
  // read at each request, as the SDK's own scheme does: credentials set on the client's config
  // after it was made are used, not the ones it started with
  const config = client.config as { credentials: (p?: object) => Promise<unknown> };
  const middleware = (next: Next, context: Context) => {
    const choose = sdk.middleware(() => Promise.resolve({ response: undefined }), context);
    const chosen = new Map<string | undefined, SelectedScheme>();
    const smithy = () => context.__smithy_context as { selectedHttpAuthScheme?: SelectedScheme };
    return async (args: Args) => {
      const bucket = args.input.Bucket;
      const known = chosen.get(bucket);
      if (known === undefined) {
        await choose(args);
        const selected = smithy().selectedHttpAuthScheme;
        if (selected && CREDENTIAL_SCHEMES.has(selected.httpAuthOption.schemeId)) {
          chosen.set(bucket, selected);
        }
      } else {
        smithy().selectedHttpAuthScheme = {
          httpAuthOption: known.httpAuthOption,
          signer: known.signer,
          identity: await config.credentials(known.httpAuthOption.identityProperties),
        };
      }
      return next(args);
    };
  };
  stack.addRelativeTo(middleware as never, sdk.options);
}

/** What the REST protocol's helper that picks a request's Content-Type is given. */
interface ContentTypeMixin {
  resolveRestContentType(
    defaultContentType: string,
    inputSchema: { getSchema(): unknown },
  ): string | undefined;
}

/**
 * Keeps the Content-Type the SDK's REST protocol picks for each operation's
 * input schema: it walks every member of the schema and their traits (some
 * forty for PutObject) on each request to find what depends on the schema
 * alone.
 */
export function memoizeContentType(client: S3Client): void {
  const mixin = (client.config as { protocol?: { mixin?: Partial<ContentTypeMixin> } }).protocol
    ?.mixin;
  const pick = mixin?.resolveRestContentType;
  if (mixin === undefined || typeof pick !== "function") return;
  const picked = new WeakMap<object, Map<string, string | undefined>>();
  mixin.resolveRestContentType = (defaultType, inputSchema) => {
    const schema = inputSchema.getSchema();
    if (typeof schema !== "object" || schema === null) {
      return pick.call(mixin, defaultType, inputSchema);
    }
    let byDefault = picked.get(schema);
    if (byDefault === undefined) picked.set(schema, byDefault = new Map());
    if (!byDefault.has(defaultType)) {
      byDefault.set(defaultType, pick.call(mixin, defaultType, inputSchema));
    }
    return byDefault.get(defaultType);
  };
}
