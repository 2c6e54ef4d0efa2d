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
        .library(name: "MediaContainers", targets: ["MediaContainers"]),
        .library(name: "MediaNodes", targets: ["MediaNodes"]),
        .library(name: "MediaConvert", targets: ["MediaConvert"]),
        .library(name: "CodecVPX", targets: ["CodecVPX"]),
        .library(name: "CodecX264", targets: ["CodecX264"]),
        .library(name: "CodecOpenH264", targets: ["CodecOpenH264"]),
        .library(name: "CodecOpus", targets: ["CodecOpus"]),
        .library(name: "CodecMJPEG", targets: ["CodecMJPEG"]),
        .library(name: "CodecFFmpeg", targets: ["CodecFFmpeg"]),
        .library(name: "MediaRTP", targets: ["MediaRTP"]),
        .library(name: "MediaTransport", targets: ["MediaTransport"]),
        .library(name: "MediaSDP", targets: ["MediaSDP"]),
        .library(name: "MediaHTTP", targets: ["MediaHTTP"]),
        .library(name: "MediaNegotiation", targets: ["MediaNegotiation"]),
        .library(name: "MediaSRTP", targets: ["MediaSRTP"]),
        .library(name: "DeviceV4L2", targets: ["DeviceV4L2"]),
        .library(name: "DeviceALSA", targets: ["DeviceALSA"]),
        .library(name: "MediaSTUN", targets: ["MediaSTUN"]),
        .library(name: "MediaICE", targets: ["MediaICE"]),
        .library(name: "MediaDTLS", targets: ["MediaDTLS"]),
        .library(name: "MediaSCTP", targets: ["MediaSCTP"]),
        .library(name: "MediaPeer", targets: ["MediaPeer"]),
        .library(name: "SluiceServer", targets: ["SluiceServer"]),
        .executable(name: "sluice", targets: ["sluice"]),
        .executable(name: "pipebench", targets: ["pipebench"]),
        // The measured loops shared by Benchmarks/ and pipebench: bare C-library loops and the Sluice paths
        // set beside them.
        .library(name: "BenchLoops", targets: ["BenchLoops"]),
        // The bare C library and its shims, for benchmarks that compare against it.
        .library(name: "CVPX", targets: ["CVPX"]),
        .library(name: "COpenH264", targets: ["COpenH264"]),
        .library(name: "CSluiceShims", targets: ["CSluiceShims"]),
        .library(name: "CX264", targets: ["CX264"]),
        .library(name: "COpus", targets: ["COpus"]),
        .library(name: "COgg", targets: ["COgg"]),
        .library(name: "CSRTP", targets: ["CSRTP"]),
        .library(name: "CV4L2", targets: ["CV4L2"]),
        .library(name: "CALSA", targets: ["CALSA"]),
        .library(name: "CSSL", targets: ["CSSL"]),
        .library(name: "CUsrSCTP", targets: ["CUsrSCTP"]),
        .library(name: "CFFmpeg", targets: ["CFFmpeg"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.0.0"),
        // `swift package generate-documentation` (tools/docs): DocC catalogs under each module's Sources folder.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // C libraries, wrapped once at the edge.
        .systemLibrary(
            name: "CVPX", path: "Sources/CVPX", pkgConfig: "vpx",
            providers: [.apt(["libvpx-dev"])]),
        .target(name: "CSluiceShims", dependencies: ["CVPX"], path: "Sources/CSluiceShims"),
        .systemLibrary(name: "CYUV", path: "Sources/CYUV", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(
            name: "CSpeexDSP", path: "Sources/CSpeexDSP", pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]),
        // No pkgConfig: x264.pc's Cflags carry -DX264_API_IMPORTS (a Windows DLL switch), which SwiftPM
        // refuses with a warning. Headers and library are in the default paths; the module map links it.
        .systemLibrary(
            name: "CX264", path: "Sources/CX264",
            providers: [.apt(["libx264-dev"])]),
        .systemLibrary(
            name: "COpenH264", path: "Sources/COpenH264", pkgConfig: "openh264",
            providers: [.apt(["libopenh264-dev"])]),
        .systemLibrary(
            name: "COpus", path: "Sources/COpus", pkgConfig: "opus",
            providers: [.apt(["libopus-dev"])]),
        .systemLibrary(
            name: "COgg", path: "Sources/COgg", pkgConfig: "ogg",
            providers: [.apt(["libogg-dev"])]),
        .systemLibrary(
            name: "CTurboJPEG", path: "Sources/CTurboJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(
            name: "CSRTP", path: "Sources/CSRTP", pkgConfig: "libsrtp2",
            providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(
            name: "CV4L2", path: "Sources/CV4L2", pkgConfig: "libv4l2",
            providers: [.apt(["libv4l-dev"])]),
        .systemLibrary(
            name: "CALSA", path: "Sources/CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(
            name: "CSSL", path: "Sources/CSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        // No pkgConfig: usrsctp.pc's Cflags are -DINET -DINET6 (the library's own build switches, which its
        // header does not read), and SwiftPM refuses -D flags with a warning on every build. Header and
        // library are in the default paths; the module map links it.
        .systemLibrary(
            name: "CUsrSCTP", path: "Sources/CUsrSCTP",
            providers: [.apt(["libusrsctp-dev"])]),
        // FFmpeg's libavformat, libavcodec and libavutil as one module: containers now, decoders later.
        .systemLibrary(
            name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev"])]),
        // FFmpeg's log callback (C variadic arguments), recording the errors a demuxer logs but steps over.
        .target(name: "CFFmpegShims", dependencies: ["CFFmpeg"], path: "Sources/CFFmpegShims"),

        // Media time, formats, frames, pools, the graph runtime.
        .target(
            name: "MediaCore",
            dependencies: [.product(name: "DequeModule", package: "swift-collections"),
                           .product(name: "Histogram", package: "hdrhistogram-swift")]),
        // Encoder/decoder protocols and the codec registry.
        .target(name: "MediaCodecs", dependencies: ["MediaCore"]),
        // VP8 through libvpx.
        .target(name: "CodecVPX", dependencies: ["MediaCodecs", "CVPX", "CSluiceShims"]),
        // H.264 encoding through libx264.
        .target(name: "CodecX264", dependencies: ["MediaCodecs", "CX264"]),
        // H.264 decoding and constrained-baseline encoding through Cisco's OpenH264.
        .target(name: "CodecOpenH264", dependencies: ["MediaCodecs", "COpenH264"]),
        // Opus through libopus.
        .target(name: "CodecOpus", dependencies: ["MediaCodecs", "COpus"]),
        // Motion JPEG decoding through libjpeg-turbo (TurboJPEG API), chroma resampled by libyuv.
        .target(name: "CodecMJPEG", dependencies: ["MediaCodecs", "CTurboJPEG", "CYUV"]),
        // H.264 and VP8 decoding through libavcodec's own decoders, into pooled frames.
        .target(name: "CodecFFmpeg", dependencies: ["MediaCodecs", "CFFmpeg", "CFFmpegShims"]),
        // Y4M, IVF, WAV, H.264 Annex-B and Ogg Opus readers and writers.
        .target(
            name: "MediaFiles",
            dependencies: ["MediaCore", "COgg", .product(name: "SystemPackage", package: "swift-system")]),
        // MP4/MOV, WebM, Matroska and Ogg through libavformat: demuxer (H.264 to Annex-B), muxer, AAC decoding.
        .target(name: "MediaContainers", dependencies: ["MediaCore", "MediaCodecs", "MediaFiles", "CFFmpeg", "CFFmpegShims"]),
        // RTP and RTCP (RFC 3550 and its profiles): packets, payload formats, jitter buffer. Pure logic: no
        // graph, no sockets, no codec library.
        .target(name: "MediaRTP", dependencies: ["MediaCore"]),
        // SDP (RFC 8866) session descriptions: parsing, serialization, typed attributes. Pure text logic.
        .target(name: "MediaSDP"),
        // HTTP/1.1 responses (RFC 9112) read sans-I/O with bounded buffers: what the WHIP/WHEP client
        // takes from a server. Pure byte logic, no sockets.
        .target(name: "MediaHTTP"),
        // SDP offer/answer (RFC 3264): codec capabilities as values, per-codec fmtp matching, resolution
        // and frame-rate choice. Pure logic over MediaSDP; capabilities come in as values, no codec library.
        .target(name: "MediaNegotiation", dependencies: ["MediaCore", "MediaSDP"]),
        // SRTP and SRTCP (RFC 3711, RFC 7714) on OpenSSL's EVP (the default) or libsrtp2 (the reference,
        // and with an MKI): profiles, key material (SDES keys from MediaSDP's a=crypto), sessions that
        // protect packets in place.
        .target(name: "MediaSRTP", dependencies: ["CSRTP", "CSSL", "MediaSDP"]),
        // Sockets (UDP over the POSIX calls) and RTP sessions over any datagram transport (UDP with SDES SRTP,
        // or the peer's bundled one): sending, receiving, RTCP.
        // epoll(7) and eventfd(2) for MediaTransport's SocketReactor (Swift's Glibc module leaves them out).
        .systemLibrary(name: "CEpoll", path: "Sources/CEpoll"),
        .target(name: "MediaTransport", dependencies: ["MediaCore", "MediaRTP", "MediaSRTP", "CEpoll"]),
        // Picture scaling (libyuv), frame-rate conversion, audio resampling (speexdsp) and mixing.
        .target(name: "MediaConvert", dependencies: ["MediaCore", "CYUV", "CSpeexDSP"]),
        // V4L2 cameras through libv4l2: enumeration, format choice, mmap streaming into I420 (libyuv,
        // libjpeg-turbo for MJPEG), and the capture node.
        .target(
            name: "DeviceV4L2",
            dependencies: ["CV4L2", "MediaCore", "MediaConvert", "MediaNegotiation", "CodecMJPEG"]),
        // STUN messages (RFC 8489) with the ICE and TURN attributes, integrity and fingerprint. Pure values;
        // libcrypto only for HMAC and MD5.
        .target(name: "MediaSTUN", dependencies: ["CSSL"]),
        // The ICE agent (RFC 8445) with its TURN client (RFC 8656) and consent freshness (RFC 7675):
        // clock-driven, no sockets.
        .target(name: "MediaICE", dependencies: ["MediaCore", "MediaSTUN"]),
        // DTLS 1.2 with use_srtp (RFC 6347, RFC 5764) through OpenSSL over a datagram BIO: clock-driven, no
        // sockets; SRTP keys out.
        .target(name: "MediaDTLS", dependencies: ["CSSL", "MediaCore", "MediaSRTP"]),
        // SCTP over DTLS (RFC 8261) through usrsctp without threads, and WebRTC data channels (RFC 8831) with
        // DCEP (RFC 8832): clock-driven, no sockets; SCTP packets in and out as bytes.
        .target(name: "MediaSCTP", dependencies: ["CUsrSCTP", "MediaCore"]),
        // The WebRTC peer: bundled transport (ICE + DTLS-SRTP + RFC 7983 demultiplexing) and the peer
        // connection with JSEP (RFC 8829) offer/answer.
        .target(
            name: "MediaPeer",
            dependencies: ["MediaCore", "MediaSTUN", "MediaICE", "MediaDTLS", "MediaSRTP", "MediaRTP", "MediaSDP",
                           "MediaNegotiation", "MediaTransport", "MediaCodecs", "MediaNodes", "MediaSCTP",
                           .product(name: "DequeModule", package: "swift-collections")]),
        // `sluice serve`'s HTTP layer: WHEP (draft-ietf-wish-whep) and WHIP (RFC 9725) endpoints on Hummingbird 2, with
        // the sessions answered by a handler protocol that the peer connection implements.
        .target(name: "SluiceServer", dependencies: ["MediaPeer", "MediaNodes", "MediaCodecs", "MediaNegotiation", "MediaContainers",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        // Graph adapters: file sources/sinks, codec and conversion nodes.
        .target(
            name: "MediaNodes",
            dependencies: ["MediaCore", "MediaCodecs", "MediaFiles", "MediaContainers", "MediaConvert", "MediaRTP", "MediaTransport"]),
        // ALSA capture and playback through alsa-lib: device listing, a capture source, a playback sink.
        .target(name: "DeviceALSA", dependencies: ["MediaCore", "MediaConvert", "CALSA"]),
        // Umbrella: re-exports, the built-in codec registry and pipelines.
        .target(
            name: "Sluice",
            dependencies: ["MediaCore", "MediaCodecs", "MediaFiles", "MediaContainers", "MediaConvert", "MediaNodes", "MediaRTP",
                           "MediaTransport", "MediaSDP", "MediaNegotiation", "MediaSRTP", "CodecVPX", "CodecX264", "CodecOpenH264", "CodecOpus", "CodecMJPEG",
                           "CodecFFmpeg", "DeviceV4L2", "DeviceALSA", "MediaSTUN", "MediaICE", "MediaDTLS", "MediaSCTP", "MediaPeer", "MediaHTTP"]),
        .executableTarget(
            name: "sluice",
            dependencies: ["Sluice", "SluiceServer", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Loops measured by Benchmarks/ and pipebench: the sample clip, graph harness, bare C-library loops
        // (libvpx, libx264, OpenH264, libavcodec, libopus, libsrtp2) and the RTP/SRTP paths compared with them.
        .target(
            name: "BenchLoops",
            dependencies: ["Sluice", "CVPX", "CSluiceShims", "CX264", "COpenH264", "COpus", "CSRTP", "CSSL", "CFFmpeg"]),
        // pipebench's scenarios, runners and output (table, JSON, SVG chart, comparison).
        .target(name: "PipeBench", dependencies: ["BenchLoops", "Sluice", "CSluiceShims"]),
        .executableTarget(
            name: "pipebench",
            dependencies: ["PipeBench", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // The programs the DocC tutorials build (Sources/Sluice/Sluice.docc/Tutorials), compiled and run by
        // the tests so that the tutorials' last steps stay true.
        .executableTarget(name: "example-transcode", dependencies: ["Sluice"], path: "Examples/TranscodeFile"),
        .executableTarget(name: "example-call", dependencies: ["Sluice"], path: "Examples/LoopbackCall"),

        // Test helpers shared by the test targets (temporary folders, ffmpeg, sample media).
        .target(name: "TestSupport", dependencies: ["MediaCore", "MediaCodecs", "MediaSTUN", "MediaTransport"], path: "Tests/TestSupport"),
        // glibc's heap figures (mallinfo2) for allocation tests.
        .testTarget(name: "MediaCoreTests", dependencies: ["MediaCore", "CSluiceShims", "TestSupport"]),
        .testTarget(name: "MediaConvertTests", dependencies: ["MediaConvert", "TestSupport"]),
        .testTarget(name: "MediaFilesTests", dependencies: ["MediaFiles", "TestSupport"]),
        .testTarget(
            name: "MediaContainersTests",
            dependencies: ["MediaContainers", "MediaNodes", "CodecVPX", "CodecOpenH264", "CodecOpus", "TestSupport"]),
        .testTarget(name: "CodecVPXTests", dependencies: ["CodecVPX", "MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecX264Tests", dependencies: ["CodecX264", "CX264", "MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecOpenH264Tests", dependencies: ["CodecOpenH264", "CodecFFmpeg", "MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecOpusTests", dependencies: ["CodecOpus", "MediaFiles", "TestSupport"]),
        .testTarget(name: "CodecMJPEGTests", dependencies: ["CodecMJPEG", "TestSupport"]),
        .testTarget(name: "MediaRTPTests", dependencies: ["MediaRTP", "MediaFiles", "TestSupport"]),
        .testTarget(name: "MediaTransportTests", dependencies: ["MediaTransport", "MediaRTP"]),
        .testTarget(name: "MediaSRTPTests", dependencies: ["MediaSRTP", "CSRTP", "MediaRTP", "MediaTransport", "TestSupport"]),
        .testTarget(name: "MediaHTTPTests", dependencies: ["MediaHTTP"]),
        .testTarget(name: "MediaSDPTests", dependencies: ["MediaSDP", "TestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "MediaNegotiationTests", dependencies: ["MediaNegotiation", "MediaSDP", "TestSupport"]),
        .testTarget(
            name: "DeviceV4L2Tests", dependencies: ["DeviceV4L2", "MediaConvert", "MediaNegotiation", "CTurboJPEG", "TestSupport"]),
        .testTarget(
            name: "DeviceALSATests",
            dependencies: ["DeviceALSA", "MediaNodes", "MediaFiles", "CodecOpus", "TestSupport"]),
        .testTarget(name: "SluiceTests", dependencies: ["Sluice", "TestSupport"]),
        .testTarget(name: "PipeBenchTests", dependencies: ["PipeBench"]),
        .testTarget(name: "MediaSTUNTests", dependencies: ["MediaSTUN", "TestSupport"]),
        .testTarget(name: "MediaICETests", dependencies: ["MediaICE", "MediaSTUN", "MediaTransport", "TestSupport"]),
        .testTarget(name: "MediaDTLSTests", dependencies: ["MediaDTLS", "MediaSRTP", "MediaTransport", "TestSupport"]),
        .testTarget(name: "MediaSCTPTests", dependencies: ["MediaSCTP", "MediaCore", "TestSupport"]),
        .testTarget(
            name: "MediaPeerTests",
            dependencies: ["MediaPeer", "TestSupport", "MediaICE", "MediaDTLS", "MediaNegotiation", "MediaSDP", "MediaRTP", "MediaSCTP",
                           "MediaTransport", "MediaCodecs", "CodecVPX", "Sluice", "SluiceServer"]),
        .testTarget(
            name: "SluiceServerTests",
            dependencies: ["SluiceServer", "TestSupport", .product(name: "HummingbirdTesting", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types")]),
    ],
    swiftLanguageModes: [.v6]
)
