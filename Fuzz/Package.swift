// swift-tools-version:6.0
// Sluice's fuzz targets: one libFuzzer executable per parser of outside bytes, over the main package's
// modules. Built by tools/fuzz with `-sanitize=fuzzer,address` on every Swift module (see README.md).
import PackageDescription

/// Each target and the Sluice modules it reads with.
let targets: [(name: String, modules: [String])] = [
    ("RTP", ["MediaRTP"]),
    ("RTCP", ["MediaRTP"]),
    ("RTPHeaderExtensions", ["MediaRTP"]),
    ("H264Depacketizer", ["MediaRTP"]),
    ("VP8Depacketizer", ["MediaRTP"]),
    ("OpusDepacketizer", ["MediaRTP"]),
    ("JitterBuffer", ["MediaRTP"]),
    ("SRTP", ["MediaSRTP", "MediaRTP"]),
    ("SDP", ["MediaSDP", "MediaNegotiation"]),
    ("STUN", ["MediaSTUN"]),
    ("ICECandidate", ["MediaICE"]),
    ("DCEP", ["MediaSCTP"]),
    ("Y4M", ["MediaFiles", "MediaCore"]),
    ("IVF", ["MediaFiles", "MediaCore"]),
    ("WAV", ["MediaFiles", "MediaCore"]),
    ("AnnexB", ["MediaFiles", "MediaCore"]),
    ("OggOpus", ["MediaFiles", "MediaCore"]),
    ("Container", ["MediaContainers", "MediaCore"]),
    ("DTLS", ["MediaDTLS", "MediaCore"]),
    ("JPEGHeader", ["CodecMJPEG"]),
    ("HTTPResponse", ["MediaHTTP"]),
]

/// The RTP payload targets share their cases.
let usesRTPSupport: Set = ["H264Depacketizer", "VP8Depacketizer", "OpusDepacketizer", "JitterBuffer"]

func sluice(_ module: String) -> Target.Dependency { .product(name: module, package: "Sluice") }

let package = Package(
    name: "SluiceFuzz",
    products: targets.map { .executable(name: "Fuzz\($0.name)", targets: ["Fuzz\($0.name)"]) },
    dependencies: [.package(name: "Sluice", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        .target(name: "FuzzRTPSupport", dependencies: ["FuzzSupport", sluice("MediaRTP"), sluice("MediaCore")]),
    ] + targets.map { target in
        .executableTarget(
            name: "Fuzz\(target.name)",
            dependencies: ["FuzzSupport"] + target.modules.map(sluice)
                + (usesRTPSupport.contains(target.name) ? ["FuzzRTPSupport"] : []))
    },
    swiftLanguageModes: [.v6]
)
