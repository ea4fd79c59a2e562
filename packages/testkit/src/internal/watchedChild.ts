/**
 * A child process's output and end, as plain callbacks: both streams collected (the tail kept),
 * split into lines, the `listening on` line noticed, and waiters for a line or for the exit.
 * `ServerProcess` builds its Effects on top.
 */
import type { ChildProcess } from "node:child_process"
import type { Exit, Listening, Stream } from "../ServerProcess.js"
import { forget } from "./children.js"

/** What is known of a watched child; `on*` register a callback and return its unregister function. */
export interface WatchedChild {
  readonly output: (stream: Stream) => string
  readonly listening: () => Listening | undefined
  readonly ended: () => Exit | undefined
  /** Called for every later complete line. */
  readonly onLine: (waiter: (stream: Stream, line: string) => void) => () => void
  /** Called once with the exit (at once when it has already happened). */
  readonly onExit: (done: (exit: Exit) => void) => () => void
}

const listeningLine = /^listening on (https?:\/\/\S+)$/

const STREAMS = ["stdout", "stderr"] as const

/** Starts watching `child`; `keep` characters of each stream are kept, `onOutput`/`onLine` see everything. */
export const watchChild = (
  child: ChildProcess,
  { keep, onLine: observeLine, onOutput }: {
    readonly keep: number
    readonly onOutput: ((stream: Stream, chunk: string) => void) | undefined
    readonly onLine: ((stream: Stream, line: string) => void) | undefined
  }
): WatchedChild => {
  const output: Record<Stream, string> = { stdout: "", stderr: "" }
  const partial: Record<Stream, string> = { stdout: "", stderr: "" }
  const lineWaiters = new Set<(stream: Stream, line: string) => void>()
  const exitWaiters = new Set<(exit: Exit) => void>()
  let listening: Listening | undefined
  let ended: Exit | undefined

  const line = (stream: Stream, text: string): void => {
    if (stream === "stdout" && listening === undefined) {
      const url = listeningLine.exec(text)?.[1]
      if (url !== undefined) {
        const parsed = new URL(url)
        listening = { url, host: parsed.hostname, port: Number(parsed.port) }
      }
    }
    observeLine?.(stream, text)
    for (const waiter of lineWaiters) waiter(stream, text)
  }
  for (const stream of STREAMS) {
    child[stream]?.setEncoding("utf8").on("data", (chunk: string) => {
      output[stream] = (output[stream] + chunk).slice(-keep)
      onOutput?.(stream, chunk)
      const lines = (partial[stream] + chunk).split("\n")
      partial[stream] = lines.pop() ?? ""
      for (const text of lines) line(stream, text)
    })
  }
  child.once("exit", () => forget(child))
  // `close`: the child has exited and its output has been read to the end.
  child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
    for (const stream of STREAMS) {
      if (partial[stream] !== "") line(stream, partial[stream])
      partial[stream] = ""
    }
    const exit = { code, signal }
    ended = exit
    for (const waiter of exitWaiters) waiter(exit)
  })
  return {
    output: (stream) => output[stream],
    listening: () => listening,
    ended: () => ended,
    onLine: (waiter) => {
      lineWaiters.add(waiter)
      return () => lineWaiters.delete(waiter)
    },
    onExit: (done) => {
      if (ended !== undefined) {
        done(ended)
        return () => {}
      }
      exitWaiters.add(done)
      return () => exitWaiters.delete(done)
    }
  }
}
