// Where the bench, the soak and their kin keep a run's figures: bench-results/<prefix>-<timestamp>.json.
import { mkdirSync, writeFileSync } from "node:fs"
import path from "node:path"

/** Writes `value` (pretty JSON) to `root`/bench-results/`prefix`-<timestamp>.json and prints `wrote <path>`. */
export const writeResultsFile = (root: string, prefix: string, value: unknown): void => {
  const outDir = path.join(root, "bench-results")
  mkdirSync(outDir, { recursive: true })
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const outFile = path.join(outDir, `${prefix}-${stamp}.json`)
  writeFileSync(outFile, JSON.stringify(value, null, 2))
  console.log(`wrote ${path.relative(root, outFile)}`)
}
