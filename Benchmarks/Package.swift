// swift-tools-version:6.1
// Sluice's benchmarks (package-benchmark). Run: cd Benchmarks && swift package benchmark
import PackageDescription

let package = Package(
    name: "SluiceBenchmarks",
    dependencies: [
        .package(name: "Sluice", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "VP8Encode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Sluice", package: "Sluice"),
                .product(name: "CVPX", package: "Sluice"),
                .product(name: "CSluiceShims", package: "Sluice"),
            ],
            path: "Benchmarks/VP8Encode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "OpenH264Codec",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Sluice", package: "Sluice"),
                .product(name: "CodecOpenH264", package: "Sluice"),
            ],
            path: "Benchmarks/OpenH264Codec",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "OpusEncode",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Sluice", package: "Sluice"),
                .product(name: "COpus", package: "Sluice"),
            ],
            path: "Benchmarks/OpusEncode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "GraphRuntime",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "MediaCore", package: "Sluice"),
            ],
            path: "Benchmarks/GraphRuntime",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
