#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/Corpus/<target>/ from the repository's test vectors, SDP fixtures,
STUN vectors and small files made with ffmpeg. Run from anywhere; existing seeds of the same name are
overwritten, other files (inputs libFuzzer added) are kept. Each seed is a few KB at most."""
import hashlib, json, os, re, struct, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
vectors = os.path.join(root, "Tests", "Vectors")
corpus = os.path.join(root, "Fuzz", "Corpus")


def seed(target, name, data):
    folder = os.path.join(corpus, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(bytes(data))


def vector_files(prefix):
    for tag in ("aiortc", "pion"):
        for name in sorted(os.listdir(os.path.join(vectors, tag))):
            if name.startswith(prefix) and name.endswith(".bin"):
                yield f"{tag}-{name[:-4]}", open(os.path.join(vectors, tag, name), "rb").read()


def records(payloads, flags_of):
    """The depacketizer and jitter buffer layouts: flags, (for the jitter buffer) steps, length, payload."""
    out = bytearray()
    for index, payload in enumerate(payloads):
        out += bytes(flags_of(index, len(payloads))) + bytes([min(len(payload), 255)]) + payload[:255]
    return out


payloads = json.load(open(os.path.join(vectors, "payload_vectors.json")))

# RTP, RTCP and header extension blocks.
for name, data in vector_files("rtp"):
    seed("RTP", name, data)
    if data[0] & 0x10:
        offset = 12 + 4 * (data[0] & 0x0F)
        length = 4 * struct.unpack(">H", data[offset + 2:offset + 4])[0]
        seed("RTPHeaderExtensions", name, data[offset:offset + 2] + data[offset + 4:offset + 4 + length])
seed("RTPHeaderExtensions", "twobyte", bytes([0x10, 0x00, 1, 2, 0xAA, 0xBB, 0, 20, 0, 0]))
for name, data in vector_files("rtcp"):
    seed("RTCP", name, data)

# Depacketizers: each vector's payloads as one frame, the last with the marker.
last_marker = lambda index, count: [1 if index == count - 1 else 0]
h264 = [[bytes.fromhex(p) for p in v["payloads_hex"]] for v in payloads["h264_depacketize"]]
h264 += [[bytes.fromhex(p) for p in v["expected_payloads_hex"]] for v in payloads["h264_packetize"]]
vp8 = [[bytes.fromhex(v["payload_hex"])] for v in payloads["vp8_descriptor"]]
vp8 += [[bytes.fromhex(p) for p in frame] for v in payloads["vp8_packetize"] for frame in v["expected_payloads_hex"]]
for index, frame in enumerate(h264):
    seed("H264Depacketizer", f"vector-{index}", records(frame, last_marker))
for index, frame in enumerate(vp8):
    seed("VP8Depacketizer", f"vector-{index}", records(frame, last_marker))
for name, data in vector_files("h264_"):
    seed("H264Depacketizer", name, records([data[12:]], last_marker))
# Opus: TOC bytes of the three modes and frame-count codes (RFC 6716 §3.1).
opus = [bytes([toc]) + bytes(range(40)) for toc in (0x78, 0xFC, 0x0B, 0x4B, 0x8B, 0x03)]
seed("OpusDepacketizer", "tocs", records(opus, lambda i, n: [1]))

# Jitter buffer: format byte, then packets in order, reordered and retransmitted as RTX.
def jitter_packets(format_byte, frames, order):
    out = bytearray([format_byte])
    flat = [(f, p, i == len(frame) - 1) for f, frame in enumerate(frames) for i, p in enumerate(frame)]
    previous = -1
    for index in order(len(flat)):
        frame, payload, marker = flat[index]
        new_frame = index == 0 or flat[index - 1][0] != frame
        step = (index - previous) & 0xFF
        previous = index
        out += bytes([(1 if marker else 0) | (4 if new_frame else 0), step, 20, min(len(payload), 255)]) + payload[:255]
    return out

in_order = lambda n: range(n)
swapped = lambda n: [i ^ 1 if (i ^ 1) < n else i for i in range(n)]
seed("JitterBuffer", "h264-in-order", jitter_packets(0, h264[:6], in_order))
seed("JitterBuffer", "h264-reordered", jitter_packets(0, h264[:6], swapped))
seed("JitterBuffer", "vp8-in-order", jitter_packets(1, vp8[:6], in_order))
seed("JitterBuffer", "opus-reordered", jitter_packets(2, [[p] for p in opus], swapped))

# SRTP: profile byte (the order of SRTPProfile.allCases), master key and salt, packet.
profiles = {"AES_CM_128_HMAC_SHA1_80": 0, "AES_CM_128_HMAC_SHA1_32": 1, "AEAD_AES_128_GCM": 2, "AEAD_AES_256_GCM": 3}
srtp = json.load(open(os.path.join(vectors, "srtp", "srtp_vectors.json")))
for name, entry in srtp.items():
    if not isinstance(entry, dict) or entry.get("profile") not in profiles:
        continue
    key = bytes([profiles[entry["profile"]]]) + bytes.fromhex(entry["master_key"] + entry["master_salt"])
    for field in ("rtp_plaintext", "srtp_protected", "rtcp_plaintext", "srtcp_protected"):
        if field in entry:
            seed("SRTP", f"{name}-{field}", key + bytes.fromhex(entry[field]))

# SDP fixtures, and the candidate lines in them.
fixtures = os.path.join(root, "Tests", "MediaSDPTests", "Fixtures")
for name in sorted(os.listdir(fixtures)):
    if name.endswith(".sdp"):
        text = open(os.path.join(fixtures, name), "rb").read()
        seed("SDP", name[:-4], text[:4096])
        for line in text.splitlines():
            if line.startswith(b"a=candidate:"):
                seed("ICECandidate", hashlib.sha1(line).hexdigest()[:12], line[len(b"a="):])

# STUN: the byte arrays of the RFC 5769 vectors, and a ChannelData message.
source = open(os.path.join(root, "Tests", "MediaSTUNTests", "RFC5769Vectors.swift")).read()
for name, body in re.findall(r"static let (\w+): \[UInt8\] = \[(.*?)\]\n", source, re.S):
    data = [int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]{2})", re.sub(r"//[^\n]*", "", body))]
    if len(data) >= 20:
        seed("STUN", f"rfc5769-{name}", data)
seed("STUN", "channel-data", bytes([0x40, 0x00, 0x00, 0x05, 1, 2, 3, 4, 5, 0, 0, 0]))

# DCEP: an ACK and opens of each reliability.
def dcep_open(channel_type, parameter, label, protocol):
    return struct.pack(">BBHIHH", 3, channel_type, 256, parameter, len(label), len(protocol)) + label + protocol
seed("DCEP", "ack", b"\x02")
seed("DCEP", "open-reliable", dcep_open(0x00, 0, b"chat", b""))
seed("DCEP", "open-unordered-retransmits", dcep_open(0x81, 3, b"game", b"proto"))
seed("DCEP", "open-lifetime", dcep_open(0x02, 500, "\u00e9t\u00e9".encode(), b""))

# Files made with ffmpeg: a few tiny frames each.
def ffmpeg(target, name, arguments, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "out" + suffix)
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y"] + arguments + [path], check=True)
        seed(target, name, open(path, "rb").read())

video = ["-f", "lavfi", "-i", "testsrc=size=16x16:rate=10", "-frames:v", "3"]
ffmpeg("Y4M", "i420-16x16", video + ["-pix_fmt", "yuv420p"], ".y4m")
ffmpeg("Y4M", "i444-16x16", video[:4] + ["-frames:v", "1", "-pix_fmt", "yuv444p"], ".y4m")
ffmpeg("IVF", "vp8-16x16", video + ["-c:v", "libvpx", "-b:v", "20k"], ".ivf")
ffmpeg("AnnexB", "h264-16x16", video + ["-pix_fmt", "yuv420p", "-c:v", "libx264", "-profile:v", "baseline"], ".h264")
audio = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=8000:duration=0.05"]
ffmpeg("WAV", "s16-mono", audio + ["-c:a", "pcm_s16le"], ".wav")
ffmpeg("WAV", "f32-stereo", audio + ["-ac", "2", "-c:a", "pcm_f32le"], ".wav")
ffmpeg("OggOpus", "mono", ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.06", "-c:a", "libopus", "-b:a", "6k"], ".opus")
ffmpeg("JPEGHeader", "420-16x16", video[:4] + ["-frames:v", "1", "-pix_fmt", "yuvj420p"], ".jpg")
ffmpeg("JPEGHeader", "422-16x16", video[:4] + ["-frames:v", "1", "-pix_fmt", "yuvj422p"], ".jpg")

# HTTP responses as WHIP/WHEP endpoints send them (RFC 9725 §4.2): a 201 with its answer by
# Content-Length and chunked, a DELETE's 200 and 204, a refusal read to the close, an interim 100.
answer = b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n"
created = b"HTTP/1.1 201 Created\r\nContent-Type: application/sdp\r\nLocation: /whip/cam/5f2c\r\nETag: \"1\"\r\n"
seed("HTTPResponse", "created-sized", created + b"Content-Length: %d\r\n\r\n" % len(answer) + answer)
seed("HTTPResponse", "created-chunked", created + b"Transfer-Encoding: chunked\r\n\r\n%x;ext=1\r\n" % 40 + answer[:40]
     + b"\r\n%x\r\n" % (len(answer) - 40) + answer[40:] + b"\r\n0\r\nExpires: 0\r\n\r\n")
seed("HTTPResponse", "no-content", b"HTTP/1.1 204 No Content\r\nDate: Thu, 26 Nov 2026 04:00:00 GMT\r\n\r\n")
seed("HTTPResponse", "deleted", b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
seed("HTTPResponse", "refused-to-close", b"HTTP/1.0 503 Service Unavailable\nRetry-After: 5\n\nbusy")
seed("HTTPResponse", "interim-then-created", b"HTTP/1.1 100 Continue\r\n\r\n" + created + b"Link: <stun:stun.example.net>;\r\n rel=\"ice-server\"\r\nContent-Length: 3, 3\r\n\r\nv=0")
