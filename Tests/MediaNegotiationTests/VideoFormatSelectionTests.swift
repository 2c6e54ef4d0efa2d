/// Choosing the size and rate to send from constraints and the remote's SDP limits.
import MediaNegotiation
import MediaSDP
import Testing

struct VideoFormatSelectionTests {
    /// A 1280x720 camera at 30 fps that may go down to 320x180 and 10 fps.
    static let camera720p = VideoConstraints(width: .init(min: 320, ideal: 1280), height: .init(min: 180, ideal: 720),
                                             frameRate: .init(min: 10, ideal: 30))
    static let camera480p = VideoConstraints(width: .init(ideal: 640), height: .init(ideal: 480))
    static let vgaSets = SDPImageAttribute.ImageSet(x: .range(min: 320, step: 16, max: 640), y: .range(min: 240, step: 16, max: 480))

    @Test("the largest format within every limit, aspect kept", arguments: [
        // VP8 max-fs 3600 (RFC 7741): 1280x720 is 80x45 = 3600 macroblocks, it fits.
        (camera720p, RemoteVideoLimits(maxFrameSize: 3600), NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30)),
        // max-fs 1200: scaled down to the largest 16:9 picture of at most 1200 macroblocks (46x26).
        (camera720p, RemoteVideoLimits(maxFrameSize: 1200), NegotiatedVideoFormat(width: 736, height: 414, frameRate: 30)),
        // Level 3 (MaxFS 1620, MaxMBPS 40500): at 30 fps at most 1350 macroblocks a picture (48x27).
        (camera720p, RemoteVideoLimits(h264Level: .level3), NegotiatedVideoFormat(width: 768, height: 432, frameRate: 30)),
        // Level 3.1 (MaxFS 3600, MaxMBPS 108000) takes 720p30.
        (camera720p, RemoteVideoLimits(h264Level: .level3_1), NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30)),
        // imageattr recv [x=[320:16:640],y=[240:16:480]]: 640x480 is in it ...
        (camera480p, RemoteVideoLimits(receiveSizes: [vgaSets]), NegotiatedVideoFormat(width: 640, height: 480, frameRate: 30)),
        // ... 640x360 is not (360 is off the 16 grid from 240); 624x352 is the largest near-16:9 in it.
        (camera720p, RemoteVideoLimits(receiveSizes: [vgaSets]), NegotiatedVideoFormat(width: 624, height: 352, frameRate: 30)),
        // a=framerate:15 caps the rate, not the size.
        (camera720p, RemoteVideoLimits(maxFrameRate: 15), NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 15)),
        // max-fs 396 also bounds each side to sqrt(8 * 396) = 56 macroblocks (RFC 7741 §6.1): a 1024x96
        // banner is 384 macroblocks but 64 wide, so it shrinks to 896x84.
        (VideoConstraints(width: .init(ideal: 1024), height: .init(ideal: 96)), RemoteVideoLimits(maxFrameSize: 396),
         NegotiatedVideoFormat(width: 896, height: 84, frameRate: 30)),
        // No limits: the ideal.
        (camera720p, RemoteVideoLimits(), NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30)),
        // Level 2.1 (MaxFS 792, MaxMBPS 19800): at 30 fps at most 660 macroblocks; 542x304 is 34x19 = 646.
        (camera720p, RemoteVideoLimits(h264Level: .level2_1), NegotiatedVideoFormat(width: 542, height: 304, frameRate: 30)),
        // Level 1.1 (396 MBs, 3000 MB/s): no 16:9 size >= 320x180 at 30 fps; at the minimum 10 fps 300 MBs do.
        (camera720p, RemoteVideoLimits(h264Level: .level1_1), NegotiatedVideoFormat(width: 368, height: 208, frameRate: 10)),
    ])
    func chooses(constraints: VideoConstraints, remote: RemoteVideoLimits, expected: NegotiatedVideoFormat) throws {
        let chosen = try chooseVideoFormat(constraints: constraints, remote: remote)
        #expect(chosen == expected, "chose \(chosen)")
    }

    @Test func maximumConstraintCapsTheIdeal() throws {
        let constraints = VideoConstraints(width: .init(ideal: 1920, max: 1280), height: .init(ideal: 1080), frameRate: .init(ideal: 60, max: 30))
        #expect(try chooseVideoFormat(constraints: constraints, remote: RemoteVideoLimits())
            == NegotiatedVideoFormat(width: 1280, height: 720, frameRate: 30))
    }

    @Test func impossibleMinimumSizeThrowsNamingTheLimit() {
        let constraints = VideoConstraints(width: .init(min: 1280, ideal: 1280), height: .init(min: 720, ideal: 720))
        #expect(throws: VideoFormatError(reason: "cannot meet the minimum 1280x720: 1280x720 is 3600 macroblocks, more than the remote's max-fs 1200")) {
            try chooseVideoFormat(constraints: constraints, remote: RemoteVideoLimits(maxFrameSize: 1200))
        }
    }

    @Test func impossibleMinimumRateThrows() {
        let constraints = VideoConstraints(width: .init(ideal: 640), height: .init(ideal: 360), frameRate: .init(min: 24, ideal: 30))
        #expect(throws: VideoFormatError(reason: "frame rate at least 24 fps asked, the remote takes at most 15")) {
            try chooseVideoFormat(constraints: constraints, remote: RemoteVideoLimits(maxFrameRate: 15))
        }
    }

    @Test func limitsReadFromTheRemoteSection() throws {
        let description = try session("""
            m=video 5004 RTP/AVPF 96 100\r
            a=rtpmap:96 VP8/90000\r
            a=fmtp:96 max-fs=1200;max-fr=24\r
            a=rtpmap:100 H264/90000\r
            a=fmtp:100 profile-level-id=42e01e;packetization-mode=1;max-fs=2000\r
            a=imageattr:* send * recv [x=[320:16:640],y=[240:16:480]]\r
            a=framerate:20\r

            """)
        let media = description.media[0]
        let vp8 = try RemoteVideoLimits(media: media, payloadType: 96)
        #expect(vp8.maxFrameSize == 1200 && vp8.maxFrameRate == 20 && vp8.maxMacroblocksPerSecond == nil)
        #expect(vp8.receiveSizes == [Self.vgaSets])
        let h264 = try RemoteVideoLimits(media: media, payloadType: 100)
        // Level 3 (1e) with max-fs raised to 2000 (RFC 6184 §8.1), its MaxMBPS kept.
        #expect(h264.maxFrameSize == 2000 && h264.maxMacroblocksPerSecond == 40_500 && h264.maxFrameRate == 20)
    }
}
