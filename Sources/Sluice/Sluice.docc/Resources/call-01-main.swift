// The program the "Make a WebRTC call" tutorial builds (Sources/Sluice/Sluice.docc/Tutorials): two
// peer connections in one process call each other over 127.0.0.1 with ICE and DTLS-SRTP. The caller
// sends a file as its camera; the callee records the video it receives.
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
} catch {
    FileHandle.standardError.write(Data("example-call: \(error)\n".utf8))
    exit(1)
}
