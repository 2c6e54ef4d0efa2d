// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Transcode",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Sluice from a checkout beside this package (or its Git URL and a version).
        .package(path: "../sluice"),
    ],
    targets: [
        .executableTarget(name: "example-transcode", dependencies: [.product(name: "Sluice", package: "sluice")]),
    ]
)
