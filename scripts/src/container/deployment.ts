// The deployment the container check serves: one passthrough route to the testkit's FakeUpstream
// (an `openai_chat` client whose key comes from the environment, as in production), and inbound
// auth, because the image's command binds every interface of this machine for the check's length.
import * as DeploymentBuilder from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"

/** The route the check calls. */
export const ROUTE = "container-check"
/** The upstream model behind it. */
export const UPSTREAM_MODEL = "mock-model"
/** What the mock answers; the completion must carry exactly this. */
export const CONTENT = "Hello from the mock upstream."
/** The mock's behaviour for {@link UPSTREAM_MODEL}. */
export const behaviour = FakeUpstream.ok(CONTENT)

/** The deployment TOML for an upstream at `upstreamUrl` (ending in `/v1`). */
export const checkDeployment = (upstreamUrl: string): string =>
  DeploymentBuilder.toToml({
    server: { api_keys_env: "SWITCHYARD_CHECK_KEY" },
    llm_clients: {
      mock: DeploymentBuilder.client("openai_chat", upstreamUrl, {
        api_key_env: "SWITCHYARD_CHECK_UPSTREAM_KEY",
        max_retries: 0,
        timeout_ms: 10_000
      })
    },
    targets: { answer: DeploymentBuilder.target(UPSTREAM_MODEL, "mock") },
    routes: DeploymentBuilder.byId(DeploymentBuilder.passthrough(ROUTE, "answer"))
  })
