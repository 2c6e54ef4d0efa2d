import Foundation
import Sluice
import Testing
import TestSupport

/// The `sluice run` text: the parser as a pure value, and the refusals of the builder.
@Suite struct PipelineDescriptionTests {
    typealias Element = PipelineDescription.Element

    @Test func aChainIsElementsWithTheirProperties() throws {
        let parsed = try PipelineDescription(parsing: "file:clip.y4m ! vp8enc bitrate=1M keyint=30 ! file:out.ivf")
        #expect(parsed.chains == [[
            .element(Element(kind: "file", path: "clip.y4m", position: 1)),
            .element(Element(kind: "vp8enc", properties: [.init("bitrate", "1M"), .init("keyint", "30")], position: 2)),
            .element(Element(kind: "file", path: "out.ivf", position: 3)),
        ]])
    }

    @Test func namedBranchesAreChainsThatStartOrEndWithReferences() throws {
        let parsed = try PipelineDescription(parsing:
            "file:in.mp4 name=in  in.video ! decode ! vp8enc ! file:out.webm name=out  in.audio ! decode ! opusenc ! out.")
        #expect(parsed.chains.count == 3)
        #expect(parsed.chains[0] == [.element(Element(kind: "file", path: "in.mp4", name: "in", position: 1))])
        #expect(parsed.chains[1].first == .reference(name: "in", pad: "video"))
        #expect(parsed.chains[1].last == .element(Element(kind: "file", path: "out.webm", name: "out", position: 5)))
        #expect(parsed.chains[2].first == .reference(name: "in", pad: "audio"))
        #expect(parsed.chains[2].last == .reference(name: "out", pad: nil))
        #expect(parsed.elements.map(\.kind) == ["file", "decode", "vp8enc", "file", "decode", "opusenc"])
    }

    @Test func teeBranchesQuotesAndBangsWithoutSpaces() throws {
        let parsed = try PipelineDescription(parsing: "file:'my clip.y4m'!tee name=t!vp8enc!file:a.ivf t.!x264enc!file:\"b c.mp4\"")
        #expect(parsed.chains.count == 2)
        #expect(parsed.elements.first?.path == "my clip.y4m")
        #expect(parsed.elements[1] == Element(kind: "tee", name: "t", position: 2))
        #expect(parsed.chains[1].first == .reference(name: "t", pad: nil))
        #expect(parsed.elements.last?.path == "b c.mp4")
        // A property value may hold '=' (an impairment profile).
        let send = try PipelineDescription(parsing: "file:a.ivf ! rtpsend to=127.0.0.1:5004 impair=loss=5%,reorder=1%")
        #expect(send.elements[1].value("impair") == "loss=5%,reorder=1%")
    }

    @Test(arguments: [
        ("", "empty pipeline"),
        ("   ", "empty pipeline"),
        ("! vp8enc", "'!' with nothing before it"),
        ("file:a.y4m !", "ends with '!'"),
        ("file:a.y4m ! ! file:b.y4m", "two '!' in a row"),
        ("bitrate=1M ! file:b.ivf", "a property with no element"),
        ("file:a.y4m ! vp8enc name=a.b ! file:b.ivf", "bad name 'a.b'"),
        ("file:'a.y4m ! file:b.y4m", "not closed"),
        ("file: ! file:b.y4m", "file: needs a path"),
        ("file:a.y4m ! 9enc ! file:b.ivf", "'9enc' is not an element name"),
    ])
    func syntaxErrorsSayWhere(text: String, expected: String) {
        #expect(throws: PipelineError.self) { try PipelineDescription(parsing: text) }
        do {
            _ = try PipelineDescription(parsing: text)
        } catch {
            #expect(error.description.hasPrefix("syntax: "))
            #expect(error.description.contains(expected), "\(error)")
        }
    }

    /// Each wrong pipeline is refused before it runs, naming the element, the property or the two
    /// formats, with a suggestion where there is one.
    @Test(arguments: [
        ("file:IVF ! decode ! vp8ecn ! file:OUT/o.ivf", "no element kind 'vp8ecn'; did you mean 'vp8enc'?"),
        ("file:IVF ! decode ! vp8enc bitrat=1M ! file:OUT/o.ivf", "vp8enc: no property 'bitrat'; did you mean 'bitrate'?"),
        ("file:IVF ! decode ! vp8enc bitrate=fast ! file:OUT/o.ivf", "vp8enc: bad bitrate='fast': expected bits per second"),
        ("file:IVF ! decode ! scale size=big ! file:OUT/o.y4m", "scale: bad size='big': expected WIDTHxHEIGHT"),
        ("file:IVF ! decode ! scale ! file:OUT/o.y4m", "scale: needs size=..., e.g. scale size=640x360"),
        ("file:IVF ! vp8enc ! file:OUT/o.ivf", "gives video/vp8, vp8enc takes video/raw; insert 'decode' before vp8enc"),
        ("file:IVF ! file:OUT/o.y4m", "file:OUT/o.y4m takes video/raw; insert 'decode' before it"),
        ("file:IVF ! decode ! file:OUT/o.ivf", "takes video/vp8; insert vp8enc before it"),
        ("file:IVF ! decode ! vp8enc ! file:OUT/o.mp4", "vp8enc gives video/vp8, file:OUT/o.mp4 takes video/h264; encode with x264enc"),
        ("file:IVF ! decode ! opusenc ! file:OUT/o.ogg", "opusenc encodes audio; use vp8enc or x264enc for video"),
        ("file:IVF ! decode ! file:OUT/o.wav", "a .wav file holds audio"),
        ("file:WAV ! opusenc ! file:OUT/o.ogg", "opusenc takes audio/{F32,S16} {48000,24000,16000,12000,8000}Hz"),
        ("file:WAV ! opusenc ! file:OUT/o.ogg", "insert 'audioconvert rate=48000 channels=2' before opusenc"),
        ("file:WAV ! decode ! file:OUT/o.wav", "it is raw already: leave decode out"),
        ("file:IVF ! v4l2src", "v4l2src captures: it starts its chain"),
        ("v4l2src device=/dev/video97 ! vp8enc ! file:OUT/o.ivf", "v4l2src: cannot use device '/dev/video97': /dev/video97: no such video device"),
        ("v4l2 device=/dev/video97 size=320x240 fps=15 ! vp8enc ! file:OUT/o.ivf", "v4l2: cannot use device '/dev/video97'"),
        ("v4l2src devcie=/dev/video0 ! vp8enc ! file:OUT/o.ivf", "v4l2src: no property 'devcie'; did you mean 'device'?"),
        ("v4l2src size=640 ! vp8enc ! file:OUT/o.ivf", "v4l2src: bad size='640': expected WIDTHxHEIGHT"),
        ("v4l2src fps=0 ! vp8enc ! file:OUT/o.ivf", "v4l2src: bad fps='0': expected a frame rate"),
        ("alsasrc device=sluice_no_such_pcm ! opusenc ! file:OUT/o.ogg", "alsasrc: cannot use device 'sluice_no_such_pcm': ALSA device sluice_no_such_pcm: cannot open"),
        ("alsasrc duration=0 ! opusenc ! file:OUT/o.ogg", "alsasrc: bad duration='0': expected seconds, e.g. 2 or 0.5"),
        ("alsasrc channels=6 ! opusenc ! file:OUT/o.ogg", "alsasrc: bad channels='6': expected an integer in 1...2"),
        ("file:IVF ! alsasrc", "alsasrc captures: it starts its chain"),
        ("file:WAV ! alsasink device=sluice_no_such_pcm", "alsasink: cannot use device 'sluice_no_such_pcm': ALSA device sluice_no_such_pcm: cannot open"),
        ("file:IVF ! decode ! alsasink", "decode gives video/raw, alsasink takes audio/raw; alsasink plays audio"),
        ("file:WAV ! alsasink ! file:OUT/o.wav", "alsasink plays: it ends its chain"),
        ("file:IVF ! whep", "whep receives: it starts its chain"),
        ("whep ! file:OUT/o.ivf", "whep: needs url=..., e.g. whep url=http://127.0.0.1:8080/whep/cam"),
        ("whep url=https://example.com/whep/cam ! file:OUT/o.ivf", "whep: bad url='https://example.com/whep/cam': expected http://HOST[:PORT]/PATH"),
        ("whep url=http://127.0.0.1:9/whep/cam ! file:OUT/o.ivf", "http://127.0.0.1:9/whep/cam: cannot connect: Connection refused"),
        ("file:IVF ! decode ! whip", "whip: needs url=..., e.g. whip url=http://127.0.0.1:8080/whip/cam"),
        ("file:IVF ! decode ! whip url=https://example.com/whip", "whip: bad url='https://example.com/whip': expected http://HOST[:PORT]/PATH"),
        ("file:IVF ! decode ! whip url=cam", "whip: bad url='cam'"),
        ("file:IVF ! whip url=http://127.0.0.1:9/whip/cam", "gives video/vp8, whip takes video/raw or audio/raw; insert 'decode' before whip"),
        ("file:IVF ! decode ! whip url=http://127.0.0.1:9/whip/cam ! file:OUT/o.y4m", "whip sends: it ends its chain"),
        ("t. ! file:OUT/o.y4m", "'t.' refers to no element named t before it"),
        ("file:IVF ! decode ! vp8enc", "vp8enc leads nowhere"),
        ("file:IVF ! file:IVF", "the output would overwrite an input"),
        ("file:IVF ! file:OUT/o.avi", "bad path='OUT/o.avi'"),
        ("file:IVF ! decode ! rtpsend to=127.0.0.1:5004", "insert vp8enc before rtpsend"),
        ("file:IVF ! rtpsend", "rtpsend: needs to=..."),
        ("rtpreceive ! file:OUT/o.ivf", "rtpreceive: needs sdp=..."),
        ("rtpreceive sdp=/nonexistent.sdp ! file:OUT/o.ivf", "rtpreceive: bad sdp='/nonexistent.sdp': expected a session description (cannot read"),
        ("file:IVF ! rtpreceive sdp=x.sdp ! file:OUT/o.ivf", "rtpreceive receives: it starts its chain"),
        ("file:IVF ! rtpsend to=nowhere", "rtpsend: bad to='nowhere'"),
        ("file:IVF ! rtpsend to=127.0.0.1:5004 impair=loss=500%", "rtpsend: bad impair='loss=500%'"),
        ("file:IVF name=in  in.audio ! file:OUT/o.ogg", "in.audio: in has one output; write in."),
        ("file:IVF ! decode ! tee name=t ! file:OUT/a.y4m  t.video ! file:OUT/b.y4m", "t.video: t has one output; write t."),
    ])
    func wrongPipelinesAreRefusedBeforeRunning(text: String, expected: String) throws {
        try TestSupport.withTemporaryDirectory { dir in
            let wav = dir.file("tone.wav")
            try TestSupport.ffmpeg(["-f", "lavfi", "-i", "sine=sample_rate=44100", "-t", "0.2", wav])
            let pipeline = text.replacingOccurrences(of: "OUT/", with: dir.path + "/")
                .replacingOccurrences(of: "IVF", with: TestSupport.sampleIVF).replacingOccurrences(of: "WAV", with: wav)
            let wanted = expected.replacingOccurrences(of: "OUT/", with: dir.path + "/")
            do {
                _ = try TextPipeline(pipeline)
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)".contains(wanted), "\(error)")
            }
            // Nothing was written.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["tone.wav"])
        }
    }

    @Test func optionsAreCheckedAgainstEachKindsDeclaration() throws {
        for kind in PipelineNodeKinds.all {
            #expect(PipelineNodeKinds.listing.contains(kind.name))
            for option in kind.options { #expect(Set(kind.options.map(\.name)).count == kind.options.count, "\(kind.name).\(option.name)") }
        }
        #expect(PipelineNodeKinds.kind(named: "v4l2")?.name == "v4l2src", "v4l2 is another name of v4l2src")
        let microphone = try #require(PipelineNodeKinds.kind(named: "alsasrc"))
        let captured = try microphone.check(Element(kind: "alsasrc", properties: [.init("device", "hw:1,0"), .init("duration", "2.5"),
                                                                                   .init("rate", "16000")], position: 1))
        #expect(captured == ["device": .text("hw:1,0"), "duration": .seconds(2.5), "rate": .integer(16_000)])
        let camera = try #require(PipelineNodeKinds.kind(named: "v4l2src"))
        #expect(try camera.check(Element(kind: "v4l2", properties: [.init("size", "1280x720"), .init("fps", "30000/1001")], position: 1))
                == ["size": .size(width: 1280, height: 720), "fps": .rate(Rational(30000, 1001))])
        let scale = try #require(PipelineNodeKinds.kind(named: "scale"))
        let values = try scale.check(Element(kind: "scale", properties: [.init("size", "640x360"), .init("filter", "bilinear")], position: 1))
        #expect(values["size"] == .size(width: 640, height: 360))
        #expect(values["filter"] == .text("bilinear"))
    }

    @Test func theNegotiatedGraphIsDrawnWithCapsOnTheEdges() throws {
        try TestSupport.withTemporaryDirectory { dir in
            let pipeline = try TextPipeline("file:\(TestSupport.sampleIVF) frames=3 ! decode ! scale size=320x180 ! vp8enc ! file:\(dir.file("o.ivf"))")
            let dot = pipeline.dot()
            #expect(dot.hasPrefix("digraph pipeline {"))
            #expect(dot.contains("\"vp8-decoder\" -> \"scale\" [label=\"video/I420 640x360@25\"]"), "\(dot)")
            #expect(dot.contains("\"scale\" -> \"vp8enc\" [label=\"video/I420 320x180@25\"]"), "\(dot)")
            #expect(dot.contains("[label=\"video/VP8 320x180@25\"]"), "\(dot)")
            let report = try pipeline.run()
            #expect(report["o.ivf-writer"]?.itemsIn == 3)
        }
    }
}
