import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as HttpServer from "@effect/platform/HttpServer"
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base"
import * as DeploymentToml from "@switchyard-ts/config/DeploymentToml"
import * as Server from "@switchyard-ts/server/Server"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import { readFileSync } from "node:fs"
import type * as Http from "node:http"

/**
 * A real switchyard server on a free loopback port, in front of a fresh fake upstream, over the
 * deployment TOML `toml` makes of the fake upstream's base URL (environment variables from `env`
 * when given, else from the caller's ConfigProvider).
 */
export const startServerOfToml = (
  toml: (upstreamUrl: string) => string,
  options: Server.AppOptions = {},
  logger: Option.Option<Logger.Logger<unknown, void>> = Option.none(),
  env?: ReadonlyMap<string, string>
) =>
  Effect.gen(function*() {
    const upstream = yield* FakeUpstream.make()
    const parse = DeploymentToml.parse(toml(upstream.url))
    // without `env`, the caller's own ConfigProvider (a test's keys) is read
    const parsed = yield* env === undefined
      ? parse
      : parse.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(env))))
    const app = Layer.merge(Server.layerApp(parsed, options), NodeHttpClient.layerUndici)
    const context = yield* Layer.build(
      Option.match(logger, {
        onNone: () => app,
        onSome: (l) => app.pipe(Layer.provide(Logger.replace(Logger.defaultLogger, l)))
      })
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    const url = address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : "http://invalid"
    const client = HttpClient.mapRequest(Context.get(context, HttpClient.HttpClient), HttpClientRequest.prependUrl(url))
    return { upstream, client, url, deployment: parsed }
  })

/**
 * A real switchyard server on a free loopback port, in front of a fresh fake upstream.
 * `deployment` receives the fake upstream's base URL.
 */
export const startServer = (
  deployment: (upstreamUrl: string) => D.Deployment,
  options: Server.AppOptions = {},
  logger: Option.Option<Logger.Logger<unknown, void>> = Option.none()
) => startServerOfToml((upstreamUrl) => D.toToml(deployment(upstreamUrl)), options, logger)

/** The text of the config tests' fixture `name` (a deployment file of the compatible system). */
export const fixture = (name: string) =>
  readFileSync(new URL(`../../config/test/fixtures/${name}`, import.meta.url), "utf8")

/**
 * A server of the fixture `name` whose clients' `base_url`s (each of `from`) are the fake
 * upstream's; the API key variables the fixtures name are set.
 */
export const serveFixture = (name: string, from: ReadonlyArray<string>) =>
  startServerOfToml(
    (upstreamUrl) => from.reduce((toml, url) => toml.replaceAll(`"${url}"`, `"${upstreamUrl}"`), fixture(name)),
    {},
    Option.none(),
    new Map([["API_KEY", "k"], ["OPENROUTER_API_KEY", "k"]])
  )

/** A deployment with one client on the fake upstream and the usual routes. */
export const basicDeployment =
  (settings: { readonly timeoutMs?: number; readonly maxRetries?: number } = {}) =>
  (upstreamUrl: string): D.Deployment => ({
    llm_clients: {
      sim: D.client("openai_chat", upstreamUrl, {
        max_retries: settings.maxRetries ?? 0,
        ...(settings.timeoutMs === undefined ? {} : { timeout_ms: settings.timeoutMs })
      }),
      dead: D.client("openai_chat", D.deadUrl, { max_retries: 0 })
    },
    targets: {
      weak: D.target("weak-model", "sim", { extra_body: { temperature: 0.5 } }),
      strong: D.target("strong-model", "sim"),
      gone: D.target("gone-model", "dead")
    },
    routes: D.byId(
      D.passthrough("fast", "weak"),
      D.random("mix", ["weak", "strong"], { weights: [1, 0] }),
      D.passthrough("unreachable", "gone"),
      D.noop("ping")
    )
  })

/**
 * The judge tests' deployment: clients `sim` for answers, and `judge` on the fake upstream and
 * `stopped` where nothing listens (both of `judgeFormat`, `openai_chat` by default, with a 3 s
 * deadline and no retries); targets `judge` (`judgeModel` on `judge`, with `judgeOptions`),
 * `stopped_judge` (the same model where nothing listens) and `answers` (target name → model id, on
 * `sim`); and `routes`.
 */
export const judgeDeployment = (
  upstreamUrl: string,
  { answers, judgeFormat = "openai_chat", judgeModel, judgeOptions = {}, routes }: {
    readonly judgeModel: string
    readonly judgeFormat?: D.Format
    readonly judgeOptions?: Omit<D.Target, "id" | "llm_client">
    readonly answers: Readonly<Record<string, string>>
    readonly routes: Readonly<Record<string, D.Route>>
  }
): D.Deployment => ({
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0 }),
    judge: D.client(judgeFormat, upstreamUrl, { max_retries: 0, timeout_ms: 3000 }),
    stopped: D.client(judgeFormat, D.deadUrl, { max_retries: 0, timeout_ms: 3000 })
  },
  targets: {
    judge: D.target(judgeModel, "judge", judgeOptions),
    stopped_judge: D.target(judgeModel, "stopped"),
    ...Object.fromEntries(Object.entries(answers).map(([name, id]) => [name, D.target(id, "sim")]))
  },
  routes
})

/**
 * One route per judge failure posture and judge, each under its id: `<prefix>-error`,
 * `<prefix>-error-stopped`, `<prefix>-fail_open`, `<prefix>-fail_open-stopped`. `route` receives the
 * id, the posture and the judge target (`judge` or `stopped_judge`).
 */
export const postureRoutes = (
  prefix: string,
  route: (id: string, posture: D.JudgeFailure, judge: string) => D.Route
): Readonly<Record<string, D.Route>> =>
  D.byId(
    ...(["error", "fail_open"] as const).flatMap((posture) =>
      [["", "judge"], ["-stopped", "stopped_judge"]].map(([suffix, judge]) =>
        route(`${prefix}-${posture}${suffix}`, posture, judge ?? "")
      )
    )
  )

type ClientSettings = Omit<D.LlmClient, "format" | "base_url">

/**
 * The two-format base of the protocol tests: clients `oai` (openai_chat) and `claude`
 * (anthropic_messages, at the fake upstream's URL without `/v1`), no retries, with `settings` on
 * both and `claudeSettings` on `claude`; targets `local` (on `oai`) and `sonnet` (on `claude`),
 * model ids `local-coder` and `claude-sonnet` unless `ids` says otherwise; routes `fast` → local
 * and `claude` → sonnet. Tests add theirs with `DeploymentBuilder.extend`.
 */
export const chatAndClaude = (
  upstreamUrl: string,
  { claudeSettings = {}, ids = { local: "local-coder", sonnet: "claude-sonnet" }, settings = {} }: {
    readonly settings?: ClientSettings
    readonly claudeSettings?: ClientSettings
    readonly ids?: { readonly local: string; readonly sonnet: string }
  } = {}
): D.Deployment => ({
  llm_clients: {
    oai: D.client("openai_chat", upstreamUrl, { max_retries: 0, ...settings }),
    claude: D.client("anthropic_messages", upstreamUrl.replace(/\/v1$/, ""), {
      max_retries: 0,
      ...settings,
      ...claudeSettings
    })
  },
  targets: { local: D.target(ids.local, "oai"), sonnet: D.target(ids.sonnet, "claude") },
  routes: { fast: D.passthrough("fast", "local"), claude: D.passthrough("claude", "sonnet") }
})

/**
 * A capability classifier route where `judge` decides between targets `weak` and `strong` with
 * `base_threshold = 0.5`; `settings` adds keys or replaces these.
 */
export const capabilityRoute = (id: string, judge: string, settings: Partial<D.CapabilityRoute> = {}) =>
  D.capability(id, {
    classifier_target: judge,
    weak_target: "weak",
    strong_target: "strong",
    base_threshold: 0.5,
    ...settings
  })

/** A chat request body. */
export const chat = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content: "hello" }],
  ...extra
})

/** Every finished span of `exporter` as one JSON text (name, attributes, events, status), to search for secrets. */
export const spansText = (exporter: InMemorySpanExporter): string =>
  JSON.stringify(
    exporter.getFinishedSpans().map((s) => ({
      name: s.name,
      attributes: s.attributes,
      events: s.events,
      status: s.status
    }))
  )

/** An answer's status, body text, served model and evidence source (response headers). */
export const routedAnswer = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(response.text, (text) => ({
    status: response.status,
    text,
    selected: response.headers["x-switchyard-selected-model"],
    source: response.headers["x-switchyard-evidence-source"]
  }))

/** A response read whole off a raw `node:http` request. */
export interface RawReply {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** Reads `response` to its end: status, headers and body text; rejects when it fails first. */
export const readReply = (response: Http.IncomingMessage): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    response.on("data", (chunk: Buffer) => chunks.push(chunk))
    response.on("end", () =>
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        body: Buffer.concat(chunks).toString("utf8")
      }))
    response.on("error", reject)
  })
