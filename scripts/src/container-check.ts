// `npm run container-check` (as root; opt-in, not part of `npm test` or CI): builds the
// repository's Dockerfile and runs the image's own command, without Docker and without a registry.
//
// 1. Installs Debian's `buildah` and `debootstrap` with apt-get when they are missing (saying so).
// 2. Makes the base image when buildah does not have it yet (or with --rebuild-base):
//    `localhost/switchyard-node-base:<this Node's version>`, a debootstrap minbase bookworm root
//    file system with this machine's Node and npm in it (./container/base.ts). No base-image
//    registry is reachable here, so the Dockerfile's `NODE_IMAGE` build argument points at it.
// 3. `buildah bud --isolation chroot --pull=never --format docker` of the Dockerfile: the image
//    `localhost/switchyard:container-check` (kept afterwards; `buildah rmi` removes it). The build
//    stage's `npm ci` needs the npm registry.
// 4. Mounts a working container of it (`buildah mount`), writes a deployment to the config path of
//    the image's command (a passthrough route to the testkit's FakeUpstream on 127.0.0.1, inbound
//    auth on, since the command binds 0.0.0.0), and runs the image's entrypoint and command, the
//    port changed only when 4000 is taken, in the mounted root with `chroot` as the image's user
//    (./container/inside.ts).
// 5. Checks: the image's configuration (non-root user, port 4000 exposed, a HEALTHCHECK, the
//    explicit --host 0.0.0.0), the server's user ids, GET /health, the image's HEALTHCHECK command
//    run inside the image, one chat completion answered with the mock's content (and the upstream
//    key sent), then stops the server by PID (SIGTERM, bounded, exit 0 expected), unmounts and
//    removes the container. Every wait is bounded.
//
// Prints the image size (its unpacked root file system), the build time, the time from start to
// a healthy /health, and one PASS/FAIL line per check; exits 1 on any failure, naming the step.
// The full output of every command goes to a log file whose path is printed first.
//
//   npm run container-check [-- --rebuild-base]
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import { mkdtempSync, writeFileSync } from "node:fs"
import net from "node:net"
import os from "node:os"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { baseImageName, hasImage, makeBaseImage } from "./container/base.js"
import { CheckFailed, ensureTools } from "./container/commands.js"
import { behaviour, checkDeployment, CONTENT, ROUTE, UPSTREAM_MODEL } from "./container/deployment.js"
import {
  buildImage,
  diskUsage,
  IMAGE,
  type Mounted,
  mountImage,
  type RunConfig,
  runConfig,
  unmount
} from "./container/image.js"
import {
  awaitListening,
  idsOf,
  insideCommand,
  type InsideServer,
  runInside,
  startInside,
  stopInside
} from "./container/inside.js"
import { awaitHealthy, chatCompletion } from "./container/probe.js"
import { killAll } from "./lib/processes.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const IMAGE_PORT = 4000

interface Check {
  readonly name: string
  readonly ok: boolean
  readonly detail: string
}

const checks: Array<Check> = []
const check = (name: string, ok: boolean, detail: string): void => {
  checks.push({ name, ok, detail })
  console.log(`  ${ok ? "PASS" : "FAIL"} ${name}: ${detail}`)
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`

/** 4000 when nothing listens on it, else a free port chosen by the OS. */
const choosePort = (): Promise<number> =>
  new Promise((resolve) => {
    const probe = net.createServer()
    probe.once("error", () => {
      const other = net.createServer().listen(0, "127.0.0.1", () => {
        const address = other.address()
        other.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
      })
    })
    probe.listen(IMAGE_PORT, "0.0.0.0", () => probe.close(() => resolve(IMAGE_PORT)))
  })

/** The value following `flag` in `argv`. */
const flagValue = (argv: ReadonlyArray<string>, flag: string): string | undefined => {
  const i = argv.indexOf(flag)
  return i < 0 ? undefined : argv[i + 1]
}

/** `argv` with the value of `flag` replaced. */
const withFlag = (argv: ReadonlyArray<string>, flag: string, value: string): ReadonlyArray<string> =>
  argv.map((arg, i) => (i > 0 && argv[i - 1] === flag ? value : arg))

/** The checks on the image's configuration alone. */
const checkConfig = (config: RunConfig): void => {
  const command = [...config.entrypoint, ...config.cmd]
  const user = config.user.split(":")[0] ?? ""
  check("non-root user", user !== "" && user !== "0" && user !== "root", `USER ${config.user || "(none)"}`)
  check("port 4000 exposed", config.exposedPorts.includes("4000/tcp"), `EXPOSE ${config.exposedPorts.join(" ")}`)
  check("healthcheck", config.healthcheck.length > 0, config.healthcheck.slice(0, 2).join(" ") || "(none)")
  check("binds 0.0.0.0 by flag", flagValue(command, "--host") === "0.0.0.0", command.join(" "))
}

/** Runs the image's HEALTHCHECK test inside it (its port changed to `port` when that is not 4000). */
const runHealthcheck = async (mounted: Mounted, config: RunConfig, port: number, log: string): Promise<void> => {
  const [kind, ...rest] = config.healthcheck
  const argv = kind === "CMD-SHELL" ? ["/bin/sh", "-c", rest.join(" ")] : rest
  const test = argv.map((arg) => arg.replaceAll(`127.0.0.1:${IMAGE_PORT}`, `127.0.0.1:${port}`))
  const result = await runInside(mounted.root, config, test, { timeoutMs: 15_000, log })
  check("HEALTHCHECK command", result.code === 0, `exit ${result.code} (as ${config.user}, inside the image)`)
}

interface Served {
  readonly timeToHealthyMs: number
}

/** Steps 4 and 5 on a mounted image; the server is stopped before this returns or throws. */
const serveAndCheck = async (
  mounted: Mounted,
  config: RunConfig,
  upstream: Context.Tag.Service<FakeUpstream.FakeUpstream>,
  log: string
): Promise<Served> => {
  const command = [...config.entrypoint, ...config.cmd]
  const configPath = flagValue(command, "--config")
  if (configPath === undefined) throw new CheckFailed(`the image's command has no --config: ${command.join(" ")}`)
  const inboundKey = randomBytes(16).toString("hex")
  const upstreamKey = randomBytes(16).toString("hex")
  writeFileSync(path.join(mounted.root, configPath), checkDeployment(upstream.url), { mode: 0o644 })
  const port = await choosePort()
  const argv = withFlag(command, "--port", String(port))
  const env = [`SWITCHYARD_CHECK_KEY=${inboundKey}`, `SWITCHYARD_CHECK_UPSTREAM_KEY=${upstreamKey}`]
  console.log(`container-check: starting ${argv.join(" ")} in the image (chroot as ${config.user})`)
  const started = Date.now()
  const server: InsideServer = startInside(insideCommand(mounted.root, config, env, argv), log)
  try {
    const listening = await awaitListening(server, 60_000)
    check("listening", true, listening)
    const url = `http://127.0.0.1:${port}`
    const health = await awaitHealthy(url, 60_000, () => !server.hasExited())
    const timeToHealthyMs = Date.now() - started
    check("GET /health", true, `200 ${health} after ${seconds(timeToHealthyMs)}`)
    const ids = idsOf(server.pid)
    check("server runs as the image's user", ids === config.user, `uid:gid ${ids} (image: ${config.user})`)
    await runHealthcheck(mounted, config, port, log)
    const content = await chatCompletion(url, ROUTE, inboundKey)
    const [request] = await Effect.runPromise(upstream.requests)
    check(
      "chat completion",
      content === CONTENT && request?.headers["authorization"] === `Bearer ${upstreamKey}`,
      `"${content}" from the mock's ${UPSTREAM_MODEL} (upstream key ${
        request?.headers["authorization"] === `Bearer ${upstreamKey}` ? "sent" : "missing"
      })`
    )
    const stopped = await stopInside(server, 15_000)
    check("stops on SIGTERM", stopped.how === "exit 0" && !stopped.forced, stopped.how)
    return { timeToHealthyMs }
  } finally {
    if (!server.hasExited()) await stopInside(server, 5_000)
  }
}

const main = async (): Promise<number> => {
  const { values } = parseArgs({ options: { "rebuild-base": { type: "boolean", default: false } } })
  if (process.getuid?.() !== 0) {
    console.error("container-check: needs root (buildah, debootstrap, mounts and chroot); run it as root")
    return 1
  }
  const log = path.join(mkdtempSync(path.join(os.tmpdir(), "switchyard-container-check-")), "commands.log")
  console.log(`container-check: every command's output goes to ${log}`)
  await ensureTools(log)
  const base = baseImageName()
  if (values["rebuild-base"] || !(await hasImage(base, log))) {
    console.log(
      `container-check: making ${base} (debootstrap minbase bookworm + this machine's Node ${process.version})`
    )
    const t = Date.now()
    await makeBaseImage(base, log)
    console.log(`container-check: base image made in ${seconds(Date.now() - t)}`)
  } else {
    console.log(`container-check: reusing ${base} (--rebuild-base makes it anew)`)
  }
  console.log(`container-check: buildah bud --isolation chroot --pull=never NODE_IMAGE=${base} → ${IMAGE}`)
  const buildMs = await buildImage(ROOT, base, log)
  console.log(`container-check: built in ${seconds(buildMs)}`)
  const config = await runConfig(IMAGE, log)
  checkConfig(config)

  const scope = await Effect.runPromise(Scope.make())
  const mounted = await mountImage(IMAGE, log)
  let size = 0
  let served: Served | undefined
  try {
    size = await diskUsage(mounted.root, log)
    const upstream = await Effect.runPromise(Scope.extend(FakeUpstream.make(), scope))
    await Effect.runPromise(upstream.setBehaviour(UPSTREAM_MODEL, behaviour))
    served = await serveAndCheck(mounted, config, upstream, log)
  } finally {
    const problems = await unmount(mounted, log)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    check("unmounted and removed", problems.length === 0, problems.join("; ") || `container ${mounted.container}`)
  }
  console.log("")
  console.log(`container-check: ${IMAGE}`)
  console.log(`  image size (unpacked): ${(size / 1024 / 1024).toFixed(1)} MiB`)
  console.log(`  build time: ${seconds(buildMs)}`)
  console.log(`  time to healthy: ${served === undefined ? "-" : seconds(served.timeToHealthyMs)}`)
  const failed = checks.filter((c) => !c.ok)
  console.log(`  checks: ${checks.length - failed.length} passed, ${failed.length} failed`)
  return failed.length === 0 ? 0 : 1
}

main().then(
  (code) => {
    killAll()
    process.exit(code)
  },
  (error: unknown) => {
    console.error(`container-check: FAILED: ${error instanceof Error ? error.message : String(error)}`)
    killAll()
    process.exit(1)
  }
)
