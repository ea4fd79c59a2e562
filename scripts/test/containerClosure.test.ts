import { assert, describe, it } from "@effect/vitest"
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import os from "node:os"
import path from "node:path"
import { runtimeClosure } from "../src/container/closure.js"

const repositoryRoot = path.resolve(import.meta.dirname, "../..")

/** Writes `root/dir/package.json` with `manifest`. */
const pkg = (root: string, dir: string, manifest: Record<string, unknown>): void => {
  mkdirSync(path.join(root, dir), { recursive: true })
  writeFileSync(path.join(root, dir, "package.json"), JSON.stringify(manifest))
}

/** A workspace `server` (linked from node_modules) over a small installed tree, in a fresh folder. */
const fixture = (): string => {
  const root = mkdtempSync(path.join(os.tmpdir(), "closure-"))
  pkg(root, "packages/server", {
    name: "@w/server",
    dependencies: { "@w/lib": "*", a: "1" },
    peerDependencies: { peer: "1", "optional-peer": "1", "absent-optional": "1" },
    peerDependenciesMeta: { "optional-peer": { optional: true }, "absent-optional": { optional: true } },
    devDependencies: { "dev-only": "1" }
  })
  pkg(root, "packages/lib", { name: "@w/lib", dependencies: { b: "2" }, devDependencies: { "dev-only": "1" } })
  mkdirSync(path.join(root, "node_modules/@w"), { recursive: true })
  symlinkSync("../../packages/server", path.join(root, "node_modules/@w/server"))
  symlinkSync("../../packages/lib", path.join(root, "node_modules/@w/lib"))
  pkg(root, "node_modules/a", { name: "a", dependencies: { b: "1" } })
  // `a` needs b@1, nested under it; the hoisted b is b@2, which @w/lib gets.
  pkg(root, "node_modules/a/node_modules/b", { name: "b", version: "1.0.0" })
  pkg(root, "node_modules/b", { name: "b", version: "2.0.0", optionalDependencies: { "not-installed": "1" } })
  pkg(root, "node_modules/peer", { name: "peer" })
  pkg(root, "node_modules/optional-peer", { name: "optional-peer" })
  pkg(root, "node_modules/dev-only", { name: "dev-only" })
  pkg(root, "node_modules/unrelated", { name: "unrelated" })
  return root
}

describe("runtimeClosure", () => {
  it("follows dependencies, required and installed optional peers, nested before hoisted; never devDependencies", () => {
    const root = fixture()
    try {
      const found = runtimeClosure(root, path.join(root, "packages/server"))
        .map(({ dir }) => path.relative(root, dir))
        .sort()
      assert.deepStrictEqual(found, [
        "node_modules/a",
        "node_modules/a/node_modules/b",
        "node_modules/b",
        "node_modules/optional-peer",
        "node_modules/peer",
        "packages/lib",
        "packages/server"
      ])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("fails naming the package whose required dependency is not installed", () => {
    const root = fixture()
    try {
      rmSync(path.join(root, "node_modules/peer"), { recursive: true })
      assert.throws(() => runtimeClosure(root, path.join(root, "packages/server")), /@w\/server needs peer/)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("on this repository: the server's peers (effect, @effect/*) are in, the test and build tools are not", () => {
    const names = new Set(
      runtimeClosure(repositoryRoot, path.join(repositoryRoot, "packages/server")).map((p) => p.name)
    )
    for (
      const needed of [
        "@switchyard-ts/config",
        "effect",
        "@effect/platform-node",
        "@effect/cli",
        "smol-toml",
        "ioredis"
      ]
    ) {
      assert.isTrue(names.has(needed), `${needed} missing`)
    }
    for (const unwanted of ["@switchyard-ts/testkit", "@switchyard-ts/demo", "typescript", "vitest", "eslint"]) {
      assert.isFalse(names.has(unwanted), `${unwanted} included`)
    }
  })
})
