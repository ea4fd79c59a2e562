// `npm run soak`: the soak test of the switchyard server.
//
// Starts the testkit's fault-injecting upstream (@switchyard-ts/testkit/FakeUpstream, in this
// process: a judge instance and an answer instance, see ./soak/upstreams.ts) and the real server from
// its CLI (`node packages/server/bin/switchyard.js --config <generated toml> --port 0`), both on
// 127.0.0.1. Two capability routes ask the same judge (timeout_ms 500, max_retries 0): `soak-fo`
// (judge_failure = "fail_open", judge client without a breaker, so every judged request meets the
// fault) and `soak-err` (judge_failure = "error", judge client with a circuit breaker), each with
// its own judge target id, so the fail-open counter of `soak-fo` is a series of its own. The
// answer client (weak and strong models) has max_retries 2.
//
// Bounded-concurrency workers drive agent-like sessions (x-switchyard-session-id, user turns and
// tool continuations, buffered and streamed) while a fault schedule flips the judge every
// --phase-seconds between up, stalled, refused, 5xx and garbage, and the answer upstream answers
// 429/500/503 to a fraction of calls. Every response is validated: a 2xx well-formed completion or
// SSE stream ending in `data: [DONE]` (or the documented mid-stream error event), or a documented
// error envelope (README, "Errors"); a fail_open request that fails because of the judge, a
// transport error or a timeout is a violation. The run exits 1 when there is any violation.
//
//   node scripts/dist/soak.js [--minutes 2] [--concurrency 16] [--phase-seconds 10]
//                             [--answer-fault-rate 0.1] [--judge-timeout-ms 500]
//                             [--routing-log-file PATH] [--write-config PATH]
//
// --routing-log-file PATH is passed to the server (its JSONL routing log; PATH must not exist yet,
// so the file holds this run only; its folder is created). --write-config PATH writes the generated
// deployment TOML there too (it is otherwise deleted with the run's temporary folder), so that
// `switchyard replay --log PATH --config ...` can be run against it and against a variant of it
// (scripts/src/replay-example.ts does both).
//
// Reports requests, outcomes by kind, violations, the server's RSS (VmRSS from /proc) at start,
// after warm-up (one full cycle of the fault schedule, at most half the run; levels are medians of
// the 2 s samples over 10 s windows), in the middle and at the end (growth > 20% after warm-up is
// flagged; the least-squares slope after warm-up is reported too), and the
// fail-open counter scraped from /metrics against the fault schedule, phase by phase. Writes
// bench-results/soak-<timestamp>.json. Needs `npm run build` first (it compiles this script too).
//
// The phases of a run, one module each under soak/: start (upstreams.ts, deployment.ts, server.ts),
// traffic.ts (workers.ts, the fault schedule, RSS samples), windDown.ts, report.ts and output.ts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { killAll, requireBuild } from "./lib/processes.js"
import { makeClient } from "./soak/client.js"
import { soakToml } from "./soak/deployment.js"
import { JUDGE_ERR, JUDGE_FO, parseSoakOptions, STRONG, WEAK } from "./soak/options.js"
import { writeSoakJson } from "./soak/output.js"
import { failOpenFigures, reportLines, rssFigures } from "./soak/report.js"
import { newState } from "./soak/results.js"
import { startSoakServer } from "./soak/server.js"
import { runTraffic } from "./soak/traffic.js"
import { MODES, startUpstreams } from "./soak/upstreams.js"
import { windDown } from "./soak/windDown.js"

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")
const options = parseSoakOptions(process.argv.slice(2))
requireBuild(ROOT)

const main = async (): Promise<number> => {
  const started = performance.now()
  const tmp = mkdtempSync(path.join(os.tmpdir(), "switchyard-soak-"))
  const upstreams = await startUpstreams({
    judgeModels: [JUDGE_FO, JUDGE_ERR],
    answerModels: [WEAK, STRONG],
    answerFaultRate: options.answerFaultRate
  })
  const toml = soakToml({ ...upstreams, judgeTimeoutMs: options.judgeTimeoutMs })
  const tomlPath = path.join(tmp, "soak.toml")
  writeFileSync(tomlPath, toml)
  if (options.writeConfig !== undefined) {
    mkdirSync(path.dirname(options.writeConfig), { recursive: true })
    writeFileSync(options.writeConfig, toml)
  }
  if (options.routingLog !== undefined) mkdirSync(path.dirname(options.routingLog), { recursive: true })
  const server = await startSoakServer({ tomlPath, routingLog: options.routingLog, cwd: ROOT })
  console.log(
    `soak: server ${server.url} (pid ${server.pid}), mock judge :${upstreams.judgePort}, answers :${upstreams.answerPort}`
  )
  console.log(
    `soak: ${options.minutes} min, concurrency ${options.concurrency}, judge phase ${options.phaseS} s (${
      MODES.join(" → ")
    }), answer faults ${options.answerFaultRate * 100}%, judge timeout_ms ${options.judgeTimeoutMs}`
  )
  if (options.routingLog !== undefined) console.log(`soak: routing log ${options.routingLog}`)
  if (options.writeConfig !== undefined) console.log(`soak: deployment written to ${options.writeConfig}`)

  const client = makeClient(server.port, options.concurrency + 4)
  const state = newState()
  const traffic = await runTraffic(options, { server, client, state, upstreams })
  const after = await windDown({ server, client, upstreams })
  rmSync(tmp, { recursive: true, force: true })

  const { results } = state
  const rss = rssFigures(options, traffic)
  const failOpen = failOpenFigures(results, traffic, after)
  const checks = {
    everyRequestAnsweredOrDocumentedError: results.violations === 0,
    healthAfterSoak: after.healthOk,
    cleanShutdown: after.stopped.code === 0,
    failOpenCounterMatchesResponses: failOpen.foTotalDelta === failOpen.foWithoutVerdict,
    rssFlat: !rss.rssFlag
  }
  const failed = !checks.everyRequestAnsweredOrDocumentedError || !checks.healthAfterSoak || !checks.cleanShutdown
  const report = {
    options,
    results,
    traffic,
    after,
    rss,
    failOpen,
    server,
    staleSocketRetries: client.staleSocketRetries(),
    failed
  }
  const lines = reportLines(report, started)
  console.log(lines.join("\n"))
  writeSoakJson(ROOT, { ...report, checks, lines })
  return failed ? 1 : 0
}

main().then(
  (code) => {
    killAll()
    process.exit(code)
  },
  (error: unknown) => {
    console.error(`soak failed: ${error instanceof Error ? error.stack : error}`)
    killAll()
    process.exit(1)
  }
)
