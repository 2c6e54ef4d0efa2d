// swift-tools-version:6.0
// Sluice: a media pipeline engine for Linux. See README.md and ARCHITECTURE.md.
import PackageDescription

let package = Package(
    name: "Sluice",
    products: [
        .library(name: "Sluice", targets: ["Sluice"]),
        .library(name: "MediaCore", targets: ["MediaCore"]),
        .library(name: "MediaCodecs", targets: ["MediaCodecs"]),
        .library(name: "MediaFiles", targets: ["MediaFiles"]),
        .library(name: "MediaNodes", targets: ["MediaNodes"]),
        .library(name: "CodecVPX", targets: ["CodecVPX"]),
        .library(name: "CodecOpus", targets: ["CodecOpus"]),
        .executable(name: "sluice", targets: ["sluice"]),
        // The bare C library and its shims, for benchmarks that compare against it.
        .library(name: "CVPX", targets: ["CVPX"]),
        .library(name: "CSluiceShims", targets: ["CSluiceShims"]),
        .library(name: "COpus", targets: ["COpus"]),
        .library(name: "COgg", targets: ["COgg"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
    ],
    targets: [
        // C libraries, wrapped once at the edge.
        .systemLibrary(
            name: "CVPX", path: "Sources/CVPX", pkgConfig: "vpx",
            providers: [.apt(["libvpx-dev"])]),
        .target(name: "CSluiceShims", dependencies: ["CVPX"], path: "Sources/CSluiceShims"),
        .systemLibrary(
            name: "COpus", path: "Sources/COpus", pkgConfig: "opus",
            providers: [.apt(["libopus-dev"])]),
        .systemLibrary(
            name: "COgg", path: "Sources/COgg", pkgConfig: "ogg",
            providers: [.apt(["libogg-dev"])]),

        // Media time, formats, frames, pools, the graph runtime.
        .target(
            name: "MediaCore",
            dependencies: [.product(name: "DequeModule", package: "swift-collections")]),
        // Encoder/decoder protocols and the codec registry.
        .target(name: "MediaCodecs", dependencies: ["MediaCore"]),
        // VP8 through libvpx.
        .target(name: "CodecVPX", dependencies: ["MediaCodecs", "CVPX", "CSluiceShims"]),
        // Opus through libopus.
        .target(name: "CodecOpus", dependencies: ["MediaCodecs", "COpus"]),
        // Y4M, IVF, WAV and Ogg Opus readers and writers.
        .target(
            name: "MediaFiles",
            dependencies: ["MediaCore", "COgg", .product(name: "SystemPackage", package: "swift-system")]),
        // Graph adapters: file sources/sinks, codec nodes.
        .target(name: "MediaNodes", dependencies: ["MediaCore", "MediaCodecs", "MediaFiles"]),
        // Umbrella: re-exports and the built-in codec registry and pipelines.
        .target(name: "Sluice", dependencies: ["MediaCore", "MediaCodecs", "MediaFiles", "MediaNodes", "CodecVPX", "CodecOpus"]),
        .executableTarget(
            name: "sluice",
            dependencies: ["Sluice", .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // Test helpers shared by the test targets (temporary folders, ffmpeg, sample media).
        .target(name: "TestSupport", dependencies: ["MediaCore"], path: "Tests/TestSupport"),
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore"]),
        .testTarget(name: "MediaFilesTests", dependencies: ["MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecVPXTests", dependencies: ["CodecVPX", "MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecOpusTests", dependencies: ["CodecOpus", "MediaFiles", "TestSupport"]),
        .testTarget(name: "SluiceTests", dependencies: ["Sluice", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
