// The same mock through two other forwarders, each its own process: the floor and the peer gateway
// (installed on demand; its rows are skipped with the reason when it cannot run). Each must answer
// as the mock does before it is measured.
import { startFloor, stopChild } from "./children.js"
import type { Forked } from "./children.js"
import { HOST } from "./options.js"
import { installPeer, type Peer, startPeer } from "./peer.js"
import { type OwnCpu, procCpuS } from "./proc.js"
import { checkReach, type Reach, reachLine } from "./reach.js"

export interface Forwarders {
  readonly floor: Forked
  readonly peer: Peer | undefined
  readonly peerSkipped: string | undefined
  /** What the peer gateway needs to reach the mock: provider `openai` at a custom host. */
  readonly peerHeaders: Readonly<Record<string, string>>
}

/** Starts the floor and, unless `noPeer`, the peer gateway in front of the mock on `mockPort`. */
export const startForwarders = async (mockPort: number, noPeer: boolean): Promise<Forwarders> => {
  const floor = await startFloor(mockPort, "bench-weak", "floor")
  let peer: Peer | undefined
  let peerSkipped: string | undefined = noPeer ? "--no-peer" : installPeer()
  if (peerSkipped === undefined) {
    try {
      peer = await startPeer()
    } catch (error) {
      peerSkipped = `the peer gateway did not start: ${error instanceof Error ? error.message : String(error)}`
    }
  }
  console.log(
    `floor pid ${floor.pid} at :${floor.port}; ${
      peer ? `peer gateway ${peer.version} pid ${peer.pid} at :${peer.port}` : `peer gateway skipped: ${peerSkipped}`
    }`
  )
  const peerHeaders: Readonly<Record<string, string>> = {
    "x-portkey-provider": "openai",
    "x-portkey-custom-host": `http://${HOST}:${mockPort}/v1`,
    authorization: "Bearer bench"
  }
  return { floor, peer, peerSkipped, peerHeaders }
}

/**
 * Checks that both forwarders reach the mock and stream; throws for the floor, drops the peer
 * (stopped, its rows skipped with the reason) when it does not answer as the mock does.
 */
export const checkForwarders = async (
  forwarders: Forwarders,
  cpu: OwnCpu
): Promise<Forwarders & { readonly reach: { floor: Reach; peer?: Reach } }> => {
  let { peer, peerSkipped } = forwarders
  // The floor stamps one model, so its streamed check gets the mock's usual 6 events 2 ms apart; the
  // peer's gets 4 content events 50 ms apart (the peer's first chunk comes later than the whole of the
  // usual stream, which would hide whether it relays events as they come).
  const reach: { floor: Reach; peer?: Reach } = {
    floor: await checkReach(forwarders.floor.port, "pass", {}, { streamModel: "pass", minSpreadMs: 4 })
  }
  if (!reach.floor.ok) throw new Error(`the floor does not reach the mock: ${JSON.stringify(reach.floor)}`)
  if (peer) {
    reach.peer = await checkReach(peer.port, "bench-weak", forwarders.peerHeaders, {
      streamModel: "bench-drip-4x50",
      minSpreadMs: 100
    })
    if (!reach.peer.ok) {
      peerSkipped = `the peer gateway did not answer as the mock does: ${JSON.stringify(reach.peer)}`
      cpu.peer += procCpuS(peer.pid)
      await stopChild(peer.child)
      peer = undefined
    }
  }
  console.log(`floor reaches the mock: ${reachLine(reach.floor)}`)
  if (reach.peer && peer) console.log(`peer gateway reaches the mock: ${reachLine(reach.peer)}`)
  if (peerSkipped !== undefined) console.log(`peer gateway rows skipped: ${peerSkipped}`)
  return { ...forwarders, peer, peerSkipped, reach }
}

/** The floor and the peer are done: stop them, so they take no CPU from the rows after theirs. */
export const stopForwarders = async (forwarders: Forwarders, cpu: OwnCpu): Promise<void> => {
  cpu.floor += procCpuS(forwarders.floor.pid)
  await stopChild(forwarders.floor.child)
  if (forwarders.peer) {
    cpu.peer += procCpuS(forwarders.peer.pid)
    await stopChild(forwarders.peer.child)
  }
}
