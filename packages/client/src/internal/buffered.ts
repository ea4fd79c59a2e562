/**
 * Buffered replies: a 2xx body decoded into an answer by the target's format (a chat completion,
 * or a Messages, Responses or Gemini answer translated into one and, on a native replay, kept as sent),
 * or read as any JSON value (token counting); and the `gen_ai.response.*` span attributes.
 *
 * @internal
 */
import type { UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import * as Nesting from "@switchyard-ts/protocol/Nesting"
import { ChatCompletion } from "@switchyard-ts/protocol/OpenAiChat"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Spans from "../Spans.js"
import type { Format, NativeBody } from "../Target.js"
import type { Answer } from "../UpstreamClient.js"
import * as Anthropic from "./anthropic.js"
import type { CallContext } from "./call.js"
import type * as Exchange from "./exchange.js"
import * as Failure from "./failure.js"
import * as Gemini from "./gemini.js"
import * as Responses from "./responses.js"

const decodeCompletion = Failure.decodeJsonText(ChatCompletion, "response body")

/** The body of a buffered reply (a streamed one never reaches a buffered call). */
const bodyOf = <S>(reply: Exchange.Reply<S>): string => (reply._tag === "Body" ? reply.body : "")

/** Decodes a buffered answer of a format other than chat: the completion, and the body as sent. */
type NativeDecoder = (
  target: string,
  text: string,
  nowSeconds: number,
  secrets: ReadonlyArray<string>
) => Either.Either<{ readonly completion: ChatCompletion; readonly body: NativeBody["body"] }, UpstreamFailure>

const nativeDecoders: Readonly<Record<Exclude<Format, "openai_chat">, NativeDecoder>> = {
  anthropic_messages: Anthropic.decodeAnswer,
  openai_responses: Responses.decodeAnswer,
  gemini_generate_content: Gemini.decodeAnswer
}

/**
 * Decodes a buffered 2xx body (a Messages, Responses or Gemini answer translated into a completion, its
 * own body kept on a native replay; `created`, when the answer has none, is the time now),
 * annotating the call's span with {@link responseAttributes}.
 */
export const readAnswer = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<Answer, UpstreamFailure> => {
  const text = bodyOf(reply)
  const target = ctx.target.id
  const format = ctx.target.client.format
  const answered: Effect.Effect<Answer, UpstreamFailure> = format === "openai_chat"
    ? Effect.map(decodeCompletion(target, text), (completion) => ({ completion, native: Option.none() }))
    : Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        Effect.map(
          nativeDecoders[format](target, text, Math.floor(now / 1000), ctx.secrets),
          ({ body, completion }) => ({
            completion,
            native: ctx.nativeReplay ? Option.some<NativeBody>({ format, body }) : Option.none()
          })
        )
    )
  const checked = ctx.translatedAnswer ? Effect.flatMap(answered, (answer) => heldArguments(answer, target)) : answered
  return Spans.annotateOutcome<Answer, UpstreamFailure>(({ completion }) => responseAttributes(completion))(checked)
}

/** The answer, when its tool-call arguments nest within the bound (`Nesting.completionArguments`). */
const heldArguments = (answer: Answer, target: string): Effect.Effect<Answer, UpstreamFailure> => {
  const path = Nesting.completionArguments(answer.completion)
  return path === undefined ? Effect.succeed(answer) : Effect.fail(Failure.deepArguments(target, `answer ${path}`))
}

/** Reads a buffered 2xx body as any JSON value. */
export const readJson = <S>(reply: Exchange.Reply<S>, ctx: CallContext): Effect.Effect<unknown, UpstreamFailure> =>
  Failure.jsonOrInvalid(ctx.target.id, "response body", bodyOf(reply))

/** `gen_ai.response.*` and `gen_ai.usage.*` span attributes of a completion (no content). */
export const responseAttributes = (
  completion: ChatCompletion
): Record<string, string | number | ReadonlyArray<string>> => {
  const usage = completion.usage
  const details = usage?.prompt_tokens_details
  const reasoning = usage?.completion_tokens_details?.reasoning_tokens
  return {
    "gen_ai.response.id": completion.id,
    "gen_ai.response.model": completion.model,
    "gen_ai.response.finish_reasons": completion.choices.map((choice) => choice.finish_reason ?? "null"),
    ...(usage === null || usage === undefined ? {} : {
      "gen_ai.usage.input_tokens": usage.prompt_tokens,
      "gen_ai.usage.output_tokens": usage.completion_tokens,
      ...(typeof details?.cached_tokens === "number"
        ? { "gen_ai.usage.cache_read.input_tokens": details.cached_tokens }
        : {}),
      ...(typeof details?.cache_creation_tokens === "number"
        ? { "gen_ai.usage.cache_creation.input_tokens": details.cache_creation_tokens }
        : {}),
      ...(typeof reasoning === "number" ? { "gen_ai.usage.reasoning.output_tokens": reasoning } : {})
    })
  }
}
