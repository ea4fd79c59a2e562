// The e2e run's own children (the Claude Code and Codex CLIs): each its own process group, tracked,
// killed by that group id on a timeout and when this process exits. The switchyard servers are the
// testkit's ServerProcess (killed on exit by it).
import type { ChildProcess } from "node:child_process"

const groups = new Set<ChildProcess>()

/** Sends `signal` to the child's process group. */
export const killGroup = (child: ChildProcess, signal: NodeJS.Signals): void => {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal)
  } catch {
    // Already gone.
  }
}

process.on("exit", () => {
  for (const child of groups) killGroup(child, "SIGKILL")
})

/** Tracks a child spawned with `detached: true` (a process group of its own) until it exits. */
export const trackGroup = <C extends ChildProcess>(child: C): C => {
  groups.add(child)
  child.once("exit", () => groups.delete(child))
  return child
}

/** Temporary HOMEs and working directories, removed at the end unless kept. */
export const tmpDirs: Array<string> = []
