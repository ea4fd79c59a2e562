/**
 * Log lines written in batches: the first line added after a write arms one timer of `windowMs`;
 * when it fires, every line added since goes out in one `write`. Nothing is scheduled while nothing
 * is logged, so an idle server does not wake up for its logger (Effect's `Logger.batched` wakes
 * every window whether or not there is a line: ~1.7% of a core at 20 ms on our VM). After `close`
 * (which writes what is left) a line is written at once, so nothing logged during shutdown is lost.
 *
 * @internal
 */

/** Runs `task` in `ms`; returns what cancels it. */
export type Schedule = (task: () => void, ms: number) => () => void

/** A Node timer that does not keep the process alive (what is left is written by `close`). */
export const nodeSchedule: Schedule = (task, ms) => {
  const timer = setTimeout(task, ms)
  timer.unref()
  return () => clearTimeout(timer)
}

export interface LineBatches {
  readonly add: (line: string) => void
  /** Writes the lines not written yet; later lines are written one by one. */
  readonly close: () => void
}

export const make = (
  write: (text: string) => void,
  windowMs: number,
  schedule: Schedule = nodeSchedule
): LineBatches => {
  let lines: Array<string> = []
  let cancel: (() => void) | undefined
  let closed = false
  const flush = (): void => {
    cancel = undefined
    if (lines.length === 0) return
    const batch = lines
    lines = []
    write(`${batch.join("\n")}\n`)
  }
  return {
    add: (line) => {
      if (closed) return write(`${line}\n`)
      lines.push(line)
      if (cancel === undefined) cancel = schedule(flush, windowMs)
    },
    close: () => {
      closed = true
      cancel?.()
      flush()
    }
  }
}
