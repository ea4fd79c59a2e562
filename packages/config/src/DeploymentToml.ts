/**
 * Deployment TOML → validated `Deployment` (docs/configuration.md).
 *
 * Every table is one Schema (a module per table: `LlmClientTable`, `TargetTable`, one per route
 * type, `SubagentsTable`, `SessionsTable`, `ServerTable`) read in two steps, its keys and then its
 * rules; this module parses the text, runs the steps across the tables, picks each route's table by
 * its `type` (and an `llm_classifier`'s mode), and checks what spans tables. Loading runs in two
 * phases, as the anchor does (serde first, then validation):
 *
 * 1. Structure: TOML syntax, `schema_version`, the top-level tables, then the keys of every client,
 *    target and route table in sorted table-name order, then `[sessions]` and `[server]` — unknown
 *    keys, missing keys, value types and enum variants. A route's table is picked by `type`; a
 *    classifier's mode is settled before its keys (explicit `mode`, else `escalation` when an
 *    `escalation` table is present, else `capability`; see `ClassifierMode` for what
 *    each mode rejects), and a `subagents` table is read after the route's own keys.
 * 2. Rules: table names and ids → every client → every target → duplicate route ids → each route
 *    (its order of checks is in its table's module) → the `forward_auth` families of each route →
 *    `[sessions]` → `[server]` → no `forward_auth` client beside inbound keys.
 *
 * The first problem found fails the load with `InvalidConfig({ path, message })`, where `path`
 * is the TOML key path (`llm_clients.hosted.max_retries`, `routes.r.targets[1]`) and `message`
 * starts with it. Messages never contain API key values.
 *
 * Decisions (the rest are in the table modules: `base_url`, `extra_headers` and `breaker` in
 * `LlmClientTable`, `extra_body` in `TargetTable`):
 * - Integers are parsed as `bigint` (smol-toml `integersAsBigInt: true`), so `seed` keeps all 64
 *   bits (up to 2^64-1) and `1.0` is a float, not an integer. Keys `__proto__`/`constructor` are
 *   parse errors. Milliseconds and counts are capped at 2^53-1.
 * - `forward_auth = true` sends the caller's credential to that client instead of a configured key
 *   (docs/configuration.md); it cannot be combined with `api_key_env` (on the client) nor with
 *   `[server] api_keys_env` (inbound auth, whose key the caller's credential header then carries).
 */
import { credentialFamily, type LlmClient, type Target } from "@switchyard-ts/client/Target"
import type { CredentialFamily } from "@switchyard-ts/protocol/Errors"
import * as ClassifierMode from "@switchyard-ts/routing/ClassifierMode"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import type { Table } from "@switchyard-ts/routing/Table"
import {
  failAt,
  type Path,
  tableOf,
  TomlInteger,
  TomlString,
  TomlTable,
  unknownVariant
} from "@switchyard-ts/routing/Toml"
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Order from "effect/Order"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Toml from "smol-toml"
import type { Deployment, RouteSpec } from "./DeploymentSpec.js"
import { decodeAt, fail, invalid, reportAt } from "./internal/invalid.js"
import * as SystemPrompts from "./internal/systemPrompts.js"
import type { InvalidConfig } from "./InvalidConfig.js"
import * as LlmClientTable from "./LlmClientTable.js"
import * as ServerTable from "./ServerTable.js"
import * as SessionsTable from "./SessionsTable.js"
import * as TargetTable from "./TargetTable.js"

// ---------------------------------------------------------------------------------------------
// Phase 1: structure
// ---------------------------------------------------------------------------------------------

const RawVersion = Schema.Struct({ schema_version: TomlInteger })

const RawTop = Schema.Struct({
  schema_version: TomlInteger,
  llm_clients: Schema.optional(tableOf(TomlTable)),
  targets: tableOf(TomlTable),
  routes: tableOf(TomlTable),
  sessions: Schema.optional(TomlTable),
  server: Schema.optional(TomlTable),
  fallback_client: Schema.optional(TomlString)
})

/**
 * Decodes the keys of the table at `path`; its rules, over those keys, run later (phase 2), their
 * issues reported at `path` too.
 */
const readKeys = <K, I, A, Context>(table: Table<K, I, A, Context>, path: Path, input: unknown) =>
  reportAt(
    path,
    Effect.map(ParseResult.decodeUnknown(table.keys)(input), (keys) => ({
      keys,
      rules: (context: Context): Effect.Effect<A, InvalidConfig> => reportAt(path, table.rules(keys, context))
    }))
  )

/** A route table whose keys are decoded: its name, its route id, and its rules over the targets. */
interface ReadRoute {
  readonly name: string
  readonly id: string
  readonly rules: (targets: ReadonlyMap<string, Target>) => Effect.Effect<RouteSpec, InvalidConfig>
}

const TypeHead = Schema.Struct({ type: TomlString })

const isTableType = (type: string): type is RouteTypes.TableType => RouteTypes.tableTypes.some((t) => t === type)

/** Which table a route table is: its `type`, and an `llm_classifier`'s mode. */
const routeKind = (input: unknown) =>
  Effect.gen(function*() {
    const { type } = yield* ParseResult.decodeUnknown(TypeHead, { onExcessProperty: "ignore" })(input)
    if (!isTableType(type)) return yield* failAt(["type"], unknownVariant(type, RouteTypes.tableTypes))
    return type === "llm_classifier" ? yield* ClassifierMode.settleRoute(input) : type
  })

/** The keys of the route table `name`, decoded by its kind's table. */
const readRoute = (name: string, input: unknown): Effect.Effect<ReadRoute, InvalidConfig> => {
  const path = ["routes", name]
  return Effect.map(
    reportAt(path, Effect.flatMap(routeKind(input), (kind) => RouteTypes.read(kind, input))),
    (read): ReadRoute => ({
      name,
      id: read.id,
      rules: (targets) => reportAt(path, read.rules({ name, targets }))
    })
  )
}

/** Reads every table of `tables` (by sorted table name) at `<kind>.<name>` with `table`. */
const readAll = <K, I, A, Context>(
  table: Table<K, I, A, Context>,
  kind: string,
  tables: Readonly<Record<string, unknown>>
) =>
  Effect.forEach(
    sortedEntries(tables),
    ([name, input]) => Effect.map(readKeys(table, [kind, name], input), (read) => ({ name, ...read }))
  )

const sortedEntries = <A>(record: Readonly<Record<string, A>>): Array<readonly [string, A]> =>
  Arr.sort(Object.entries(record), Order.mapInput(Order.string, ([key]: readonly [string, A]) => key))

const decodeStructure = (document: Toml.TomlTable) =>
  Effect.gen(function*() {
    // schema_version first: a file for another version need not match this shape at all
    const { schema_version } = yield* decodeAt(RawVersion, [], document, "ignore")
    if (schema_version !== 1n) {
      return yield* fail(["schema_version"], `unsupported schema_version ${schema_version}; expected 1`)
    }
    const top = yield* decodeAt(RawTop, [], document)
    const routeTables = sortedEntries(top.routes)
    if (routeTables.length === 0) return yield* fail(["routes"], "at least one route is required")
    const clients = yield* readAll(LlmClientTable.table, "llm_clients", top.llm_clients ?? {})
    const targets = yield* readAll(TargetTable.table, "targets", top.targets)
    const routes = yield* Effect.forEach(routeTables, ([name, table]) => readRoute(name, table))
    const sessions = yield* readKeys(SessionsTable.table, ["sessions"], top.sessions ?? {})
    const server = yield* readKeys(ServerTable.table, ["server"], top.server ?? {})
    return { clients, targets, routes, sessions, server, fallbackClient: top.fallback_client }
  })

// ---------------------------------------------------------------------------------------------
// Phase 2: rules
// ---------------------------------------------------------------------------------------------

const checkName = (path: Path, name: string, label: string): Effect.Effect<void, InvalidConfig> =>
  name === "" || name.trim() !== name
    ? fail(path, `${label} must be non-empty and have no surrounding whitespace`)
    : Effect.void

/** Table names, target ids and route ids: non-empty, without surrounding whitespace. */
const checkNames = (raw: Effect.Effect.Success<ReturnType<typeof decodeStructure>>) =>
  Effect.gen(function*() {
    for (const { name } of raw.clients) yield* checkName(["llm_clients", name], name, "llm client name")
    for (const { keys, name } of raw.targets) {
      yield* checkName(["targets", name], name, "target name")
      yield* checkName(["targets", name, "id"], keys.id, "target id")
    }
    for (const { id, name } of raw.routes) {
      yield* checkName(["routes", name], name, "route name")
      yield* checkName(["routes", name, "id"], id, "route id")
    }
  })

const checkDuplicateIds = (routes: ReadonlyArray<ReadRoute>): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    for (const { id, name } of routes) {
      if (seen.has(id)) return yield* fail(["routes", name, "id"], `duplicate route model ${id}`)
      seen.add(id)
    }
  })

/**
 * A forwarding client cannot be combined with inbound keys: the caller's credential header would
 * then carry the router's own key.
 */
const checkInboundAuth = (
  clients: ReadonlyArray<LlmClient>,
  server: ServerTable.Spec
): Effect.Effect<void, InvalidConfig> => {
  const forwarding = clients.find((client) => client.forwardAuth === true)
  return forwarding !== undefined && server.apiKeys.length > 0
    ? fail(
      ["llm_clients", forwarding.name, "forward_auth"],
      "forward_auth cannot be combined with [server] api_keys_env: the caller's Authorization / x-api-key " +
        "is then the router's own key, which is never forwarded"
    )
    : Effect.void
}

/** `fallback_client`: the LLM client it names (`references unknown llm client "<name>"` otherwise). */
const checkFallbackClient = (
  name: string | undefined,
  clients: ReadonlyMap<string, LlmClient>
): Effect.Effect<LlmClient | undefined, InvalidConfig> => {
  if (name === undefined) return Effect.succeed(undefined)
  const client = clients.get(name)
  return client === undefined
    ? fail(["fallback_client"], `references unknown llm client ${JSON.stringify(name)}`)
    : Effect.succeed(client)
}

const byName = <A extends { readonly name: string }>(items: ReadonlyArray<A>): ReadonlyMap<string, A> =>
  new Map(items.map((item) => [item.name, item]))

const parseToml = (text: string): Effect.Effect<Toml.TomlTable, InvalidConfig> =>
  Effect.try({
    try: () => Toml.parse(text, { integersAsBigInt: true, unsafeKeyBehaviour: "throw" }),
    catch: (error) => {
      const detail = error instanceof Toml.TomlError
        ? `${error.message.split("\n")[0] ?? ""} (line ${error.line}, column ${error.column})`
        : error instanceof Error
        ? error.message
        : String(error)
      return invalid([], `failed to parse TOML: ${detail}`)
    }
  })

/**
 * Parses and validates a deployment TOML document.
 *
 * API keys are read through `Config.redacted(api_key_env)` from the current `ConfigProvider`
 * (the environment by default) and stay `Redacted`. Clients and targets come out sorted by table
 * name, routes by route id. Without a `[sessions]` table, `sessions` holds the defaults
 * (`store = "memory"`, `max_entries = 100000`, `ttl_ms = 3600000`).
 *
 * Fails with `InvalidConfig` for the first problem found: `failed to parse TOML: ...` (path `""`)
 * for syntax errors, otherwise at the TOML key path of the offending value.
 */
export const parse: (text: string) => Effect.Effect<Deployment, InvalidConfig> = Effect.fn("DeploymentToml.parse")(
  function*(text: string) {
    const raw = yield* decodeStructure(yield* parseToml(text))
    yield* checkNames(raw)
    const clients = yield* Effect.forEach(raw.clients, ({ name, rules }) => rules({ name }))
    const clientsByName = byName(clients)
    const fallbackClient = yield* checkFallbackClient(raw.fallbackClient, clientsByName)
    const targets = yield* Effect.forEach(raw.targets, ({ name, rules }) => rules({ name, clients: clientsByName }))
    const targetsByName = byName(targets)
    yield* checkDuplicateIds(raw.routes)
    const routes = yield* Effect.forEach(raw.routes, (route) => route.rules(targetsByName))
    yield* Effect.forEach(routes, checkForwardFamilies, { discard: true })
    yield* Effect.forEach(routes, SystemPrompts.check, { discard: true })
    const sessions = yield* raw.sessions.rules(undefined)
    const server = yield* raw.server.rules(undefined)
    yield* checkInboundAuth(clients, server)
    return {
      clients,
      targets,
      routes: Arr.sort(routes, Order.mapInput(Order.string, (route: RouteSpec) => route.id)),
      sessions,
      server,
      ...(fallbackClient === undefined ? {} : { fallbackClient })
    }
  }
)

/** The credential families of a route's `forward_auth` callable targets, without repeats, in target order. */
const forwardFamilies = (route: RouteSpec): ReadonlyArray<CredentialFamily> =>
  Arr.dedupe(
    RouteTypes.callableTargets(route).flatMap((target) =>
      target.client.forwardAuth === true && target.client.format !== "gemini_generate_content"
        ? [credentialFamily(target.client.format)]
        : []
    )
  )

/**
 * A route may forward the caller's credential to clients of one family only (Anthropic, or the
 * OpenAI formats): a caller carries one kind of credential.
 */
const checkForwardFamilies = (route: RouteSpec): Effect.Effect<void, InvalidConfig> =>
  forwardFamilies(route).length > 1
    ? fail(["routes", route.name], `route ${route.name} cannot forward both Anthropic and OpenAI caller credentials`)
    : Effect.void

/**
 * The family of caller credential `route` forwards: that of the `forward_auth` clients among its
 * callable targets (answer targets, judges, the advisor, sub-agent targets); none when no client
 * of them forwards. A parsed deployment has one family at most per route (a load error
 * otherwise); for a hand-built one with both, the first callable target's family.
 */
export const forwardAuthFamily = (route: RouteSpec): Option.Option<CredentialFamily> => Arr.head(forwardFamilies(route))

/** The `--dry-run` line: `server OK: <route ids joined by ", ">`, in the deployment's route order. */
export const summary = (deployment: Deployment): string =>
  `server OK: ${deployment.routes.map((route) => route.id).join(", ")}`

/**
 * Non-fatal findings about a valid deployment, one line each, for the startup log and `--dry-run`,
 * in the deployment's route order: one per `llm_classifier` route (or `stage_router` route with a
 * `[classifier]`, or `composite` route) whose judge's LLM client has no `timeout_ms` and which bounds its judge neither by
 * `judge_timeout_ms` nor by `request_timeout_ms` (`route <table name>: judge client <client name>
 * has no timeout_ms; ...`), the same for a passthrough or stage router route's custom `subagents`
 * classifier (`route <n>: subagents judge client ...`, after the route's own lines), one per
 * `stage_router` route with `picker = "capable_first"` (experimental), and one per `advisor` route whose advisor's client has
 * no `timeout_ms` and which has no `request_timeout_ms`.
 */
export const warnings = (deployment: Deployment): ReadonlyArray<string> =>
  deployment.routes.flatMap((route) => RouteTypes.of(route).warnings)
