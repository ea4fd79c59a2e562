// The mock upstream's own endpoints (scripts/src/bench/mock-upstream.ts), as the bench calls them:
// the last request body received for a model, and the held requests of the in-flight memory row.
import * as Schema from "effect/Schema"
import http from "node:http"
import { HOST } from "./options.js"

/** One request to the mock's own API: the status and the body text. */
const call = (mockPort: number, method: "GET" | "POST", path: string): Promise<{ status: number; text: string }> =>
  new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port: mockPort, path, method, agent: false }, (res) => {
      let text = ""
      res.setEncoding("utf8").on("data", (d: string) => (text += d)).on(
        "end",
        () => resolve({ status: res.statusCode ?? 0, text })
      )
    })
    req.on("error", reject)
    req.end()
  })

/** The last request body the mock received for `model` (verbatim); rejects when it has none. */
export const lastBody = async (mockPort: number, model: string): Promise<string> => {
  const { status, text } = await call(mockPort, "GET", `/_bench/last?model=${encodeURIComponent(model)}`)
  if (status !== 200) throw new Error(`the mock recorded no request body for ${model}`)
  return text
}

const decodeHeld = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ held: Schema.Number })))

/** Requests the mock holds unanswered now. */
export const heldNow = async (mockPort: number): Promise<number> =>
  decodeHeld((await call(mockPort, "GET", "/_bench/held")).text).held

/** Answers every request the mock holds. */
export const release = async (mockPort: number): Promise<void> => {
  await call(mockPort, "POST", "/_bench/release")
}
