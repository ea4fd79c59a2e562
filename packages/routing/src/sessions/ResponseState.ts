/**
 * The `ResponseState` service: what a route remembers of the Responses answers it returned, so that a
 * later request continuing one by id (`previous_response_id`, a native `conversation`) goes back to
 * the target that served it — and, for an answer a Chat or Messages target gave a Responses caller,
 * the transcript (the request's input items and the reply's output items) such a request restores.
 *
 * In memory, per process, bounded per route ({@link capacity} records, never evicted: at capacity
 * nothing new is kept and one warning per route is logged). With a shared `SessionStore` (Redis),
 * the id → target record is also written there and read back when this process has none, so
 * replicas agree where a continuation goes; transcripts stay in the process that kept them.
 */
import { ResponseStateConflict } from "@switchyard-ts/protocol/Errors"
import type { InputItem } from "@switchyard-ts/protocol/OpenAiResponses"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { SessionStore } from "./SessionStore.js"

/**
 * The conversation up to one answer, as Responses input items: the items this answer added (its
 * request's own input, then its output), after those of the answer it continued (`before`). Shared
 * by reference, so a long chain keeps each turn's items once.
 */
export interface Transcript {
  readonly before: Transcript | undefined
  readonly items: ReadonlyArray<InputItem>
}

/** What is remembered of one answer. */
export interface Recorded {
  /** The target (table name) that served it; none when the route answered itself (noop). */
  readonly target: Option.Option<string>
  /** Its transcript, kept for answers a Chat or Messages target gave a Responses caller. */
  readonly transcript: Option.Option<Transcript>
}

/** Every item of `transcript`, oldest first. */
export const itemsOf = (transcript: Transcript): ReadonlyArray<InputItem> => {
  const turns: Array<ReadonlyArray<InputItem>> = []
  for (let at: Transcript | undefined = transcript; at !== undefined; at = at.before) turns.push(at.items)
  return turns.reverse().flat()
}

/** Records kept per route and process. */
export const capacity = 65_536

/** The response-state port. Ids are opaque strings (a response id or a conversation id). */
export class ResponseState extends Context.Tag("@switchyard-ts/routing/ResponseState")<ResponseState, {
  /** What `route` remembers of `id`, if anything. */
  readonly lookup: (route: string, id: string) => Effect.Effect<Option.Option<Recorded>>
  /**
   * Remember `recorded` under `id` on `route` (an id already held keeps its first record). Fails
   * with `ResponseStateConflict` when `id` is already held by another target; at capacity it keeps
   * nothing (and says so once per route).
   */
  readonly record: (route: string, id: string, recorded: Recorded) => Effect.Effect<void, ResponseStateConflict>
}>() {}

/** Options of {@link make}. */
export interface Options {
  /** Records per route (default {@link capacity}). */
  readonly capacity?: number
  /** A store shared by replicas for the id → target records (e.g. the Redis session store). */
  readonly shared?: SessionStore["Type"] | undefined
}

/** The shared store's key of a record (apart from session keys, which start with a route id). */
const sharedKey = (route: string, id: string): string => `responses\u0000${route}\u0000${id}`

const differ = (a: Option.Option<string>, b: Option.Option<string>): boolean =>
  Option.isSome(a) && Option.isSome(b) && a.value !== b.value

/** The in-memory state (see the module notes), the id → target records also in `options.shared`. */
export const make = (options: Options = {}): ResponseState["Type"] => {
  const limit = options.capacity ?? capacity
  const routes = new Map<string, Map<string, Recorded>>()
  const warned = new Set<string>()
  const shared = options.shared
  const lookupShared = (route: string, id: string): Effect.Effect<Option.Option<Recorded>> =>
    shared === undefined
      ? Effect.succeedNone
      : Effect.map(
        shared.get(sharedKey(route, id)),
        Option.map((decision) => ({ target: Option.some(decision.target), transcript: Option.none() }))
      )
  const lookup = (route: string, id: string) =>
    Effect.suspend(() => {
      const found = routes.get(route)?.get(id)
      return found === undefined ? lookupShared(route, id) : Effect.succeedSome(found)
    })
  return ResponseState.of({
    lookup,
    record: (route, id, recorded) =>
      Effect.flatMap(lookup(route, id), (known) => {
        if (Option.isSome(known) && differ(known.value.target, recorded.target)) {
          return Effect.fail(new ResponseStateConflict({ route }))
        }
        const records = routes.get(route) ?? new Map<string, Recorded>()
        routes.set(route, records)
        if (records.has(id)) return Effect.void
        if (records.size >= limit) {
          if (warned.has(route)) return Effect.void
          warned.add(route)
          return Effect.logWarning("responses state at capacity: new continuations are not kept").pipe(
            Effect.annotateLogs({ route, capacity: limit })
          )
        }
        records.set(id, recorded)
        return shared === undefined || Option.isNone(recorded.target)
          ? Effect.void
          : shared.put(sharedKey(route, id), { target: recorded.target.value })
      })
  })
}

/** The in-memory state over `options`, fresh per layer build. */
export const layer = (options: Options = {}): Layer.Layer<ResponseState> =>
  Layer.sync(ResponseState, () => make(options))
