/// Real-world descriptions (Fixtures/, origins in its README): each writes back byte for byte, and the
/// helpers an RTP receiver or an answerer needs read the right values from them.
import MediaSDP
import Testing

@Suite struct FixtureTests {
    @Test(arguments: Fixtures.names)
    func roundTrip(name: String) throws {
        let text = try Fixtures.text(name)
        let session = try SessionDescription(parsing: text)
        #expect(session.serialized() == text)
        #expect(try SessionDescription(parsing: session.serialized()) == session)
        #expect(try SessionDescription(parsing: text.replacingOccurrences(of: "\r\n", with: "\n")) == session)
    }

    /// Every typed attribute in every fixture parses, and writes back as it was.
    @Test(arguments: Fixtures.names)
    func typedAttributesParse(name: String) throws {
        let session = try Fixtures.parsed(name)
        for container in [session.attributes] + session.media.map(\.attributes) {
            for attribute in container {
                guard let type = typedAttributes[attribute.name] else { continue }
                let value = try type.init(attributeValue: attribute.value ?? "")
                #expect(value.attribute == attribute, "\(name): \(attribute)")
            }
        }
    }

    @Test func ffmpegH264() throws {
        let session = try Fixtures.parsed("ffmpeg-h264.sdp")
        #expect(session.origin == SDPOrigin(sessionID: 0, sessionVersion: 0, address: "127.0.0.1"))
        #expect(session.sessionName == "No Name")
        #expect(session.attributeValue("tool") == "libavformat LIBAVFORMAT_VERSION")
        let video = session.media[0]
        #expect(video.connection(in: session) == SDPConnection(address: "127.0.0.1"))
        #expect(video.port == 5004 && video.payloadTypes == [96])
        #expect(try video.rtpMap(for: 96) == SDPRTPMap(payloadType: 96, encodingName: "H264", clockRate: 90000))
        #expect(try video.formatParameters(for: 96) == [
            "packetization-mode": "1", "sprop-parameter-sets": "Z/QADZGbKCg/YCIAAAMAAgAAAwB4HihTLA==,aOvjxEhE",
            "profile-level-id": "F4000D",
        ])
        #expect(try video.rtcpPort() == 5005)
        #expect(video.direction(in: session) == .sendrecv)
    }

    @Test func ffmpegAudioAndVideoWithMediaLevelConnections() throws {
        let session = try Fixtures.parsed("ffmpeg-h264-opus.sdp")
        #expect(session.connection == nil)
        let (video, audio) = (session.media[0], session.media[1])
        #expect(video.connection(in: session)?.address == "127.0.0.1")
        #expect(try video.formatParameters(for: 96)["profile-level-id"] == "42C00D")
        #expect(audio.port == 5006 && audio.bandwidths == [SDPBandwidth(type: "AS", value: 64)])
        #expect(try audio.rtpMap(for: 97) == SDPRTPMap(payloadType: 97, encodingName: "opus", clockRate: 48000, channels: 2))
        #expect(try audio.rtcpPort() == 5007)
        #expect(try Fixtures.parsed("ffmpeg-vp8.sdp").media[0].rtpMap(for: 96)?.encodingName == "VP8")
        #expect(try Fixtures.parsed("ffmpeg-opus.sdp").media[0].rtpMap(for: 97)?.channels == 2)
    }

    @Test func ffmpegSRTP() throws {
        let video = try Fixtures.parsed("ffmpeg-srtp.sdp").media[0]
        let crypto = try #require(try video.value(SDPCrypto.self))
        #expect(crypto.tag == 1 && crypto.suite == "AES_CM_128_HMAC_SHA1_80")
        #expect(crypto.keys.map(\.keySalt) == ["zRCambWi3kLHB4qWpQqmoimTJhFIjAvGtsWV2WHC"])
        #expect(crypto.keys[0].keySaltBytes?.count == 30)
    }

    @Test func gstreamerRTSP() throws {
        let session = try Fixtures.parsed("gstreamer-rtsp.sdp")
        #expect(session.information == "rtsp-server")
        #expect(session.attributeValue("control") == "*")
        let video = session.media[0]
        #expect(video.port == 0 && video.bandwidths == [SDPBandwidth(type: "AS", value: 2000)])
        #expect(try video.frameRate() == 30)
        #expect(try video.formatParameters(for: 96)["sprop-parameter-sets"] == "Z0LAHtkDxWhAAAADAEAAAAwDxYuS,aMuMsg==")
        #expect(try session.media[1].rtpMap(for: 97)?.encodingName == "OPUS")
        #expect(session.media[1].attributeValue("control") == "stream=1")
    }

    @Test func gstreamerWebRTCBin() throws {
        let session = try Fixtures.parsed("gstreamer-webrtcbin.sdp")
        #expect(try session.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["video0", "video1", "audio2"])])
        #expect(session.media.map(\.port) == [9, 0, 0])  // bundle-only sections carry port 0 (RFC 9143 §6)
        #expect(session.media.dropFirst().allSatisfy { $0.hasAttribute("bundle-only") })
        let h264 = try #require(session.media(mid: "video1"))
        #expect(try h264.frameRate() == 30)
        #expect(try h264.formatParameters(for: 102) == [
            "packetization-mode": "1", "sprop-parameter-sets": "Z0LAFdkBQfsBagwMDUoAAAMAAgAAAwB5HixckA==,aMuMsg==",
            "profile-level-id": "42c015", "level-asymmetry-allowed": "1",
        ])
        #expect(try h264.feedback(for: 102).map(\.type) == ["nack", "ccm", "transport-cc"])
        #expect(h264.rtcpMux && h264.hasAttribute("rtcp-mux-only"))
        let audio = try #require(session.media(mid: "audio2"))
        #expect(try audio.rtpMap(for: 111) == SDPRTPMap(payloadType: 111, encodingName: "OPUS", clockRate: 48000, channels: 2))
        #expect(try audio.sourceAttributes().map(\.name) == ["msid", "cname"])
    }

    @Test func chromeOffer() throws {
        let session = try Fixtures.parsed("chrome-offer.sdp")
        #expect(try session.groups() == [SDPGroup(semantics: "BUNDLE", mids: ["0", "1", "2"])])
        #expect(session.media.map(\.mid) == ["0", "1", "2"])
        #expect(session.media(mid: "2")?.formats == ["webrtc-datachannel"])
        let audio = try #require(session.media(mid: "0"))
        #expect(audio.proto == "UDP/TLS/RTP/SAVPF" && audio.port == 9)
        #expect(audio.rtcpMux && audio.rtcpReducedSize)
        #expect(try audio.rtcpAttribute() == SDPRTCPAddress(port: 9, connection: SDPConnection(address: "0.0.0.0")))
        #expect(try audio.rtcpPort() == 9)
        #expect(try audio.formatParameters(for: 111) == ["minptime": "10", "useinbandfec": "1"])
        #expect(try audio.feedback(for: 111) == [SDPRTCPFeedback(payloadType: 111, type: "transport-cc")])
        #expect(try audio.rtpMap(for: 0)?.encodingName == "PCMU")
        #expect(audio.attributeValue("ice-ufrag") == "Fk3w" && audio.attributeValue("setup") == "actpass")
        #expect(audio.attributeValue("fingerprint")?.hasPrefix("sha-256 7B:8B:F0") == true)

        let video = try #require(session.media(mid: "1"))
        // H.264 in both packetization modes and four profiles, each with its RTX (RFC 4588 apt).
        var h264: [(UInt8, String, String, UInt8)] = []
        for payloadType in video.payloadTypes where try video.rtpMap(for: payloadType)?.encodingName == "H264" {
            let parameters = try video.formatParameters(for: payloadType)
            let rtx = try #require(video.payloadTypes.first { try video.formatParameters(for: $0)["apt"] == String(payloadType) })
            h264.append((payloadType, parameters["profile-level-id"] ?? "", parameters["packetization-mode"] ?? "", rtx))
        }
        #expect(h264.map(\.0) == [102, 104, 106, 108, 127, 112])
        #expect(h264.map(\.1) == ["42001f", "42001f", "42e01f", "42e01f", "4d001f", "64001f"])
        #expect(h264.map(\.2) == ["1", "0", "1", "0", "1", "1"])
        #expect(h264.map(\.3) == [103, 105, 107, 109, 125, 113])
        #expect(try h264.map { try video.retransmissionPayloadType(for: $0.0) } == [103, 105, 107, 109, 125, 113])
        #expect(try video.retransmissionPayloadType(for: 96) == 97)
        #expect(try video.retransmissionPayloadType(for: 118) == nil)  // ulpfec has no RTX
        #expect(try video.feedback(for: 96).map { [$0.type, $0.parameter ?? ""] }
            == [["goog-remb", ""], ["transport-cc", ""], ["ccm", "fir"], ["nack", ""], ["nack", "pli"]])
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [1_467_803_563, 3_409_812_240])])
        let sources = try video.sourceAttributes()
        #expect(sources.count == 4 && sources[0] == SDPSourceAttribute(ssrc: 1_467_803_563, name: "cname", value: "kZ4r8y1FhM2x7QpT"))
        #expect(try video.extensionMaps().first { $0.uri == "urn:ietf:params:rtp-hdrext:sdes:mid" }?.id == 4)
        #expect(video.direction(in: session) == .sendrecv)
        #expect(session.attributeValue("msid-semantic") == " WMS 3a8b1c9e-7d2f-4c5a-9e1b-2f6d8a4c7e31")
    }

    @Test func firefoxOffer() throws {
        let session = try Fixtures.parsed("firefox-offer.sdp")
        #expect(session.origin.username == "mozilla...THIS_IS_SDPARTA-99.0")
        #expect(session.origin.sessionID == 7_137_370_838_733_738_358)
        #expect(session.direction == .sendrecv && session.attributeValue("fingerprint") != nil)
        let (audio, video) = (session.media[0], session.media[1])
        #expect(video.direction(in: session) == .recvonly)
        #expect(try audio.extensionMaps()[1] == SDPExtensionMap(id: 2, direction: .recvonly,
                                                                  uri: "urn:ietf:params:rtp-hdrext:csrc-audio-level"))
        #expect(try audio.formatParameters(for: 109) == ["maxplaybackrate": "48000", "stereo": "1", "useinbandfec": "1"])
        #expect(try audio.rtpMap(for: 9) == SDPRTPMap(payloadType: 9, encodingName: "G722", clockRate: 8000, channels: 1))
        #expect(try video.formatParameters(for: 97) == ["profile-level-id": "42e01f", "level-asymmetry-allowed": "1"])
        #expect(try video.formatParameters(for: 126)["packetization-mode"] == "1")
        #expect(try video.formatParameters(for: 98)["apt"] == "97")
        #expect(try video.formatParameters(for: 120) == ["max-fs": "12288", "max-fr": "60"])
        #expect(try video.sourceGroups() == [SDPSourceGroup(semantics: "FID", ssrcs: [3_787_413_298, 1_189_427_744])])
        #expect(try video.feedback(for: 121).count == 5)
        #expect(try video.rtcpPort() == 9)  // rtcp-mux, no a=rtcp
    }

    @Test func safariOffer() throws {
        let session = try Fixtures.parsed("safari-offer.sdp")
        let (video, audio) = (session.media[0], session.media[1])
        #expect(video.type == "video" && video.mid == "0" && video.port == 61665)
        #expect(video.connection(in: session) == SDPConnection(address: "203.0.113.7"))
        #expect(video.direction(in: session) == .sendonly && audio.direction(in: session) == .sendrecv)
        #expect(video.attributes(named: "candidate").count == 2 && video.hasAttribute("end-of-candidates"))
        #expect(try video.formatParameters(for: 96)["profile-level-id"] == "640c1f")
        #expect(try video.rtpMap(for: 100)?.encodingName == "H265")
        #expect(try video.formatParameters(for: 100)["tx-mode"] == "SRST")
        #expect(try video.formatParameters(for: 125) == ["apt": "127"])
        #expect(try audio.rtpMap(for: 103) == SDPRTPMap(payloadType: 103, encodingName: "ISAC", clockRate: 16000))
        #expect(try audio.rtcpPort() == 9)
    }

    @Test func sdesCrypto() throws {
        let audio = try Fixtures.parsed("sdes-crypto.sdp").media[0]
        let suites = try audio.values(SDPCrypto.self)
        #expect(suites.map(\.tag) == [1, 2, 3])
        #expect(suites.map(\.suite) == ["AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32", "AEAD_AES_256_GCM"])
        #expect(suites[0].keys == [SDPCrypto.Key(keySalt: "F+mOdENMaNIz7WvFC1eG6W1nVyyJghzkmL/FuLYT",
                                                 lifetime: .powerOfTwo(20), mki: SDPCrypto.MKI(value: 1, length: 4))])
        #expect(suites[1].keys.map(\.mki) == [SDPCrypto.MKI(value: 1, length: 4), SDPCrypto.MKI(value: 2, length: 4)])
        #expect(suites[2].keys[0].keySaltBytes?.count == 44)  // 32-byte key + 12-byte salt (RFC 7714 §12)
        #expect(suites[2].sessionParameters == ["KDR=1", "UNENCRYPTED_SRTCP"])
        #expect(audio.proto == "RTP/SAVP")
    }

    @Test func rfc8866Example() throws {
        let session = try Fixtures.parsed("rfc8866-example.sdp")
        #expect(session.media.map(\.port) == [49170, 49180, 51372])
        #expect(session.media[2].connection(in: session) == SDPConnection(addressType: "IP6", address: "2001:db8::2"))
        #expect(try session.media[0].rtpMap(for: 0)?.encodingName == "PCMU")
    }
}

/// The typed attribute types, by name.
let typedAttributes: [String: any SDPAttributeValue.Type] = Dictionary(uniqueKeysWithValues: ([
    SDPRTPMap.self, SDPFormatParameters.self, SDPRTCPFeedback.self, SDPRTCPAddress.self, SDPExtensionMap.self,
    SDPGroup.self, SDPSourceAttribute.self, SDPSourceGroup.self, SDPCrypto.self, SDPImageAttribute.self,
    SDPPacketTime.self, SDPMaximumPacketTime.self, SDPFrameRate.self, SDPICEUsernameFragment.self, SDPICEPassword.self,
    SDPICEOptions.self, SDPFingerprint.self, SDPSetup.self, SDPMediaIdentifier.self, SDPMediaStreamID.self, SDPSCTPPort.self,
    SDPMaxMessageSize.self, SDPCandidate.self,
] as [any SDPAttributeValue.Type]).map { ($0.attributeName, $0) })
