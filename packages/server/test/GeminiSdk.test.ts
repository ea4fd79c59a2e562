/**
 * Gemini clients through the real server: the official `@google/genai` SDK (buffered, streamed, a
 * function-calling round trip, `countTokens`, `models.list`, `models.get`) on a Chat and a Messages target, a
 * capability route whose judge is down under both postures, and raw HTTP for what the SDK does not
 * show (the JSON-array stream, `?key=`, the error envelopes, the caller's key kept to itself).
 */
import { assert, describe, it } from "@effect/vitest"
import { type Content, GoogleGenAI } from "@google/genai"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Telemetry from "@switchyard-ts/server/Telemetry"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { capabilityRoute, chatAndClaude, judgeDeployment, postureRoutes, spansText, startServer } from "./harness.js"

const callerKey = "AIza-caller-google-SECRET-0123"

const sdk = (url: string, apiKey = callerKey) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: url } })

const weatherTool = {
  functionDeclarations: [{
    name: "get_weather",
    description: "The weather in a city",
    parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }]
}

/** The text of a Gemini answer's parts (what the SDK's `text` reads). */
const streamedText = (url: string, model: string) =>
  Effect.promise(async () => {
    const stream = await sdk(url).models.generateContentStream({ model, contents: "hi" })
    let text = ""
    for await (const chunk of stream) text += chunk.text ?? ""
    return text
  })

/** The SDK's round trip of one function call: the call, then its response and the final answer. */
const functionRoundTrip = (url: string, model: string) =>
  Effect.promise(async () => {
    const ai = sdk(url)
    const history: Array<Content> = [{ role: "user", parts: [{ text: "weather in Paris?" }] }]
    const first = await ai.models.generateContent({ model, contents: history, config: { tools: [weatherTool] } })
    const call = first.functionCalls?.[0]
    const modelTurn = first.candidates?.[0]?.content
    if (call === undefined || modelTurn === undefined) return { call, answer: undefined }
    history.push(modelTurn, {
      role: "user",
      parts: [{
        functionResponse: {
          ...(call.id === undefined ? {} : { id: call.id }),
          ...(call.name === undefined ? {} : { name: call.name }),
          response: { output: "sunny, 21C" }
        }
      }]
    })
    const second = await ai.models.generateContent({ model, contents: history, config: { tools: [weatherTool] } })
    return { call, answer: second.text }
  })

/** The request bodies the fake upstream received for `model`, in order. */
const bodiesFor = (upstream: FakeUpstream.FakeUpstream["Type"], model: string) =>
  Effect.map(
    upstream.requests,
    (records) => records.filter((r) => r.model === model).map((r) => JSON.stringify(r.body))
  )

describe("@google/genai SDK as a client", () => {
  for (
    const [route, model, path] of [["fast", "local-coder", "/v1/chat/completions"], [
      "claude",
      "claude-sonnet",
      "/v1/messages"
    ]] as const
  ) {
    it.scopedLive(`buffered, streamed, function calling, countTokens and models.list on the ${route} route`, () =>
      Effect.gen(function*() {
        const { upstream, url } = yield* startServer(chatAndClaude)
        yield* upstream.script(model, [
          FakeUpstream.ok("answer via the Gemini SDK"),
          FakeUpstream.ok("streamed via the Gemini SDK"),
          FakeUpstream.toolUse("get_weather", `{"city":"Paris"}`, { id: "call_w1" }),
          FakeUpstream.ok("It is sunny in Paris.")
        ])
        const buffered = yield* Effect.promise(() => sdk(url).models.generateContent({ model: route, contents: "hi" }))
        assert.strictEqual(buffered.text, "answer via the Gemini SDK")
        assert.strictEqual(buffered.modelVersion, model)
        assert.strictEqual(buffered.candidates?.[0]?.finishReason, "STOP")
        assert.isAbove(buffered.usageMetadata?.totalTokenCount ?? 0, 0)

        assert.strictEqual(yield* streamedText(url, route), "streamed via the Gemini SDK")

        const { answer, call } = yield* functionRoundTrip(url, route)
        assert.strictEqual(call?.name, "get_weather")
        assert.deepStrictEqual(call?.args, { city: "Paris" })
        assert.strictEqual(call?.id, "call_w1")
        assert.strictEqual(answer, "It is sunny in Paris.")
        const sent = yield* bodiesFor(upstream, model)
        assert.strictEqual(sent.length, 4)
        // The function's response reached the target as the result of its call.
        assert.include(sent[3], "sunny, 21C")
        assert.include(sent[3], "call_w1")
        assert.include(sent[2], "get_weather")

        const paths = (yield* upstream.requests).map((r) => r.path)
        assert.isTrue(paths.every((p) => p === path), paths.join(","))

        const counted = yield* Effect.promise(() =>
          sdk(url).models.countTokens({ model: route, contents: "count these words please" })
        )
        assert.isAbove(counted.totalTokens ?? 0, 0)
        // A route with an Anthropic target has it count; any other gets the estimate.
        const counting = (yield* upstream.requests).filter((r) => r.path.endsWith("/count_tokens"))
        assert.strictEqual(counting.length, route === "claude" ? 1 : 0)
        if (route === "claude") assert.include(JSON.stringify(counting[0]?.body), "count these words please")

        const models = yield* Effect.promise(async () => {
          const names: Array<string> = []
          for await (const entry of yield_(await sdk(url).models.list())) names.push(entry.name ?? "")
          return names.sort()
        })
        assert.deepStrictEqual(models, ["models/claude", "models/fast"])

        // The caller's Google key never reaches the upstream.
        for (const request of yield* upstream.requests) {
          assert.notInclude(JSON.stringify(request.headers), callerKey)
          assert.notInclude(request.path, callerKey)
        }
      }))
  }

  it.scopedLive("a capability route whose judge is down: 502 envelope under error, an answer under fail_open", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer((upstreamUrl) =>
        judgeDeployment(upstreamUrl, {
          judgeModel: "gemini-judge",
          answers: { weak: "weak-model", strong: "strong-model" },
          routes: postureRoutes("auto", (id, judge_failure, judge) => capabilityRoute(id, judge, { judge_failure }))
        })
      )
      yield* upstream.setBehaviour("strong-model", FakeUpstream.ok("strong answer"))
      yield* upstream.setBehaviour("weak-model", FakeUpstream.ok("weak answer"))
      const failed = yield* Effect.promise(() =>
        sdk(url).models.generateContent({ model: "auto-error-stopped", contents: "fix the bug" }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      assert.isTrue(Predicate.hasProperty(failed, "status") && failed.status === 502, String(failed))
      const raw = yield* post(url, "/v1beta/models/auto-error-stopped:generateContent", {
        contents: [{ role: "user", parts: [{ text: "fix the bug" }] }]
      })
      assert.strictEqual(raw.status, 502)
      const envelope = JSON.parse(raw.text)
      assert.strictEqual(envelope.error.code, 502)
      assert.strictEqual(envelope.error.status, "UNAVAILABLE")
      assert.isString(envelope.error.message)

      const open = yield* Effect.promise(() =>
        sdk(url).models.generateContent({ model: "auto-fail_open-stopped", contents: "fix the bug" })
      )
      assert.include(["strong answer", "weak answer"], open.text)
    }))
})

/** The SDK's pager as an async iterable (it is one; typed as its own class). */
const yield_ = <A>(pager: AsyncIterable<A>): AsyncIterable<A> => pager

interface Raw {
  readonly status: number
  readonly contentType: string
  readonly text: string
}

const post = (url: string, path: string, body: unknown, headers: Readonly<Record<string, string>> = {}) =>
  Effect.promise(async (): Promise<Raw> => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text()
    }
  })

const get = (url: string, path: string, headers: Readonly<Record<string, string>> = {}) =>
  Effect.promise(async (): Promise<Raw> => {
    const response = await fetch(`${url}${path}`, { headers })
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text()
    }
  })

const hello = { contents: [{ role: "user", parts: [{ text: "hello" }] }] }

const routerKey = "sk-router-gemini-SECRET-4242"
const withKeys = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SWITCHYARD_AUTH", routerKey]])))
const protectedDeployment = (upstreamUrl: string): D.Deployment =>
  D.extend(chatAndClaude(upstreamUrl), { server: { api_keys_env: ["SWITCHYARD_AUTH"] } })

describe("Gemini endpoints over raw HTTP", () => {
  it.scopedLive("a stream without alt=sse is one JSON array; with it, SSE events", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(chatAndClaude)
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("array streamed answer"))
      const array = yield* post(url, "/v1beta/models/fast:streamGenerateContent", hello)
      assert.strictEqual(array.status, 200)
      assert.include(array.contentType, "application/json")
      const events: unknown = JSON.parse(array.text)
      assert.isTrue(Array.isArray(events))
      const list = Array.isArray(events) ? events : []
      assert.isAbove(list.length, 1)
      const text = list.map((event) =>
        (event.candidates?.[0]?.content?.parts ?? []).map((part: { text?: string }) => part.text ?? "").join("")
      ).join("")
      assert.strictEqual(text, "array streamed answer")
      const last = list[list.length - 1]
      assert.strictEqual(last.candidates[0].finishReason, "STOP")
      assert.isAbove(last.usageMetadata.totalTokenCount, 0)

      const sse = yield* post(url, "/v1beta/models/fast:streamGenerateContent?alt=sse", hello)
      assert.strictEqual(sse.status, 200)
      assert.include(sse.contentType, "text/event-stream")
      const data = sse.text.split("\n\n").filter((e) => e.startsWith("data: "))
      assert.isAbove(data.length, 1)
      assert.strictEqual(
        data.map((e) =>
          JSON.parse(e.slice(6)).candidates[0].content.parts.map((p: { text?: string }) => p.text ?? "").join("")
        )
          .join(""),
        "array streamed answer"
      )
      // Both streams count in /v1/stats like any other format's answers.
      const stats = JSON.parse((yield* get(url, "/v1/stats")).text)
      assert.strictEqual(stats.total_requests, 2)
      assert.isAbove(stats.total_tokens.total, 0)
    }))

  it.scopedLive("a stream failing after its headers ends with the error envelope", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer(chatAndClaude)
      yield* upstream.setBehaviour("local-coder", FakeUpstream.streamError("upstream broke"))
      const array = yield* post(url, "/v1beta/models/fast:streamGenerateContent", hello)
      const list: unknown = JSON.parse(array.text)
      assert.isTrue(Array.isArray(list))
      const last = Array.isArray(list) ? list[list.length - 1] : undefined
      assert.isNumber(last.error.code)
      assert.isString(last.error.status)
      const sse = yield* post(url, "/v1beta/models/fast:streamGenerateContent?alt=sse", hello)
      const events = sse.text.split("\n\n").filter((e) => e.startsWith("data: "))
      assert.isString(JSON.parse(events[events.length - 1]?.slice(6) ?? "{}").error.message)
    }))

  it.scopedLive("unknown route → 404, bad body → 400, unknown method → the plain 404, in Gemini's envelope", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(chatAndClaude)
      const missing = yield* post(url, "/v1beta/models/nope:generateContent", hello)
      assert.strictEqual(missing.status, 404)
      const notFound = JSON.parse(missing.text)
      assert.deepStrictEqual([notFound.error.code, notFound.error.status], [404, "NOT_FOUND"])
      assert.include(notFound.error.message, "nope")

      const bad = yield* post(url, "/v1beta/models/fast:generateContent", { contents: "not a list" })
      assert.strictEqual(bad.status, 400)
      const invalid = JSON.parse(bad.text)
      assert.deepStrictEqual([invalid.error.code, invalid.error.status], [400, "INVALID_ARGUMENT"])
      assert.include(invalid.error.message, "contents")

      const notJson = yield* post(url, "/v1beta/models/fast:generateContent", "{")
      assert.strictEqual(notJson.status, 400)
      assert.strictEqual(JSON.parse(notJson.text).error.status, "INVALID_ARGUMENT")

      const countMissing = yield* post(url, "/v1beta/models/nope:countTokens", hello)
      assert.strictEqual(countMissing.status, 404)
      assert.strictEqual(JSON.parse(countMissing.text).error.status, "NOT_FOUND")

      // A method the server does not answer is no Gemini endpoint: the server's own 404.
      const method = yield* post(url, "/v1beta/models/fast:embedContent", hello)
      assert.strictEqual(method.status, 404)
    }))

  it.scopedLive("the model in the path is URL-decoded", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer((upstreamUrl) =>
        D.extend(chatAndClaude(upstreamUrl), { routes: { "team/fast": D.passthrough("team/fast", "local") } })
      )
      yield* upstream.setBehaviour("local-coder", FakeUpstream.ok("decoded"))
      const reply = yield* post(url, "/v1beta/models/team%2Ffast:generateContent", hello)
      assert.strictEqual(reply.status, 200, reply.text)
      assert.strictEqual(JSON.parse(reply.text).candidates[0].content.parts[0].text, "decoded")
    }))

  it.scopedLive("GET /v1beta/models/{model}: one Model entry (raw HTTP and models.get), 404 envelope for an unknown one", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer((upstreamUrl) =>
        D.extend(chatAndClaude(upstreamUrl), { routes: { "team/fast": D.passthrough("team/fast", "local") } })
      )
      const entry = {
        name: "models/fast",
        baseModelId: "fast",
        displayName: "fast",
        supportedGenerationMethods: ["generateContent", "streamGenerateContent", "countTokens"]
      }
      const raw = yield* get(url, "/v1beta/models/fast")
      assert.strictEqual(raw.status, 200, raw.text)
      assert.include(raw.contentType, "application/json")
      assert.deepStrictEqual(JSON.parse(raw.text), entry)
      // The route id is URL-decoded, a slash encoded or not, as the POST endpoints read it.
      for (const path of ["/v1beta/models/team%2Ffast", "/v1beta/models/team/fast"]) {
        const team = yield* get(url, path)
        assert.strictEqual(team.status, 200, path)
        assert.strictEqual(JSON.parse(team.text).name, "models/team/fast")
      }

      const fetched = yield* Effect.promise(() => sdk(url).models.get({ model: "claude" }))
      assert.strictEqual(fetched.name, "models/claude")
      assert.deepStrictEqual(fetched.supportedActions, entry.supportedGenerationMethods)
      // The SDK adds Google's `models/` prefix to a bare name and keeps one it is given.
      assert.strictEqual(
        (yield* Effect.promise(() => sdk(url).models.get({ model: "models/fast" }))).name,
        "models/fast"
      )
      assert.strictEqual(
        (yield* Effect.promise(() => sdk(url).models.get({ model: "team/fast" }))).name,
        "models/team/fast"
      )

      for (
        const path of ["/v1beta/models/nope", "/v1beta/models/fast/extra"]
      ) {
        const missing = yield* get(url, path)
        assert.strictEqual(missing.status, 404, path)
        const envelope = JSON.parse(missing.text)
        assert.deepStrictEqual([envelope.error.code, envelope.error.status], [404, "NOT_FOUND"], path)
      }
      assert.include(JSON.parse((yield* get(url, "/v1beta/models/nope")).text).error.message, "nope")
      const unknown = yield* Effect.promise(() =>
        sdk(url).models.get({ model: "nope" }).then(() => undefined, (error: unknown) => error)
      )
      assert.isTrue(Predicate.hasProperty(unknown, "status") && unknown.status === 404, String(unknown))
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))

  it.scopedLive("inbound auth: x-goog-api-key or ?key= admit, none or a wrong one → 401 envelope", () =>
    Effect.gen(function*() {
      const { url } = yield* withKeys(startServer(protectedDeployment))
      const path = "/v1beta/models/fast:generateContent"
      assert.strictEqual((yield* post(url, path, hello, { "x-goog-api-key": routerKey })).status, 200)
      assert.strictEqual((yield* post(url, `${path}?key=${routerKey}`, hello)).status, 200)
      assert.strictEqual((yield* post(url, path, hello, { authorization: `Bearer ${routerKey}` })).status, 200)
      assert.strictEqual((yield* get(url, `/v1beta/models?key=${routerKey}`)).status, 200)
      assert.strictEqual((yield* get(url, `/v1beta/models/fast?key=${routerKey}`)).status, 200)
      assert.strictEqual((yield* get(url, "/v1beta/models/fast", { "x-goog-api-key": routerKey })).status, 200)
      assert.strictEqual(
        (yield* post(url, "/v1beta/models/claude:countTokens", hello, { "x-goog-api-key": routerKey })).status,
        200
      )
      for (
        const [target, headers] of [
          [path, {}],
          [path, { "x-goog-api-key": "wrong-key" }],
          [`${path}?key=wrong-key`, {}],
          ["/v1beta/models", {}],
          ["/v1beta/models/fast", {}],
          ["/v1beta/models/fast?key=wrong-key", {}],
          ["/v1beta/models/fast:countTokens", {}]
        ] as const
      ) {
        const refused = target.startsWith("/v1beta/models") && !target.includes(":")
          ? yield* get(url, target, headers)
          : yield* post(url, target, hello, headers)
        assert.strictEqual(refused.status, 401, target)
        const envelope = JSON.parse(refused.text)
        assert.deepStrictEqual([envelope.error.code, envelope.error.status], [401, "UNAUTHENTICATED"])
      }
      // x-goog-api-key is a credential of the Gemini endpoints only.
      const chat = yield* post(url, "/v1/chat/completions", {
        model: "fast",
        messages: [{ role: "user", content: "hi" }]
      }, {
        "x-goog-api-key": routerKey
      })
      assert.strictEqual(chat.status, 401)
    }))

  it.scopedLive("the caller's key is never forwarded upstream, logged, traced or echoed", () =>
    Effect.gen(function*() {
      const exporter = new InMemorySpanExporter()
      const logs: Array<string> = []
      const capture = Logger.make(({ annotations, message }) => {
        logs.push(JSON.stringify({ message, annotations: [...annotations] }))
      })
      const { upstream, url } = yield* withKeys(startServer(
        protectedDeployment,
        { telemetry: Telemetry.layerWith({ spanProcessor: new SimpleSpanProcessor(exporter) }) },
        Option.some(capture)
      ))
      const bodies: Array<string> = []
      for (const route of ["fast", "claude"]) {
        for (const method of ["generateContent", "streamGenerateContent?alt=sse&", "countTokens"]) {
          const path = `/v1beta/models/${route}:${method}`
          const withQuery = path.includes("?") ? `${path}key=${routerKey}` : `${path}?key=${routerKey}`
          bodies.push((yield* post(url, withQuery, hello)).text)
          bodies.push((yield* post(url, path.replace(/\?.*$/, ""), hello, { "x-goog-api-key": routerKey })).text)
        }
      }
      bodies.push((yield* get(url, `/v1beta/models?key=${routerKey}`)).text)
      bodies.push((yield* get(url, `/v1beta/models/fast?key=${routerKey}`)).text)
      assert.isTrue(logs.some((line) => line.includes("gemini_generate_content")), "request lines were logged")
      const upstreamSeen = (yield* upstream.requests).map((r) => JSON.stringify([r.path, r.headers, r.bodyText]))
      assert.isAbove(upstreamSeen.length, 0)
      for (const haystack of [bodies.join("\n"), logs.join("\n"), spansText(exporter), upstreamSeen.join("\n")]) {
        assert.notInclude(haystack, routerKey)
      }
    }))

  it.scopedLive("a route forwarding caller credentials refuses a Gemini caller (400)", () =>
    Effect.gen(function*() {
      const { upstream, url } = yield* startServer((upstreamUrl) =>
        D.extend(chatAndClaude(upstreamUrl, { settings: { forward_auth: true } }), {})
      )
      for (const method of ["generateContent", "countTokens"]) {
        const reply = yield* post(url, `/v1beta/models/fast:${method}`, hello, { "x-goog-api-key": callerKey })
        assert.strictEqual(reply.status, 400, reply.text)
        assert.strictEqual(JSON.parse(reply.text).error.status, "INVALID_ARGUMENT")
      }
      assert.strictEqual((yield* upstream.requests).length, 0)
    }))
})
