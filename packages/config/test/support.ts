/**
 * Shared helpers of the config tests: loading a deployment with a fake environment, expecting
 * an `InvalidConfig` at a path (tables of such tests: `rejections.ts`), the route of a loaded
 * deployment by id and kind, and the deployment TOML as text — tables made of key lines, and the
 * documents the test files vary. The tests' subject is the text, so it stays text: the builders
 * here only spare each file the tables it does not vary.
 */
import { assert } from "@effect/vitest"
import type { Target } from "@switchyard-ts/client/Target"
import { InvalidConfig } from "@switchyard-ts/config/Deployment"
import type { Deployment, RouteSpec } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readFileSync } from "node:fs"

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

/** The API key the default environment holds; no message may contain it. */
export const secret = "sk-test-0123456789-very-secret"

/** An environment: variable names and values. */
export type Env = ReadonlyArray<readonly [string, string]>

/** Runs an effect with a `ConfigProvider` over exactly `env`. */
export const withEnv = (env: Env) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(env)))

/** Parses `text` with `HOSTED_API_KEY` set (or exactly `env`). */
export const load = (text: string, env: Env = [["HOSTED_API_KEY", secret]]) =>
  DeploymentToml.parse(text).pipe(withEnv(env))

/** Parses `text`, expects an `InvalidConfig` at `path` whose message starts with it and contains `fragment`. */
export const expectInvalid = (text: string, path: string, fragment: string, env?: Env) =>
  Effect.gen(function*() {
    const error = yield* Effect.flip(load(text, env))
    assert.instanceOf(error, InvalidConfig)
    assert.strictEqual(error._tag, "InvalidConfig")
    assert.strictEqual(error.path, path)
    assert.isTrue(error.message.startsWith(path), `message ${JSON.stringify(error.message)} should start with ${path}`)
    assert.include(error.message, fragment)
    assert.notInclude(error.message, secret)
    return error
  })

/** A deployment file of the compatible system, as text (`fixtures/<name>`). */
export const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8")

/** A kind of route spec: its `type`, or an `llm_classifier`'s mode. */
export type Kind = RouteSpec["type"] | "capability" | "custom" | "escalation"

/** The spec of a route of kind `K`. */
export type SpecOf<K extends Kind> = K extends "capability" | "custom" | "escalation"
  ? Extract<RouteSpec, { readonly type: "llm_classifier"; readonly mode: K }>
  : Extract<RouteSpec, { readonly type: K }>

const isKind = <K extends Kind>(kind: K) => (route: RouteSpec): route is SpecOf<K> =>
  route.type === kind || (route.type === "llm_classifier" && route.mode === kind)

/** The route of `deployment` whose id is `id`; the test fails when there is none, or it is not of `kind`. */
export const routeOf = <K extends Kind>(deployment: Deployment, id: string, kind: K): SpecOf<K> => {
  const route = deployment.routes.find((r) => r.id === id)
  return route !== undefined && isKind(kind)(route) ? route : assert.fail(`no ${kind} route ${id}`)
}

/** The first route of `deployment` of `kind`; the test fails when there is none. */
export const firstOf = <K extends Kind>(deployment: Deployment, kind: K): SpecOf<K> =>
  deployment.routes.find(isKind(kind)) ?? assert.fail(`no ${kind} route`)

/** The target table `name` of `deployment`; the test fails when there is none. */
export const targetNamed = (deployment: Deployment, name: string): Target =>
  deployment.targets.find((t) => t.name === name) ?? assert.fail(`no target ${name}`)

/**
 * What a classifier's judge call is set with: its `prompt`, `response_format_type`,
 * `max_output_tokens`, `judge_failure` and `judge_timeout_ms`.
 */
export const judgeCallOf = (spec: {
  readonly prompt: Option.Option<string>
  readonly responseFormatType: string
  readonly maxOutputTokens: number
  readonly judgeFailure: string
  readonly judgeTimeoutMs: Option.Option<number>
}) => ({
  prompt: spec.prompt,
  responseFormatType: spec.responseFormatType,
  maxOutputTokens: spec.maxOutputTokens,
  judgeFailure: spec.judgeFailure,
  judgeTimeoutMs: spec.judgeTimeoutMs
})

/** {@link judgeCallOf} a classifier none of whose judge-call keys is set. */
export const judgeCallDefaults: ReturnType<typeof judgeCallOf> = {
  prompt: Option.none(),
  responseFormatType: "json_schema",
  maxOutputTokens: 4096,
  judgeFailure: "error",
  judgeTimeoutMs: Option.none()
}

/** The startup warning of a judge bounded by no deadline (`where`: `subagents ` for a subagents judge). */
export const unboundedJudge = (route: string, client: string, where = ""): string =>
  `route ${route}: ${where}judge client ${client} has no timeout_ms; ` +
  "a stalled judge holds requests until the peer closes the connection"

// ---------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------

/** The table `[path]` with its key lines, each on its own line; empty lines are left out. */
export const table = (path: string, ...lines: ReadonlyArray<string>): string =>
  [`[${path}]`, ...lines.filter((line) => line !== "")].join("\n") + "\n"

/** A document: `schema_version = 1`, then `parts` (top-level lines, tables), each on its own line. */
export const document = (...parts: ReadonlyArray<string>): string =>
  ["", "schema_version = 1", ...parts.filter((part) => part !== "")].join("\n") + "\n"

/** `[llm_clients.<name>]`: an `openai_chat` client at `baseUrl`, and `lines`. */
export const chatClient = (name: string, baseUrl: string, ...lines: ReadonlyArray<string>): string =>
  table(`llm_clients.${name}`, "format = \"openai_chat\"", `base_url = "${baseUrl}"`, ...lines)

/** The client `hosted` (`https://api.example.com/v1`), with `lines`. */
export const hosted = (...lines: ReadonlyArray<string>): string =>
  chatClient("hosted", "https://api.example.com/v1", ...lines)

/** `[targets.<name>]`: model `id` on `client`, and `lines`. */
export const target = (name: string, id: string, client: string, ...lines: ReadonlyArray<string>): string =>
  table(`targets.${name}`, `id = "${id}"`, `llm_client = "${client}"`, ...lines)

/** `[routes.<name>]`, whose id is its name, of `type`, with `lines`. */
export const route = (name: string, type: string, ...lines: ReadonlyArray<string>): string =>
  table(`routes.${name}`, `id = "${name}"`, `type = "${type}"`, ...lines)

/** A minimal valid document; each option appends lines to one table, `more` appends whole tables. */
export const doc = (
  parts: { top?: string; client?: string; target?: string; route?: string; more?: string } = {}
): string =>
  document(
    parts.top ?? "",
    hosted("api_key_env = \"HOSTED_API_KEY\"", parts.client ?? ""),
    target("weak", "small-coder", "hosted", parts.target ?? ""),
    route("r", "noop", parts.route ?? ""),
    parts.more ?? ""
  )

/**
 * The lines of a valid custom classifier `subagents` table: judge target `judge`, over `targets`
 * (the first is `default_target`), selector `/route`; `extra` appends lines.
 */
export const customSubagents = (targets: readonly [string, string], extra = ""): string => `
type = "llm_classifier"
mode = "custom"
classifier_target = "judge"
targets = ["${targets[0]}", "${targets[1]}"]
default_target = "${targets[0]}"
prompt = "Which target should do this delegated task?"
response_schema = '''{"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"]}'''
policy = { type = "target_selector", selector = "/route" }
${extra}
`

/**
 * The target tables `judge` (model `qwen3-30b` on the client `judgeClient`), `weak`
 * (`small-coder`) and `strong` (`frontier-coder`), both on the client `hosted`.
 */
export const judgeWeakStrong = (judgeClient: string): string =>
  [
    target("judge", "qwen3-30b", judgeClient),
    target("weak", "small-coder", "hosted"),
    target("strong", "frontier-coder", "hosted")
  ].join("\n")

/**
 * The clients and targets of a judged route: `hosted` without a key or timeout, `judge` on
 * `http://127.0.0.1:8001/v1` with `judgeClient` lines (by default `timeout_ms = 3000`), and
 * {@link judgeWeakStrong} on it.
 */
export const judgedHead = (judgeClient = "timeout_ms = 3000"): string =>
  [hosted(), chatClient("judge", "http://127.0.0.1:8001/v1", judgeClient), judgeWeakStrong("judge")].join("\n")

/**
 * A valid deployment with one capability route `[routes.auto]`; `route` appends lines to it,
 * `judgeClient` to the judge's client (which has no `timeout_ms`), `more` appends tables.
 */
export const classifier = (parts: { route?: string; judgeClient?: string; more?: string } = {}): string =>
  document(
    chatClient("local_judge", "http://127.0.0.1:8001/v1", parts.judgeClient ?? ""),
    hosted("timeout_ms = 120000"),
    judgeWeakStrong("local_judge"),
    route(
      "auto",
      "llm_classifier",
      "classifier_target = \"judge\"",
      "weak_target = \"weak\"",
      "strong_target = \"strong\"",
      "base_threshold = 0.95",
      parts.route ?? ""
    ),
    parts.more ?? ""
  )
