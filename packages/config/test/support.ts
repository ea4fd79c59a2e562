/**
 * Shared helpers of the config tests: loading a deployment with a fake environment, expecting
 * an `InvalidConfig` at a path, and a minimal valid document to vary.
 */
import { assert } from "@effect/vitest"
import { InvalidConfig } from "@switchyard-ts/config/Deployment"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"

/** The API key the default environment holds; no message may contain it. */
export const secret = "sk-test-0123456789-very-secret"

/** Runs an effect with a `ConfigProvider` over exactly `env`. */
export const withEnv = (env: ReadonlyArray<readonly [string, string]>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(env)))

/** Parses `text` with `HOSTED_API_KEY` set (or exactly `env`). */
export const load = (text: string, env: ReadonlyArray<readonly [string, string]> = [["HOSTED_API_KEY", secret]]) =>
  DeploymentToml.parse(text).pipe(withEnv(env))

/** Parses `text`, expects an `InvalidConfig` at `path` whose message starts with it and contains `fragment`. */
export const expectInvalid = (
  text: string,
  path: string,
  fragment: string,
  env?: ReadonlyArray<readonly [string, string]>
) =>
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

/** A minimal valid document; each option appends lines to one table, `more` appends whole tables. */
export const doc = (
  parts: { top?: string; client?: string; target?: string; route?: string; more?: string } = {}
): string => `
schema_version = 1
${parts.top ?? ""}

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://api.example.com/v1"
api_key_env = "HOSTED_API_KEY"
${parts.client ?? ""}

[targets.weak]
id = "small-coder"
llm_client = "hosted"
${parts.target ?? ""}

[routes.r]
id = "r"
type = "noop"
${parts.route ?? ""}

${parts.more ?? ""}
`

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
export const judgeWeakStrong = (judgeClient: string): string => `
[targets.judge]
id = "qwen3-30b"
llm_client = "${judgeClient}"

[targets.weak]
id = "small-coder"
llm_client = "hosted"

[targets.strong]
id = "frontier-coder"
llm_client = "hosted"
`

/**
 * A valid deployment with one capability route `[routes.auto]`; `route` appends lines to it,
 * `judgeClient` to the judge's client (which has no `timeout_ms`), `more` appends tables.
 */
export const classifier = (parts: { route?: string; judgeClient?: string; more?: string } = {}): string => `
schema_version = 1

[llm_clients.local_judge]
format = "openai_chat"
base_url = "http://127.0.0.1:8001/v1"
${parts.judgeClient ?? ""}

[llm_clients.hosted]
format = "openai_chat"
base_url = "https://api.example.com/v1"
timeout_ms = 120000

${judgeWeakStrong("local_judge")}

[routes.auto]
id = "auto"
type = "llm_classifier"
classifier_target = "judge"
weak_target = "weak"
strong_target = "strong"
base_threshold = 0.95
${parts.route ?? ""}

${parts.more ?? ""}
`
