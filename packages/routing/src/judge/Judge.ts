/**
 * The `Judge` service: one consultation of a capability judge (`consult`) or of a custom classifier
 * judge (`classify`). It builds the judge request (the packaged rubric or the route's prompt, the
 * conversation view, structured output), calls the judge target through `UpstreamClient` — one
 * candidate, never a fallback — and decodes the verdict: a capability verdict, or for `classify`
 * any JSON value that matches the route's `response_schema` (validated here, locally).
 *
 * Its failure channel is the judge posture's input (`Consultation.JudgeError`): `TransportError |
 * DeadlineExceeded | UpstreamStatus` (the judge could not be consulted), `CircuitOpen` (the judge's
 * LLM client's breaker refused the call; no HTTP request was made) or `InvalidVerdict` (it
 * answered, unusably).
 *
 * Every consultation that made a request is reported to the request's `RoutingFacts.Reporter`
 * (outcome, latency, the judge's token usage), for the routing log and the stats.
 */
import * as Spans from "@switchyard-ts/client/Spans"
import type { Target } from "@switchyard-ts/client/Target"
import { UpstreamClient } from "@switchyard-ts/client/UpstreamClient"
import type { ChatCompletion, Message, Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as RoutingFacts from "../host/RoutingFacts.js"
import * as Metrics from "../Metrics.js"
import * as EscalationJudge from "../routes/escalation/EscalationJudge.js"
import * as Conversation from "../sessions/Conversation.js"
import { type JudgeError, reasonOf } from "./Consultation.js"
import * as JsonSchema from "./JsonSchema.js"
import * as JudgeHealth from "./JudgeHealth.js"
import * as JudgePrompt from "./JudgePrompt.js"
import * as Verdict from "./Verdict.js"

/** How a route consults its judge (the route's classifier keys). */
export interface JudgeOptions {
  /** The judge target (`classifier_target`). */
  readonly judge: Target
  /** Replaces the packaged rubric when set. */
  readonly prompt: Option.Option<string>
  readonly responseFormatType: "json_schema" | "json_object"
  /** Sent as `max_completion_tokens`. */
  readonly maxOutputTokens: number
  readonly recentTurnWindow: Option.Option<number>
  /**
   * `judge_timeout_ms`: a deadline of the consultation, retries included, applied together with the
   * judge client's `timeout_ms` (the tighter wins); its expiry is a `DeadlineExceeded`. None (or
   * absent): the client's `timeout_ms` alone.
   */
  readonly judgeTimeoutMs?: Option.Option<number>
  /** `classifier_fallback`: judges asked in order after `judge` (`JudgeChain`; the host's business). */
  readonly fallbacks?: ReadonlyArray<Target>
  /** `classifier_hedge_ms` (`JudgeChain`). */
  readonly hedgeMs?: Option.Option<number>
}

/** One consultation: the route's options and the caller's conversation and headers. */
export interface Consultation {
  readonly options: JudgeOptions
  readonly messages: ReadonlyArray<Message>
  /** Caller headers; the upstream client drops credentials and hop-by-hop headers. */
  readonly headers: Readonly<Record<string, string>>
}

/** How a custom classifier route consults its judge (`mode = "custom"` keys). */
export interface CustomJudgeOptions {
  /** The judge target (`classifier_target`). */
  readonly judge: Target
  /** The route's `prompt`, sent as the system prompt as it is. */
  readonly prompt: string
  /** `response_schema` as configured (a JSON object), sent as the structured-output schema. */
  readonly responseSchema: Readonly<Record<string, unknown>>
  /** The same schema, compiled: the verdict is validated against it locally. */
  readonly compiledSchema: JsonSchema.JsonSchema
  readonly maxOutputTokens: number
  readonly recentTurnWindow: Option.Option<number>
  /** As {@link JudgeOptions.judgeTimeoutMs}. */
  readonly judgeTimeoutMs?: Option.Option<number>
  /** `classifier_fallback`: judges asked in order after `judge` (`JudgeChain`; the host's business). */
  readonly fallbacks?: ReadonlyArray<Target>
  /** `classifier_hedge_ms` (`JudgeChain`). */
  readonly hedgeMs?: Option.Option<number>
}

/** One custom consultation: the route's options and the caller's conversation and headers. */
export interface CustomConsultation {
  readonly options: CustomJudgeOptions
  readonly messages: ReadonlyArray<Message>
  readonly headers: Readonly<Record<string, string>>
}

/** How an escalation route consults its judge (`mode = "escalation"` keys). */
export interface EscalationJudgeOptions extends EscalationJudge.TranscriptOptions {
  /** The judge target (`classifier_target`). */
  readonly judge: Target
  /** Replaces the packaged escalation prompt when set. */
  readonly prompt: Option.Option<string>
  readonly responseFormatType: "json_schema" | "json_object"
  /** Sent as `max_completion_tokens`. */
  readonly maxOutputTokens: number
  /** As {@link JudgeOptions.judgeTimeoutMs}. */
  readonly judgeTimeoutMs?: Option.Option<number>
  /** `classifier_fallback`: judges asked in order after `judge` (`JudgeChain`; the host's business). */
  readonly fallbacks?: ReadonlyArray<Target>
  /** `classifier_hedge_ms` (`JudgeChain`). */
  readonly hedgeMs?: Option.Option<number>
}

/**
 * One escalation consultation: the caller's conversation, the finished reply (the weak target's, or
 * the strong target's in a de-escalating route's strong phase), the headers, and — on a route with
 * a `deescalation` table — the phase whose marker opens the transcript.
 */
export interface EscalationConsultation {
  readonly options: EscalationJudgeOptions
  readonly messages: ReadonlyArray<Message>
  readonly reply: ChatCompletion
  readonly headers: Readonly<Record<string, string>>
  readonly phase?: EscalationJudge.Phase
}

/** Everything a consultation can fail with (defined by `Consultation`). */
export type { JudgeError } from "./Consultation.js"

/** The judge port; replace it with `layerTest` to script verdicts and failures. */
export class Judge extends Context.Tag("@switchyard-ts/routing/Judge")<Judge, {
  /** Ask a capability judge; the verdict is decoded and checked (`InvalidVerdict` otherwise). */
  readonly consult: (consultation: Consultation) => Effect.Effect<Verdict.Verdict, JudgeError, RoutingFacts.Reporter>
  /**
   * Ask a custom classifier judge; the verdict is the JSON value of its reply, which matched the
   * route's `response_schema` (`InvalidVerdict` with `parse_error` otherwise).
   */
  readonly classify: (consultation: CustomConsultation) => Effect.Effect<unknown, JudgeError, RoutingFacts.Reporter>
  /** Ask an escalation judge about a finished weak turn (`InvalidVerdict` with `parse_error` for an unusable reply). */
  readonly escalate: (
    consultation: EscalationConsultation
  ) => Effect.Effect<EscalationJudge.EscalationVerdict, JudgeError, RoutingFacts.Reporter>
}>() {}

/** The judge's system prompt for these options. */
export const systemPrompt = (options: JudgeOptions): string => {
  const prompt = Option.getOrElse(options.prompt, () => JudgePrompt.capabilityRubric)
  return options.responseFormatType === "json_object"
    ? `${prompt}\n\n${JudgePrompt.jsonObjectInstruction}\n${JSON.stringify(Verdict.jsonSchema, null, 2)}`
    : prompt
}

/** The chat request sent to the judge: no tools, no sampling fields, non-streaming. */
export const requestBody = (consultation: Consultation): Readonly<Record<string, unknown>> => ({
  model: consultation.options.judge.id,
  messages: [
    { role: "system", content: systemPrompt(consultation.options) },
    { role: "user", content: Conversation.judgeView(consultation.messages, consultation.options.recentTurnWindow) }
  ],
  response_format: consultation.options.responseFormatType === "json_object"
    ? { type: "json_object" }
    : Verdict.responseFormatJsonSchema,
  max_completion_tokens: consultation.options.maxOutputTokens
})

/** The `response_format` name of a custom classifier's judge request. */
export const customResponseFormatName = "switchyard_classifier_response"

/** The chat request sent to a custom classifier's judge: its prompt as is, its schema as structured output. */
export const customRequestBody = (consultation: CustomConsultation): Readonly<Record<string, unknown>> => ({
  model: consultation.options.judge.id,
  messages: [
    { role: "system", content: consultation.options.prompt },
    { role: "user", content: Conversation.judgeView(consultation.messages, consultation.options.recentTurnWindow) }
  ],
  response_format: {
    type: "json_schema",
    json_schema: { name: customResponseFormatName, strict: true, schema: consultation.options.responseSchema }
  },
  max_completion_tokens: consultation.options.maxOutputTokens
})

/** The chat request sent to an escalation judge: its prompt, the condensed transcript, the verdict format. */
export const escalationRequestBody = (consultation: EscalationConsultation): Readonly<Record<string, unknown>> => {
  const options = consultation.options
  const prompt = EscalationJudge.promptFor(
    Option.getOrElse(options.prompt, () => EscalationJudge.packagedPrompt),
    consultation.phase
  )
  return {
    model: options.judge.id,
    messages: [
      {
        role: "system",
        content: options.responseFormatType === "json_object"
          ? `${prompt}\n\n${JudgePrompt.jsonObjectInstruction}\n${JSON.stringify(EscalationJudge.jsonSchema, null, 2)}`
          : prompt
      },
      {
        role: "user",
        content: EscalationJudge.transcript(consultation.messages, consultation.reply, options, consultation.phase)
      }
    ],
    response_format: options.responseFormatType === "json_object"
      ? { type: "json_object" }
      : EscalationJudge.responseFormatJsonSchema,
    max_completion_tokens: options.maxOutputTokens
  }
}

/** The escalation verdict in a judge's completion; a truncated reply is unusable. */
export const escalationVerdictOf = (
  completion: ChatCompletion
): Effect.Effect<EscalationJudge.EscalationVerdict, Verdict.InvalidVerdict> => {
  const choice = completion.choices[0]
  if (choice?.finish_reason === "length") {
    return Effect.fail(
      Verdict.invalid("parse_error", "reply truncated by max_output_tokens")
    )
  }
  return Either.match(EscalationJudge.decode(choice?.message.content ?? ""), {
    onLeft: Effect.fail,
    onRight: Effect.succeed
  })
}

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/**
 * The custom verdict in a judge's completion: the first choice's text, fences stripped, parsed as
 * JSON and validated against the compiled schema. A truncated, empty, non-JSON or non-matching
 * reply is an `InvalidVerdict` (`parse_error`).
 */
export const customVerdictOf = (
  completion: ChatCompletion,
  schema: JsonSchema.JsonSchema
): Effect.Effect<unknown, Verdict.InvalidVerdict> => {
  const parseError = (detail: string) => Effect.fail(Verdict.invalid("parse_error", detail))
  const choice = completion.choices[0]
  if (choice?.finish_reason === "length") return parseError("reply truncated by max_output_tokens")
  const body = Verdict.stripFences(choice?.message.content ?? "")
  if (body === "") return parseError("empty reply")
  return Either.match(decodeJson(body), {
    onLeft: () => parseError("reply is not JSON"),
    onRight: (value) =>
      Option.match(JsonSchema.validate(schema, value), {
        onNone: () => Effect.succeed(value),
        onSome: (problem) => parseError(`classifier verdict did not match response_schema at "${problem.at}"`)
      })
  })
}

/** The verdict in a judge's completion: the first choice's text; a truncated reply is unusable. */
export const verdictOf = (completion: ChatCompletion): Effect.Effect<Verdict.Verdict, Verdict.InvalidVerdict> => {
  const choice = completion.choices[0]
  if (choice?.finish_reason === "length") {
    return Effect.fail(
      Verdict.invalid("parse_error", "reply truncated by max_output_tokens")
    )
  }
  return Verdict.decode(choice?.message.content ?? "")
}

const refusedByBreaker = (exit: Exit.Exit<unknown, { readonly _tag: string }>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error._tag === "CircuitOpen")

/** One judge call, recorded in the call metrics, its body problems folded into `InvalidVerdict`. */
const call = (
  upstream: UpstreamClient["Type"],
  judge: Target,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  judgeTimeoutMs: Option.Option<number> | undefined
): Effect.Effect<ChatCompletion, JudgeError, RoutingFacts.Reporter> =>
  Metrics.countedCall(
    "llm_task_classifier",
    "judge",
    judge.id,
    upstream.complete({ target: judge, body, headers, timeoutMs: judgeTimeoutMs ?? Option.none() })
  ).pipe(
    Effect.catchTag("InvalidResponse", () =>
      Effect.fail(
        Verdict.invalid("invalid_response", "judge body is not a chat completion")
      )),
    // The judge request is text only, so every format can carry it; kept total all the same.
    Effect.catchTag("TranslationError", () =>
      Effect.fail(
        Verdict.invalid("invalid_response", "judge request cannot be sent in its upstream's format")
      ))
  )

/**
 * One consultation: the call, then its verdict decoded by `verdictOf`, reported to the request's
 * routing observer (outcome, latency, the judge's token usage) unless the breaker refused it.
 */
const consultWith = <V>(
  upstream: UpstreamClient["Type"],
  judge: Target,
  body: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>>,
  judgeTimeoutMs: Option.Option<number> | undefined,
  verdictOf: (completion: ChatCompletion) => Effect.Effect<V, Verdict.InvalidVerdict>,
  health: Option.Option<JudgeHealth.Recorder>
): Effect.Effect<V, JudgeError, RoutingFacts.Reporter> =>
  Effect.flatMap(Clock.currentTimeMillis, (start) => {
    let usage: Option.Option<Usage> = Option.none()
    return call(upstream, judge, body, headers, judgeTimeoutMs).pipe(
      Effect.flatMap((completion) => {
        usage = Option.fromNullable(completion.usage)
        return verdictOf(completion)
      }),
      Effect.onExit((exit) =>
        refusedByBreaker(exit) ?
          Effect.void :
          Effect.flatMap(Clock.currentTimeMillis, (end) => {
            const outcome = Exit.isSuccess(exit)
              ? "ok"
              : Option.match(Cause.failureOption(exit.cause), {
                onNone: () => "interrupted" as const,
                onSome: reasonOf
              })
            if (Option.isSome(health)) {
              health.value.record({ model: judge.id, outcome, latencyMs: end - start, endedAtMs: end })
            }
            return RoutingFacts.report((observer) =>
              observer.judgeCall({ judgeModel: judge.id, outcome, latencyMs: end - start, endedAtMs: end, usage })
            )
          })
      ),
      Spans.withSpan("Judge.consult", () => ({
        captureStackTrace: false,
        attributes: { "switchyard.judge_model": judge.id }
      }))
    )
  })

/**
 * The judge over the `UpstreamClient`: one call to the judge target, bounded by the route's
 * `judgeTimeoutMs` as well as the client's `timeout_ms`. A call refused by the client's open
 * breaker made no HTTP request and is not recorded in the call metrics.
 */
export const make: Effect.Effect<Judge["Type"], never, UpstreamClient> = Effect.map(
  Effect.zip(UpstreamClient, Effect.serviceOption(JudgeHealth.JudgeHealth)),
  ([upstream, health]) =>
    Judge.of({
      consult: (consultation) =>
        consultWith(
          upstream,
          consultation.options.judge,
          requestBody(consultation),
          consultation.headers,
          consultation.options.judgeTimeoutMs,
          verdictOf,
          health
        ),
      classify: (consultation) =>
        consultWith(
          upstream,
          consultation.options.judge,
          customRequestBody(consultation),
          consultation.headers,
          consultation.options.judgeTimeoutMs,
          (completion) => customVerdictOf(completion, consultation.options.compiledSchema),
          health
        ),
      escalate: (consultation) =>
        consultWith(
          upstream,
          consultation.options.judge,
          escalationRequestBody(consultation),
          consultation.headers,
          consultation.options.judgeTimeoutMs,
          escalationVerdictOf,
          health
        )
    })
)

/** The judge layer over the `UpstreamClient`. */
export const layer: Layer.Layer<Judge, never, UpstreamClient> = Layer.effect(Judge, make)

/**
 * A scripted judge: `consult` (and `classify`, `escalate`) answer whatever the functions return
 * (e.g. from a `Ref` of outcomes). Calling one that was not given is a defect.
 */
export const layerTest = (
  consult: (consultation: Consultation) => Effect.Effect<Verdict.Verdict, JudgeError>,
  classify: (consultation: CustomConsultation) => Effect.Effect<unknown, JudgeError> = () =>
    Effect.dieMessage("Judge.layerTest: no custom classification scripted"),
  escalate: (consultation: EscalationConsultation) => Effect.Effect<EscalationJudge.EscalationVerdict, JudgeError> =
    () => Effect.dieMessage("Judge.layerTest: no escalation verdict scripted")
): Layer.Layer<Judge> => Layer.succeed(Judge, Judge.of({ consult, classify, escalate }))
