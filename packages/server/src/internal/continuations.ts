/**
 * Responses continuations by id, the server's side of `ResponseState`: before a Responses request is
 * translated, what it continues is looked up (`restore`: a recorded transcript restored into its
 * input, the recorded target pinned for the `Router`'s `Continuation` rule, two ids held by different
 * targets refused); once its answer is complete, what a later request may continue is recorded
 * (`Retainer`: the transcript of an answer a Chat or Messages target — or the route itself — gave,
 * the id → target record of an answer a Responses target gave on a route whose answer targets span
 * several LLM clients).
 *
 * @internal
 */
import type { Target } from "@switchyard-ts/client/Target"
import { ResponseStateConflict } from "@switchyard-ts/protocol/Errors"
import type * as OpenAiResponses from "@switchyard-ts/protocol/OpenAiResponses"
import type * as Decision from "@switchyard-ts/routing/Decision"
import * as ResponseState from "@switchyard-ts/routing/ResponseState"
import type { ContinuationPin, Route } from "@switchyard-ts/routing/Route"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"

/** A Responses request with what it continues looked up. */
export interface Continuing {
  /** The request to route and send: its input after the restored transcript, or as it came. */
  readonly request: OpenAiResponses.ResponsesRequest
  /** The recorded target it goes back to, if any. */
  readonly pin: ContinuationPin | undefined
  /** The transcript it continues (the `before` of its own). */
  readonly before: ResponseState.Transcript | undefined
  /** Its own input items (without the restored transcript). */
  readonly own: ReadonlyArray<OpenAiResponses.InputItem>
}

/** What a Responses answer gives to remember. */
export type Answer =
  /** An answer translated from the chat shape: the response object written to the caller. */
  | { readonly _tag: "Translated"; readonly response: OpenAiResponses.ResponseObject }
  /** A Responses target's own answer: its response id, when it had one. */
  | { readonly _tag: "Native"; readonly id: string | undefined }

/** How one request's answer is remembered. */
export interface Retainer {
  /** The id a translated answer is given (unique, so that a continuation finds it). */
  readonly id: string
  /** Remember `answer` as `decision` and `served` produced it. */
  readonly retain: (
    decision: Decision.Decision,
    served: Option.Option<Target>,
    answer: Answer
  ) => Effect.Effect<void, ResponseStateConflict>
}

/** Continuations over one state and the routes of one router. */
export interface Continuations {
  /** Look up what `request` continues (see the module notes). */
  readonly restore: (request: OpenAiResponses.ResponsesRequest) => Effect.Effect<Continuing, ResponseStateConflict>
  /** The retainer of one request's answer. */
  readonly retainer: (continuing: Continuing) => Retainer
}

const field = (request: OpenAiResponses.ResponsesRequest, key: string): unknown => {
  const view: Record<string, unknown> = { ...request }
  return view[key]
}

/** A `conversation`'s id: the string itself or its object's `id`. */
const conversationOf = (request: OpenAiResponses.ResponsesRequest): string | undefined => {
  const conversation = field(request, "conversation")
  if (typeof conversation === "string" && conversation !== "") return conversation
  return Predicate.isRecord(conversation) && typeof conversation["id"] === "string" && conversation["id"] !== ""
    ? conversation["id"]
    : undefined
}

/** A request's input as items (a string input is one user message). */
const inputItems = (request: OpenAiResponses.ResponsesRequest): ReadonlyArray<OpenAiResponses.InputItem> =>
  typeof request.input === "string"
    ? [{ type: "message", role: "user", content: request.input }]
    : request.input ?? []

const lookupId = (state: ResponseState.ResponseState["Type"], route: string, id: string | null | undefined) =>
  id === null || id === undefined || id === "" ? Effect.succeedNone : state.lookup(route, id)

/** Whether the route's answer targets span several LLM clients (native ids must then go back to theirs). */
const severalClients = (route: Route | undefined): boolean =>
  route !== undefined && new Set(route.targets.map((target) => target.client.name)).size > 1

/** A fresh response id for a translated answer. */
const mintId = (): string => `resp_${globalThis.crypto.randomUUID().replaceAll("-", "")}`

/** Continuations over `state` for the routes of `routes` (by id). */
export const make = (
  state: ResponseState.ResponseState["Type"],
  routes: ReadonlyArray<Route>
): Continuations => {
  const byId = new Map(routes.map((route) => [route.id, route]))
  const record = (route: string, id: string | undefined, recorded: ResponseState.Recorded) =>
    id === undefined || id === "" ? Effect.void : state.record(route, id, recorded)
  return {
    restore: Effect.fnUntraced(function*(request: OpenAiResponses.ResponsesRequest) {
      const own = inputItems(request)
      const previous = yield* lookupId(state, request.model, request.previous_response_id)
      const conversation = yield* lookupId(state, request.model, conversationOf(request))
      const targets = [previous, conversation].flatMap((found) =>
        Option.isSome(found) && Option.isSome(found.value.target) ? [found.value.target.value] : []
      )
      if (new Set(targets).size > 1) return yield* new ResponseStateConflict({ route: request.model })
      const pin = targets[0] === undefined ? undefined : { target: targets[0] }
      const transcript = Option.flatMap(previous, (found) => found.transcript)
      if (Option.isNone(transcript)) return { request, pin, before: undefined, own }
      const { previous_response_id: _continued, ...rest } = request
      return {
        request: { ...rest, input: [...ResponseState.itemsOf(transcript.value), ...own] },
        pin,
        before: transcript.value,
        own
      }
    }),
    retainer: (continuing) => ({
      id: mintId(),
      retain: (decision, served, answer) => {
        const route = decision.route.id
        const stored = continuing.request.store !== false
        const target = Option.map(served, (t) => t.name)
        if (answer._tag === "Native") {
          if (!severalClients(byId.get(route))) return Effect.void
          const recorded = { target, transcript: Option.none() }
          return Effect.zipRight(
            stored ? record(route, answer.id, recorded) : Effect.void,
            record(route, conversationOf(continuing.request), recorded)
          )
        }
        if (!stored) return Effect.void
        const items = [...continuing.own, ...answer.response.output]
        return record(route, answer.response.id, {
          target,
          transcript: Option.some({ before: continuing.before, items })
        })
      }
    })
  }
}
