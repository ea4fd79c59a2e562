// Where the e2e run finds things: the repository, the e2e/ folder (its package.json, lock file,
// node_modules with the pinned CLIs, and runs/), the server's test fixtures.
import path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository root (this file is scripts/dist/e2e/paths.js once built). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")
/** e2e/: the pinned CLIs and the run folders. */
export const E2E_DIR = path.join(ROOT, "e2e")
/** The Claude Code request fixtures of the server's tests. */
export const FIXTURES = path.join(ROOT, "packages/server/test/fixtures")
