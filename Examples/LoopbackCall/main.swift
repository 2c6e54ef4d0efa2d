// The program the "Make a WebRTC call" tutorial builds (Sources/Sluice/Sluice.docc/Tutorials; the
// `// @step` marks say which step adds what: tools/tutorial-steps): two peer connections in one
// process call each other over 127.0.0.1 with ICE and DTLS-SRTP. The caller sends a file as its
// camera; the callee records the video it receives.
//   example-call INPUT OUTPUT.ivf [SECONDS]      e.g. example-call clip.y4m received.ivf 3
import Foundation
import Sluice

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 || arguments.count == 3, let seconds = Double(arguments.count == 3 ? arguments[2] : "3") else {
    FileHandle.standardError.write(Data("usage: example-call INPUT OUTPUT.ivf [SECONDS]\n".utf8))
    exit(2)
}
let input = arguments[0], output = arguments[1]

do {
    // One factory holds the codecs; each peer connection gathers its candidates on 127.0.0.1.
    let factory = PeerConnectionFactory(preferredCodecs: [.vp8])
    let configuration = PeerConnection.Configuration(localAddresses: ["127.0.0.1:0"], includeLoopback: true)
    let caller = try factory.makePeerConnection(configuration)
    let callee = try factory.makePeerConnection(configuration)
    defer {
        caller.close()
        callee.close()
    }
    // @step 2

    // The caller's camera: the file, looped in real time.
    try caller.addTrack(try LocalTrack.input(input))

    // Signalling is the app's: here the descriptions go from one object to the other.
    let offer = try caller.createOffer()
    try callee.setRemoteDescription(offer, type: .offer)
    let answer = try callee.createAnswer()
    try caller.setRemoteDescription(answer, type: .answer)
    // @end
    // @step 3

    // The callee's remote video, as it arrives (VP8 frames), into an IVF file.
    for track in callee.remoteTracks where track.kind == .video {
        try track.start(.encoded { graph, frames in graph.add(IVFFileSink(path: output, codecs: [.vp8]), input: frames) })
    }

    // ICE checks, then DTLS; media flows once both say connected.
    let deadline = Date().addingTimeInterval(10)
    while caller.connectionState != .connected || callee.connectionState != .connected {
        guard Date() < deadline else { throw CallError(description: "not connected after 10 s") }
        Thread.sleep(forTimeInterval: 0.05)
    }
    print("connected over \(callee.stats().selectedPair ?? "?")")
    Thread.sleep(forTimeInterval: seconds)
    // @end
    // @step 4

    for inbound in callee.stats().inbound {
        print("received \(inbound.framesReceived) frames in \(inbound.packetsReceived) packets, \(inbound.packetsLost) lost")
    }
    // @end
} catch {
    FileHandle.standardError.write(Data("example-call: \(error)\n".utf8))
    exit(1)
}
// @step 3

struct CallError: Error, CustomStringConvertible { var description: String }
// @end
