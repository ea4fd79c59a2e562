/**
 * The CLI's security surface: `--tls-cert` / `--tls-key` (HTTPS with a self-signed pair generated
 * here by `openssl`), `--backlog`, `--dry-run` with a missing inbound-key variable, and the
 * start-up warning for a non-loopback host without inbound auth. Parsing and checks in process;
 * serving through the compiled bin in a child process (see `cliProcess.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cli from "@switchyard-ts/server/Cli"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as FakeUpstream from "@switchyard-ts/testkit/FakeUpstream"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { execFileSync, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { request } from "node:https"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { listening, run, tomlFor, writeToml } from "./cliProcess.js"

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0

/** A fresh self-signed certificate for 127.0.0.1 and its key (PEM files in a temporary folder). */
const selfSigned = (name = "server") => {
  const dir = mkdtempSync(path.join(tmpdir(), "switchyard-tls-"))
  const cert = path.join(dir, `${name}.crt`)
  const key = path.join(dir, `${name}.key`)
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    key,
    "-out",
    cert,
    "-days",
    "1",
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1"
  ], { stdio: "ignore" })
  return { cert, key, dir }
}

const inboundKey = "sk-cli-inbound-0123456789"

/** One HTTPS request that trusts only `ca`; resolves with the status and body. */
const httpsCall = (
  url: string,
  ca: Buffer,
  options: { readonly method: string; readonly path: string; readonly headers?: Record<string, string> },
  body?: string
) =>
  Effect.async<{ readonly status: number; readonly text: string }, Error>((resume) => {
    const req = request(
      `${url}${options.path}`,
      { method: options.method, ca, headers: { "content-type": "application/json", ...options.headers } },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, text })))
      }
    )
    req.on("error", (error) => resume(Effect.fail(error)))
    req.end(body)
  })

const parsed = (argv: ReadonlyArray<string>) => Effect.either(Cli.parseCli(argv))

describe("CLI flags", () => {
  it.effect("--backlog defaults to 65535 and takes an integer in 1..2^31-1", () =>
    Effect.gen(function*() {
      const defaults = yield* Cli.parseCli(["--config", "x.toml"])
      assert.strictEqual(defaults.backlog, 65535)
      assert.isUndefined(defaults.tlsFiles)
      assert.strictEqual((yield* Cli.parseCli(["--config", "x.toml", "--backlog", "128"])).backlog, 128)
      for (const bad of ["0", "-1", "1.5", "lots", "2147483648"]) {
        const result = yield* parsed(["--config", "x.toml", `--backlog=${bad}`])
        assert.isTrue(Either.isLeft(result), bad)
        if (Either.isLeft(result)) assert.include(result.left.message, "--backlog must be an integer in 1..2147483647")
      }
    }))

  it.effect("--port takes an integer in 0..65535; --shutdown-timeout takes seconds, `s` or `ms`", () =>
    Effect.gen(function*() {
      const defaults = yield* Cli.parseCli(["--config", "x.toml"])
      assert.deepStrictEqual([defaults.port, defaults.shutdownTimeoutMs, defaults.host], [4000, 30_000, "127.0.0.1"])
      assert.strictEqual((yield* Cli.parseCli(["--config", "x.toml", "-p", "0"])).port, 0)
      for (const bad of ["65536", "-1", "80.5", "http"]) {
        const result = yield* parsed(["--config", "x.toml", `--port=${bad}`])
        assert.isTrue(
          Either.isLeft(result) && result.left.message === `--port must be an integer in 0..65535, got ${bad}`
        )
      }
      for (const [text, ms] of [["5", 5000], ["2.5s", 2500], ["500ms", 500]] as const) {
        assert.strictEqual(
          (yield* Cli.parseCli(["--config", "x.toml", "--shutdown-timeout", text])).shutdownTimeoutMs,
          ms
        )
      }
      const bad = yield* parsed(["--config", "x.toml", "--shutdown-timeout", "soon"])
      assert.isTrue(Either.isLeft(bad) && bad.left.message.startsWith("--shutdown-timeout must be seconds"))
      const unknown = yield* parsed(["--config", "x.toml", "--prot", "4000"])
      assert.isTrue(
        Either.isLeft(unknown) && /'--prot'.*\nusage: switchyard --config FILE /s.test(unknown.left.message)
      )
    }))

  it.effect("--tls-cert and --tls-key each require the other", () =>
    Effect.gen(function*() {
      const both = yield* Cli.parseCli(["--config", "x.toml", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
      assert.deepStrictEqual(both.tlsFiles, { cert: "c.pem", key: "k.pem" })
      const certOnly = yield* parsed(["--config", "x.toml", "--tls-cert", "c.pem"])
      assert.isTrue(Either.isLeft(certOnly) && certOnly.left.message.startsWith("--tls-cert requires --tls-key"))
      const keyOnly = yield* parsed(["--config", "x.toml", "--tls-key", "k.pem"])
      assert.isTrue(Either.isLeft(keyOnly) && keyOnly.left.message.startsWith("--tls-key requires --tls-cert"))
    }))

  it.effect("loadTls: a missing file is named; a key that does not match the certificate is refused", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Cli.loadTls({ cert: "/nonexistent/cert.pem", key: "/nonexistent/key.pem" }))
      assert.strictEqual(missing._tag, "TlsFileError")
      assert.match(missing.message, /^failed to read --tls-cert \/nonexistent\/cert\.pem: .*ENOENT/)
      const dir = mkdtempSync(path.join(tmpdir(), "switchyard-tls-"))
      const garbage = path.join(dir, "garbage.pem")
      writeFileSync(garbage, "not a certificate")
      const bad = yield* Effect.flip(Cli.loadTls({ cert: garbage, key: garbage }))
      assert.include(bad.message, `invalid TLS certificate or key (--tls-cert ${garbage}, --tls-key ${garbage})`)
      assert.notInclude(bad.message, "not a certificate")
      if (hasOpenssl) {
        const one = selfSigned("one")
        const other = selfSigned("other")
        const mismatched = yield* Effect.flip(Cli.loadTls({ cert: one.cert, key: other.key }))
        assert.include(mismatched.message, "invalid TLS certificate or key")
        const ok = yield* Cli.loadTls({ cert: one.cert, key: one.key })
        assert.deepStrictEqual(ok.cert, readFileSync(one.cert))
      }
    }))

  it("isLoopback: localhost, 127.0.0.0/8 and ::1 only", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"]) {
      assert.isTrue(Cli.isLoopback(host), host)
    }
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "example.com", "128.0.0.1"]) {
      assert.isFalse(Cli.isLoopback(host), host)
    }
  })
})

describe("CLI: TLS, backlog, inbound auth", () => {
  it.scopedLive.skipIf(!hasOpenssl)(
    "--tls-cert/--tls-key serve HTTPS (listening on https://), inbound auth on top, with --backlog",
    () =>
      Effect.gen(function*() {
        const upstream = yield* FakeUpstream.make()
        const pair = selfSigned()
        const file = writeToml(tomlFor(upstream.url, "[server]\napi_keys_env = \"SWITCHYARD_CLI_KEYS\""))
        const cli = yield* run(
          ["--config", file, "--port", "0", "--backlog", "16", "--tls-cert", pair.cert, "--tls-key", pair.key],
          { SWITCHYARD_CLI_KEYS: `other-key,${inboundKey}` }
        )
        const url = yield* listening(cli)
        assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/)
        const ca = readFileSync(pair.cert)
        const health = yield* httpsCall(url, ca, { method: "GET", path: "/health" })
        assert.strictEqual(health.status, 200)
        const body = JSON.stringify({ model: "fast", messages: [{ role: "user", content: "hi" }] })
        const refused = yield* httpsCall(url, ca, { method: "POST", path: "/v1/chat/completions" }, body)
        assert.strictEqual(refused.status, 401)
        const served = yield* httpsCall(
          url,
          ca,
          { method: "POST", path: "/v1/chat/completions", headers: { authorization: `Bearer ${inboundKey}` } },
          body
        )
        assert.strictEqual(served.status, 200, served.text)
        // plain HTTP is not served on the TLS port
        const plain = yield* Effect.promise(() =>
          fetch(url.replace("https:", "http:") + "/health").then((r) => r.status, () => 0)
        )
        assert.notStrictEqual(plain, 200)
        assert.notInclude(cli.stdout() + cli.stderr(), inboundKey)
        assert.notInclude(cli.stderr(), "warning: listening on")
        cli.child.kill("SIGTERM")
        assert.strictEqual(yield* cli.exited.pipe(Effect.timeout("5 seconds")), 0)
      })
  )

  it.scopedLive("a missing TLS file and a missing partner flag exit with one clear line", () =>
    Effect.gen(function*() {
      const file = writeToml(tomlFor("http://127.0.0.1:1/v1"))
      const missing = yield* run([
        "--config",
        file,
        "--tls-cert",
        "/nonexistent/c.pem",
        "--tls-key",
        "/nonexistent/k.pem"
      ])
      assert.strictEqual(yield* missing.exited, 1)
      const lines = missing.stderr().trim().split("\n")
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0] ?? "", /^failed to read --tls-cert \/nonexistent\/c\.pem: /)
      const partner = yield* run(["--config", file, "--tls-key", "/nonexistent/k.pem"])
      assert.strictEqual(yield* partner.exited, 2)
      assert.isTrue(partner.stderr().startsWith("--tls-key requires --tls-cert\n"))
    }))

  it.scopedLive("--dry-run fails when an api_keys_env variable is missing or empty, and passes when set", () =>
    Effect.gen(function*() {
      const file = writeToml(
        tomlFor("http://127.0.0.1:1/v1", "[server]\napi_keys_env = [\"SWITCHYARD_CLI_A\", \"SWITCHYARD_CLI_B\"]")
      )
      const missing = yield* run(["--config", file, "--dry-run"], { SWITCHYARD_CLI_A: inboundKey })
      assert.strictEqual(yield* missing.exited, 1)
      assert.strictEqual(
        missing.stderr(),
        `invalid server config ${file}: server.api_keys_env[1]: could not read api_keys_env SWITCHYARD_CLI_B\n`
      )
      const empty = yield* run(["--config", file, "--dry-run"], { SWITCHYARD_CLI_A: inboundKey, SWITCHYARD_CLI_B: " " })
      assert.strictEqual(yield* empty.exited, 1)
      assert.include(empty.stderr(), "server.api_keys_env[1]: api_keys_env SWITCHYARD_CLI_B is empty")
      const ok = yield* run(["--config", file, "--dry-run"], { SWITCHYARD_CLI_A: inboundKey, SWITCHYARD_CLI_B: "k2" })
      assert.strictEqual(yield* ok.exited, 0)
      assert.strictEqual(ok.stdout(), "server OK: fast\n")
      for (const cli of [missing, empty, ok]) assert.notInclude(cli.stdout() + cli.stderr(), inboundKey)
    }))

  it.scopedLive("--dry-run and check trim a provider key and refuse one that cannot be a header, naming the variable only", () =>
    Effect.gen(function*() {
      const file = writeToml(D.toToml({
        llm_clients: {
          sim: D.client("openai_chat", "http://127.0.0.1:1/v1", { api_key_env: "SWITCHYARD_CLI_PROVIDER" })
        },
        targets: { weak: D.target("weak-model", "sim") },
        routes: { fast: D.passthrough("fast", "weak") }
      }))
      const providerKey = "sk-provider-0123456789"
      for (const command of [["--config", file, "--dry-run"], ["check", "--config", file]]) {
        const trailing = yield* run(command, { SWITCHYARD_CLI_PROVIDER: `${providerKey}\n` })
        assert.strictEqual(yield* trailing.exited, 0)
        assert.strictEqual(trailing.stdout(), "server OK: fast\n")
        const inner = yield* run(command, { SWITCHYARD_CLI_PROVIDER: `${providerKey}\nsecond-line` })
        assert.strictEqual(yield* inner.exited, 1)
        assert.strictEqual(
          inner.stderr(),
          `invalid server config ${file}: llm_clients.sim.api_key_env: api_key_env SWITCHYARD_CLI_PROVIDER holds a character that cannot be sent in an HTTP header\n`
        )
        for (const cli of [trailing, inner]) {
          assert.notInclude(cli.stdout() + cli.stderr(), providerKey)
          assert.notInclude(cli.stdout() + cli.stderr(), "second-line")
        }
      }
    }))

  it.scopedLive("a non-loopback host without inbound auth is warned about on stderr at start-up", () =>
    Effect.gen(function*() {
      // 192.0.2.1 (TEST-NET-1) is not an address of this machine: the bind fails after the warning,
      // so nothing is ever exposed.
      const file = writeToml(tomlFor("http://127.0.0.1:1/v1"))
      const open = yield* run(["--config", file, "--host", "192.0.2.1", "--port", "0"])
      assert.strictEqual(yield* open.exited, 1)
      assert.include(
        open.stderr(),
        "warning: listening on 192.0.2.1, which is not a loopback address, without inbound auth"
      )
      const guarded = yield* run(
        [
          "--config",
          writeToml(tomlFor("http://127.0.0.1:1/v1", "[server]\napi_keys_env = \"K\"")),
          "--host",
          "192.0.2.1"
        ],
        { K: inboundKey }
      )
      assert.strictEqual(yield* guarded.exited, 1)
      assert.notInclude(guarded.stderr(), "warning: listening on")
      // the default host is loopback: no warning
      const local = yield* run(["--config", file, "--port", "0"])
      yield* listening(local)
      assert.notInclude(local.stderr(), "warning")
      assert.isNull(local.child.exitCode)
    }))
})
