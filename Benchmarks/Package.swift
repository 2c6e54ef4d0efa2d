// swift-tools-version:6.1
// Sluice's benchmarks (package-benchmark). Run: cd Benchmarks && swift package benchmark
import PackageDescription

/// A benchmark executable in Benchmarks/`name`: the harness and its plug-in, plus `dependencies`.
func benchmark(_ name: String, dependencies: [Target.Dependency]) -> Target {
    .executableTarget(
        name: name,
        dependencies: [.product(name: "Benchmark", package: "benchmark")] + dependencies,
        path: "Benchmarks/\(name)",
        plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
    )
}

/// A benchmark of codecs: Sluice, the shared setup, and the `extra` products of Sluice it uses (the bare C
/// library of a bare-loop row).
func codecBenchmark(_ name: String, extra: [String]) -> Target {
    benchmark(name, dependencies: ["BenchmarkSupport", .product(name: "Sluice", package: "Sluice")]
        + extra.map { .product(name: $0, package: "Sluice") })
}

let package = Package(
    name: "SluiceBenchmarks",
    dependencies: [
        .package(name: "Sluice", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Setup shared by the benchmarks: the graph benchmarks and configuration; re-exports BenchLoops (the
        // sample clip, graph harness and bare-library loops, shared with pipebench).
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Sluice", package: "Sluice"),
                .product(name: "BenchLoops", package: "Sluice"),
            ],
            path: "Support"
        ),
        codecBenchmark("VP8Encode", extra: []),
        codecBenchmark("X264Encode", extra: []),
        codecBenchmark("OpenH264Codec", extra: ["CodecOpenH264"]),
        codecBenchmark("OpusEncode", extra: []),
        benchmark("GraphRuntime", dependencies: [.product(name: "MediaCore", package: "Sluice")]),
        benchmark("RTPBenchmarks", dependencies: [
            .product(name: "MediaCore", package: "Sluice"), .product(name: "MediaRTP", package: "Sluice"),
            .product(name: "MediaSRTP", package: "Sluice"), .product(name: "BenchLoops", package: "Sluice"),
        ]),
        benchmark("SRTPBenchmarks", dependencies: [
            .product(name: "MediaSRTP", package: "Sluice"), .product(name: "CSRTP", package: "Sluice"),
            .product(name: "BenchLoops", package: "Sluice"),
        ]),
    ]
)
