/**
 * OpenAI Responses ingress (`/v1/responses`): a Responses request translated into the chat request
 * routing works on (its own body kept for an `openai_responses` target; what only a Responses
 * server understands routed on a view without it), continuations by id (`../continuations.ts`),
 * answers and streams written as Responses (namespaced and custom tool calls restored; a Responses
 * target's own, only `model` restamped), the OpenAI error envelope.
 *
 * @internal
 */
import * as Relay from "@switchyard-ts/client/Relay"
import type { Target } from "@switchyard-ts/client/Target"
import type * as UpstreamClient from "@switchyard-ts/client/UpstreamClient"
import { type ResponseStateConflict, toHttp, type UpstreamFailure } from "@switchyard-ts/protocol/Errors"
import { type ChatCompletion, decodeOptions } from "@switchyard-ts/protocol/OpenAiChat"
import * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import * as Plain from "@switchyard-ts/protocol/Plain"
import * as Translate from "@switchyard-ts/protocol/Translate"
import * as TranslateResponses from "@switchyard-ts/protocol/TranslateResponses"
import type * as Decision from "@switchyard-ts/routing/Decision"
import type { Streamed } from "@switchyard-ts/routing/Router"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Continuations from "../continuations.js"
import {
  type Codec,
  type Encoder,
  type Inbound,
  nativeBody,
  nativeEvents,
  servedIn,
  translatedEvents,
  translatedOrViewed,
  validated
} from "./codec.js"
import { openAiError, openAiInternalError } from "./openAiChat.js"

const decodeResponsesBody = Plain.decoder(OpenAiResponses.ResponsesRequest, decodeOptions)

const responsesSse = (event: { readonly type: string }): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`

/** Events whose `response.model` names the model. */
const lifecycleEvents: ReadonlySet<string> = new Set([
  "response.created",
  "response.in_progress",
  "response.completed",
  "response.failed",
  "response.incomplete"
])

/** An upstream Responses event forwarded as it came, the model of its `response` restamped. */
const nativeResponsesEvent = (event: UpstreamClient.NativeEvent, model: string): string => {
  const response = event.data["response"]
  if (!(lifecycleEvents.has(event.event) && Predicate.isRecord(response))) {
    return `event: ${event.event}\ndata: ${event.text ?? JSON.stringify(event.data)}\n\n`
  }
  return `event: ${event.event}\ndata: ${JSON.stringify({ ...event.data, response: { ...response, model } })}\n\n`
}

/** A stream that failed after its headers, in the form of the compatible system (one `error` event). */
const responsesStreamError = (failure: UpstreamFailure): string =>
  `event: error\ndata: ${
    JSON.stringify({ type: "error", error: { type: "SwitchyardError", message: toHttp(failure).message } })
  }\n\n`

/** The `error` event of a stream whose answer's id another target holds (its headers were sent). */
const conflictEvent = (conflict: ResponseStateConflict): string => {
  const mapping = toHttp(conflict)
  return `event: error\ndata: ${
    JSON.stringify({ type: "error", error: { type: "SwitchyardError", code: mapping.code, message: mapping.message } })
  }\n\n`
}

/** The response object of a `response.completed` event, when `event` is one. */
const completedResponse = (event: OpenAiResponses.StreamEvent): OpenAiResponses.ResponseObject | undefined =>
  event.type === "response.completed" && "response" in event ? event.response : undefined

/** The response id of an upstream's `response.completed` event, when `event` is one with an id. */
const nativeCompletedId = (event: UpstreamClient.NativeEvent): string | undefined => {
  const response = event.data["response"]
  return event.event === "response.completed" && Predicate.isRecord(response) && typeof response["id"] === "string"
    ? response["id"]
    : undefined
}

/**
 * `events`, then — once they ended — what `retainer` remembers of the stream's answer (`answer`,
 * read then): nothing more, or one `error` event when another target holds its id.
 */
const retainedAfter = (
  events: Relay.Relay<string, UpstreamFailure>,
  streamed: Streamed,
  retainer: Continuations.Retainer | undefined,
  answer: () => Continuations.Answer | undefined
): Relay.Relay<string, UpstreamFailure> =>
  retainer === undefined ? events : Relay.concat(
    events,
    Effect.suspend(() => {
      const completed = answer()
      if (completed === undefined) return Effect.succeed([])
      return retainer.retain(streamed.decision, streamed.served, completed).pipe(
        Effect.as([]),
        Effect.catchAll((conflict) => Effect.succeed([conflictEvent(conflict)]))
      )
    })
  )

/**
 * The Responses encoder of a request whose tools are `tools` (namespaced and custom calls
 * restored); with a `retainer`, translated answers carry its id and every completed answer is
 * remembered for a continuation by id.
 */
const responsesEncoder = (tools: TranslateResponses.ToolMap, retainer?: Continuations.Retainer): Encoder => {
  // What `answer` / `decisionResponse` last wrote (one request's encoder), for `retain`.
  let written: Continuations.Answer | undefined
  const fromChat = (completion: ChatCompletion, model: string) => {
    const response = {
      ...TranslateResponses.toResponsesResponse(Translate.fromOpenAiResponse(completion), { tools }),
      model,
      ...(retainer === undefined ? {} : { id: retainer.id })
    }
    written = { _tag: "Translated", response }
    return response
  }
  return {
    answer: (completed, model) =>
      Option.match(completed.native, {
        onNone: () => fromChat(completed.completion, model),
        onSome: (native) => {
          const id = native.body["id"]
          written = { _tag: "Native", id: typeof id === "string" ? id : undefined }
          return { ...native.body, model }
        }
      }),
    stream: (streamed, model) => {
      if (servedIn(streamed, "openai_responses")) {
        let id: string | undefined
        const events = nativeEvents(streamed, (event) => {
          id = nativeCompletedId(event) ?? id
          return nativeResponsesEvent(event, model)
        })
        return {
          events: retainedAfter(events, streamed, retainer, () => ({ _tag: "Native", id })),
          streamError: responsesStreamError
        }
      }
      const translator = TranslateResponses.chatToResponsesStream({
        model,
        tools,
        ...(retainer === undefined ? {} : { id: retainer.id })
      })
      let response: OpenAiResponses.ResponseObject | undefined
      const events = translatedEvents(streamed, translator, (event) => {
        response = completedResponse(event) ?? response
        return responsesSse(event)
      })
      return {
        events: retainedAfter(
          events,
          streamed,
          retainer,
          () => response === undefined ? undefined : { _tag: "Translated", response }
        ),
        streamError: (failure) => translator.fail(toHttp(failure).message).map(responsesSse).join("")
      }
    },
    decisionResponse: fromChat,
    ...(retainer === undefined ? {} : {
      retain: (decision: Decision.Decision, served: Option.Option<Target>) =>
        written === undefined ? Effect.void : retainer.retain(decision, served, written)
    })
  }
}

/**
 * What routing sees of a Responses request whose full translation failed: the request without
 * what only a Responses server can act on (`previous_response_id`, `conversation`, `prompt`,
 * `background`, items and content parts of other kinds, a hosted tool choice). Its answer call
 * still needs a Responses target; any other fails with the original error.
 */
const routingView = (request: OpenAiResponses.ResponsesRequest): Option.Option<OpenAiResponses.ResponsesRequest> => {
  const view: Record<string, unknown> = { ...request }
  for (const key of ["previous_response_id", "conversation", "prompt", "background"]) delete view[key]
  if (Array.isArray(request.input)) {
    view["input"] = request.input.flatMap((item) => {
      const type = Predicate.isRecord(item) && typeof item["type"] === "string" ? item["type"] : "message"
      if (!routedItems.has(type)) return []
      if (type === "message" && Predicate.isRecord(item) && Array.isArray(item["content"])) {
        return [{
          ...item,
          content: item["content"].filter((part) =>
            Predicate.isRecord(part) && typeof part["type"] === "string" && routedParts.has(part["type"])
          )
        }]
      }
      return [item]
    })
  }
  const choice = request.tool_choice
  if (Predicate.isRecord(choice) && choice["type"] !== "function" && choice["type"] !== "custom") {
    delete view["tool_choice"]
  }
  return Option.getRight(decodeResponsesBody(view))
}

const routedItems: ReadonlySet<string> = new Set([...OpenAiResponses.knownItemTypes, "additional_tools"])
const routedParts: ReadonlySet<string> = new Set(["input_text", "output_text", "refusal"])

/** The chat request routing works on, streamed with usage when the caller streams. */
const chatOf = (request: OpenAiResponses.ResponsesRequest) =>
  Either.flatMap(
    TranslateResponses.fromResponsesRequest(request),
    (neutral) =>
      Either.map(TranslateResponses.toChatRequest(neutral), (chat) => ({
        neutral,
        chat: request.stream === true ? { ...chat, stream: true, stream_options: { include_usage: true } } : chat
      }))
  )

/**
 * OpenAI Responses: `/v1/responses`, the OpenAI error envelope. A Responses answer from an
 * `openai_responses` target (the caller's body was replayed there) is written as the upstream sent
 * it, only `model` restamped; any other answer is translated from the chat shape, namespaced and
 * custom tool calls restored. A request with something only a Responses server understands is
 * routed on what can be translated and fails 400 on a target of another format. With
 * `continuations`, what a request continues by id is looked up before it is translated and its
 * answer is remembered (`continuations.ts`); without, ids are only forwarded.
 */
export const openAiResponsesWith = (continuations: Continuations.Continuations | undefined): Codec => ({
  format: "openai_responses",
  decode: (json, headers, sessionId, raw) =>
    Effect.flatMap(
      validated(decodeResponsesBody, json, raw),
      (caller) =>
        Effect.flatMap(
          continuations === undefined ? Effect.succeed(undefined) : continuations.restore(caller),
          (continuing) => {
            const request = continuing?.request ?? caller
            return Effect.map(
              translatedOrViewed(request, chatOf, routingView),
              ({ translated, untranslatable }): Inbound => ({
                routed: {
                  body: translated.chat,
                  headers,
                  sessionId,
                  native: nativeBody("openai_responses", request, untranslatable),
                  inboundFormat: "openai_responses",
                  continuation: continuing?.pin
                },
                model: request.model,
                streaming: request.stream === true,
                encoder: responsesEncoder(
                  TranslateResponses.toolMap(translated.neutral),
                  continuations === undefined || continuing === undefined
                    ? undefined
                    : continuations.retainer(continuing)
                )
              })
            )
          }
        )
    ),
  error: openAiError,
  internalError: openAiInternalError
})

/** {@link openAiResponsesWith} without continuations: ids are only forwarded. */
export const openAiResponses: Codec = openAiResponsesWith(undefined)
