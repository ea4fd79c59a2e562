/**
 * A fault-injecting upstream speaking the OpenAI Chat Completions API, the Anthropic Messages API,
 * the OpenAI Responses API and the Gemini API, for integration tests, the demo and benchmarks.
 *
 * {@link make} starts a real `node:http` server on `127.0.0.1` (a free port unless one is given) that
 * serves three chat routes — `POST /v1/chat/completions` (also `/chat/completions`) in the OpenAI
 * Chat format, `POST /v1/messages` (also `/messages`) in the Anthropic format and
 * `POST /v1/responses` (also `/responses`) in the OpenAI Responses format, and
 * `POST /v1/models/{model}:generateContent` / `:streamGenerateContent` (any version prefix, e.g.
 * `/v1beta`; the model named by the path, streaming by the method) in the Gemini format — plus
 * `POST /v1/messages/count_tokens` (`{"input_tokens"}` estimated from the body size), Gemini's
 * `:countTokens` (`{"totalTokens"}` alike), the Responses
 * auxiliary calls `POST /v1/responses/input_tokens` and `/v1/responses/compact` (fixed-shape
 * answers) and `GET /v1/models`; anything else is a 404 with the OpenAI error envelope. What a chat request gets
 * is a {@link Behaviour}, chosen by the request body's `model` whichever the route: the model's
 * one-shot {@link FakeUpstream.script | script} first, then its default
 * ({@link FakeUpstream.setBehaviour | setBehaviour}), then the server-wide default (an {@link Ok}
 * with fixed content). Every behaviour is encoded in the format of the route it was requested on
 * (OpenAI chunks and `[DONE]`; Anthropic `event:`/`data:` SSE and error envelopes; a Responses
 * `response` object or its numbered event sequence; Gemini response objects, one per SSE `data:`
 * event when streamed, and Gemini's error envelope). Every
 * received request is logged with its path, its TCP connection and that connection's fate, so a test
 * can assert "the upstream saw its connection closed before the response finished" or "the client
 * used two sockets", and can wait for such a state of the log (`awaitRequest`, `awaitClosed`,
 * `awaitRequests`) instead of sleeping and counting.
 *
 * Raw sockets are needed to stall and to cut streams, hence plain `node:http`: each request runs as a
 * fiber of a `FiberSet` runtime captured in {@link make}, and closing the scope interrupts those fibers
 * and destroys every socket. Delays (`Ok.delayMs`, `Chunks.gapMs`) use real timers (`setTimeout`),
 * not the Effect `Clock`: use it from `it.live` / `it.scopedLive` tests and real programs, not under
 * a frozen `TestClock`.
 */
import type * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import * as Http from "node:http"
import { type Behaviour, decodeJson, defaultBehaviour } from "./internal/behaviour.js"
import type { Exchange } from "./internal/exchange.js"
import { parseModelPath } from "./internal/gemini.js"
import { answerOther, apiOf, decodePeek, lowerCaseHeaders, perform, readBody } from "./internal/routes.js"

export {
  anthropicContextTooLong,
  Behaviour,
  Chunks,
  CloseMidStream,
  contextLengthExceeded,
  defaultBehaviour,
  defaultContent,
  Echo,
  echo,
  Garbage,
  JsonObjectText,
  Millis,
  NotJson,
  Ok,
  ok,
  Raw,
  Reset,
  reset,
  Stall,
  stall,
  Status,
  status,
  StreamError,
  streamError,
  Thinking,
  thinking,
  ToolUse,
  toolUse
} from "./internal/behaviour.js"

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/** One request the fake upstream received. */
export interface RequestRecord {
  /** Sequence number, starting at 1 for each server. */
  readonly id: number
  /** The body's `model` (a Gemini path's model), `""` when absent (or for non-chat routes). */
  readonly model: string
  readonly method: string
  /** Path without the query string, e.g. `/v1/chat/completions`, `/v1/messages` or `/v1/responses` (tells the API). */
  readonly path: string
  /** Request headers, names lower-case, repeated values joined with `", "`. */
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body; the raw text when it is not JSON; `undefined` when empty. */
  readonly body: unknown
  /** The body exactly as it arrived (decoded as UTF-8). */
  readonly bodyText: string
  /** Epoch milliseconds (wall clock) when the body had been read. */
  readonly at: number
  /**
   * Sequence number, starting at 1 for each server, of the TCP connection the request came on:
   * requests with the same number shared one keep-alive socket (e.g. to count a client pool's sockets).
   */
  readonly connection: number
  /**
   * The behaviour served, absent for requests that are not chat requests of either API
   * (`/v1/messages/count_tokens`, `/v1/models`, unknown routes, bodies that are not JSON).
   */
  readonly behaviour?: Behaviour
  /**
   * `true` once the client side closed the connection before the response finished (a
   * disconnecting client, a cancelled call, a client-side timeout, or the server shutting down
   * under a stalled request). Cuts made by the behaviour itself (`CloseMidStream`, `Reset`) do not
   * count.
   */
  readonly closedEarly: boolean
}

/** Failed to bind the fake upstream's port (e.g. `EADDRINUSE` for a fixed port). */
export class ListenError extends Data.TaggedError("ListenError")<{
  readonly port: number
  readonly cause: unknown
}> {}

/** Options of {@link make}. */
export interface Options {
  /** Port on 127.0.0.1; 0 (default) picks a free one. */
  readonly port?: number
  /** Behaviour for models with neither script nor default; {@link defaultBehaviour} by default. */
  readonly defaultBehaviour?: Behaviour
  /** Initial per-model defaults; these models are also listed by `GET /v1/models`. */
  readonly models?: Readonly<Record<string, Behaviour>>
}

/** A running fake upstream. */
export class FakeUpstream extends Context.Tag("@switchyard-ts/testkit/FakeUpstream")<FakeUpstream, {
  /** Base URL ending in `/v1`, e.g. `http://127.0.0.1:40123/v1`. */
  readonly url: string
  readonly port: number
  /** Set the default behaviour of `model` (its script, if any, is served first). */
  readonly setBehaviour: (model: string, behaviour: Behaviour) => Effect.Effect<void>
  /** Append one-shot behaviours to `model`'s script; each request consumes one, in order. */
  readonly script: (model: string, behaviours: ReadonlyArray<Behaviour>) => Effect.Effect<void>
  /**
   * Set the default of `model` to a rotation: the n-th request served from the default (n = 0, 1, …
   * counted from this call; its script, if any, is still served first) gets
   * `behaviours[n % behaviours.length]`. `setBehaviour(model, b)` is `cycle(model, [b])`. For a
   * fault rate, rotate through a shuffled list holding faults in that proportion.
   */
  readonly cycle: (model: string, behaviours: Arr.NonEmptyReadonlyArray<Behaviour>) => Effect.Effect<void>
  /** The received requests, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<RequestRecord>>
  /** Forget the request log (behaviours and scripts stay). */
  readonly clear: Effect.Effect<void>
  /**
   * The received requests, oldest first, removed from the log in the same step (a request logged
   * between `requests` and `clear` would be lost): lets a long-running program tally the log
   * without it growing. A record drained before its connection closed stays `closedEarly: false`.
   */
  readonly drain: Effect.Effect<ReadonlyArray<RequestRecord>>
  /** Forget the request log, every per-model behaviour and every script. */
  readonly reset: Effect.Effect<void>
  /**
   * Wait until a logged request for `model` is there (already received, or the next one); returns
   * it. Unbounded: put a timeout around it.
   */
  readonly awaitRequest: (model: string) => Effect.Effect<RequestRecord>
  /**
   * Wait until a logged request for `model` has `closedEarly` (already, or later); returns it.
   * Unbounded: put a timeout around it.
   */
  readonly awaitClosed: (model: string) => Effect.Effect<RequestRecord>
  /**
   * Wait until the whole request log satisfies `done` (already, or after a later request or
   * `closedEarly` change); returns the log it held for. For conditions over several requests, e.g.
   * "all 50 streams were closed early" or "the second call has arrived". Woken by each change of the
   * log, never by a timer. Unbounded: put a timeout around it (or rely on the test's timeout).
   */
  readonly awaitRequests: (
    done: (records: ReadonlyArray<RequestRecord>) => boolean
  ) => Effect.Effect<ReadonlyArray<RequestRecord>>
}>() {}

interface ModelState {
  /** The model's default, rotated through (empty: the server default). */
  readonly fallback: ReadonlyArray<Behaviour>
  /** How many requests the rotation has served. */
  readonly turn: number
  readonly queue: ReadonlyArray<Behaviour>
}

const emptyModel: ModelState = { fallback: [], turn: 0, queue: [] }

const listen = (
  port: number,
  handler: Http.RequestListener
): Effect.Effect<Http.Server, ListenError> =>
  Effect.async<Http.Server, ListenError>((resume) => {
    const server = Http.createServer(handler)
    const onError = (cause: unknown) => resume(Effect.fail(new ListenError({ port, cause })))
    server.once("error", onError)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", onError)
      resume(Effect.succeed(server))
    })
    return Effect.sync(() => {
      server.close()
    })
  })

const shutdown = (server: Http.Server): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  }).pipe(Effect.timeoutOption("2 seconds"), Effect.asVoid)

const firstMatching = <A>(
  log: SubscriptionRef.SubscriptionRef<ReadonlyArray<RequestRecord>>,
  find: (records: ReadonlyArray<RequestRecord>) => A | undefined
): Effect.Effect<A> =>
  log.changes.pipe(
    Stream.filterMap((records) => Option.fromNullable(find(records))),
    Stream.runHead,
    // `changes` never ends, so `None` cannot happen; wait rather than invent an error.
    Effect.flatMap(Option.match({ onNone: () => Effect.never, onSome: Effect.succeed }))
  )

/**
 * Start a fake upstream on 127.0.0.1 (`options.port`, default 0 = a free port). The scope owns it:
 * closing the scope interrupts every in-flight request and destroys all sockets (stalled ones
 * included), so nothing keeps the process alive. Fails with {@link ListenError} when the port
 * cannot be bound. Delays use real timers.
 */
export const make = (
  options: Options = {}
): Effect.Effect<Context.Tag.Service<FakeUpstream>, ListenError, Scope.Scope> =>
  Effect.gen(function*() {
    const serverDefault = options.defaultBehaviour ?? defaultBehaviour
    const initial = HashMap.fromIterable(
      Object.entries(options.models ?? {}).map(([model, b]): [string, ModelState] => [model, {
        ...emptyModel,
        fallback: [b]
      }])
    )
    const models = yield* Ref.make(initial)
    const log = yield* SubscriptionRef.make<ReadonlyArray<RequestRecord>>([])
    const sequence = yield* Ref.make(0)
    // Each socket's number, given when its first request is logged (see RequestRecord.connection).
    const connections = new WeakMap<object, number>()
    const connectionCount = yield* Ref.make(0)
    const connectionOf = (socket: object): Effect.Effect<number> =>
      Effect.suspend(() => {
        const known = connections.get(socket)
        if (known !== undefined) return Effect.succeed(known)
        return Effect.tap(
          Ref.updateAndGet(connectionCount, (n) => n + 1),
          (n) => Effect.sync(() => connections.set(socket, n))
        )
      })
    const run = yield* FiberSet.makeRuntime<never, void, never>()

    const take = (model: string): Effect.Effect<Behaviour> =>
      Ref.modify(models, (state): [Behaviour, HashMap.HashMap<string, ModelState>] => {
        const entry = Option.getOrElse(HashMap.get(state, model), () => emptyModel)
        const [next, ...rest] = entry.queue
        if (next !== undefined) return [next, HashMap.set(state, model, { ...entry, queue: rest })]
        const b = entry.fallback[entry.turn % entry.fallback.length]
        if (b === undefined) return [serverDefault, state]
        if (entry.fallback.length === 1) return [b, state]
        return [b, HashMap.set(state, model, { ...entry, turn: entry.turn + 1 })]
      })

    const setFallback = (model: string, fallback: ReadonlyArray<Behaviour>) =>
      Ref.update(models, (state) =>
        HashMap.set(state, model, {
          ...Option.getOrElse(HashMap.get(state, model), () => emptyModel),
          fallback,
          turn: 0
        }))

    const markClosedEarly = (id: number) =>
      SubscriptionRef.update(log, (records) => records.map((r) => r.id === id ? { ...r, closedEarly: true } : r))

    const handle = (req: Http.IncomingMessage, res: Http.ServerResponse): Effect.Effect<void> =>
      Effect.gen(function*() {
        // Resolved by the response's "close": true when it finished or we cut it ourselves.
        const settled = yield* Deferred.make<boolean>()
        let cutByUs = false
        res.on("error", () => {})
        res.on("close", () => {
          Deferred.unsafeDone(settled, Exit.succeed(res.writableFinished || cutByUs))
        })
        const text = yield* Effect.raceFirst(readBody(req), Effect.as(Deferred.await(settled), Option.none()))
        if (Option.isNone(text)) return
        const method = req.method ?? "GET"
        const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname
        const headers = lowerCaseHeaders(req)
        const parsed = text.value.length === 0 ? Either.right(undefined) : decodeJson(text.value)
        const body: unknown = Either.getOrElse(parsed, () => text.value)
        const peek = Option.getOrUndefined(decodePeek(body))
        const geminiPath = parseModelPath(path)
        const model = geminiPath?.model ?? peek?.model ?? ""
        const api = apiOf(method, path)
        const isChat = api !== undefined
        const behaviour = isChat && Either.isRight(parsed) ? Option.some(yield* take(model)) : Option.none()
        const id = yield* Ref.updateAndGet(sequence, (n) => n + 1)
        const connection = yield* connectionOf(req.socket)
        const at = Date.now()
        // what the request record and the exchange both say of the request
        const seen = { id, model, method, path, headers, body, bodyText: text.value, at }
        const record: RequestRecord = {
          ...seen,
          connection,
          ...Option.match(behaviour, { onNone: () => ({}), onSome: (b) => ({ behaviour: b }) }),
          closedEarly: false
        }
        yield* SubscriptionRef.update(log, (records) => [...records, record])

        const exchange: Exchange = {
          api: api ?? "openai",
          req,
          res,
          ...seen,
          stream: geminiPath === undefined ? peek?.stream === true : geminiPath.method === "streamGenerateContent",
          includeUsage: peek?.stream_options?.include_usage === true,
          cutting: () => {
            cutByUs = true
          }
        }
        const respond = Option.match(behaviour, {
          onSome: (b) => perform(b, exchange),
          onNone: () =>
            answerOther(
              { res, method, path, api, bodyText: text.value, isJson: Either.isRight(parsed) },
              Effect.map(Ref.get(models), (state) => Array.from(HashMap.keys(state)))
            )
        })
        yield* Effect.raceFirst(respond, Deferred.await(settled))
        const finished = yield* Deferred.await(settled)
        if (!finished) yield* markClosedEarly(id)
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (!res.writableFinished) res.destroy()
        }))
      )

    const server = yield* Effect.acquireRelease(
      listen(options.port ?? 0, (req, res) => {
        run(handle(req, res))
      }),
      shutdown
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null
      ? address.port
      : yield* Effect.dieMessage("fake upstream: server has no TCP address")

    return FakeUpstream.of({
      url: `http://127.0.0.1:${port}/v1`,
      port,
      setBehaviour: (model, b) => setFallback(model, [b]),
      script: (model, bs) =>
        Ref.update(models, (state) => {
          const entry = Option.getOrElse(HashMap.get(state, model), () => emptyModel)
          return HashMap.set(state, model, { ...entry, queue: [...entry.queue, ...bs] })
        }),
      cycle: setFallback,
      requests: SubscriptionRef.get(log),
      clear: SubscriptionRef.set(log, []),
      drain: SubscriptionRef.getAndSet(log, []),
      reset: Effect.zipRight(Ref.set(models, HashMap.empty()), SubscriptionRef.set(log, [])),
      awaitRequest: (model) => firstMatching(log, (records) => records.find((r) => r.model === model)),
      awaitClosed: (model) => firstMatching(log, (records) => records.find((r) => r.model === model && r.closedEarly)),
      awaitRequests: (done) => firstMatching(log, (records) => (done(records) ? records : undefined))
    })
  })

/**
 * The fake upstream as a scoped Layer (see {@link make}). For a fixed port — e.g. the demo serving
 * simulated models at a known address — pass `{ port }`; it fails with {@link ListenError} if taken.
 * Each call builds a new server: bind the result to a constant to share one.
 */
export const layer = (options: Options = {}): Layer.Layer<FakeUpstream, ListenError> =>
  Layer.scoped(FakeUpstream, make(options))
