// The requests the container check sends to the server in the image: `/health` until it answers
// 200 (bounded), and one chat completion whose answer must be the mock upstream's.
import * as Schema from "effect/Schema"
import { sleep } from "../lib/processes.js"
import { CheckFailed } from "./commands.js"

/** Polls `GET url/health` every 100 ms until a 200 (its body returned) or the bound. */
export const awaitHealthy = async (url: string, timeoutMs: number, alive: () => boolean): Promise<string> => {
  const deadline = Date.now() + timeoutMs
  let last = "no answer yet"
  while (Date.now() < deadline) {
    if (!alive()) throw new CheckFailed(`the server exited while waiting for /health (last: ${last})`)
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) })
      const body = await response.text()
      if (response.status === 200) return body
      last = `${response.status} ${body}`
    } catch (error) {
      last = String(error)
    }
    await sleep(100)
  }
  throw new CheckFailed(`GET /health did not answer 200 within ${timeoutMs / 1000} s (last: ${last})`)
}

const Completion = Schema.Struct({
  model: Schema.String,
  choices: Schema.NonEmptyArray(Schema.Struct({ message: Schema.Struct({ content: Schema.NullOr(Schema.String) }) }))
})
const decodeCompletion = Schema.decodeUnknownEither(Schema.parseJson(Completion))

/** POSTs one chat completion to `route`; returns the answer's content, failing on anything else. */
export const chatCompletion = async (url: string, route: string, apiKey: string): Promise<string> => {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify({ model: route, messages: [{ role: "user", content: "Say hello from the container." }] }),
    signal: AbortSignal.timeout(15_000)
  })
  const text = await response.text()
  if (response.status !== 200) throw new CheckFailed(`POST /v1/chat/completions answered ${response.status}: ${text}`)
  const decoded = decodeCompletion(text)
  if (decoded._tag === "Left") throw new CheckFailed(`POST /v1/chat/completions: not a completion: ${text}`)
  return decoded.right.choices[0].message.content ?? ""
}
