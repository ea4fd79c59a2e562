/**
 * What a target of the caller's own format receives: the caller's bytes with only what changes
 * spliced in (`model`, the target's `extra_body`, the stream flags; for a Messages target the
 * dropped thinking blocks and the cache marker), not the document serialized again — and a body
 * whose bytes do not mean exactly their parse (a duplicate key) serialized from the parse, so the
 * upstream sees what routing saw.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { assert, describe, it } from "@effect/vitest"
import * as UpstreamTransport from "@switchyard-ts/client/UpstreamTransport"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import { basicDeployment, chatAndClaude, startServer } from "./harness.js"

/** POST `text` as it is to `path`. */
const postText = (path: string, text: string, headers: Record<string, string> = {}) =>
  HttpClientRequest.post(path).pipe(
    HttpClientRequest.bodyText(text, "application/json"),
    HttpClientRequest.setHeaders(headers)
  )

describe("bodies forwarded as the caller's bytes", () => {
  it.scoped("a chat body reaches a chat target byte for byte, only model and the target's extra_body spliced in", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi"))
      const text = `{ "model" : "fast" ,\n  "messages": [ {"role":"user","content":"h\\u00e9llo \\"q\\" [{"} ],` +
        `\t"n": 1.0, "x_vendor": {"deep": [1, 2.50e1, null]} }`
      const response = yield* client.execute(postText("/v1/chat/completions", text))
      assert.strictEqual(response.status, 200)
      const [seen] = yield* upstream.requests
      // temperature is the weak target's extra_body, added where the caller did not set it
      assert.strictEqual(
        seen?.bodyText,
        `{ "model" : "weak-model" ,\n  "messages": [ {"role":"user","content":"h\\u00e9llo \\"q\\" [{"} ],` +
          `\t"n": 1.0, "x_vendor": {"deep": [1, 2.50e1, null]},"temperature":0.5 }`
      )
    }))

  it.scoped("a body larger than the joined size is written piece by piece: it arrives byte for byte, with its length", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi"))
      const turns = Array.from(
        { length: 160 },
        (_, i) => `{"role":"user","content":"turn ${i} \\u00e9 ${"x".repeat(600)}"}`
      )
      const messages = `[${turns.join(", ")}]`
      const text = `{"messages": ${messages}, "model": "fast", "temperature": 0.5}`
      assert.isAbove(text.length, UpstreamTransport.joinedUpTo)
      const response = yield* client.execute(postText("/v1/chat/completions", text))
      assert.strictEqual(response.status, 200)
      const [seen] = yield* upstream.requests
      const expected = `{"messages": ${messages}, "model": "weak-model", "temperature": 0.5}`
      assert.strictEqual(seen?.bodyText, expected)
      assert.strictEqual(seen?.headers["content-length"], String(Buffer.byteLength(expected)))
    }))

  it.scoped("streamed: stream_options added for usage; buffered: the caller's stream flags removed", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi"))
      const messages = `[{"role":"user","content":"caf\\u00e9"}]`
      const streamed = yield* client.execute(
        postText("/v1/chat/completions", `{"model":"fast","messages":${messages},"stream":true,"temperature":0}`)
      )
      assert.strictEqual(streamed.status, 200)
      yield* streamed.text
      const buffered = yield* client.execute(
        postText("/v1/chat/completions", `{"stream":false,"model":"fast","stream_options":null,"messages":${messages}}`)
      )
      assert.strictEqual(buffered.status, 200)
      const [first, second] = yield* upstream.requests
      assert.strictEqual(
        first?.bodyText,
        `{"model":"weak-model","messages":${messages},"stream":true,"temperature":0,"stream_options":{"include_usage":true}}`
      )
      assert.strictEqual(second?.bodyText, `{"model":"weak-model","messages":${messages},"temperature":0.5}`)
    }))

  it.scoped("a target's reasoning_effort replaces the caller's in place; added at the end where the caller sent none", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer((url) => {
        const deployment = basicDeployment()(url)
        return {
          ...deployment,
          targets: { ...deployment.targets, strong: D.target("strong-model", "sim", { reasoning_effort: "high" }) },
          routes: D.byId(D.passthrough("deep", "strong"))
        }
      })
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("hi"))
      const messages = `[{"role":"user","content":"plan"}]`
      for (
        const text of [
          `{"model":"deep","reasoning_effort":"low","messages":${messages}}`,
          `{"model":"deep","messages":${messages}}`
        ]
      ) {
        const response = yield* client.execute(postText("/v1/chat/completions", text))
        assert.strictEqual(response.status, 200)
      }
      const [replaced, added] = yield* upstream.requests
      assert.strictEqual(
        replaced?.bodyText,
        `{"model":"strong-model","reasoning_effort":"high","messages":${messages}}`
      )
      assert.strictEqual(added?.bodyText, `{"model":"strong-model","messages":${messages},"reasoning_effort":"high"}`)
    }))

  it.scoped("a body with a duplicate key is sent as routing read it: the last value, written once", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer(basicDeployment())
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi"))
      const text = `{"model":"fast","messages":[{"role":"user","content":"first","content":"second"}]}`
      const response = yield* client.execute(postText("/v1/chat/completions", text))
      assert.strictEqual(response.status, 200)
      const [seen] = yield* upstream.requests
      assert.deepStrictEqual(seen?.body, {
        model: "weak-model",
        messages: [{ role: "user", content: "second" }],
        temperature: 0.5
      })
      assert.notInclude(seen?.bodyText ?? "", "first")
    }))

  it.scoped("a Messages body reaches a Messages target as its bytes: unsigned thinking dropped, the last block marked", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer((url) => chatAndClaude(url))
      yield* upstream.setBehaviour("claude-sonnet", FakeUpstream.ok("hi"))
      const first = `{"role":"user","content":"fix \\u00e9 the build"}`
      const thinking =
        `{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"}]}`
      const text = `{"model":"claude","max_tokens":64,"messages":[${first}, ${thinking},` +
        `{"role":"user","content":"go on"}],"x_vendor":1.0}`
      const response = yield* client.execute(postText("/v1/messages", text, { "anthropic-version": "2023-06-01" }))
      assert.strictEqual(response.status, 200)
      const [seen] = yield* upstream.requests
      assert.strictEqual(
        seen?.bodyText,
        `{"model":"claude-sonnet","max_tokens":64,"messages":[${first}, ` +
          `{"role":"assistant","content":[{"type":"text","text":"ok"}]},` +
          `{"role":"user","content":[{"type":"text","text":"go on","cache_control":{"type":"ephemeral"}}]}],` +
          `"x_vendor":1.0}`
      )
    }))

  it.scoped("a body a route amended (a stage router's system prompt) is serialized from the amended request", () =>
    Effect.gen(function*() {
      const { client, upstream } = yield* startServer((url) =>
        D.extend(basicDeployment()(url), {
          routes: D.byId(
            D.stageRouter("stage", {
              capable_target: "strong",
              efficient_target: "weak",
              picker: "efficient_first",
              confidence_threshold: 0.9,
              efficient_system_prompt: "Be brief."
            })
          )
        })
      )
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("hi"))
      const response = yield* client.execute(
        postText("/v1/chat/completions", `{"model":"stage","messages":[{"role":"user","content":"x"}],"n":1.0}`)
      )
      assert.strictEqual(response.status, 200)
      const [seen] = yield* upstream.requests
      assert.deepStrictEqual(seen?.body, {
        model: "weak-model",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "x" }],
        n: 1,
        temperature: 0.5
      })
    }))
})
