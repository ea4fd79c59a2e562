/**
 * Deployment TOML → validated `Deployment` (SPEC §4, anchor behaviour §1).
 *
 * Loading runs in two phases, as the anchor does (serde first, then validation):
 *
 * 1. Structure, decoded with `effect/Schema`: TOML syntax, `schema_version`, the top-level tables,
 *    then every client, target and route table in sorted table-name order — unknown keys,
 *    missing keys, value types and enum variants (`format`, route `type`).
 * 2. Rules: table names and ids → every client (URL, retries, timeout, `forward_auth`,
 *    `api_key_env`, `extra_headers`) → target→client references and `extra_body` → each route
 *    (duplicate ids, `context_window`, target references, weights, seed).
 *
 * The first problem found fails the load with `InvalidConfig({ path, message })`, where `path`
 * is the TOML key path (`llm_clients.hosted.max_retries`, `routes.r.targets[1]`) and `message`
 * starts with it. Messages never contain API key values.
 *
 * Decisions:
 * - `base_url` is trimmed, parsed with `URL`, and stored as `URL.href` with trailing `/` removed
 *   (`https://api.example.com/` → `https://api.example.com`, `http://h:8001/v1/` → `http://h:8001/v1`),
 *   so callers append `/chat/completions`. A URL with a query or fragment keeps its href unchanged.
 * - Integers are parsed as `bigint` (smol-toml `integersAsBigInt: true`), so `seed` keeps all 64
 *   bits (up to 2^64-1) and `1.0` is a float, not an integer. Keys `__proto__`/`constructor` are
 *   parse errors.
 * - `extra_body` values become JSON: integers must be safe integers, floats finite; TOML
 *   datetimes are rejected.
 * - `forward_auth = false` is accepted (it is the default); `forward_auth = true` is rejected.
 * - `extra_headers` credential names are rejected on every client, used or not.
 */
import * as Arr from "effect/Array"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Order from "effect/Order"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Toml from "smol-toml"
import { credentialHeaders, type LlmClient, type Target } from "@switchyard-ts/client/Target"
import type { Deployment, RandomRouteSpec, RouteCommon, RouteSpec } from "./Deployment.js"
import type { InvalidConfig } from "./InvalidConfig.js"
import {
  arrayOf,
  decodeAt,
  fail,
  invalid,
  type Path,
  tableOf,
  toJsonTable,
  TomlBoolean,
  TomlInteger,
  TomlNumber,
  TomlString,
  TomlTable
} from "./internal/toml.js"

// ---------------------------------------------------------------------------------------------
// Phase 1: structure
// ---------------------------------------------------------------------------------------------

const RawVersion = Schema.Struct({ schema_version: TomlInteger })

const RawTop = Schema.Struct({
  schema_version: TomlInteger,
  llm_clients: Schema.optional(tableOf(TomlTable)),
  targets: tableOf(TomlTable),
  routes: tableOf(TomlTable)
})

const RawClient = Schema.Struct({
  format: TomlString,
  base_url: TomlString,
  api_key_env: Schema.optional(TomlString),
  forward_auth: Schema.optional(TomlBoolean),
  extra_headers: Schema.optional(tableOf(TomlString)),
  max_retries: Schema.optional(TomlInteger),
  timeout_ms: Schema.optional(TomlInteger)
})
type RawClient = typeof RawClient.Type

const RawTarget = Schema.Struct({
  id: TomlString,
  llm_client: TomlString,
  extra_body: Schema.optional(TomlTable)
})
type RawTarget = typeof RawTarget.Type

const RawRouteType = Schema.Struct({ type: TomlString })

const routeCommonFields = {
  id: TomlString,
  type: TomlString,
  context_window: Schema.optional(TomlInteger),
  tool_calling: Schema.optional(TomlBoolean)
}

const RawNoop = Schema.Struct(routeCommonFields)
const RawPassthrough = Schema.Struct({ ...routeCommonFields, target: TomlString })
const RawRandom = Schema.Struct({
  ...routeCommonFields,
  targets: arrayOf(TomlString),
  weights: Schema.optional(arrayOf(TomlNumber)),
  seed: Schema.optional(TomlInteger)
})

type RawRoute =
  | { readonly type: "noop"; readonly raw: typeof RawNoop.Type }
  | { readonly type: "passthrough"; readonly raw: typeof RawPassthrough.Type }
  | { readonly type: "random"; readonly raw: typeof RawRandom.Type }

interface Named<A> {
  readonly name: string
  readonly raw: A
}

interface RawDeployment {
  readonly clients: ReadonlyArray<Named<RawClient>>
  readonly targets: ReadonlyArray<Named<RawTarget>>
  readonly routes: ReadonlyArray<Named<RawRoute>>
}

const supportedFormats = ["openai_chat"] as const
const laterFormats: ReadonlyArray<string> = ["openai_responses", "anthropic_messages"]
const supportedRouteTypes = ["noop", "passthrough", "random"] as const
const laterRouteTypes: ReadonlyArray<string> = ["llm_classifier", "advisor", "stage_router"]

const listVariants = (variants: ReadonlyArray<string>): string => variants.map((v) => JSON.stringify(v)).join(", ")

const sortedEntries = <A>(record: Readonly<Record<string, A>>): Array<readonly [string, A]> =>
  Arr.sort(Object.entries(record), Order.mapInput(Order.string, ([key]: readonly [string, A]) => key))

const decodeClient = (name: string, table: unknown) =>
  Effect.gen(function*() {
    const path = ["llm_clients", name]
    const raw = yield* decodeAt(RawClient, path, table)
    if (!Arr.contains(supportedFormats, raw.format)) {
      const formatPath = [...path, "format"]
      return yield* laterFormats.includes(raw.format)
        ? fail(formatPath, `format ${JSON.stringify(raw.format)} is not supported yet`)
        : fail(formatPath, `unknown variant ${JSON.stringify(raw.format)}; expected one of ${listVariants(supportedFormats)}`)
    }
    return { name, raw }
  })

const decodeRoute = (name: string, table: unknown) =>
  Effect.gen(function*() {
    const path = ["routes", name]
    const { type } = yield* decodeAt(RawRouteType, path, table, "ignore")
    switch (type) {
      case "noop":
        return { name, raw: { type, raw: yield* decodeAt(RawNoop, path, table) } }
      case "passthrough":
        return { name, raw: { type, raw: yield* decodeAt(RawPassthrough, path, table) } }
      case "random":
        return { name, raw: { type, raw: yield* decodeAt(RawRandom, path, table) } }
    }
    return yield* laterRouteTypes.includes(type)
      ? fail([...path, "type"], `route type ${JSON.stringify(type)} is not supported yet`)
      : fail([...path, "type"], `unknown variant ${JSON.stringify(type)}; expected one of ${listVariants(supportedRouteTypes)}`)
  })

const decodeStructure = (document: Toml.TomlTable): Effect.Effect<RawDeployment, InvalidConfig> =>
  Effect.gen(function*() {
    // schema_version first: a file for another version need not match this shape at all
    const { schema_version } = yield* decodeAt(RawVersion, [], document, "ignore")
    if (schema_version !== 1n) {
      return yield* fail(["schema_version"], `unsupported schema_version ${schema_version}; expected 1`)
    }
    const top = yield* decodeAt(RawTop, [], document)
    const routeTables = sortedEntries(top.routes)
    if (routeTables.length === 0) return yield* fail(["routes"], "at least one route is required")
    const clients = yield* Effect.forEach(sortedEntries(top.llm_clients ?? {}), ([name, table]) => decodeClient(name, table))
    const targets = yield* Effect.forEach(sortedEntries(top.targets), ([name, table]) =>
      Effect.map(decodeAt(RawTarget, ["targets", name], table), (raw) => ({ name, raw })))
    const routes = yield* Effect.forEach(routeTables, ([name, table]) => decodeRoute(name, table))
    return { clients, targets, routes }
  })

// ---------------------------------------------------------------------------------------------
// Phase 2: rules
// ---------------------------------------------------------------------------------------------

const checkName = (path: Path, name: string, label: string): Effect.Effect<void, InvalidConfig> =>
  name === "" || name.trim() !== name
    ? fail(path, `${label} must be non-empty and have no surrounding whitespace`)
    : Effect.void

const checkNames = (raw: RawDeployment): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    for (const { name } of raw.clients) yield* checkName(["llm_clients", name], name, "llm client name")
    for (const { name, raw: target } of raw.targets) {
      yield* checkName(["targets", name], name, "target name")
      yield* checkName(["targets", name, "id"], target.id, "target id")
    }
    for (const { name, raw: route } of raw.routes) {
      yield* checkName(["routes", name], name, "route name")
      yield* checkName(["routes", name, "id"], route.raw.id, "route id")
    }
  })

const integerInRange = (
  path: Path,
  value: bigint,
  min: bigint,
  max: bigint,
  belowMin: string = `must be at least ${min}`
): Effect.Effect<bigint, InvalidConfig> =>
  value < min
    ? fail(path, `${belowMin}, got ${value}`)
    : value > max
    ? fail(path, `must be at most ${max}, got ${value}`)
    : Effect.succeed(value)

const maxSafe = BigInt(Number.MAX_SAFE_INTEGER)
const maxU32 = 2n ** 32n - 1n
const maxU64 = 2n ** 64n - 1n

const normalizeBaseUrl = (path: Path, input: string): Effect.Effect<string, InvalidConfig> =>
  Effect.try({
    try: () => new URL(input.trim()),
    catch: () => invalid(path, "base_url must be an absolute HTTP(S) URL")
  }).pipe(
    Effect.filterOrFail(
      (url) => (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "",
      () => invalid(path, "base_url must be an absolute HTTP(S) URL")
    ),
    Effect.map((url) => url.href.replace(/\/+$/, ""))
  )

const readApiKey = (path: Path, variable: string): Effect.Effect<Redacted.Redacted<string>, InvalidConfig> =>
  Effect.gen(function*() {
    if (variable.trim() === "") return yield* fail(path, "api_key_env must not be empty")
    // the ConfigError is dropped: the variable's name is all the message needs
    const key = yield* Effect.mapError(Config.redacted(variable), () => invalid(path, `could not read api_key_env ${variable}`))
    if (Redacted.value(key).trim() === "") return yield* fail(path, `api_key_env ${variable} is empty`)
    return key
  })

const checkHeaders = (
  path: Path,
  headers: Readonly<Record<string, string>>
): Effect.Effect<Readonly<Record<string, string>>, InvalidConfig> =>
  Effect.gen(function*() {
    for (const name of Object.keys(headers)) {
      if (credentialHeaders.has(name.toLowerCase())) {
        return yield* fail([...path, name], `extra_headers cannot set ${JSON.stringify(name)}`)
      }
    }
    return headers
  })

const buildClient = ({ name, raw }: Named<RawClient>): Effect.Effect<LlmClient, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["llm_clients", name]
    const baseUrl = yield* normalizeBaseUrl([...path, "base_url"], raw.base_url)
    const maxRetries = raw.max_retries === undefined
      ? 2
      : Number(yield* integerInRange([...path, "max_retries"], raw.max_retries, 0n, 10n))
    const timeoutMs = raw.timeout_ms === undefined
      ? Option.none()
      : Option.some(Number(yield* integerInRange([...path, "timeout_ms"], raw.timeout_ms, 1n, maxSafe, "must be a positive integer")))
    if (raw.forward_auth === true) return yield* fail([...path, "forward_auth"], "forward_auth is not supported yet")
    const apiKey = raw.api_key_env === undefined
      ? Option.none()
      : Option.some(yield* readApiKey([...path, "api_key_env"], raw.api_key_env))
    const extraHeaders = yield* checkHeaders([...path, "extra_headers"], raw.extra_headers ?? {})
    return { name, format: "openai_chat", baseUrl, apiKey, extraHeaders, maxRetries, timeoutMs }
  })

const buildTarget = (
  clients: ReadonlyMap<string, LlmClient>,
  { name, raw }: Named<RawTarget>
): Effect.Effect<Target, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["targets", name]
    const client = clients.get(raw.llm_client)
    if (client === undefined) {
      return yield* fail([...path, "llm_client"], `references unknown llm client ${JSON.stringify(raw.llm_client)}`)
    }
    const extraBody = raw.extra_body === undefined ? {} : yield* toJsonTable(raw.extra_body, [...path, "extra_body"])
    return { name, id: raw.id, client, extraBody }
  })

const lookupTarget = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  name: string
): Effect.Effect<Target, InvalidConfig> => {
  const target = targets.get(name)
  return target === undefined ? fail(path, `references unknown target ${JSON.stringify(name)}`) : Effect.succeed(target)
}

const buildRandom = (
  targets: ReadonlyMap<string, Target>,
  path: Path,
  common: RouteCommon,
  raw: typeof RawRandom.Type
): Effect.Effect<RandomRouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const targetsPath = [...path, "targets"]
    const resolved = yield* Effect.forEach(raw.targets, (name, i) => lookupTarget(targets, [...targetsPath, i], name))
    for (const [i, name] of raw.targets.entries()) {
      if (raw.targets.indexOf(name) !== i) {
        return yield* fail([...targetsPath, i], `random targets must be unique; ${JSON.stringify(name)} is listed twice`)
      }
    }
    if (!Arr.isNonEmptyArray(resolved)) return yield* fail(targetsPath, "no routing targets are configured")
    const weightsPath = [...path, "weights"]
    const weights = raw.weights ?? resolved.map(() => 1)
    if (weights.length !== resolved.length) {
      return yield* fail(weightsPath, `invalid random weights: expected ${resolved.length} weights, got ${weights.length}`)
    }
    for (const [i, weight] of weights.entries()) {
      if (!Number.isFinite(weight) || weight < 0) {
        return yield* fail([...weightsPath, i], `weights must be finite and nonnegative, got ${weight}`)
      }
    }
    if (!weights.some((weight) => weight > 0)) return yield* fail(weightsPath, "at least one weight must be positive")
    const seed = raw.seed === undefined
      ? Option.none()
      : Option.some(yield* integerInRange([...path, "seed"], raw.seed, 0n, maxU64))
    return { ...common, type: "random", targets: resolved, weights, seed }
  })

const buildRoute = (
  targets: ReadonlyMap<string, Target>,
  { name, raw: route }: Named<RawRoute>
): Effect.Effect<RouteSpec, InvalidConfig> =>
  Effect.gen(function*() {
    const path = ["routes", name]
    const { raw } = route
    const contextWindow = raw.context_window === undefined
      ? Option.none()
      : Option.some(Number(yield* integerInRange([...path, "context_window"], raw.context_window, 1n, maxU32, "must be greater than zero")))
    const common: RouteCommon = { name, id: raw.id, contextWindow, toolCalling: Option.fromNullable(raw.tool_calling) }
    switch (route.type) {
      case "noop":
        return { ...common, type: "noop" }
      case "passthrough":
        return { ...common, type: "passthrough", target: yield* lookupTarget(targets, [...path, "target"], route.raw.target) }
      case "random":
        return yield* buildRandom(targets, path, common, route.raw)
    }
  })

const checkDuplicateIds = (routes: ReadonlyArray<Named<RawRoute>>): Effect.Effect<void, InvalidConfig> =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    for (const { name, raw } of routes) {
      if (seen.has(raw.raw.id)) return yield* fail(["routes", name, "id"], `duplicate route model ${raw.raw.id}`)
      seen.add(raw.raw.id)
    }
  })

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
 * name, routes by route id.
 *
 * Fails with `InvalidConfig` for the first problem found: `failed to parse TOML: ...` (path `""`)
 * for syntax errors, otherwise at the TOML key path of the offending value.
 */
export const parse: (text: string) => Effect.Effect<Deployment, InvalidConfig> = Effect.fn("DeploymentToml.parse")(
  function*(text: string) {
    const raw = yield* decodeStructure(yield* parseToml(text))
    yield* checkNames(raw)
    const clients = yield* Effect.forEach(raw.clients, buildClient)
    const clientsByName = byName(clients)
    const targets = yield* Effect.forEach(raw.targets, (target) => buildTarget(clientsByName, target))
    const targetsByName = byName(targets)
    yield* checkDuplicateIds(raw.routes)
    const routes = yield* Effect.forEach(raw.routes, (route) => buildRoute(targetsByName, route))
    return {
      clients,
      targets,
      routes: Arr.sort(routes, Order.mapInput(Order.string, (route: RouteSpec) => route.id))
    }
  }
)

/** The `--dry-run` line: `server OK: <route ids joined by ", ">`, in the deployment's route order. */
export const summary = (deployment: Deployment): string =>
  `server OK: ${deployment.routes.map((route) => route.id).join(", ")}`

/**
 * Non-fatal findings about a valid deployment, one line each, for the startup log and `--dry-run`.
 * None are produced yet; a judge client without `timeout_ms` will warn once judge routes exist.
 */
export const warnings = (_deployment: Deployment): ReadonlyArray<string> => []
