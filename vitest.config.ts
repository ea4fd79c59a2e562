import * as path from "node:path"
import { defineConfig } from "vitest/config"
import { shared } from "./vitest.shared.js"

const packages = ["protocol", "client", "routing", "config", "testkit", "server"]

export default defineConfig({
  test: {
    // One line per file would be 130 lines of passing files: a dot per test, then the summary and
    // the failures (with their output: the passing tests' log lines are not printed).
    reporters: ["dot"],
    silent: "passed-only",
    projects: [
      ...packages.map((name) => shared(path.join(import.meta.dirname, "packages", name))),
      // The scripts' own tests (the bench's body generator).
      shared(path.join(import.meta.dirname, "scripts"))
    ]
  }
})
