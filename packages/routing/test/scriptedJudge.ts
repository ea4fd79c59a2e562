/**
 * Test support for capability routes: a scripted judge upstream behind the REAL `Judge.layer` and
 * `UpstreamClient.layer`. The scripted `HttpClient` answers each judge HTTP request with the next
 * outcome of a `Ref`-held queue (the last outcome repeats, so a one-outcome script answers every
 * retry the same way) and records every request it sees.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type { Target } from "@switchyard-ts/client/Target"
import * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import type * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import * as Judge from "@switchyard-ts/routing/Judge"
import type { Boundary, Rule } from "@switchyard-ts/routing/Verdict"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"

/** What the judge upstream does with one HTTP request. */
export type Outcome =
  | {
    readonly _tag: "verdict"
    readonly p_solve: number
    readonly boundary: Boundary
    readonly rule: Rule
    readonly crux: string
  }
  | { readonly _tag: "garbage" }
  | { readonly _tag: "invalid_body" }
  | { readonly _tag: "stall" }
  | { readonly _tag: "refuse" }
  | { readonly _tag: "5xx" }
  | { readonly _tag: "4xx"; readonly status: 400 | 401 | 404 }

export const Outcome = {
  verdict: (p_solve: number, boundary: Boundary, rule: Rule, crux = "the crux"): Outcome => ({
    _tag: "verdict",
    p_solve,
    boundary,
    rule,
    crux
  }),
  garbage: { _tag: "garbage" } satisfies Outcome,
  invalidBody: { _tag: "invalid_body" } satisfies Outcome,
  stall: { _tag: "stall" } satisfies Outcome,
  refuse: { _tag: "refuse" } satisfies Outcome,
  status5xx: { _tag: "5xx" } satisfies Outcome,
  status4xx: (status: 400 | 401 | 404): Outcome => ({ _tag: "4xx", status })
}

/** A judge HTTP request as the scripted upstream saw it. */
export interface SeenRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

const decoder = new TextDecoder()

const bodyOf = (request: HttpClientRequest.HttpClientRequest): unknown => {
  if (request.body._tag !== "Uint8Array") return undefined
  const parsed: unknown = JSON.parse(decoder.decode(request.body.body))
  return parsed
}

/** A 200 chat completion whose first choice says `content`. */
export const judgeCompletion = (model: string, content: string) => ({
  id: "chatcmpl-judge",
  object: "chat.completion",
  created: 0,
  model,
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }]
})

export const json = (request: HttpClientRequest.HttpClientRequest, status: number, body: unknown) =>
  HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
  )

/** The scripted judge upstream's answer to one HTTP request. */
export const respond = (
  request: HttpClientRequest.HttpClientRequest,
  outcome: Outcome
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> => {
  switch (outcome._tag) {
    case "verdict":
      return Effect.succeed(json(
        request,
        200,
        judgeCompletion(
          "judge",
          JSON.stringify({
            crux: outcome.crux,
            primary_rule: outcome.rule,
            capability_boundary: outcome.boundary,
            p_solve: outcome.p_solve
          })
        )
      ))
    case "garbage":
      return Effect.succeed(json(request, 200, judgeCompletion("judge", "not a verdict")))
    case "invalid_body":
      return Effect.succeed(HttpClientResponse.fromWeb(
        request,
        new Response("<html>upstream proxy page</html>", { status: 200, headers: { "content-type": "text/html" } })
      ))
    case "stall":
      return Effect.never
    case "refuse":
      return Effect.fail(
        new HttpClientError.RequestError({
          request,
          reason: "Transport",
          cause: Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" })
        })
      )
    case "5xx":
      return Effect.succeed(json(request, 503, { error: { message: "overloaded", type: "server_error" } }))
    case "4xx":
      return Effect.succeed(json(request, outcome.status, { error: { message: "no", type: "invalid_request_error" } }))
  }
}

/**
 * A scripted judge upstream. `layer` is the real `Judge.layer` over the real `UpstreamClient.layer`
 * over the scripted `HttpClient`. An HTTP request with an empty script is a defect.
 */
export const makeScriptedJudge = Effect.suspend(() => makeScriptedJudgeWith(respond))

/** {@link makeScriptedJudge} over any outcome type, answered by `answer`. */
export const makeScriptedJudgeWith = <O>(
  answer: (
    request: HttpClientRequest.HttpClientRequest,
    outcome: O
  ) => Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>
) =>
  Effect.gen(function*() {
    const script = yield* Ref.make<ReadonlyArray<O>>([])
    const seen = yield* Ref.make<ReadonlyArray<SeenRequest>>([])
    const http = HttpClient.make((request, url) =>
      Effect.gen(function*() {
        yield* Ref.update(
          seen,
          (all) => [...all, { url: url.toString(), headers: { ...request.headers }, body: bodyOf(request) }]
        )
        const next = yield* Ref.modify(script, (queue): readonly [Option.Option<O>, ReadonlyArray<O>] => {
          const [first, ...rest] = queue
          if (first === undefined) return [Option.none(), queue]
          return [Option.some(first), rest.length > 0 ? rest : queue]
        })
        return yield* Option.match(next, {
          onNone: () => Effect.die("the judge was called with an empty script"),
          onSome: (outcome) => answer(request, outcome)
        })
      })
    )
    const layer: Layer.Layer<Judge.Judge> = Judge.layer.pipe(
      Layer.provide(UpstreamClient.layer),
      Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
    )
    return {
      /** Replace the script: these outcomes in order, the last one repeating. */
      script: (outcomes: ReadonlyArray<O>) => Ref.set(script, outcomes),
      /** Every judge HTTP request so far. */
      requests: Ref.get(seen),
      /** How many judge HTTP requests were made so far. */
      calls: Effect.map(Ref.get(seen), (all) => all.length),
      layer
    }
  })

/** A target on host `<name>.test`. */
export const target = (
  name: string,
  id: string,
  options: { readonly maxRetries?: number; readonly timeoutMs?: Option.Option<number> } = {}
): Target => ({
  name,
  id,
  client: {
    name: `${name}-client`,
    format: "openai_chat",
    baseUrl: `http://${name}.test/v1`,
    apiKey: Option.none(),
    extraHeaders: {},
    maxRetries: options.maxRetries ?? 0,
    timeoutMs: options.timeoutMs ?? Option.some(3000)
  },
  extraBody: {}
})

export const weak = target("weak", "weak-model")
export const strong = target("strong", "strong-model")

/** Route options with the defaults the tests share (base 0.5, step 0.125: exact in binary). */
export const routeOptions = (
  judge: Target,
  overrides: Partial<CapabilityRoute.Options> = {}
): CapabilityRoute.Options => ({
  id: "auto",
  name: "auto",
  judge,
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 256,
  recentTurnWindow: Option.none(),
  weak,
  strong,
  baseThreshold: 0.5,
  thresholdStep: 0.125,
  classifyTrigger: "every_request",
  messageHashFallback: false,
  judgeFailure: "error",
  ...overrides
})
