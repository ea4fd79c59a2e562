import * as path from "node:path"
import { defineWorkspace } from "vitest/config"
import { shared } from "./vitest.shared.js"

const packages = ["protocol", "client", "routing", "config", "testkit", "server"]

export default defineWorkspace([
  ...packages.map((name) => shared(path.join(import.meta.dirname, "packages", name))),
  // The scripts' own tests (the bench's body generator).
  shared(path.join(import.meta.dirname, "scripts"))
])
