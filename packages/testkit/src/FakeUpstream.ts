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

/** One server's state: its models' behaviours and its request log. */
interface State {
  readonly serverDefault: Behaviour
  readonly models: Ref.Ref<HashMap.HashMap<string, ModelState>>
  readonly log: SubscriptionRef.SubscriptionRef<ReadonlyArray<RequestRecord>>
  /** The last request id given. */
  readonly sequence: Ref.Ref<number>
  /** Each socket's number, given when its first request is logged (see RequestRecord.connection). */
  readonly connections: WeakMap<object, number>
  readonly connectionCount: Ref.Ref<number>
}

/** A server's state at its start: `options.models` as the models' defaults, an empty log. */
const stateOf = (options: Options): Effect.Effect<State> =>
  Effect.all({
    models: Ref.make(HashMap.fromIterable(
      Object.entries(options.models ?? {}).map(([model, b]): [string, ModelState] => [model, {
        ...emptyModel,
        fallback: [b]
      }])
    )),
    log: SubscriptionRef.make<ReadonlyArray<RequestRecord>>([]),
    sequence: Ref.make(0),
    connectionCount: Ref.make(0)
  }).pipe(Effect.map((refs) => ({
    ...refs,
    serverDefault: options.defaultBehaviour ?? defaultBehaviour,
    connections: new WeakMap<object, number>()
  })))

/** The behaviour for a request of `model`: its script's next, else its default's (rotated), else the server's. */
const take = (state: State, model: string): Effect.Effect<Behaviour> =>
  Ref.modify(state.models, (models): [Behaviour, HashMap.HashMap<string, ModelState>] => {
    const entry = Option.getOrElse(HashMap.get(models, model), () => emptyModel)
    const [next, ...rest] = entry.queue
    if (next !== undefined) return [next, HashMap.set(models, model, { ...entry, queue: rest })]
    const b = entry.fallback[entry.turn % entry.fallback.length]
    if (b === undefined) return [state.serverDefault, models]
    if (entry.fallback.length === 1) return [b, models]
    return [b, HashMap.set(models, model, { ...entry, turn: entry.turn + 1 })]
  })

/** Sets `model`'s default to the rotation `fallback`, from its first. */
const setFallback = (state: State, model: string, fallback: ReadonlyArray<Behaviour>): Effect.Effect<void> =>
  Ref.update(state.models, (models) =>
    HashMap.set(models, model, {
      ...Option.getOrElse(HashMap.get(models, model), () => emptyModel),
      fallback,
      turn: 0
    }))

/** Appends `behaviours` to `model`'s script. */
const appendScript = (state: State, model: string, behaviours: ReadonlyArray<Behaviour>): Effect.Effect<void> =>
  Ref.update(state.models, (models) => {
    const entry = Option.getOrElse(HashMap.get(models, model), () => emptyModel)
    return HashMap.set(models, model, { ...entry, queue: [...entry.queue, ...behaviours] })
  })

/** The number of `socket`, given when its first request is logged. */
const connectionOf = (state: State, socket: object): Effect.Effect<number> =>
  Effect.suspend(() => {
    const known = state.connections.get(socket)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.tap(
      Ref.updateAndGet(state.connectionCount, (n) => n + 1),
      (n) => Effect.sync(() => state.connections.set(socket, n))
    )
  })

/** Marks the logged request `id` as closed before its response finished. */
const markClosedEarly = (state: State, id: number): Effect.Effect<void> =>
  SubscriptionRef.update(state.log, (records) => records.map((r) => r.id === id ? { ...r, closedEarly: true } : r))

/** How a response ended: `settled` by its "close", true when it finished or the fake cut it itself (`cutByUs`). */
interface Settlement {
  readonly settled: Deferred.Deferred<boolean>
  cutByUs: boolean
}

/** The settlement of `res`, listening for its "close" (its errors are ignored). */
const settlementOf = (res: Http.ServerResponse): Effect.Effect<Settlement> =>
  Effect.map(Deferred.make<boolean>(), (settled) => {
    const settlement: Settlement = { settled, cutByUs: false }
    res.on("error", () => {})
    res.on("close", () => {
      Deferred.unsafeDone(settled, Exit.succeed(res.writableFinished || settlement.cutByUs))
    })
    return settlement
  })

/** What a request says of itself once its body is read: route, API, body, model. */
interface Incoming {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly bodyText: string
  /** The body parsed as JSON (`undefined` when empty), or why not. */
  readonly parsed: Either.Either<unknown, unknown>
  readonly body: unknown
  /** The body's `model` / `stream` flags, when it has that shape. */
  readonly peek: Option.Option.Value<ReturnType<typeof decodePeek>> | undefined
  readonly geminiPath: ReturnType<typeof parseModelPath>
  readonly model: string
  readonly api: ReturnType<typeof apiOf>
}

/** The {@link Incoming} of `req` with the body `text`. */
const incomingOf = (req: Http.IncomingMessage, text: string): Incoming => {
  const method = req.method ?? "GET"
  const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname
  const parsed = text.length === 0 ? Either.right(undefined) : decodeJson(text)
  const body: unknown = Either.getOrElse(parsed, () => text)
  const peek = Option.getOrUndefined(decodePeek(body))
  const geminiPath = parseModelPath(path)
  return {
    method,
    path,
    headers: lowerCaseHeaders(req),
    bodyText: text,
    parsed,
    body,
    peek,
    geminiPath,
    model: geminiPath?.model ?? peek?.model ?? "",
    api: apiOf(method, path)
  }
}

/** What the request record and the exchange both say of the request. */
type Seen = Pick<RequestRecord, "id" | "model" | "method" | "path" | "headers" | "body" | "bodyText" | "at">

/** Logs the request (numbered, with its connection and the behaviour it gets); what its record says of it. */
const logRequest = Effect.fnUntraced(function*(
  state: State,
  req: Http.IncomingMessage,
  incoming: Incoming,
  behaviour: Option.Option<Behaviour>
) {
  const id = yield* Ref.updateAndGet(state.sequence, (n) => n + 1)
  const connection = yield* connectionOf(state, req.socket)
  const { body, bodyText, headers, method, model, path } = incoming
  const seen: Seen = { id, model, method, path, headers, body, bodyText, at: Date.now() }
  const record: RequestRecord = {
    ...seen,
    connection,
    ...Option.match(behaviour, { onNone: () => ({}), onSome: (b) => ({ behaviour: b }) }),
    closedEarly: false
  }
  yield* SubscriptionRef.update(state.log, (records) => [...records, record])
  return seen
})

/** The exchange a behaviour is performed on. */
const exchangeOf = (
  req: Http.IncomingMessage,
  res: Http.ServerResponse,
  incoming: Incoming,
  seen: Seen,
  settlement: Settlement
): Exchange => ({
  api: incoming.api ?? "openai",
  req,
  res,
  ...seen,
  stream: incoming.geminiPath === undefined
    ? incoming.peek?.stream === true
    : incoming.geminiPath.method === "streamGenerateContent",
  includeUsage: incoming.peek?.stream_options?.include_usage === true,
  cutting: () => {
    settlement.cutByUs = true
  }
})

/** The answer: the behaviour performed for a chat request, else the route's fixed answer (or a 404). */
const respond = (
  state: State,
  exchange: Exchange,
  incoming: Incoming,
  behaviour: Option.Option<Behaviour>
): Effect.Effect<void> =>
  Option.match(behaviour, {
    onSome: (b) => perform(b, exchange),
    onNone: () =>
      answerOther(
        {
          res: exchange.res,
          method: incoming.method,
          path: incoming.path,
          api: incoming.api,
          bodyText: incoming.bodyText,
          isJson: Either.isRight(incoming.parsed)
        },
        Effect.map(Ref.get(state.models), (models) => Array.from(HashMap.keys(models)))
      )
  })

/**
 * One request: its body read (unless the client went first), logged, answered; marked closed early
 * when the client closed before the answer finished. The response is destroyed if left unfinished.
 */
const handle = (state: State, req: Http.IncomingMessage, res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.ensuring(
    handleSteps(state, req, res),
    Effect.sync(() => {
      if (!res.writableFinished) res.destroy()
    })
  )

/** The steps of {@link handle}: a generator made once. */
const handleSteps = Effect.fnUntraced(function*(state: State, req: Http.IncomingMessage, res: Http.ServerResponse) {
  const settlement = yield* settlementOf(res)
  const text = yield* Effect.raceFirst(readBody(req), Effect.as(Deferred.await(settlement.settled), Option.none()))
  if (Option.isNone(text)) return
  const incoming = incomingOf(req, text.value)
  const behaviour = incoming.api !== undefined && Either.isRight(incoming.parsed)
    ? Option.some(yield* take(state, incoming.model))
    : Option.none()
  const seen = yield* logRequest(state, req, incoming, behaviour)
  const exchange = exchangeOf(req, res, incoming, seen, settlement)
  yield* Effect.raceFirst(respond(state, exchange, incoming, behaviour), Deferred.await(settlement.settled))
  const finished = yield* Deferred.await(settlement.settled)
  if (!finished) yield* markClosedEarly(state, seen.id)
})

/** The service of a server on `port` over `state`. */
const serviceOf = (state: State, port: number): Context.Tag.Service<FakeUpstream> => {
  const log = state.log
  return FakeUpstream.of({
    url: `http://127.0.0.1:${port}/v1`,
    port,
    setBehaviour: (model, b) => setFallback(state, model, [b]),
    script: (model, bs) => appendScript(state, model, bs),
    cycle: (model, bs) => setFallback(state, model, bs),
    requests: SubscriptionRef.get(log),
    clear: SubscriptionRef.set(log, []),
    drain: SubscriptionRef.getAndSet(log, []),
    reset: Effect.zipRight(Ref.set(state.models, HashMap.empty()), SubscriptionRef.set(log, [])),
    awaitRequest: (model) => firstMatching(log, (records) => records.find((r) => r.model === model)),
    awaitClosed: (model) => firstMatching(log, (records) => records.find((r) => r.model === model && r.closedEarly)),
    awaitRequests: (done) => firstMatching(log, (records) => (done(records) ? records : undefined))
  })
}

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
    const state = yield* stateOf(options)
    const run = yield* FiberSet.makeRuntime<never, void, never>()
    const server = yield* Effect.acquireRelease(
      listen(options.port ?? 0, (req, res) => {
        run(handle(state, req, res))
      }),
      shutdown
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null
      ? address.port
      : yield* Effect.dieMessage("fake upstream: server has no TCP address")
    return serviceOf(state, port)
  })

/**
 * The fake upstream as a scoped Layer (see {@link make}). For a fixed port — e.g. the demo serving
 * simulated models at a known address — pass `{ port }`; it fails with {@link ListenError} if taken.
 * Each call builds a new server: bind the result to a constant to share one.
 */
export const layer = (options: Options = {}): Layer.Layer<FakeUpstream, ListenError> =>
  Layer.scoped(FakeUpstream, make(options))
