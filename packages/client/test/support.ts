/**
 * Test support: a scripted `HttpClient` (one script per upstream host, replayed step by step, the
 * last step repeating) that records every request it sees, under the client through
 * `UpstreamTransport.fromHttpClient`, and target builders.
 */
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import type * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import type { ChatCompletion, ChatCompletionChunk } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import type * as Tracer from "effect/Tracer"
import type { Target } from "../src/Target.js"
import * as UpstreamClient from "../src/UpstreamClient.js"
import * as UpstreamTransport from "../src/UpstreamTransport.js"

export const apiKey = "sk-test-SECRET-1234567890"

/** Tracks whether a scripted SSE body was cancelled by the reader. */
export interface BodyProbe {
  cancelled: boolean
}

export type Step =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly body: unknown
    readonly headers: Readonly<Record<string, string>>
  }
  | {
    readonly _tag: "Text"
    readonly status: number
    readonly body: string
    readonly headers: Readonly<Record<string, string>>
  }
  | { readonly _tag: "Stall" }
  | { readonly _tag: "Transport"; readonly message: string }
  | { readonly _tag: "BodyError" }
  | {
    readonly _tag: "Sse"
    readonly parts: ReadonlyArray<string | Uint8Array>
    readonly stall: boolean
    readonly probe: BodyProbe
  }

export const completion = (model = "served-model", extra: Record<string, unknown> = {}): ChatCompletion => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model,
  choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
  ...extra
})

export const chunk = (content: string, extra: Record<string, unknown> = {}): ChatCompletionChunk => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "served-model",
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
  ...extra
})

export const sseData = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`

export const Step = {
  ok: (body: unknown = completion()): Step => ({ _tag: "Json", status: 200, body, headers: {} }),
  status: (
    status: number,
    body: unknown = { error: { message: `status ${status}` } },
    headers: Readonly<Record<string, string>> = {}
  ): Step =>
    typeof body === "string" ? { _tag: "Text", status, body, headers } : { _tag: "Json", status, body, headers },
  text: (status: number, body: string): Step => ({ _tag: "Text", status, body, headers: {} }),
  stall: { _tag: "Stall" } satisfies Step,
  transport: (message = `connect ECONNREFUSED 10.0.0.1:443 key=${apiKey}`): Step => ({ _tag: "Transport", message }),
  bodyError: { _tag: "BodyError" } satisfies Step,
  sse: (
    parts: ReadonlyArray<string | Uint8Array>,
    options: { readonly stall?: boolean; readonly probe?: BodyProbe } = {}
  ): Step => ({
    _tag: "Sse",
    parts,
    stall: options.stall ?? false,
    probe: options.probe ?? { cancelled: false }
  })
}

/** One request the fake upstream received. */
export interface Seen {
  readonly url: string
  readonly host: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly signal: AbortSignal
  /** TestClock time when the request was sent. */
  readonly at: number
  /** The enclosing `libsy.client_call` span, if any. */
  readonly clientCallSpan: Option.Option<Tracer.Span>
}

const findSpan = (span: Option.Option<Tracer.AnySpan>, name: string): Option.Option<Tracer.Span> =>
  Option.flatMap(
    span,
    (s) => (s._tag !== "Span" ? Option.none() : s.name === name ? Option.some(s) : findSpan(s.parent, name))
  )

const encoder = new TextEncoder()

const bodyOf = (request: HttpClientRequest.HttpClientRequest): unknown => {
  if (request.body._tag !== "Uint8Array") return undefined
  const parsed: unknown = JSON.parse(new TextDecoder().decode(request.body.body))
  return parsed
}

const respond = (
  request: HttpClientRequest.HttpClientRequest,
  step: Step
): Effect.Effect<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError> => {
  switch (step._tag) {
    case "Json":
      return Effect.succeed(HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify(step.body), {
          status: step.status,
          headers: { "content-type": "application/json", ...step.headers }
        })
      ))
    case "Text":
      return Effect.succeed(
        HttpClientResponse.fromWeb(request, new Response(step.body, { status: step.status, headers: step.headers }))
      )
    case "Stall":
      return Effect.never
    case "Transport":
      return Effect.fail(
        new HttpClientError.RequestError({
          request,
          reason: "Transport",
          cause: Object.assign(new Error(step.message), { code: "ECONNREFUSED" })
        })
      )
    case "BodyError": {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(encoder.encode("{\"id\":"))
          controller.error(new Error(`socket hang up ${apiKey}`))
        }
      })
      return Effect.succeed(HttpClientResponse.fromWeb(request, new Response(body, { status: 200 })))
    }
    case "Sse": {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of step.parts) controller.enqueue(typeof part === "string" ? encoder.encode(part) : part)
          if (!step.stall) controller.close()
        },
        cancel() {
          step.probe.cancelled = true
        }
      })
      return Effect.succeed(HttpClientResponse.fromWeb(
        request,
        new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } })
      ))
    }
  }
}

/** A scripted upstream: `scripts` maps a host (e.g. `a.test`) to its steps. */
export const makeFake = (scripts: Readonly<Record<string, ReadonlyArray<Step>>>) =>
  Effect.gen(function*() {
    const queues = yield* Ref.make<ReadonlyMap<string, ReadonlyArray<Step>>>(new Map(Object.entries(scripts)))
    const seen = yield* Ref.make<ReadonlyArray<Seen>>([])
    const http = HttpClient.make((request, url, signal) =>
      Effect.gen(function*() {
        const at = yield* Clock.currentTimeMillis
        const clientCallSpan = findSpan(Option.getRight(yield* Effect.either(Effect.currentSpan)), "libsy.client_call")
        yield* Ref.update(seen, (all) => [
          ...all,
          {
            url: url.toString(),
            host: url.host,
            headers: { ...request.headers },
            body: bodyOf(request),
            signal,
            at,
            clientCallSpan
          }
        ])
        const step = yield* Ref.modify(
          queues,
          (map): readonly [Option.Option<Step>, ReadonlyMap<string, ReadonlyArray<Step>>] => {
            const queue = map.get(url.host) ?? []
            const [first, ...rest] = queue
            if (first === undefined) return [Option.none(), map]
            const next = new Map(map)
            next.set(url.host, rest.length > 0 ? rest : queue)
            return [Option.some(first), next]
          }
        )
        return yield* Option.match(step, {
          onNone: () => Effect.die(`no script for ${url.host}`),
          onSome: (s) => respond(request, s)
        })
      })
    )
    const client = yield* UpstreamClient.make.pipe(
      Effect.provideService(UpstreamTransport.UpstreamTransport, UpstreamTransport.fromHttpClient(http))
    )
    const requests = Ref.get(seen)
    const requestsTo = (host: string) => Effect.map(requests, (all) => all.filter((r) => r.host === host))
    return { client, requests, requestsTo }
  })

/** A target on host `<name>.test` with sensible defaults. */
export const target = (
  name: string,
  options: {
    readonly baseUrl?: string
    readonly maxRetries?: number
    readonly timeoutMs?: number
    readonly apiKey?: string
    readonly extraHeaders?: Readonly<Record<string, string>>
    readonly extraBody?: Readonly<Record<string, unknown>>
  } = {}
): Target => ({
  name,
  id: `${name}-model`,
  client: {
    name: `${name}-client`,
    format: "openai_chat",
    baseUrl: options.baseUrl ?? `https://${name}.test/v1`,
    apiKey: Option.some(Redacted.make(options.apiKey ?? apiKey)),
    extraHeaders: options.extraHeaders ?? {},
    maxRetries: options.maxRetries ?? 2,
    timeoutMs: options.timeoutMs === undefined ? Option.none() : Option.some(options.timeoutMs)
  },
  extraBody: options.extraBody ?? {}
})

export const request = {
  model: "auto",
  messages: [{ role: "user", content: "hi" }]
}
