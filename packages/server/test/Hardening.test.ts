/**
 * Odd but legal (and illegal) requests on every LLM endpoint, generated with fast-check (seeded):
 * valid bodies mutated at random depth (retyped, dropped, duplicated and unknown fields, huge
 * strings, deep nesting, unicode and number edge cases), raw garbage, truncated JSON and odd
 * headers. Properties: never a 500; every non-2xx body is the endpoint's documented envelope; no
 * error body quotes more than 200 bytes of the request verbatim (nor is it large); the server
 * stays healthy. Plus `Expect: 100-continue` with a 2 MiB body, as curl sends it.
 *
 * Real sockets (a real server on loopback in front of the fake upstream), so `it.scopedLive`.
 */
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as AnthropicMessages from "@switchyard-ts/protocol/AnthropicMessages"
import { ErrorEnvelope } from "@switchyard-ts/protocol/Errors"
import * as Gemini from "@switchyard-ts/protocol/Gemini"
import * as Telemetry from "@switchyard-ts/server/Telemetry"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Http from "node:http"
import { capabilityRoute, chatAndClaude, type RawReply, readReply, startServer } from "./harness.js"

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl, { settings: { timeout_ms: 10000 } }), {
    targets: { strong: D.target("strong-coder", "oai"), judge: D.target("judge-model", "oai") },
    routes: D.byId(
      D.noop("ping"),
      capabilityRoute("auto", "judge", { weak_target: "local", classify_trigger: "user_turn", judge_failure: "error" })
    )
  })

const verdict = FakeUpstream.ok(
  JSON.stringify({ crux: "a small local fix", primary_rule: "SUP-1", capability_boundary: "supported", p_solve: 0.9 })
)

type Reply = RawReply

/** One raw HTTP/1.1 request with exactly these headers and body bytes (no `fetch` rules applied). */
const send = (
  url: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body: Buffer,
  options: { readonly waitForContinue?: boolean } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const request = Http.request(
      `${url}${path}`,
      { method: "POST", headers, agent: false },
      (response) => readReply(response).then(resolve, reject)
    )
    request.on("error", reject)
    if (options.waitForContinue === true) {
      // As curl does: headers first, the body only once the server said `100 Continue`.
      request.on("continue", () => request.end(body))
      request.flushHeaders()
    } else {
      request.end(body)
    }
  })

// ---------------------------------------------------------------------------------------------
// The verbatim check: does the response quote more than `window - 1` bytes of the request?

/**
 * Whether some run of `window` bytes of `reply` occurs verbatim in `request` (Rabin–Karp over the
 * request, candidate windows verified byte by byte).
 */
const sharesRun = (reply: Buffer, request: Buffer, window: number): boolean => {
  if (reply.length < window || request.length < window) return false
  const prime = 1_000_000_007
  let power = 1
  for (let i = 0; i < window - 1; i++) power = (power * 256) % prime
  const hashes = new Map<number, Array<number>>()
  const rolling = (bytes: Buffer, visit: (hash: number, start: number) => boolean): boolean => {
    let hash = 0
    for (let i = 0; i < bytes.length; i++) {
      if (i >= window) hash = (hash - ((bytes[i - window] ?? 0) * power) % prime + prime) % prime
      hash = (hash * 256 + (bytes[i] ?? 0)) % prime
      if (i >= window - 1 && visit(hash, i - window + 1)) return true
    }
    return false
  }
  rolling(reply, (hash, start) => {
    hashes.set(hash, [...(hashes.get(hash) ?? []), start])
    return false
  })
  return rolling(
    request,
    (hash, start) =>
      (hashes.get(hash) ?? []).some((at) =>
        reply.subarray(at, at + window).equals(request.subarray(start, start + window))
      )
  )
}

// ---------------------------------------------------------------------------------------------
// Generators

const RAW = "\u0001RAW:"
const DUP = "\u0002DUP:"
/** JSON text with no faithful JS value (`1e400`, `-0`, 30 digits), or too deep to build and stringify. */
const rawTexts: Array<string> = []
const raw = (text: string): string => {
  rawTexts.push(text)
  return `${RAW}${rawTexts.length - 1}\u0001`
}

/** Serialize, then put raw texts in place of their markers and duplicate-key markers as duplicates. */
const serialize = (value: unknown): string =>
  JSON.stringify(value)
    .replace(/"\\u0001RAW:(\d+)\\u0001"/g, (_, index: string) => rawTexts[Number(index)] ?? "null")
    .replace(/"\\u0002DUP:/g, "\"")

/** `depth` nested arrays or objects around `leaf` (JSON text), built as text. */
const nestedText = (depth: number, kind: "array" | "object", leaf: string): string =>
  kind === "array"
    ? `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}`
    : `${"{\"k\":".repeat(depth)}${leaf}${"}".repeat(depth)}`

const nested = (depth: number, kind: "array" | "object", leaf: string): string => raw(nestedText(depth, kind, leaf))

const hugeString = FastCheck.oneof(
  {
    weight: 8,
    arbitrary: FastCheck.tuple(
      FastCheck.string({ minLength: 1, maxLength: 12 }),
      FastCheck.integer({ min: 20, max: 20_000 })
    ).map(([s, n]) => s.repeat(n))
  },
  { weight: 1, arbitrary: FastCheck.constant("0123456789abcdef".repeat(65_536)) } // 1 MiB
)

const edgeValue: FastCheck.Arbitrary<unknown> = FastCheck.oneof(
  hugeString,
  FastCheck.tuple(
    FastCheck.integer({ min: 1, max: 1_500 }),
    FastCheck.constantFrom("array" as const, "object" as const)
  )
    .map(([depth, kind]) => nested(depth, kind, "\"leaf\"")),
  FastCheck.constantFrom(10_000, 5_000, 512, 500).chain((depth) =>
    FastCheck.constantFrom("array" as const, "object" as const).map((kind) => nested(depth, kind, "1"))
  ),
  FastCheck.constantFrom(
    "\ud800",
    "\udfff",
    "\u0000",
    "\u202e\u202d",
    "\ufeff",
    "😀".repeat(40),
    "e\u0301",
    "a\r\nb",
    "",
    " ",
    "__proto__",
    "constructor"
  ),
  FastCheck.constantFrom(0, -1, 1.5, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER).map((n) => n),
  FastCheck.constantFrom("1e400", "-1e400", "1e-400", "-0", "123456789012345678901234567890", "1E+2").map(raw),
  FastCheck.constantFrom(null, true, false, [], {}),
  FastCheck.jsonValue({ maxDepth: 3 })
)

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Every path (keys and indices) into a JSON value, the root included. */
const pathsOf = (
  value: unknown,
  prefix: ReadonlyArray<string | number> = []
): Array<ReadonlyArray<string | number>> => {
  const out: Array<ReadonlyArray<string | number>> = [prefix]
  if (Array.isArray(value)) value.forEach((item, i) => out.push(...pathsOf(item, [...prefix, i])))
  else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) out.push(...pathsOf(item, [...prefix, key]))
  }
  return out
}

type Mutation =
  | { readonly op: "retype"; readonly value: unknown }
  | { readonly op: "drop" }
  | { readonly op: "duplicate" }
  | { readonly op: "unknown"; readonly key: string; readonly value: unknown }

/** Apply `mutation` at `path` in a deep copy of `value`. */
const mutate = (value: unknown, path: ReadonlyArray<string | number>, mutation: Mutation): unknown => {
  if (path.length === 0) {
    switch (mutation.op) {
      case "retype":
        return mutation.value
      case "unknown":
        return isRecord(value) ? { ...value, [mutation.key]: mutation.value } : value
      default:
        return value
    }
  }
  const [head, ...rest] = path
  if (Array.isArray(value) && typeof head === "number") {
    if (rest.length === 0 && mutation.op === "drop") return value.filter((_, i) => i !== head)
    if (rest.length === 0 && mutation.op === "duplicate") return [...value.slice(0, head + 1), ...value.slice(head)]
    return value.map((item, i) => (i === head ? mutate(item, rest, mutation) : item))
  }
  if (isRecord(value) && typeof head === "string") {
    if (rest.length === 0 && mutation.op === "drop") {
      return Object.fromEntries(Object.entries(value).filter(([key]) => key !== head))
    }
    if (rest.length === 0 && mutation.op === "duplicate") {
      // The same key twice in the JSON text, the second with another value.
      return { ...value, [`${DUP}${head}`]: typeof value[head] === "string" ? 42 : "duplicate" }
    }
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, key === head ? mutate(item, rest, mutation) : item])
    )
  }
  return value
}

const mutation: FastCheck.Arbitrary<Mutation> = FastCheck.oneof(
  { weight: 4, arbitrary: edgeValue.map((value): Mutation => ({ op: "retype", value })) },
  { weight: 2, arbitrary: FastCheck.constant<Mutation>({ op: "drop" }) },
  { weight: 1, arbitrary: FastCheck.constant<Mutation>({ op: "duplicate" }) },
  {
    weight: 2,
    arbitrary: FastCheck.tuple(
      FastCheck.oneof(FastCheck.string(), hugeString, FastCheck.constantFrom("__proto__", "constructor", "toString")),
      edgeValue
    )
      .map(([key, value]): Mutation => ({ op: "unknown", key, value }))
  }
)

const models = FastCheck.constantFrom("fast", "claude", "ping", "auto", "no-such-route")

const chatBody = (model: string, stream: boolean): Json => ({
  model,
  stream,
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: [{ type: "text", text: "fix the typo in README" }] },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "read", arguments: "{\"path\":\"README\"}" } }]
    },
    { role: "tool", tool_call_id: "call_1", content: "teh" },
    {
      role: "user",
      content: [{ type: "text", text: "and this" }, {
        type: "image_url",
        image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "low" }
      }]
    }
  ],
  tools: [{
    type: "function",
    function: {
      name: "read",
      description: "read a file",
      parameters: { type: "object", properties: { path: { type: "string" } } }
    }
  }],
  tool_choice: { type: "function", function: { name: "read" } },
  response_format: { type: "json_schema", json_schema: { name: "answer", schema: { type: "object" } } },
  stream_options: { include_usage: true },
  stop: ["\n\n"],
  user: "someone",
  temperature: 0.2,
  max_tokens: 64
})

const messagesBody = (model: string, stream: boolean): Json => ({
  model,
  stream,
  max_tokens: 64,
  system: [{ type: "text", text: "be brief" }],
  messages: [
    { role: "user", content: "fix the typo in README" },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "read", input: { path: "README", depth: { a: [1, 2] } } }]
    },
    {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "teh" }] }]
    },
    {
      role: "assistant",
      content: [{ type: "thinking", thinking: "the typo", signature: "sig" }, {
        type: "redacted_thinking",
        data: "opaque"
      }, { type: "text", text: "fixed" }]
    },
    {
      role: "user",
      content: [{ type: "text", text: "and this", cache_control: { type: "ephemeral" } }, {
        type: "image",
        source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" }
      }]
    }
  ],
  tools: [{
    name: "read",
    description: "read a file",
    input_schema: { type: "object", properties: { path: { type: "string" } } }
  }],
  tool_choice: { type: "auto" },
  thinking: { type: "enabled", budget_tokens: 1024 },
  stop_sequences: ["END"],
  metadata: { user_id: "someone" },
  temperature: 0.2
})

const responsesBody = (model: string, stream: boolean): Json => ({
  model,
  stream,
  instructions: "be brief",
  input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "project rules" }] },
    {
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "fix the typo in README" }, {
        type: "input_image",
        image_url: "data:image/png;base64,iVBORw0KGgo="
      }]
    },
    { type: "function_call", call_id: "call_1", name: "read", arguments: "{\"path\":\"README\"}" },
    { type: "function_call_output", call_id: "call_1", output: "teh" },
    { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "look" }], encrypted_content: "enc" }
  ],
  tools: [
    { type: "function", name: "read", parameters: { type: "object", properties: { path: { type: "string" } } } },
    { type: "namespace", name: "ns", tools: [{ type: "function", name: "inner", parameters: { type: "object" } }] },
    { type: "custom", name: "patch", description: "apply a patch" },
    { type: "web_search" }
  ],
  tool_choice: "auto",
  text: { format: { type: "json_object" } },
  reasoning: { effort: "low", summary: "auto" },
  include: ["reasoning.encrypted_content"],
  store: false,
  max_output_tokens: 64
})

/** A Gemini body (the model is in the path): every kind of part, tools and settings. */
const geminiBody = (): Json => ({
  systemInstruction: { parts: [{ text: "be brief" }] },
  contents: [
    {
      role: "user",
      parts: [{ text: "fix the typo in README" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }]
    },
    {
      role: "model",
      parts: [{ text: "reading", thought: true }, { functionCall: { name: "read", args: { path: "README" } } }]
    },
    { role: "user", parts: [{ functionResponse: { name: "read", response: { output: "teh" } } }] }
  ],
  tools: [{
    functionDeclarations: [{ name: "read", parameters: { type: "OBJECT", properties: { path: { type: "STRING" } } } }]
  }],
  toolConfig: { functionCallingConfig: { mode: "AUTO" } },
  generationConfig: { temperature: 0.2, maxOutputTokens: 64, stopSequences: ["END"] },
  safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }]
})

type Api = "openai" | "anthropic" | "gemini"

interface Endpoint {
  readonly path: string
  /** Which envelope its errors use. */
  readonly api: Api
  readonly body: (model: string, stream: boolean) => Json
}

const endpoints: ReadonlyArray<Endpoint> = [
  { path: "/v1/chat/completions", api: "openai", body: chatBody },
  { path: "/v1/messages", api: "anthropic", body: messagesBody },
  { path: "/v1/messages?beta=true", api: "anthropic", body: messagesBody },
  { path: "/v1/messages/count_tokens", api: "anthropic", body: (model, stream) => messagesBody(model, stream) },
  { path: "/v1/responses", api: "openai", body: responsesBody },
  {
    path: "/v1/decision",
    api: "openai",
    body: (model, stream) => ({ input_format: "openai_responses", request: responsesBody(model, stream) })
  },
  {
    path: "/v1/decision",
    api: "openai",
    body: (model, stream) => ({ input_format: "openai_chat", request: chatBody(model, stream) })
  },
  {
    path: "/v1/decision",
    api: "openai",
    body: (model, stream) => ({ input_format: "anthropic_messages", request: messagesBody(model, stream) })
  },
  // Gemini: the route is in the path, one per endpoint form
  { path: "/v1beta/models/fast:generateContent", api: "gemini", body: geminiBody },
  { path: "/v1beta/models/auto:streamGenerateContent?alt=sse", api: "gemini", body: geminiBody },
  { path: "/v1beta/models/claude:streamGenerateContent", api: "gemini", body: geminiBody },
  { path: "/v1beta/models/ping:countTokens", api: "gemini", body: geminiBody }
]

/** A mutated valid body: 0–3 mutations at random paths of a valid body for the endpoint. */
const mutatedBody = (endpoint: Endpoint) =>
  FastCheck.tuple(
    models,
    FastCheck.boolean(),
    FastCheck.array(FastCheck.tuple(FastCheck.nat(), mutation), { maxLength: 3 })
  )
    .map(([model, stream, mutations]) =>
      Buffer.from(
        serialize(mutations.reduce<unknown>((body, [pick, m]) => {
          const paths = pathsOf(body)
          return mutate(body, paths[pick % paths.length] ?? [], m)
        }, endpoint.body(model, stream))),
        "utf8"
      )
    )

/** Bytes that are not a valid request: garbage, truncated JSON, JSON that is not an object. */
const garbageBody = (endpoint: Endpoint) =>
  FastCheck.oneof(
    FastCheck.uint8Array({ maxLength: 2_000 }).map((bytes) => Buffer.from(bytes)),
    FastCheck.string({ maxLength: 500 }).map((text) => Buffer.from(text, "utf8")),
    FastCheck.tuple(models, FastCheck.double({ min: 0, max: 1, noNaN: true })).map(([model, cut]) => {
      const text = serialize(endpoint.body(model, false))
      return Buffer.from(text.slice(0, Math.floor(text.length * cut)), "utf8")
    }),
    FastCheck.jsonValue({ maxDepth: 2 }).filter((v) => !isRecord(v)).map((v) =>
      Buffer.from(JSON.stringify(v) ?? "null", "utf8")
    ),
    FastCheck.constantFrom("", "{", "}", "[]", "null", "{\"model\":", "\u0000", "{\"model\":\"fast\"}{}").map((t) =>
      Buffer.from(t)
    )
  )

const printable = FastCheck.string({ minLength: 1, maxLength: 40 }).map((s) => s.replace(/[^\x21-\x7e]/g, "a"))

/** Optional odd headers; `content-length` is set by the sender unless chunked. */
const oddHeaders = FastCheck.record(
  {
    "content-type": FastCheck.constantFrom(
      "application/json",
      "text/plain",
      "application/json; charset=latin1",
      "multipart/form-data; boundary=x"
    ),
    expect: FastCheck.constant("100-continue"),
    connection: FastCheck.constantFrom("keep-alive, x-hop", "close, X-Hop", "x-hop"),
    "x-switchyard-session-id": FastCheck.oneof(
      printable,
      FastCheck.integer({ min: 100, max: 8_000 }).map((n) => "s".repeat(n))
    ),
    "x-claude-code-session-id": printable,
    "x-codex-turn-metadata": FastCheck.constantFrom(
      "{\"session_id\":{\"a\":[1]}}",
      "not json",
      "[[[[[[[[[[[[",
      "{\"session_id\":123}"
    ),
    "accept-encoding": FastCheck.constantFrom("gzip, deflate, br, zstd", "identity;q=0", "*"),
    te: FastCheck.constant("trailers"),
    "anthropic-beta": printable,
    "anthropic-version": printable,
    authorization: FastCheck.constant("Bearer sk-caller-secret-0000"),
    accept: FastCheck.constantFrom("text/event-stream", "*/*", "application/xml")
  },
  { requiredKeys: [] }
).map((headers) =>
  // A header the caller's `Connection` names is for the hop to us only.
  headers.connection === undefined ? headers : { ...headers, "x-hop": "hop-by-hop value" }
)

const OpenAiEnvelope = Schema.decodeUnknownEither(Schema.parseJson(ErrorEnvelope))
const AnthropicEnvelope = Schema.decodeUnknownEither(Schema.parseJson(AnthropicMessages.ErrorBody))
const GeminiEnvelope = Schema.decodeUnknownEither(Schema.parseJson(Gemini.ErrorBody))

/** The properties every reply must have; returns a description of the first broken one. */
const check = (endpoint: Endpoint, request: Buffer, reply: Reply): string | undefined => {
  if (reply.status >= 500) return `status ${reply.status}: ${reply.body.slice(0, 300)}`
  if (reply.status >= 200 && reply.status < 300) return undefined
  const enveloped = endpoint.api === "openai"
    ? Either.isRight(OpenAiEnvelope(reply.body))
    : endpoint.api === "anthropic"
    ? Either.isRight(AnthropicEnvelope(reply.body))
    : Either.isRight(GeminiEnvelope(reply.body))
  if (!enveloped) return `status ${reply.status} without the ${endpoint.api} envelope: ${reply.body.slice(0, 300)}`
  const bytes = Buffer.from(reply.body, "utf8")
  if (bytes.length > 2_048) return `error body of ${bytes.length} bytes`
  if (sharesRun(bytes, request, 201)) {
    return `error body quotes more than 200 bytes of the request: ${reply.body.slice(0, 300)}`
  }
  return undefined
}

describe("hardening: generated requests on every LLM endpoint", () => {
  it.scopedLive(
    "mutated bodies, garbage and odd headers: never a 5xx, always the envelope, no echo; the server stays healthy",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(deployment)
        yield* upstream.setBehaviour("judge-model", verdict)
        const sample = FastCheck.constantFrom(...endpoints).chain((endpoint) =>
          FastCheck.tuple(
            FastCheck.constant(endpoint),
            FastCheck.oneof({ weight: 3, arbitrary: mutatedBody(endpoint) }, {
              weight: 1,
              arbitrary: garbageBody(endpoint)
            }),
            oddHeaders,
            FastCheck.boolean()
          )
        )
        const failures: Array<string> = []
        const statuses = new Map<number, number>()
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(sample, async ([endpoint, body, headers, chunked]) => {
              const sent = chunked ? { ...headers } : { ...headers, "content-length": String(body.length) }
              const reply = await send(url, endpoint.path, sent, body)
              statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1)
              const broken = check(endpoint, body, reply)
              if (broken !== undefined) failures.push(`${endpoint.path}: ${broken}`)
              return broken === undefined
            }),
            { seed: 20261201, numRuns: 400, endOnFailure: true }
          ).catch((error: unknown) => {
            failures.push(String(error).slice(0, 2_000))
          })
        )
        assert.deepStrictEqual(failures, [])
        // Every sample was sent, and the samples reached both answers and every kind of refusal.
        assert.strictEqual([...statuses.values()].reduce((a, b) => a + b, 0), 400)
        for (const status of [200, 400, 404]) assert.isAbove(statuses.get(status) ?? 0, 10, `status ${status}`)
        const health = yield* Effect.promise(() => fetch(`${url}/health`))
        assert.strictEqual(health.status, 200)
        // No caller credential and no `Expect` ever reached the upstream.
        const records = yield* upstream.requests
        assert.isAbove(records.length, 0)
        for (const record of records) {
          assert.isUndefined(record.headers["expect"])
          assert.isUndefined(record.headers["x-hop"])
          assert.notInclude(JSON.stringify(record.headers), "sk-caller-secret")
        }
      }),
    { timeout: 240_000 }
  )
})

describe("error messages quote at most a short prefix of an offending value", () => {
  const big = "R".repeat(100_000)
  it.scopedLive("a 100,000-character role, a 1 MB string in tools[0], a long unknown model, a long input_format", () =>
    Effect.gen(function*() {
      const exporter = new InMemorySpanExporter()
      const logs: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        logs.push(JSON.stringify({ message, annotations: [...annotations] }))
      })
      const { url } = yield* startServer(
        deployment,
        { telemetry: Telemetry.layerWith({ spanProcessor: new SimpleSpanProcessor(exporter) }) },
        Option.some(capture)
      )
      const cases: ReadonlyArray<{ path: string; body: unknown; status: number; api: Api; needle: string }> = [
        {
          path: "/v1/chat/completions",
          body: { model: "fast", messages: [{ role: big, content: "hi" }] },
          status: 400,
          api: "openai",
          needle: "messages[0]"
        },
        {
          path: "/v1/chat/completions",
          body: {
            model: "fast",
            messages: [{ role: "user", content: "hi" }],
            tools: [{ type: "function", function: 7, pad: "T".repeat(1_000_000) }]
          },
          status: 400,
          api: "openai",
          needle: "tools[0]"
        },
        {
          path: "/v1/chat/completions",
          body: { model: `m${big}`, messages: [{ role: "user", content: "hi" }] },
          status: 404,
          api: "openai",
          needle: "(100001 chars)"
        },
        {
          path: "/v1/messages",
          body: { model: `m${big}`, max_tokens: 5, messages: [{ role: "user", content: "hi" }] },
          status: 404,
          api: "anthropic",
          needle: "(100001 chars)"
        },
        {
          path: "/v1/decision",
          body: { input_format: big, request: {} },
          status: 400,
          api: "openai",
          needle: "input_format"
        },
        {
          path: "/v1/decision",
          body: {
            input_format: "openai_chat",
            request: { model: "fast", messages: [{ role: "user", content: { nested: [big] } }] }
          },
          status: 400,
          api: "openai",
          needle: "messages[0].content"
        }
      ]
      for (const { api, body, needle, path, status } of cases) {
        const text = Buffer.from(JSON.stringify(body), "utf8")
        const reply = yield* Effect.promise(() => send(url, path, { "content-type": "application/json" }, text))
        assert.strictEqual(reply.status, status, reply.body.slice(0, 300))
        assert.isBelow(reply.body.length, 2_048)
        assert.include(reply.body, needle)
        assert.isUndefined(check({ path, api, body: () => null }, text, reply))
        // Nor do the log lines and spans of the request carry it.
        const spans = JSON.stringify(
          exporter.getFinishedSpans().map((span) => ({
            name: span.name,
            attributes: span.attributes,
            events: span.events,
            status: span.status
          }))
        )
        for (const haystack of [logs.join("\n"), spans]) {
          assert.isFalse(sharesRun(Buffer.from(haystack, "utf8"), text, 201), `${path}: ${haystack.slice(0, 300)}`)
        }
        // (`/v1/decision` writes no request log line.)
        if (path !== "/v1/decision") {
          assert.isTrue(logs.some((line) => line.includes(`"status",${status}`)), "the request was logged")
        }
        logs.length = 0
        exporter.reset()
      }
    }))
})

describe("nesting bound", () => {
  it.scopedLive("deeper than 512 levels is a 400 naming the limit in each endpoint's envelope; an unknown field 500 deep is forwarded", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(deployment)
      const messages = (depth: number) => ({
        model: "ping",
        max_tokens: 5,
        messages: [{ role: "user", content: "hi" }, {
          role: "assistant",
          content: [{ type: "tool_use", id: "t", name: "f", input: nested(depth, "object", "1") }]
        }]
      })
      const cases: ReadonlyArray<{ path: string; body: unknown; api: Api }> = [
        {
          path: "/v1/chat/completions",
          body: { model: "fast", messages: [{ role: "user", content: "hi" }], extra: nested(5_000, "object", "1") },
          api: "openai"
        },
        {
          path: "/v1/chat/completions",
          body: { model: "fast", messages: [{ role: "user", content: nested(10_000, "array", "\"x\"") }] },
          api: "openai"
        },
        { path: "/v1/messages", body: messages(5_000), api: "anthropic" },
        { path: "/v1/messages/count_tokens", body: messages(600), api: "anthropic" },
        {
          path: "/v1/responses",
          body: {
            model: "fast",
            input: [{ type: "function_call_output", call_id: "c", output: nested(2_000, "array", "\"x\"") }]
          },
          api: "openai"
        },
        {
          path: "/v1/decision",
          body: { input_format: "openai_chat", request: { model: "fast", x: nested(511, "array", "0") } },
          api: "openai"
        }
      ]
      for (const { api, body, path } of cases) {
        const text = Buffer.from(serialize(body))
        const reply = yield* Effect.promise(() => send(url, path, {}, text))
        assert.strictEqual(reply.status, 400, reply.body.slice(0, 300))
        assert.include(reply.body, "512")
        assert.isUndefined(check({ path, api, body: () => null }, text, reply))
      }
      // 512 levels in all is within the bound: an unknown field 510 levels below the root is forwarded untouched.
      const deep = nestedText(510, "object", "\"bottom\"")
      const ok = yield* Effect.promise(() =>
        send(
          url,
          "/v1/chat/completions",
          {},
          Buffer.from(serialize({ model: "fast", messages: [{ role: "user", content: "hi" }], extra: raw(deep) }))
        )
      )
      assert.strictEqual(ok.status, 200, ok.body.slice(0, 300))
      const forwarded = (yield* upstream.requests).at(-1)
      assert.deepStrictEqual(isRecord(forwarded?.body) ? forwarded.body["extra"] : undefined, JSON.parse(deep))
    }))
})

describe("Expect: 100-continue", () => {
  it.scopedLive("a 2 MiB body sent after `100 Continue` answers 200 through passthrough and a classifier route; `expect` is not forwarded", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(deployment)
      yield* upstream.setBehaviour("judge-model", verdict)
      const padding = "p".repeat(2 * 1024 * 1024)
      for (const model of ["fast", "auto"]) {
        const body = Buffer.from(JSON.stringify({ model, messages: [{ role: "user", content: `fix it ${padding}` }] }))
        assert.isAbove(body.length, 2 * 1024 * 1024)
        const reply = yield* Effect.promise(() =>
          send(
            url,
            "/v1/chat/completions",
            {
              "content-type": "application/json",
              "content-length": String(body.length),
              expect: "100-continue"
            },
            body,
            { waitForContinue: true }
          )
        )
        assert.strictEqual(reply.status, 200, reply.body.slice(0, 300))
        assert.include(reply.body, FakeUpstream.defaultContent)
      }
      const records = yield* upstream.requests
      // passthrough: one answer call; classifier: one judge call and one answer call.
      assert.deepStrictEqual(records.map((r) => r.model), ["local-coder", "judge-model", "local-coder"])
      for (const record of records) assert.isUndefined(record.headers["expect"])
    }))
})

describe("objects with a field named toString or valueOf", () => {
  // `JSON.parse` makes them; Effect's union decoding turns a value into a property key and throws
  // on them. Every decode of wire data reads them as a mismatch at their path instead.
  const unreadable = { toString: {} }
  it.scopedLive("in a request: a 400 naming the path on each endpoint; in an answer or a chunk: a 502, never a 500", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(deployment)
      const post = (path: string, body: unknown) =>
        Effect.promise(() =>
          send(url, path, { "content-type": "application/json" }, Buffer.from(JSON.stringify(body), "utf8"))
        )
      const requests: ReadonlyArray<{ path: string; body: unknown; needle: string }> = [
        {
          path: "/v1/chat/completions",
          body: { model: "fast", messages: [{ role: unreadable, content: "x" }] },
          needle: "messages[0].role"
        },
        {
          path: "/v1/messages",
          body: { model: "claude", max_tokens: 5, messages: [{ role: "user", content: [{ type: unreadable }] }] },
          needle: "messages[0].content"
        },
        {
          path: "/v1/responses",
          body: { model: "fast", input: [{ type: "message", role: unreadable, content: "x" }] },
          needle: "input"
        },
        {
          path: "/v1/decision",
          body: {
            input_format: "openai_chat",
            request: { model: "fast", messages: [{ role: unreadable, content: "x" }] }
          },
          needle: "messages[0].role"
        },
        {
          path: "/v1beta/models/fast:generateContent",
          body: { contents: [{ role: "user", parts: [{ text: "x", thought: unreadable }] }] },
          needle: "contents[0].parts[0]"
        }
      ]
      for (const { body, needle, path } of requests) {
        const reply = yield* post(path, body)
        assert.strictEqual(reply.status, 400, `${path}: ${reply.body.slice(0, 300)}`)
        assert.include(reply.body, needle, path)
      }
      assert.lengthOf(yield* upstream.requests, 0, "no request went upstream")

      const answer = JSON.stringify({
        id: "c1",
        model: "local-coder",
        choices: [{
          index: 0,
          message: {
            role: "assistant",
            tool_calls: [{ id: "t", type: unreadable, function: { name: "f", arguments: "{}" } }]
          },
          finish_reason: "tool_calls"
        }]
      })
      const chunk = JSON.stringify({
        id: "c1",
        model: "local-coder",
        choices: [{ index: 0, delta: { thinking_blocks: [{ type: unreadable }] } }]
      })
      yield* upstream.setBehaviour("local-coder", FakeUpstream.Raw.make({ body: answer, events: [{ data: chunk }] }))
      const buffered = yield* post("/v1/chat/completions", {
        model: "fast",
        messages: [{ role: "user", content: "x" }]
      })
      assert.strictEqual(buffered.status, 502, buffered.body.slice(0, 300))
      assert.include(buffered.body, "does not match the expected schema")
      const streamed = yield* post("/v1/chat/completions", {
        model: "fast",
        stream: true,
        messages: [{ role: "user", content: "x" }]
      })
      assert.strictEqual(streamed.status, 200)
      assert.include(streamed.body, "stream chunk does not match the expected schema")
      const event = JSON.stringify({ type: unreadable })
      yield* upstream.setBehaviour(
        "claude-sonnet",
        FakeUpstream.Raw.make({ body: "{}", events: [{ event: "x", data: event }] })
      )
      const messages = yield* post("/v1/messages", {
        model: "claude",
        max_tokens: 5,
        stream: true,
        messages: [{ role: "user", content: "x" }]
      })
      assert.strictEqual(messages.status, 200)
      assert.include(messages.body, "event: error")
    }))
})
