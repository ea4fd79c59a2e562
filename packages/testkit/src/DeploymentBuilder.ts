/**
 * Deployment files for tests and scripts, written from typed values instead of by hand: LLM
 * clients, targets, routes of every route type, `[sessions]` and `[server]`, turned into the TOML
 * text the `switchyard` CLI and `DeploymentToml.parse` read.
 *
 * Every property is spelled as its TOML key (docs/configuration.md is the reference for what each
 * key means and accepts), so a value here reads like the file it becomes. The types are the
 * tables' own: each table's keys are the keys its Schema decodes (`<Table>.table.keys`, see
 * {@link Writable}), so a key a table gains is a key the builder takes. They do not repeat the
 * loader's rules (ranges, references, key combinations): a test that wants a load error of that
 * kind gets it from the loader, as a user would. Tests whose subject is the TOML text itself (bad
 * files, key-path messages) write their text by hand.
 *
 * @example
 * ```ts
 * const text = DeploymentBuilder.toToml({
 *   llm_clients: { sim: DeploymentBuilder.client("openai_chat", upstream.url, { max_retries: 0 }) },
 *   targets: { weak: DeploymentBuilder.target("weak-model", "sim") },
 *   routes: { fast: DeploymentBuilder.passthrough("fast", "weak") }
 * })
 * ```
 */
import type * as ClientTarget from "@switchyard-ts/client/Target"
import type * as LlmClientTable from "@switchyard-ts/config/LlmClientTable"
import type * as ServerTable from "@switchyard-ts/config/ServerTable"
import type * as SessionsTable from "@switchyard-ts/config/SessionsTable"
import type * as TargetTable from "@switchyard-ts/config/TargetTable"
import type * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import type * as SubagentsTable from "@switchyard-ts/routing/SubagentsTable"
import { section, type TomlValue } from "./internal/toml.js"

export type { TomlTable, TomlValue } from "./internal/toml.js"

/**
 * What the builder takes for a value its table's keys decode to (`typeof <Table>.table.keys.Type`:
 * the TOML keys as read, before any rule): TOML integers, `bigint`s when parsed, may also be
 * written as `number`s, at any depth; a value the table leaves undecoded (`extra_body`) is any
 * TOML value; everything else is as decoded (strings, variants, booleans, floats as numbers,
 * arrays, tables). A value of no TOML shape (a function, or an object made of them such as a
 * `Date`) cannot be given.
 *
 * The decoded side rather than the encoded one: a sub-table's keys (`breaker`, `[classifier]`,
 * `escalation`) are decoded from a TOML table whose encoded type is only "a table".
 * `packages/testkit/test/DeploymentBuilderTables.test.ts` writes generated keys of every table and reads them back.
 */
export type Writable<T> = unknown extends T ? TomlValue
  : T extends bigint ? number | bigint
  : T extends (...args: ReadonlyArray<never>) => unknown ? never
  : T extends ReadonlyArray<infer E> ? ReadonlyArray<Writable<E>>
  : T extends object ? { readonly [K in keyof T]: Writable<T[K]> }
  : T

/** The keys of a table (a value with a `keys` Schema), as the builder takes them. */
export type KeysOf<Table extends { readonly keys: { readonly Type: unknown } }> = Writable<Table["keys"]["Type"]>

/** The wire format of an LLM client. */
export type Format = ClientTarget.Format

/** `[llm_clients.<name>]` (its `format` is one of {@link Format}; the loader names the others). */
export type LlmClient = KeysOf<typeof LlmClientTable.table>

/** `[targets.<name>]`. */
export type Target = KeysOf<typeof TargetTable.table>

/** `[sessions]`. */
export type Sessions = KeysOf<typeof SessionsTable.table>

/** `[server]`: inbound auth and connection timeouts. */
export type Server = KeysOf<typeof ServerTable.table>

/** The route kinds (a route table's `type`, and an `llm_classifier`'s mode), as the routing registry lists them. */
export type RouteKind = RouteTypes.Kind

/** `[routes.<name>]` of route kind `K`: its route type's table's keys. */
export type RouteOf<K extends RouteKind> = KeysOf<(typeof RouteTypes.routeTypes)[K]["table"]>

/** `[routes.<name>]`: one of the route types. */
export type Route = { readonly [K in RouteKind]: RouteOf<K> }[RouteKind]

/** `type = "noop"`: answered by the router itself. */
export type NoopRoute = RouteOf<"noop">

/** `type = "passthrough"`. */
export type PassthroughRoute = RouteOf<"passthrough">

/** `type = "random"`. */
export type RandomRoute = RouteOf<"random">

/** `type = "llm_classifier"` in capability mode (the default). */
export type CapabilityRoute = RouteOf<"capability">

/** `type = "llm_classifier"`, `mode = "custom"`. */
export type CustomRoute = RouteOf<"custom">

/** `type = "llm_classifier"` in escalation mode (explicit, or implied by the `escalation` table). */
export type EscalationRoute = RouteOf<"escalation">

/** `type = "stage_router"`. */
export type StageRouterRoute = RouteOf<"stage_router">

/** `type = "auto"`: the stage router's preset over a capable and an efficient target. */
export type AutoRoute = RouteOf<"auto">

/** `type = "composite"`: a capability classifier setting the tier a stage router falls open to. */
export type CompositeRoute = RouteOf<"composite">

/** `type = "advisor"`. */
export type AdvisorRoute = RouteOf<"advisor">

/** The keys every route type takes (a noop route has only those, and its `type`). */
export type RouteCommon = Omit<NoopRoute, "type">

/** What a judge failure does to the request: fail it, or route without a verdict. */
export type JudgeFailure = NonNullable<CapabilityRoute["judge_failure"]>

/** When a classifier consults its judge. */
export type ClassifyTrigger = NonNullable<CapabilityRoute["classify_trigger"]>

/** `subagents` on a passthrough, stage router or composite route: a fixed target or a custom classifier. */
export type Subagents = KeysOf<typeof SubagentsTable.table>

/** The keys of a custom classifier (a custom route, a `subagents` classifier) after its `type` and `mode`. */
export type CustomSettings = Omit<Extract<Subagents, { readonly type: "llm_classifier" }>, "type" | "mode">

/** `[routes.<name>.classifier]` of a stage router: a capability judge's keys and its `target`. */
export type StageClassifier = NonNullable<StageRouterRoute["classifier"]>

/** The capability judge's keys (a capability route's, a stage router's `[classifier]`). */
export type CapabilitySettings = Omit<StageClassifier, "target">

/** `[routes.<name>.handoff_notes]` of a stage router. */
export type HandoffNotes = NonNullable<StageRouterRoute["handoff_notes"]>

/** `escalation = { ... }` of an escalation classifier. */
export type Escalation = NonNullable<EscalationRoute["escalation"]>

/** `escalation.deescalation = { ... }`: the strong phase's release rules. */
export type Deescalation = NonNullable<Escalation["deescalation"]>

/** `[routes.<name>.stage]` of a composite route: a stage router's turn keys. */
export type CompositeStage = CompositeRoute["stage"]

/** `[routes.<name>.classifier]` of a composite route. */
export type CompositeClassifier = CompositeRoute["classifier"]

/** A whole deployment file. */
export interface Deployment {
  /** `1` unless given (a test of another version writes its file by hand). */
  readonly schema_version?: number
  /** `fallback_client`: the LLM client unmatched requests are forwarded to. */
  readonly fallback_client?: string
  readonly server?: Server
  readonly sessions?: Sessions
  readonly llm_clients?: Readonly<Record<string, LlmClient>>
  readonly targets: Readonly<Record<string, Target>>
  readonly routes: Readonly<Record<string, Route>>
}

/** Route keys written as `[routes.<name>.<key>]` sections rather than inline tables. */
const routeSubTables = ["handoff_notes", "classifier", "subagents", "stage"]

/**
 * The deployment as TOML text: `schema_version` (and `fallback_client` when given), then
 * `[server]`, `[sessions]`, every `[llm_clients.*]`, `[targets.*]` and `[routes.*]` in the order
 * given, each key on its own line (`handoff_notes`, `classifier`, `subagents` and `stage` as sub-sections,
 * other tables inline). Strings are escaped; integral numbers are written as integers, others as
 * floats (so a float of integral value, `1.0`, cannot be written: the keys that take floats take
 * integers as well, and `extra_body` values become JSON numbers either way). Pure; never fails.
 */
export const toToml = (deployment: Deployment): string => {
  const sections = [
    section([], {
      schema_version: deployment.schema_version ?? 1,
      ...(deployment.fallback_client === undefined ? {} : { fallback_client: deployment.fallback_client })
    })
  ]
  if (deployment.server !== undefined) sections.push(section(["server"], deployment.server))
  if (deployment.sessions !== undefined) sections.push(section(["sessions"], deployment.sessions))
  for (const [name, client] of Object.entries(deployment.llm_clients ?? {})) {
    sections.push(section(["llm_clients", name], client))
  }
  for (const [name, target] of Object.entries(deployment.targets)) {
    sections.push(section(["targets", name], target))
  }
  for (const [name, route] of Object.entries(deployment.routes)) {
    sections.push(section(["routes", name], route, routeSubTables))
  }
  return `${sections.join("\n\n")}\n`
}

// ---------------------------------------------------------------------------------------------
// Constructors for the common shapes (a plain object literal of the types above works as well).
// ---------------------------------------------------------------------------------------------

/** A base URL where nothing listens (port 9, discard): every call to it fails to connect. */
export const deadUrl = "http://127.0.0.1:9/v1"

/** `[llm_clients.<name>]` of `format` at `base_url`, with any further keys. */
export const client = (
  format: Format,
  base_url: string,
  options: Omit<LlmClient, "format" | "base_url"> = {}
): LlmClient => ({ format, base_url, ...options })

/** `[targets.<name>]`: model `id` on client `llm_client`, with any further keys. */
export const target = (id: string, llm_client: string, options: Omit<Target, "id" | "llm_client"> = {}): Target => ({
  id,
  llm_client,
  ...options
})

/** A `noop` route. */
export const noop = (id: string, options: Omit<NoopRoute, "id" | "type"> = {}): NoopRoute => ({
  id,
  type: "noop",
  ...options
})

/** A `passthrough` route to `target`. */
export const passthrough = (
  id: string,
  target: string,
  options: Omit<PassthroughRoute, "id" | "type" | "target"> = {}
): PassthroughRoute => ({ id, type: "passthrough", target, ...options })

/** A `random` route over `targets`. */
export const random = (
  id: string,
  targets: ReadonlyArray<string>,
  options: Omit<RandomRoute, "id" | "type" | "targets"> = {}
): RandomRoute => ({ id, type: "random", targets, ...options })

/** A capability classifier route (`type = "llm_classifier"`, no `mode`). */
export const capability = (id: string, settings: Omit<CapabilityRoute, "id" | "type">): CapabilityRoute => ({
  id,
  type: "llm_classifier",
  ...settings
})

/** A custom classifier route (`mode = "custom"`). */
export const custom = (id: string, settings: Omit<CustomRoute, "id" | "type" | "mode">): CustomRoute => ({
  id,
  type: "llm_classifier",
  mode: "custom",
  ...settings
})

/**
 * An escalation classifier route: its `escalation` table is required here, as it implies the mode
 * (`mode = "escalation"` may be given as well).
 */
export const escalation = (
  id: string,
  settings: Omit<EscalationRoute, "id" | "type" | "escalation"> & { readonly escalation: Escalation }
): EscalationRoute => ({
  id,
  type: "llm_classifier",
  ...settings
})

/** A `stage_router` route. */
export const stageRouter = (id: string, settings: Omit<StageRouterRoute, "id" | "type">): StageRouterRoute => ({
  id,
  type: "stage_router",
  ...settings
})

/** An `auto` route: the stage router's preset over `capable_target` and `efficient_target`. */
export const auto = (id: string, settings: Omit<AutoRoute, "id" | "type">): AutoRoute => ({
  id,
  type: "auto",
  ...settings
})

/** A `composite` route. */
export const composite = (id: string, settings: Omit<CompositeRoute, "id" | "type">): CompositeRoute => ({
  id,
  type: "composite",
  ...settings
})

/** An `advisor` route. */
export const advisor = (id: string, settings: Omit<AdvisorRoute, "id" | "type">): AdvisorRoute => ({
  id,
  type: "advisor",
  ...settings
})

/** The route table of `routes`, each under its own id (for routes whose table name is their id). */
export const byId = (...routes: ReadonlyArray<Route>): Readonly<Record<string, Route>> =>
  Object.fromEntries(routes.map((route) => [route.id, route]))

/**
 * `deployment` with `more`'s clients, targets and routes added after its own (a name in both takes
 * `more`'s value) and `more`'s `[server]` / `[sessions]` tables and `fallback_client` when given.
 */
export const extend = (deployment: Deployment, more: Partial<Deployment>): Deployment => ({
  ...deployment,
  ...(more.schema_version === undefined ? {} : { schema_version: more.schema_version }),
  ...(more.server === undefined ? {} : { server: more.server }),
  ...(more.sessions === undefined ? {} : { sessions: more.sessions }),
  ...(more.fallback_client === undefined ? {} : { fallback_client: more.fallback_client }),
  llm_clients: { ...deployment.llm_clients, ...more.llm_clients },
  targets: { ...deployment.targets, ...more.targets },
  routes: { ...deployment.routes, ...more.routes }
})
