/**
 * Every child process the testkit has spawned and not yet seen exit, killed with `SIGKILL` when
 * this Node process exits (normally, by `process.exit`, or after an uncaught error), so none
 * outlives the test run or script that started it.
 */
import type { ChildProcess } from "node:child_process"

/** The running children. */
export const children = new Set<ChildProcess>()

let hooked = false

const killAll = (): void => {
  for (const child of children) {
    try {
      if (child.pid !== undefined) process.kill(child.pid, "SIGKILL")
    } catch {
      // Already gone.
    }
  }
  children.clear()
}

/** Records `child` until it exits; installs the exit hook on first use. */
export const remember = (child: ChildProcess): void => {
  if (!hooked) {
    hooked = true
    process.once("exit", killAll)
  }
  children.add(child)
}

/** Forgets `child` (it has exited). */
export const forget = (child: ChildProcess): void => {
  children.delete(child)
}
