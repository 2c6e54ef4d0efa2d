#!/usr/bin/env python3
"""A command-line WebRTC peer on aiortc, for Sluice's interop tests (issue 12, point 8).

Modes:
  offer          print the offer SDP (after ICE gathering) on stdout, then an empty line;
                 read the answer SDP from stdin (up to an empty line or EOF)
  answer         read an offer SDP from stdin (up to an empty line or EOF); print the answer
                 SDP on stdout, then an empty line
  whip URL       POST the offer (application/sdp) to URL, expect 201 + answer + Location;
                 sends by default; DELETE the Location at the end
  whep URL       the same, receiving video and audio by default

At the end one JSON line of results is printed on stdout (the last line), and the exit code is
0 on success, 1 on failure, 2 on timeout. Logs go to stderr. Run through tools/peers/.venv
(tools/peers/setup makes it). See tools/peers/README.md.
"""

import argparse
import asyncio
import fractions
import json
import logging
import math
import os
import struct
import sys
import threading
import time
import wave

import aioice.ice
from aiortc import (
    MediaStreamTrack,
    RTCConfiguration,
    RTCIceServer,
    RTCPeerConnection,
    RTCRtpSender,
    RTCSessionDescription,
)
from aiortc.rtcconfiguration import RTCBundlePolicy, RTCIceTransportPolicy
from aiortc.sdp import candidate_from_sdp
import av

from signaling import http_request, post_offer, print_sdp, read_sdp_from_stdin

VIDEO_CLOCK = 90000
AUDIO_RATE = 48000
AUDIO_PTIME = 0.020

log = logging.getLogger("aiortc_peer")


# --- host candidates -----------------------------------------------------------------------

def patch_host_addresses(interfaces):
    """aioice leaves 127.0.0.1 out when gathering host candidates; the tests run on loopback
    only, so replace its lookup (aioice.ice.get_host_addresses, called by
    Connection.gather_candidates in aioice 0.13) to return 127.0.0.1, alone or first."""
    original = aioice.ice.get_host_addresses

    def loopback_only(use_ipv4, use_ipv6):
        return ["127.0.0.1"] if use_ipv4 else []

    def loopback_and_all(use_ipv4, use_ipv6):
        found = original(use_ipv4=use_ipv4, use_ipv6=use_ipv6)
        return (["127.0.0.1"] if use_ipv4 else []) + found

    aioice.ice.get_host_addresses = loopback_only if interfaces == "loopback" else loopback_and_all


# --- plane helpers (no numpy: PyAV planes may have padded rows) ----------------------------

def plane_write(plane, data, width, height):
    stride = plane.line_size
    if stride == width:
        plane.update(data)
        return
    pad = bytes(stride - width)
    plane.update(b"".join(data[r * width:(r + 1) * width] + pad for r in range(height)))


def plane_read(plane, width, height):
    raw = bytes(plane)
    stride = plane.line_size
    if stride == width:
        return raw[: width * height]
    return b"".join(raw[r * stride:r * stride + width] for r in range(height))


def frame_to_i420(frame):
    """The I420 bytes of a decoded video frame."""
    if frame.format.name != "yuv420p":
        frame = frame.reformat(format="yuv420p")
    w, h = frame.width, frame.height
    cw, ch = (w + 1) // 2, (h + 1) // 2
    return (plane_read(frame.planes[0], w, h) + plane_read(frame.planes[1], cw, ch)
            + plane_read(frame.planes[2], cw, ch))


def i420_to_frame(data, width, height):
    frame = av.VideoFrame(width, height, "yuv420p")
    cw, ch = (width + 1) // 2, (height + 1) // 2
    ysize, csize = width * height, cw * ch
    plane_write(frame.planes[0], data[:ysize], width, height)
    plane_write(frame.planes[1], data[ysize:ysize + csize], cw, ch)
    plane_write(frame.planes[2], data[ysize + csize:ysize + 2 * csize], cw, ch)
    return frame


# --dc-modes: the data channels opened, one per reliability mode (W3C RTCDataChannelInit).
DC_MODES = {
    "reliable": {},
    "unordered": {"ordered": False},
    "rexmit0": {"ordered": False, "maxRetransmits": 0},
    "lifetime500": {"maxPacketLifeTime": 500},
}
# The --dc-modes channel the peer closes once its binary greeting has come back.
DC_CLOSED_BY_PEER = "unordered"


# --- sources -------------------------------------------------------------------------------

class Pacer:
    """Paces frames to the wall clock from the first one sent."""

    def __init__(self, interval):
        self.interval = interval
        self.start = None
        self.count = 0

    async def wait(self):
        if self.start is None:
            self.start = time.monotonic()
        else:
            delay = self.start + self.count * self.interval - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        n = self.count
        self.count += 1
        return n


class Y4MReader:
    """Reads I420 frames from a Y4M file (C420*/no C tag), looping at the end."""

    def __init__(self, path):
        self.file = open(path, "rb")
        header = self.file.readline().decode("ascii").split()
        if not header or header[0] != "YUV4MPEG2":
            raise ValueError(f"{path}: not a YUV4MPEG2 file")
        self.width = self.height = 0
        self.fps = 30.0
        for token in header[1:]:
            tag, value = token[0], token[1:]
            if tag == "W":
                self.width = int(value)
            elif tag == "H":
                self.height = int(value)
            elif tag == "F":
                num, den = value.split(":")
                self.fps = int(num) / int(den)
            elif tag == "C" and not value.startswith("420"):
                raise ValueError(f"{path}: colour space C{value} is not 4:2:0")
        self.data_start = self.file.tell()
        self.frame_size = self.width * self.height + 2 * ((self.width + 1) // 2) * ((self.height + 1) // 2)

    def next_frame(self):
        for _ in range(2):
            line = self.file.readline()
            if line.startswith(b"FRAME"):
                data = self.file.read(self.frame_size)
                if len(data) == self.frame_size:
                    return data
            self.file.seek(self.data_start)
        raise ValueError("Y4M file has no complete frame")


class PatternSource:
    """A synthetic moving pattern: diagonal luma ramp scrolling, chroma bars, 640x480."""

    def __init__(self, width=640, height=480, fps=30.0):
        self.width, self.height, self.fps = width, height, fps
        self.ramp = bytes((i * 2) & 0xFF for i in range(width * 2 + height * 2))
        cw, ch = (width + 1) // 2, (height + 1) // 2
        self.u = b"".join(bytes(((x * 8 // cw) * 32) & 0xFF for x in range(cw)) for _ in range(ch))
        self.v = bytes(reversed(self.u))
        self.n = 0

    def next_frame(self):
        shift = (self.n * 4) % (self.width * 2)
        self.n += 1
        ramp = self.ramp
        w = self.width
        y = b"".join(ramp[shift + r:shift + r + w] for r in range(self.height))
        return y + self.u + self.v


class VideoSourceTrack(MediaStreamTrack):
    kind = "video"

    def __init__(self, source):
        super().__init__()
        self.source = source
        self.pacer = Pacer(1.0 / source.fps)
        self.frames_sent = 0

    async def recv(self):
        n = await self.pacer.wait()
        frame = i420_to_frame(self.source.next_frame(), self.source.width, self.source.height)
        frame.pts = int(n * VIDEO_CLOCK / self.source.fps)
        frame.time_base = fractions.Fraction(1, VIDEO_CLOCK)
        self.frames_sent += 1
        return frame


class ToneTrack(MediaStreamTrack):
    """A 440 Hz sine at -12 dBFS, mono 48 kHz, 20 ms frames."""

    kind = "audio"

    def __init__(self, frequency=440.0):
        super().__init__()
        amplitude = 0.25 * 32767
        # one second holds a whole number of cycles of 440 Hz, so it loops without a click
        self.second = b"".join(struct.pack("<h", int(amplitude * math.sin(2 * math.pi * frequency * i / AUDIO_RATE)))
                               for i in range(AUDIO_RATE))
        self.samples = int(AUDIO_RATE * AUDIO_PTIME)
        self.pacer = Pacer(AUDIO_PTIME)
        self.frames_sent = 0

    async def recv(self):
        n = await self.pacer.wait()
        offset = (n * self.samples) % AUDIO_RATE
        frame = av.AudioFrame(format="s16", layout="mono", samples=self.samples)
        frame.planes[0].update(self.second[offset * 2:(offset + self.samples) * 2])
        frame.sample_rate = AUDIO_RATE
        frame.pts = n * self.samples
        frame.time_base = fractions.Fraction(1, AUDIO_RATE)
        self.frames_sent += 1
        return frame


# --- sinks ---------------------------------------------------------------------------------

class Y4MWriter:
    def __init__(self, path):
        self.path = path
        self.file = None
        self.size = None

    def write(self, frame):
        if self.file is None:
            self.size = (frame.width, frame.height)
            self.file = open(self.path, "wb")
            self.file.write(f"YUV4MPEG2 W{frame.width} H{frame.height} F30:1 Ip A1:1 C420jpeg\n".encode())
        if (frame.width, frame.height) != self.size:
            frame = frame.reformat(width=self.size[0], height=self.size[1], format="yuv420p")
        self.file.write(b"FRAME\n" + frame_to_i420(frame))

    def close(self):
        if self.file:
            self.file.close()


class WAVWriter:
    def __init__(self, path):
        self.path = path
        self.file = None

    def write(self, frame):
        if frame.format.name != "s16":
            frame = av.AudioResampler(format="s16", layout=frame.layout.name, rate=frame.sample_rate).resample(frame)[0]
        channels = len(frame.layout.channels)
        if self.file is None:
            self.file = wave.open(self.path, "wb")
            self.file.setnchannels(channels)
            self.file.setsampwidth(2)
            self.file.setframerate(frame.sample_rate)
        self.file.writeframes(bytes(frame.planes[0])[: frame.samples * channels * 2])

    def close(self):
        if self.file:
            self.file.close()


class Receiver:
    """Consumes one remote track, counting frames (and recording them when asked)."""

    def __init__(self, track, writer):
        self.track = track
        self.writer = writer
        self.frames = 0
        self.first_at = None
        self.width = self.height = None
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        try:
            while True:
                frame = await self.track.recv()
                self.frames += 1
                if self.first_at is None:
                    self.first_at = time.monotonic()
                if self.track.kind == "video":
                    self.width, self.height = frame.width, frame.height
                if self.writer:
                    self.writer.write(frame)
        except Exception:  # MediaStreamError at the end of the track
            pass

    def result(self):
        out = {"kind": self.track.kind, "frames": self.frames}
        if self.track.kind == "video":
            out.update(width=self.width, height=self.height)
        return out


# --- SDP helpers ---------------------------------------------------------------------------

def negotiated_codecs(answer_sdp):
    """The first codec of each m-section of the answer, which is what is used (JSEP 5.3.1)."""
    codecs = []
    kind = pt = None
    rtpmap = {}
    sections = []
    for line in answer_sdp.splitlines():
        if line.startswith("m="):
            if kind is not None:
                sections.append((kind, pt, rtpmap))
            parts = line[2:].split()
            kind, pt, rtpmap = parts[0], (parts[3] if len(parts) > 3 else None), {}
        elif line.startswith("a=rtpmap:") and kind is not None:
            num, name = line[len("a=rtpmap:"):].split(" ", 1)
            rtpmap[num] = name.split("/")[0]
    if kind is not None:
        sections.append((kind, pt, rtpmap))
    for kind, pt, rtpmap in sections:
        if kind in ("audio", "video"):
            codecs.append({"kind": kind, "codec": rtpmap.get(pt, pt)})
    return codecs








def candidates_by_section(sdp):
    """[(mid, [candidate attribute values])] for each m-section, in order."""
    sections = []
    for line in sdp.splitlines():
        if line.startswith("m="):
            sections.append([None, []])
        elif sections and line.startswith("a=mid:"):
            sections[-1][0] = line[len("a=mid:"):].strip()
        elif sections and line.startswith("a=candidate:"):
            sections[-1][1].append(line[len("a="):].strip())
    return sections


async def add_bundled_candidates(pc, sdp):
    """aiortc 1.16 keeps, for a transport shared through BUNDLE, only the candidates of the LAST
    m-section that uses it; Chromium puts its candidates in the first one only, so aiortc would
    see none and rely on peer-reflexive ones (and a relay-only call, needing permissions for
    the remote addresses, would fail). Hand the first m-section's candidates to aiortc again."""
    sections = candidates_by_section(sdp)
    if len(sections) < 2 or sections[-1][1] or not sections[0][1]:
        return
    mid, lines = sections[0]
    for line in lines:
        candidate = candidate_from_sdp(line.split(":", 1)[1])
        candidate.sdpMid = mid
        candidate.sdpMLineIndex = 0
        await pc.addIceCandidate(candidate)
    log.info("added %d candidates of the first m-section (mid %s) again", len(lines), mid)


async def read_sdp_in_thread():
    """Reads an SDP from stdin in a daemon thread, so that a timeout can end the process while
    stdin stays open (a default-executor thread would keep asyncio.run from returning)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def deliver(setter, value):
        if not future.done():
            setter(value)

    def reader():
        try:
            sdp = read_sdp_from_stdin()
            loop.call_soon_threadsafe(deliver, future.set_result, sdp)
        except Exception as e:
            try:
                loop.call_soon_threadsafe(deliver, future.set_exception, e)
            except RuntimeError:  # the loop is closed already
                pass

    threading.Thread(target=reader, daemon=True).start()
    return await future


# --- the peer ------------------------------------------------------------------------------

def codec_preferences(kind, codec):
    wanted = {"vp8": "video/VP8", "h264": "video/H264", "opus": "audio/opus"}[codec]
    caps = RTCRtpSender.getCapabilities(kind).codecs
    chosen = [c for c in caps if c.mimeType.lower() == wanted.lower()]
    rtx = [c for c in caps if c.mimeType.lower() == f"{kind}/rtx"]
    return chosen + rtx


class Peer:
    def __init__(self, args):
        self.args = args
        servers = []
        if args.ice_server:
            servers.append(RTCIceServer(urls=args.ice_server, username=args.ice_username,
                                        credential=args.ice_credential))
        # iceServers=[] explicitly: aiortc's default is a public STUN server
        config = RTCConfiguration(
            iceServers=servers,
            iceTransportPolicy=RTCIceTransportPolicy.RELAY if args.relay_only else RTCIceTransportPolicy.ALL,
            bundlePolicy=RTCBundlePolicy.MAX_BUNDLE,
        )
        self.pc = RTCPeerConnection(config)
        self.started = time.monotonic()
        self.states = {"connection": [], "ice": [], "gathering": []}
        self.connected_at = None
        self.connected_transport = (None, None)
        self.failed = asyncio.Event()
        self.receivers = []
        self.video_track = self.audio_track = None
        self.channel = None
        self.closing = False
        self.channels = {}  # label -> what that channel was and what came in on it
        self.messages_received = 0
        self.bytes_received = 0
        self.video_writer = Y4MWriter(args.record_video) if args.record_video else None
        self.audio_writer = WAVWriter(args.record_audio) if args.record_audio else None
        self.answer_sdp = None
        self.location = None
        self.error = None

        @self.pc.on("connectionstatechange")
        def on_connection_state():
            state = self.pc.connectionState
            self.states["connection"].append(state)
            log.info("connection state %s", state)
            if state == "connected" and self.connected_at is None:
                self.connected_at = time.monotonic()
                self.connected_transport = self.dtls_and_pair()
            if state == "failed":
                self.failed.set()

        @self.pc.on("iceconnectionstatechange")
        def on_ice_state():
            self.states["ice"].append(self.pc.iceConnectionState)

        @self.pc.on("icegatheringstatechange")
        def on_gathering_state():
            self.states["gathering"].append(self.pc.iceGatheringState)

        @self.pc.on("track")
        def on_track(track):
            log.info("remote %s track", track.kind)
            writer = self.video_writer if track.kind == "video" else self.audio_writer
            self.receivers.append(Receiver(track, writer))

        @self.pc.on("datachannel")
        def on_datachannel(channel):
            self.attach_channel(channel)

    def attach_channel(self, channel, greet=False):
        self.channel = channel
        seen = self.channels[channel.label] = {
            "ordered": channel.ordered, "max_retransmits": channel.maxRetransmits,
            "max_packet_lifetime": channel.maxPacketLifeTime, "protocol": channel.protocol,
            "texts": 0, "binaries": 0, "bytes": 0, "closed": False}

        @channel.on("message")
        def on_message(message):
            self.messages_received += 1
            size = len(message.encode() if isinstance(message, str) else message)
            self.bytes_received += size
            seen["texts" if isinstance(message, str) else "binaries"] += 1
            seen["bytes"] += size
            if self.args.dc_echo:
                channel.send(message)
            elif greet and channel.label == DC_CLOSED_BY_PEER and not isinstance(message, str):
                channel.close()  # --dc-modes: this side closes one channel once its greeting came back

        @channel.on("close")
        def on_close():
            seen["closed"] = seen["closed"] or not self.closing  # closed during the call, not by its end

        if greet:
            @channel.on("open")
            def on_open():
                channel.send("hello " + channel.label)
                channel.send(bytes(range(256)) * 4)

    def open_reliability_channels(self):
        """--dc-modes: one channel per reliability mode, each greeting with a text and a binary message."""
        for label, options in DC_MODES.items():
            self.attach_channel(self.pc.createDataChannel(label, **options), greet=True)

    def make_tracks(self):
        a = self.args
        if a.send_video:
            source = PatternSource() if a.send_video == "pattern" else Y4MReader(a.send_video)
            self.video_track = VideoSourceTrack(source)
        if a.send_audio:
            self.audio_track = ToneTrack()

    def add_offer_transceivers(self):
        a = self.args
        for kind, track, codec in (("video", self.video_track, a.codec), ("audio", self.audio_track, "opus")):
            receive = kind in a.recv
            if track is None and not receive:
                continue
            direction = "sendrecv" if track and receive else ("sendonly" if track else "recvonly")
            transceiver = self.pc.addTransceiver(track or kind, direction=direction)
            transceiver.setCodecPreferences(codec_preferences(kind, codec))
        if a.datachannel:
            self.attach_channel(self.pc.createDataChannel("sluice"))
        if a.dc_modes:
            self.open_reliability_channels()

    def add_answer_tracks(self):
        a = self.args
        for track in (self.video_track, self.audio_track):
            if track is not None:
                self.pc.addTrack(track)
        for transceiver in self.pc.getTransceivers():
            if transceiver.kind == "video":
                transceiver.setCodecPreferences(codec_preferences("video", a.codec))

    async def run(self):
        a = self.args
        self.make_tracks()
        if a.mode == "answer":
            offer = await read_sdp_in_thread()
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
            await add_bundled_candidates(self.pc, offer)
            self.add_answer_tracks()
            await self.pc.setLocalDescription(await self.pc.createAnswer())
            self.answer_sdp = self.pc.localDescription.sdp
            if a.save_local:
                open(a.save_local, "w").write(self.answer_sdp)
            print_sdp(self.answer_sdp)
        else:
            self.add_offer_transceivers()
            await self.pc.setLocalDescription(await self.pc.createOffer())
            offer = self.pc.localDescription.sdp
            if a.save_local:
                open(a.save_local, "w").write(offer)
            if a.mode == "offer":
                print_sdp(offer)
                answer = await read_sdp_in_thread()
            else:
                answer = await self.post_offer(offer)
            self.answer_sdp = answer
            await self.pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
            await add_bundled_candidates(self.pc, answer)
        await self.wait_for_media()
        await asyncio.sleep(self.args.linger)

    async def post_offer(self, offer):
        answer, self.location = await asyncio.get_running_loop().run_in_executor(
            None, post_offer, self.args.url, offer, self.args.mode)
        if not self.location:
            log.warning("no Location header in the 201 response")
        return answer

    async def wait_for_media(self):
        a = self.args
        last_message = 0.0
        while True:
            if self.failed.is_set():
                raise RuntimeError("connection failed")
            if self.connected_at is not None and self.pc.connectionState == "closed":
                # the other side ended the call: fine once this side has had its media
                if self.enough_frames() and self.enough_sent():
                    return
                raise RuntimeError("connection closed by the remote peer before enough media")
            now = time.monotonic()
            if self.connected_at is not None:
                if self.channel is not None and self.channel.readyState == "open" and now - last_message >= 0.5:
                    self.channel.send(f"ping {now:.3f}")
                    last_message = now
                if now - self.connected_at >= a.duration and self.enough_frames() and self.messages_received >= a.min_messages:
                    return
            await asyncio.sleep(0.05)

    def expected_kinds(self):
        a = self.args
        if a.mode in ("answer", "whip") and not a.expect:
            return {r.track.kind for r in self.receivers}
        return set(a.expect.split(",")) if a.expect else set(a.recv)

    def enough_frames(self):
        for kind in self.expected_kinds():
            counts = [r.frames for r in self.receivers if r.track.kind == kind]
            if not counts or min(counts) < self.args.min_frames:
                return False
        return True

    def enough_sent(self):
        return all(t.frames_sent >= self.args.min_frames for t in (self.video_track, self.audio_track) if t)

    def dtls_and_pair(self):
        dtls_state = None
        pair = None
        transports = [t.receiver.transport for t in self.pc.getTransceivers()]
        if self.pc.sctp is not None:
            transports.append(self.pc.sctp.transport)
        for transport in transports:
            if transport is None:
                continue
            dtls_state = transport.state
            connection = getattr(transport.transport, "_connection", None)
            nominated = getattr(connection, "_nominated", {}) if connection else {}
            for candidate_pair in nominated.values():
                pair = {
                    "local": f"{candidate_pair.local_candidate.type} {candidate_pair.local_candidate.host}:{candidate_pair.local_candidate.port}",
                    "remote": f"{candidate_pair.remote_candidate.type} {candidate_pair.remote_candidate.host}:{candidate_pair.remote_candidate.port}",
                }
            break
        return dtls_state, pair

    async def results(self, ok, error):
        stats = {"rtp_packets_received": 0, "rtp_packets_sent": 0, "rtp_bytes_sent": 0}
        try:
            report = await self.pc.getStats()
            for s in report.values():
                if s.type == "inbound-rtp":
                    stats["rtp_packets_received"] += s.packetsReceived
                elif s.type == "outbound-rtp":
                    stats["rtp_packets_sent"] += s.packetsSent
                    stats["rtp_bytes_sent"] += s.bytesSent
                elif s.type == "transport" and s.bytesReceived:
                    # one transport with BUNDLE; what aiortc counts is SRTP/SRTCP/DTLS datagrams
                    stats["transport_bytes_received"] = s.bytesReceived
                    stats["transport_bytes_sent"] = s.bytesSent
        except Exception as e:  # stats are best effort
            stats["stats_error"] = str(e)
        dtls_state, pair = self.dtls_and_pair()
        if pair is None:  # closed by the other side already: what was seen when connected
            dtls_state, pair = self.connected_transport
        connection_states = self.states["connection"]
        return {
            "peer": "aiortc",
            "mode": self.args.mode,
            "ok": ok,
            "error": error,
            "connection_state": self.pc.connectionState,
            "reached_connected": "connected" in connection_states,
            "connection_states": connection_states,
            "ice_states": self.states["ice"],
            "dtls_state": dtls_state,
            "selected_pair": pair,
            "codecs": negotiated_codecs(self.answer_sdp) if self.answer_sdp else [],
            "received": [r.result() for r in self.receivers],
            "sent": {k: t.frames_sent for k, t in (("video", self.video_track), ("audio", self.audio_track)) if t},
            "datachannel_messages_received": self.messages_received if self.channel else None,
            "datachannel_bytes_received": self.bytes_received if self.channel else None,
            "datachannels": self.channels,
            "connect_seconds": round(self.connected_at - self.started, 3) if self.connected_at else None,
            "elapsed_seconds": round(time.monotonic() - self.started, 3),
            **stats,
        }

    async def close(self):
        if self.location:
            status, _, _ = await asyncio.get_running_loop().run_in_executor(
                None, lambda: http_request("DELETE", self.location))
            log.info("DELETE %s -> %s", self.location, status)
        for r in self.receivers:
            r.task.cancel()
        self.closing = True
        await self.pc.close()
        for writer in (self.video_writer, self.audio_writer):
            if writer:
                writer.close()


async def main_async(args):
    patch_host_addresses(args.interfaces)
    peer = Peer(args)
    ok, error, code = False, None, 1
    try:
        await asyncio.wait_for(peer.run(), timeout=args.timeout)
        ok, code = True, 0
    except asyncio.TimeoutError:
        error, code = "timeout", 2
    except Exception as e:
        error = f"{type(e).__name__}: {e}"
    result = await peer.results(ok, error)
    try:
        await asyncio.wait_for(peer.close(), timeout=5)
    except Exception as e:
        log.warning("close: %s", e)
    line = json.dumps(result)
    print(line, flush=True)
    if args.result:
        with open(args.result, "w") as f:
            f.write(line + "\n")
    return code


def parse_args(argv):
    p = argparse.ArgumentParser(description="aiortc WebRTC peer for Sluice's interop tests")
    p.add_argument("mode", choices=["offer", "answer", "whip", "whep"])
    p.add_argument("url", nargs="?", help="the WHIP/WHEP endpoint (whip and whep modes)")
    p.add_argument("--timeout", type=float, default=30.0, help="give up after this many seconds (exit 2)")
    p.add_argument("--duration", type=float, default=3.0, help="seconds of media after connected")
    p.add_argument("--linger", type=float, default=1.0,
                   help="seconds to keep the call up after success, so the other side can finish too")
    p.add_argument("--min-frames", type=int, default=10, help="frames needed on every expected received track")
    p.add_argument("--min-messages", type=int, default=0,
                   help="data channel messages received needed before the call ends (with --datachannel: the "
                        "echoes of its pings, one every 0.5 s), so that a slow start does not end it short")
    p.add_argument("--send-video", metavar="FILE.y4m|pattern")
    p.add_argument("--codec", choices=["vp8", "h264"], default="vp8")
    p.add_argument("--send-audio", choices=["tone"])
    p.add_argument("--recv", default=None, help="kinds to receive when offering: video,audio (default: none for "
                   "offer/whip, video,audio for whep)")
    p.add_argument("--expect", help="kinds that must deliver --min-frames (default: the received kinds)")
    p.add_argument("--datachannel", action="store_true", help="offer a data channel and ping on it")
    p.add_argument("--dc-modes", action="store_true",
                   help="offer one data channel per reliability mode (" + ", ".join(DC_MODES) + "), each sending "
                   "a text and a 1 KiB binary message when open")
    p.add_argument("--dc-echo", action="store_true", help="send every data channel message back as it came")
    p.add_argument("--record-video", metavar="OUT.y4m")
    p.add_argument("--record-audio", metavar="OUT.wav")
    p.add_argument("--relay-only", action="store_true")
    p.add_argument("--ice-server", metavar="turn:HOST:PORT|stun:HOST:PORT")
    p.add_argument("--ice-username")
    p.add_argument("--ice-credential")
    p.add_argument("--interfaces", choices=["loopback", "all"], default="loopback",
                   help="host candidates from 127.0.0.1 only (default) or also every interface")
    p.add_argument("--save-local", metavar="FILE", help="also write the local SDP to FILE")
    p.add_argument("--result", metavar="FILE", help="also write the JSON result line to FILE")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.mode in ("whip", "whep") and not args.url:
        p.error(f"{args.mode} needs a URL")
    if args.recv is None:
        args.recv = "video,audio" if args.mode == "whep" else ""
    args.recv = [k for k in args.recv.split(",") if k]
    return args


def main():
    args = parse_args(sys.argv[1:])
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s aiortc_peer %(levelname)s %(message)s")
    if not args.verbose:
        for name in ("aioice", "aiortc"):
            logging.getLogger(name).setLevel(logging.WARNING)
    code = asyncio.run(main_async(args))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no thread left reading stdin may keep the process alive


if __name__ == "__main__":
    main()
