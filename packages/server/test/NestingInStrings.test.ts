/**
 * The nesting bound (512 levels) on JSON carried inside strings and on upstream answers, through
 * the real server on loopback in front of the fake upstream: a caller's tool-call arguments nested
 * deeper are a 400 naming the field in the endpoint's envelope (nothing goes upstream); a tool
 * result's deep text reaches a Gemini upstream as text; an upstream's answer, stream event or
 * tool-call arguments nested deeper fail as an invalid response (502, or the stream's error
 * ending) in every endpoint's format — never a 500. Real sockets, so `it.scopedLive`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as FastCheck from "effect/FastCheck"
import * as Predicate from "effect/Predicate"
import { chatAndClaude, startServer } from "./harness.js"

const bound = 512

const deployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl, { settings: { timeout_ms: 20_000 } }), {
    llm_clients: {
      gem: D.client("gemini_generate_content", upstreamUrl, { max_retries: 0, timeout_ms: 20_000 }),
      resp: D.client("openai_responses", upstreamUrl, { max_retries: 0, timeout_ms: 20_000 })
    },
    targets: { gemini: D.target("gemini-pro", "gem"), responses: D.target("resp-model", "resp") },
    routes: D.byId(D.passthrough("gem", "gemini"), D.passthrough("resp", "responses"))
  })

/** JSON text of `depth` nested objects (`{"k":…}`, an array every third level) around `1`. */
const deepText = (depth: number): string => {
  let open = ""
  let close = ""
  for (let i = 0; i < depth; i++) {
    const array = i % 3 === 2
    open += array ? "[" : "{\"k\":"
    close = (array ? "]" : "}") + close
  }
  return `${open}1${close}`
}

interface Reply {
  readonly status: number
  readonly text: string
  readonly json: unknown
}

const post = (url: string, path: string, body: unknown) =>
  Effect.promise(async (): Promise<Reply> => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const text = await response.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, text, json }
  })

/** The envelope of an endpoint's API: OpenAI (chat, Responses, decision), Anthropic, Gemini. */
type Api = "openai" | "anthropic" | "gemini"

/** `reply` is `status` in `api`'s error envelope, its message saying `needle`s. */
const assertEnvelope = (reply: Reply, api: Api, status: number, ...needles: ReadonlyArray<string>) => {
  assert.strictEqual(reply.status, status, reply.text.slice(0, 400))
  const body = reply.json
  const error = Predicate.hasProperty(body, "error") && Predicate.isRecord(body.error) ? body.error : undefined
  assert.isDefined(error, reply.text.slice(0, 400))
  const message = error?.["message"]
  switch (api) {
    case "openai":
      assert.deepStrictEqual(
        [error?.["type"], error?.["code"]],
        status === 400 ? ["invalid_request_error", "invalid_request_error"] : ["upstream_error", "upstream_error"]
      )
      break
    case "anthropic":
      assert.deepStrictEqual(Predicate.hasProperty(body, "type") ? body.type : undefined, "error")
      assert.strictEqual(error?.["type"], status === 400 ? "invalid_request_error" : "api_error")
      break
    case "gemini":
      assert.strictEqual(error?.["code"], status)
      assert.strictEqual(error?.["status"], status === 400 ? "INVALID_ARGUMENT" : "UNAVAILABLE")
      break
  }
  for (const needle of needles) assert.include(message, needle)
  // never the request's or the answer's deep text itself
  assert.isBelow(reply.text.length, 1_000)
}

/** A chat request to `model` whose assistant turn (`messages[2]`) calls a tool with `args` as its second call. */
const chatWithCall = (model: string, args: string, output = "done") => ({
  model,
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: "go" },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c0", type: "function", function: { name: "f", arguments: "{}" } },
        { id: "c1", type: "function", function: { name: "f", arguments: args } }
      ]
    },
    { role: "tool", tool_call_id: "c0", content: "ok" },
    { role: "tool", tool_call_id: "c1", content: output }
  ]
})

/** A Responses request to `model` whose `input[1]` is a `function_call` with `args`. */
const responsesWithCall = (model: string, args: string) => ({
  model,
  input: [
    { role: "user", content: "go" },
    { type: "function_call", call_id: "c1", name: "f", arguments: args },
    { type: "function_call_output", call_id: "c1", output: "done" }
  ]
})

const toolsWord = "nests arrays and objects deeper than the limit of 512 levels"

describe("a caller's JSON inside strings", () => {
  it.scopedLive(
    "tool-call arguments past the bound (513, 10^4, 10^5 levels): 400 naming the field in the chat and Responses envelopes, for every target, nothing sent upstream; at the bound (511, 512) they are sent",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(deployment)
        for (const depth of [bound + 1, 10_000, 100_000]) {
          const args = deepText(depth)
          const chatPath = "messages[2].tool_calls[1].function.arguments"
          for (const model of ["claude", "gem", "resp"]) {
            const reply = yield* post(url, "/v1/chat/completions", chatWithCall(model, args))
            assertEnvelope(reply, "openai", 400, chatPath, toolsWord)
          }
          for (const model of ["fast", "claude", "gem", "resp"]) {
            const reply = yield* post(url, "/v1/responses", responsesWithCall(model, args))
            assertEnvelope(reply, "openai", 400, "input[1].arguments", toolsWord)
          }
          const decision = yield* post(url, "/v1/decision", {
            input_format: "openai_responses",
            request: responsesWithCall("fast", args)
          })
          assertEnvelope(decision, "openai", 400, "input[1].arguments", toolsWord)
        }
        assert.lengthOf(yield* upstream.requests, 0, "no request went upstream")
        // at the bound (511, 512 levels) they are translated and sent
        for (const depth of [bound - 1, bound]) {
          const args = deepText(depth)
          for (const model of ["claude", "gem", "resp"]) {
            const reply = yield* post(url, "/v1/chat/completions", chatWithCall(model, args))
            assert.strictEqual(reply.status, 200, `${model} ${depth}: ${reply.text.slice(0, 300)}`)
          }
          const reply = yield* post(url, "/v1/responses", responsesWithCall("claude", args))
          assert.strictEqual(reply.status, 200, reply.text.slice(0, 300))
        }
        const records = yield* upstream.requests
        assert.lengthOf(records, 8)
        // the Anthropic upstream was sent the arguments as the `input` object they are
        const anthropic = records.filter((r) => r.model === "claude-sonnet").map((r) => JSON.stringify(r.body))
        for (const depth of [bound - 1, bound]) {
          assert.isTrue(anthropic.some((body) => body.includes(`"input":${deepText(depth)}`)), String(depth))
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a tool result's text past the bound reaches a Gemini upstream as text (`{\"output\": text}`), from chat, Messages and Responses callers",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(deployment)
        for (const depth of [bound + 1, 10_000]) {
          const text = deepText(depth)
          const replies = [
            yield* post(url, "/v1/chat/completions", chatWithCall("gem", "{}", text)),
            yield* post(url, "/v1/messages", {
              model: "gem",
              max_tokens: 5,
              messages: [
                { role: "user", content: "go" },
                { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "f", input: {} }] },
                { role: "user", content: [{ type: "tool_result", tool_use_id: "c1", content: text }] }
              ]
            }),
            yield* post(url, "/v1/responses", {
              model: "gem",
              input: [
                { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
                { type: "function_call_output", call_id: "c1", output: text }
              ]
            })
          ]
          for (const reply of replies) assert.strictEqual(reply.status, 200, reply.text.slice(0, 300))
          const sent = (yield* upstream.drain).map((r) => JSON.stringify(r.body))
          assert.lengthOf(sent, 3)
          for (const body of sent) assert.include(body, `"response":${JSON.stringify({ output: text })}`)
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "fuzz: random depths in the parsed string fields of chat and Responses requests — 400 past the bound, else 200, never a 500",
    () =>
      Effect.gen(function*() {
        const { url } = yield* startServer(deployment)
        const cases = FastCheck.sample(
          FastCheck.record({
            depth: FastCheck.oneof(
              FastCheck.integer({ min: 1, max: 40 }),
              FastCheck.integer({ min: bound - 4, max: bound + 4 }),
              FastCheck.integer({ min: 1_000, max: 60_000 })
            ),
            endpoint: FastCheck.constantFrom("chat", "responses"),
            model: FastCheck.constantFrom("fast", "claude", "gem", "resp"),
            output: FastCheck.integer({ min: 0, max: 3_000 })
          }),
          { numRuns: 40, seed: 512 }
        )
        for (const { depth, endpoint, model, output } of cases) {
          const args = deepText(depth)
          const reply = endpoint === "chat"
            ? yield* post(url, "/v1/chat/completions", chatWithCall(model, args, deepText(output)))
            : yield* post(url, "/v1/responses", responsesWithCall(model, args))
          // a chat request to a chat target is never translated: its arguments are never parsed
          const parsed = !(endpoint === "chat" && model === "fast")
          if (depth > bound && parsed) {
            assertEnvelope(
              reply,
              "openai",
              400,
              endpoint === "chat" ? "messages[2].tool_calls[1].function.arguments" : "input[1].arguments"
            )
          } else {
            assert.strictEqual(reply.status, 200, `${endpoint} ${model} ${depth}: ${reply.text.slice(0, 300)}`)
          }
        }
      }),
    { timeout: 120_000 }
  )
})

describe("an upstream's deep JSON: an invalid response in every endpoint's format", () => {
  /** Each endpoint asking route `model`, buffered or streamed, and the API of its envelope. */
  const endpoints = (model: string, stream: boolean) =>
    [
      {
        api: "openai",
        path: "/v1/chat/completions",
        body: { model, stream, messages: [{ role: "user", content: "go" }] }
      },
      {
        api: "anthropic",
        path: "/v1/messages",
        body: { model, stream, max_tokens: 5, messages: [{ role: "user", content: "go" }] }
      },
      { api: "openai", path: "/v1/responses", body: { model, stream, input: "go" } },
      {
        api: "gemini",
        path: `/v1beta/models/${model}:${stream ? "streamGenerateContent?alt=sse" : "generateContent"}`,
        body: { contents: [{ role: "user", parts: [{ text: "go" }] }] }
      }
    ] as const

  it.scopedLive(
    "an answer body or stream event past the bound: 502 or the stream's error ending, from every upstream format",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(deployment)
        const deep = `{"x":${deepText(5_000)}}`
        // each target format's answer (or event) with a deep field where that format keeps unknown fields
        const answers: ReadonlyArray<readonly [string, string, string]> = [
          [
            "fast",
            "local-coder",
            `{"id":"c","model":"local-coder","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"x":${deep}}`
          ],
          [
            "claude",
            "claude-sonnet",
            `{"id":"m","type":"message","role":"assistant","model":"claude-sonnet","content":[{"type":"tool_use","id":"t","name":"f","input":${deep}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
          ],
          [
            "gem",
            "gemini-pro",
            `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":${deep}}}]},"finishReason":"STOP","index":0}]}`
          ],
          [
            "resp",
            "resp-model",
            `{"id":"resp_1","object":"response","created_at":1,"model":"resp-model","status":"completed","output":[],"x":${deep}}`
          ]
        ]
        for (const [route, model, body] of answers) {
          yield* upstream.setBehaviour(model, FakeUpstream.Raw.make({ body, events: [{ data: body }] }))
          for (const endpoint of endpoints(route, false)) {
            const reply = yield* post(url, endpoint.path, endpoint.body)
            assertEnvelope(
              reply,
              endpoint.api,
              502,
              model,
              "nests arrays and objects deeper than the limit of 512 levels"
            )
          }
          for (const endpoint of endpoints(route, true)) {
            const reply = yield* post(url, endpoint.path, endpoint.body)
            assert.strictEqual(reply.status, 200, `${route} ${endpoint.path}`)
            assert.include(
              reply.text,
              "nests arrays and objects deeper than the limit of 512 levels",
              `${route} ${endpoint.path}`
            )
            assert.isBelow(reply.text.length, 4_000)
          }
        }
      }),
    { timeout: 120_000 }
  )

  it.scopedLive(
    "tool-call arguments past the bound from a chat or Responses upstream: 502 (or the stream's error) for a caller reading them in another format; a chat caller gets them as sent",
    () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(deployment)
        const args = deepText(5_000)
        for (const [route, model] of [["fast", "local-coder"], ["resp", "resp-model"]] as const) {
          yield* upstream.setBehaviour(model, FakeUpstream.ToolUse.make({ name: "f", input: args }))
          for (const stream of [false, true]) {
            for (const endpoint of endpoints(route, stream)) {
              const reply = yield* post(url, endpoint.path, endpoint.body)
              const native = (route === "fast" && endpoint.path === "/v1/chat/completions") ||
                (route === "resp" && endpoint.path === "/v1/responses")
              const label = `${route} ${endpoint.path} stream=${stream}`
              if (native || (route === "resp" && endpoint.path === "/v1/chat/completions")) {
                // no translation parses them: forwarded as sent
                assert.strictEqual(reply.status, 200, label)
                assert.notInclude(reply.text, "deeper than the limit", label)
                continue
              }
              const path = stream
                ? "choices[0].delta.tool_calls[0].function.arguments"
                : "choices[0].message.tool_calls[0].function.arguments"
              if (stream) {
                assert.strictEqual(reply.status, 200, label)
                assert.include(reply.text, `${path} ${toolsWord}`, label)
              } else {
                assertEnvelope(reply, endpoint.api, 502, model, path, toolsWord)
              }
            }
          }
        }
      }),
    { timeout: 120_000 }
  )
})
