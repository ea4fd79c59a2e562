// The part of autocannon 8 (a CommonJS package without type declarations) that the bench uses,
// written from its README ("API" section) and lib/run.js.
declare module "autocannon" {
  namespace autocannon {
    /** One request of a sequence (`requests`); `setupRequest` may rewrite it before each send. */
    interface Request {
      readonly method?: string | undefined
      readonly path?: string | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly body?: string | undefined
      readonly setupRequest?: ((request: Request, context: Record<string, unknown>) => Request) | undefined
    }
    interface Options {
      readonly url: string
      readonly method?: string | undefined
      readonly headers?: Readonly<Record<string, string>> | undefined
      readonly body?: string | undefined
      readonly connections?: number | undefined
      /** Seconds. */
      readonly duration?: number | undefined
      /** Stop after this many requests (overrides `duration`). */
      readonly amount?: number | undefined
      /** Per-request timeout in seconds. */
      readonly timeout?: number | undefined
      readonly requests?: ReadonlyArray<Request> | undefined
    }
    interface Result {
      /** Seconds the run took. */
      readonly duration: number
      readonly errors: number
      readonly timeouts: number
    }
    interface Instance {
      stop(): void
      /** `responseTime` is in milliseconds (a float). */
      on(
        event: "response",
        listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void
      ): Instance
    }
  }
  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void
  ): autocannon.Instance
  export = autocannon
}
