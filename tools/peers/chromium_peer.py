#!/usr/bin/env python3
"""Headless Chromium as a WebRTC peer for Sluice's interop tests, driven by Selenium.

Debian's chromium (/usr/lib/chromium/chromium) and chromium-driver (/usr/bin/chromedriver) are
used as installed: Selenium is given both paths and never downloads anything. The page runs on
http://127.0.0.1:<port>/ served by this script; the SDP exchange goes through this script.

Modes (as tools/peers/aiortc_peer.py):
  offer          print Chromium's offer (after ICE gathering) then an empty line; read the
                 answer from stdin (up to an empty line or EOF)
  answer         read an offer from stdin; print Chromium's answer then an empty line
  whep URL       receive: recvonly video and audio; POST the offer (application/sdp) to URL,
                 expect 201 + answer + Location; DELETE the Location at the end
  whip URL       send the fake camera and microphone (--codec picks the video codec)

By default the WHIP/WHEP HTTP requests are made by this script (no CORS needed on the
server); --fetch-in-page makes them from the page with fetch(), as a web app would (the
server must then answer CORS preflights).

At the end one JSON line of results (from getStats) is printed on stdout, and the exit code
is 0 on success, 1 on failure, 2 on timeout. Logs go to stderr.
"""

import argparse
import http.server
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time

os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never reach the network

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

from signaling import http_request, post_offer, print_sdp, read_sdp_from_stdin  # noqa: E402

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required", "--allow-loopback-in-peer-connection",
    # host candidates as 127.0.0.1, not mDNS names (*.local) that a test peer would have to resolve
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--metrics-recording-only",
]

log = logging.getLogger("chromium_peer")

PAGE = r"""<!doctype html>
<html><head><meta charset="utf-8"><title>sluice chromium peer</title></head>
<body><div id="media"></div>
<script>
"use strict";
const state = { pc: null, channel: null, channels: {}, messages: 0, bytes: 0, echo: false, log: [], connectedAt: null,
                startedAt: performance.now(), connectionStates: [], iceStates: [], location: null };
function note(text) { state.log.push(((performance.now() - state.startedAt) / 1000).toFixed(3) + " " + text); }

function newPeerConnection(o) {
  state.echo = !!o.dcEcho;
  const config = { iceServers: o.iceServers, bundlePolicy: "max-bundle", rtcpMuxPolicy: "require" };
  if (o.relayOnly) config.iceTransportPolicy = "relay";
  const pc = new RTCPeerConnection(config);
  state.pc = pc;
  pc.onconnectionstatechange = () => {
    state.connectionStates.push(pc.connectionState); note("connection " + pc.connectionState);
    if (pc.connectionState === "connected" && state.connectedAt === null) state.connectedAt = performance.now();
  };
  pc.oniceconnectionstatechange = () => state.iceStates.push(pc.iceConnectionState);
  pc.ontrack = (event) => {
    note("track " + event.track.kind);
    const element = document.createElement(event.track.kind);
    element.autoplay = true; element.muted = true; element.playsInline = true;
    element.srcObject = new MediaStream([event.track]);
    document.getElementById("media").appendChild(element);
  };
  pc.ondatachannel = (event) => attachChannel(event.channel);
  return pc;
}

// --dc-modes: one channel per reliability mode (RTCDataChannelInit), as the aiortc peer opens them.
const DC_MODES = { reliable: {}, unordered: { ordered: false }, rexmit0: { ordered: false, maxRetransmits: 0 },
                   lifetime500: { maxPacketLifeTime: 500 } };

function attachChannel(channel, greet) {
  state.channel = channel;
  channel.binaryType = "arraybuffer";
  const seen = state.channels[channel.label] = {
    ordered: channel.ordered, max_retransmits: channel.maxRetransmits, max_packet_lifetime: channel.maxPacketLifeTime,
    protocol: channel.protocol, texts: 0, binaries: 0, bytes: 0, closed: false };
  channel.onclose = () => { seen.closed = true; };
  channel.onmessage = (event) => {
    const size = typeof event.data === "string" ? new TextEncoder().encode(event.data).length : event.data.byteLength;
    state.messages += 1;
    state.bytes += size;
    seen[typeof event.data === "string" ? "texts" : "binaries"] += 1;
    seen.bytes += size;
    if (state.echo) channel.send(event.data);
    // --dc-modes: this side closes one channel once its binary greeting has come back.
    else if (greet && channel.label === "unordered" && typeof event.data !== "string") channel.close();
  };
  if (greet) {
    channel.onopen = () => {
      channel.send("hello " + channel.label);
      channel.send(new Uint8Array(1024).map((_, i) => i % 256));
    };
    return;
  }
  channel.onopen = () => {
    note("datachannel open");
    const timer = setInterval(() => {
      if (channel.readyState !== "open") { clearInterval(timer); return; }
      channel.send("ping " + performance.now().toFixed(0));
    }, 500);
  };
}

function preferCodec(transceiver, kind, codec) {
  if (!codec || !transceiver.setCodecPreferences) return;
  const caps = RTCRtpReceiver.getCapabilities(kind).codecs;
  const wanted = caps.filter(c => c.mimeType.toLowerCase() === (kind + "/" + codec).toLowerCase());
  const rest = caps.filter(c => ["rtx", "red", "ulpfec"].includes(c.mimeType.split("/")[1].toLowerCase()));
  if (wanted.length) transceiver.setCodecPreferences(wanted.concat(rest));
}

async function media(o) {
  const wantVideo = o.video === "send" || o.video === "sendrecv";
  const wantAudio = o.audio === "send" || o.audio === "sendrecv";
  if (!wantVideo && !wantAudio) return null;
  const video = wantVideo ? { width: o.width, height: o.height, frameRate: o.fps } : false;
  return navigator.mediaDevices.getUserMedia({ video, audio: wantAudio });
}

function gathered(pc, timeoutMs) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") { clearTimeout(timer); resolve(); }
    });
  });
}

const directionOf = { send: "sendonly", recv: "recvonly", sendrecv: "sendrecv" };

async function makeOffer(o) {
  const pc = newPeerConnection(o);
  const stream = await media(o);
  for (const kind of ["audio", "video"]) {
    const use = o[kind];
    if (!use) continue;
    const track = stream && stream.getTracks().find(t => t.kind === kind);
    const transceiver = use === "recv" ? pc.addTransceiver(kind, { direction: "recvonly" })
                                       : pc.addTransceiver(track, { direction: directionOf[use], streams: [stream] });
    if (kind === "video") preferCodec(transceiver, "video", o.codec);
  }
  if (o.datachannel) attachChannel(pc.createDataChannel("sluice"));
  if (o.dcModes) for (const [label, init] of Object.entries(DC_MODES)) attachChannel(pc.createDataChannel(label, init), true);
  await pc.setLocalDescription();
  await gathered(pc, o.gatherMs);
  return pc.localDescription.sdp;
}

async function acceptAnswer(sdp) { await state.pc.setRemoteDescription({ type: "answer", sdp }); }

// --restart-ice: a later offer with new ICE credentials (W3C restartIce), once the call runs.
async function restartOffer(o) {
  state.pc.restartIce();
  await state.pc.setLocalDescription();
  await gathered(state.pc, o.gatherMs);
  note("ice restart offered");
  return state.pc.localDescription.sdp;
}

async function makeAnswer(o, offer) {
  const pc = newPeerConnection(o);
  await pc.setRemoteDescription({ type: "offer", sdp: offer });
  const stream = await media(o);
  for (const transceiver of pc.getTransceivers()) {
    const kind = transceiver.receiver.track.kind;
    const use = o[kind];
    const track = stream && stream.getTracks().find(t => t.kind === kind);
    if (track && (use === "send" || use === "sendrecv")) {
      await transceiver.sender.replaceTrack(track);
      transceiver.sender.setStreams(stream);
      transceiver.direction = "sendrecv";
    }
    if (kind === "video") preferCodec(transceiver, "video", o.codec);
  }
  await pc.setLocalDescription();
  await gathered(pc, o.gatherMs);
  return pc.localDescription.sdp;
}

async function fetchAnswer(url, offer) {
  const response = await fetch(url, { method: "POST", headers: { "Content-Type": "application/sdp" }, body: offer });
  if (response.status !== 201) throw new Error("POST returned " + response.status + ": " + (await response.text()).slice(0, 200));
  const location = response.headers.get("Location");
  state.location = location ? new URL(location, url).toString() : null;
  return response.text();
}

async function endSession() {
  if (state.location) { try { await fetch(state.location, { method: "DELETE" }); } catch (e) { note("DELETE " + e); } }
}

async function results() {
  const pc = state.pc;
  const out = { connection_state: pc ? pc.connectionState : null, ice_state: pc ? pc.iceConnectionState : null,
                connection_states: state.connectionStates, ice_states: state.iceStates,
                dtls_state: null, selected_pair: null, inbound: [], outbound: [],
                datachannel_messages_received: state.channel ? state.messages : null,
                datachannel_bytes_received: state.channel ? state.bytes : null,
                datachannels: state.channels,
                connect_seconds: state.connectedAt === null ? null : +((state.connectedAt - state.startedAt) / 1000).toFixed(3),
                log: state.log };
  if (!pc) return out;
  const report = await pc.getStats();
  const byId = new Map(); report.forEach(s => byId.set(s.id, s));
  const codecOf = (s) => { const c = byId.get(s.codecId); return c ? c.mimeType.split("/")[1] : null; };
  const describe = (c) => c ? c.candidateType + " " + c.address + ":" + c.port : null;
  report.forEach(s => {
    if (s.type === "transport") {
      out.dtls_state = s.dtlsState;
      const pair = byId.get(s.selectedCandidatePairId);
      if (pair) out.selected_pair = { state: pair.state, nominated: pair.nominated,
        local: describe(byId.get(pair.localCandidateId)), remote: describe(byId.get(pair.remoteCandidateId)),
        bytes_sent: pair.bytesSent, bytes_received: pair.bytesReceived };
    } else if (s.type === "inbound-rtp") {
      out.inbound.push({ kind: s.kind, codec: codecOf(s), packets_received: s.packetsReceived, bytes_received: s.bytesReceived,
        packets_lost: s.packetsLost, frames_decoded: s.framesDecoded, frames_dropped: s.framesDropped,
        key_frames_decoded: s.keyFramesDecoded, frame_width: s.frameWidth, frame_height: s.frameHeight,
        decoder: s.decoderImplementation, total_samples_received: s.totalSamplesReceived,
        concealed_samples: s.concealedSamples });
    } else if (s.type === "outbound-rtp") {
      out.outbound.push({ kind: s.kind, codec: codecOf(s), packets_sent: s.packetsSent, bytes_sent: s.bytesSent,
        frames_encoded: s.framesEncoded, frame_width: s.frameWidth, frame_height: s.frameHeight,
        encoder: s.encoderImplementation });
    }
  });
  return out;
}

window.sluicePeer = { makeOffer, acceptAnswer, restartOffer, makeAnswer, fetchAnswer, endSession, results };
</script></body></html>
"""


def serve_page():
    """Serves PAGE on http://127.0.0.1:<free port>/ in a thread (a secure context, like https)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def loopback_candidates_only(sdp):
    """Drops a=candidate lines whose address is not loopback (127.0.0.0/8 or ::1): Chromium
    gathers on every interface, and the tests must send only to loopback addresses."""
    kept = []
    for line in sdp.split("\r\n"):
        if line.startswith("a=candidate:"):
            fields = line.split()
            address = fields[4] if len(fields) > 4 else ""
            if not (address.startswith("127.") or address == "::1"):
                continue
        kept.append(line)
    return "\r\n".join(kept)








class Timeout(Exception):
    pass


class ChromiumPeer:
    def __init__(self, args):
        self.args = args
        self.started = time.monotonic()
        self.deadline = self.started + args.timeout
        self.driver = None
        self.server = None
        self.profile = None
        self.location = None
        self.local_sdp = None
        self.remote_sdp = None
        self.reading_stdin = False
        self.hung = False  # a WebDriver call never returned: do not talk to the browser again

    def remaining(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Timeout()
        return left

    def start_browser(self):
        options = webdriver.ChromeOptions()
        options.binary_location = self.args.chromium
        self.profile = tempfile.mkdtemp(prefix="sluice-chromium-")
        for flag in CHROMIUM_FLAGS + [f"--user-data-dir={self.profile}"]:
            options.add_argument(flag)
        if self.args.fake_video:
            options.add_argument(f"--use-file-for-fake-video-capture={os.path.abspath(self.args.fake_video)}")
        if self.args.fake_audio:
            options.add_argument(f"--use-file-for-fake-audio-capture={os.path.abspath(self.args.fake_audio)}")
        service = Service(executable_path=self.args.chromedriver)
        self.driver = webdriver.Chrome(options=options, service=service)
        self.driver.set_script_timeout(max(5, self.args.timeout))
        self.server, page_url = serve_page()
        self.driver.get(page_url)

    def call(self, function, *arguments):
        """Calls window.sluicePeer.<function>(...) in the page and returns what its promise gives."""
        self.remaining()
        script = f"return window.sluicePeer.{function}(...arguments);"
        return self.driver.execute_script(script, *arguments)

    def page_options(self):
        a = self.args
        servers = []
        if a.ice_server:
            server = {"urls": [a.ice_server]}
            if a.ice_username:
                server.update(username=a.ice_username, credential=a.ice_credential or "")
            servers.append(server)
        return {"iceServers": servers, "relayOnly": a.relay_only, "video": a.video, "audio": a.audio,
                "codec": {"vp8": "VP8", "h264": "H264", "vp9": "VP9", "av1": "AV1"}.get(a.codec),
                "datachannel": a.datachannel, "dcModes": a.dc_modes, "dcEcho": a.dc_echo, "width": a.width, "height": a.height, "fps": a.fps,
                "gatherMs": 5000}

    def post_offer(self, offer):
        if self.args.fetch_in_page:
            return self.call("fetchAnswer", self.args.url, offer)
        answer, self.location = post_offer(self.args.url, offer, self.args.mode)
        return answer

    def run(self):
        a = self.args
        self.start_browser()
        options = self.page_options()
        if a.mode == "answer":
            self.remote_sdp = self.read_stdin()
            self.local_sdp = self.call("makeAnswer", options, self.remote_sdp)
            self.save_local()
            print_sdp(self.local_sdp)
        else:
            self.local_sdp = self.call("makeOffer", options)
            self.save_local()
            if a.mode == "offer":
                print_sdp(self.local_sdp)
                self.remote_sdp = self.read_stdin()
            else:
                self.remote_sdp = self.post_offer(self.local_sdp)
            self.call("acceptAnswer", self.remote_sdp)
            if a.restart_ice:
                self.restart_ice(options)
        self.wait_for_media()
        time.sleep(self.args.linger)

    def restart_ice(self, options):
        """Waits for media, then offers an ICE restart on stdout and takes the answer from stdin; the
        video frames decoded until then go in the results as frames_decoded_at_restart."""
        while True:
            self.remaining()
            results = self.call("results")
            if results["connection_state"] in ("failed", "closed"):
                raise RuntimeError(f"connection {results['connection_state']} before the ICE restart")
            if results["connect_seconds"] is not None and self.enough(results):
                break
            time.sleep(0.1)
        self.frames_at_restart = sum(s.get("frames_decoded") or 0 for s in results["inbound"] if s["kind"] == "video")
        offer = self.call("restartOffer", options)
        if not self.args.all_candidates:
            offer = loopback_candidates_only(offer)
        print_sdp(offer)
        self.restart_answer = self.read_stdin()
        self.call("acceptAnswer", self.restart_answer)
        self.started_after_restart = time.monotonic()

    def read_stdin(self):
        self.reading_stdin = True
        try:
            return read_sdp_from_stdin()
        finally:
            self.reading_stdin = False

    def save_local(self):
        if not self.args.all_candidates:
            self.local_sdp = loopback_candidates_only(self.local_sdp)
        if self.args.save_local:
            with open(self.args.save_local, "w") as f:
                f.write(self.local_sdp)

    def expected(self):
        a = self.args
        kinds = set()
        for kind in ("video", "audio"):
            if getattr(a, kind) in ("recv", "sendrecv"):
                kinds.add(kind)
        if a.expect == "none":
            return set()
        return set(a.expect.split(",")) if a.expect else kinds

    def enough(self, results):
        for kind in self.expected():
            streams = [s for s in results["inbound"] if s["kind"] == kind]
            if not streams:
                return False
            for s in streams:
                count = s.get("frames_decoded") if kind == "video" else s.get("packets_received")
                if (count or 0) < self.args.min_frames:
                    return False
        for s in results["outbound"]:
            if s["kind"] == "video" and (s.get("frames_encoded") or 0) < self.args.min_frames:
                return False
        return (results.get("datachannel_messages_received") or 0) >= self.args.min_messages

    def wait_for_media(self):
        while True:
            self.remaining()
            results = self.call("results")
            if results["connection_state"] == "closed" and self.enough(results):
                return  # the other side ended the call after this side had its media
            if results["connection_state"] in ("failed", "closed"):
                raise RuntimeError(f"connection {results['connection_state']}")
            if results["connect_seconds"] is not None:
                # After an ICE restart, --duration counts from the restart's answer.
                began = max(self.started + results["connect_seconds"], getattr(self, "started_after_restart", 0))
                since = time.monotonic() - began
                if since >= self.args.duration and self.enough(results):
                    return
            time.sleep(0.25)

    def results(self, ok, error):
        out = {"peer": "chromium", "mode": self.args.mode, "ok": ok, "error": error}
        if self.driver is not None and not self.hung:
            try:
                self.deadline = time.monotonic() + 10
                page = self.call("results")
                if not self.args.verbose:
                    page.pop("log", None)
                out.update(page)
                out["reached_connected"] = "connected" in page["connection_states"]
                out["codecs"] = [{"kind": s["kind"], "codec": s["codec"]} for s in page["inbound"] + page["outbound"]]
                caps = self.driver.capabilities
                out["versions"] = {"chromium": caps.get("browserVersion"),
                                   "chromedriver": caps.get("chrome", {}).get("chromedriverVersion", "").split(" ")[0]}
            except Exception as e:
                out["results_error"] = f"{type(e).__name__}: {e}"
        if self.args.restart_ice:
            out["frames_decoded_at_restart"] = getattr(self, "frames_at_restart", None)
            out["ice_restart_answered"] = getattr(self, "restart_answer", None) is not None
        out["elapsed_seconds"] = round(time.monotonic() - self.started, 3)
        return out

    def close(self):
        if self.hung and self.driver is not None:
            self.driver.service.process.kill()
            self.driver = None
        if self.driver is not None:
            try:
                if self.args.fetch_in_page:
                    self.deadline = time.monotonic() + 10
                    self.call("endSession")
            except Exception as e:
                log.warning("endSession: %s", e)
        if self.location:
            status, _, _ = http_request("DELETE", self.location)
            log.info("DELETE %s -> %s", self.location, status)
        if self.driver is not None:
            try:
                self.driver.quit()
            except Exception as e:
                log.warning("quit: %s", e)
        if self.server is not None:
            self.server.shutdown()
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)


def run_bounded(peer):
    """Runs the peer; a watchdog kills the browser if a WebDriver call itself hangs past the timeout."""
    outcome = {}

    def body():
        try:
            peer.run()
            outcome["ok"] = True
        except Timeout:
            outcome["error"] = "timeout"
        except Exception as e:
            outcome["error"] = f"{type(e).__name__}: {e}".splitlines()[0]

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(peer.args.timeout)
    if thread.is_alive() and not peer.reading_stdin:
        thread.join(5)  # a WebDriver call may be about to give up by itself
    if thread.is_alive():
        peer.hung = not peer.reading_stdin
        return False, "timeout"
    if outcome.get("ok"):
        return True, None
    return False, outcome["error"]


def main():
    p = argparse.ArgumentParser(description="headless Chromium WebRTC peer for Sluice's interop tests")
    p.add_argument("mode", choices=["offer", "answer", "whip", "whep"])
    p.add_argument("url", nargs="?", help="the WHIP/WHEP endpoint (whip and whep modes)")
    p.add_argument("--timeout", type=float, default=40.0, help="give up after this many seconds (exit 2)")
    p.add_argument("--duration", type=float, default=3.0, help="seconds of media after connected")
    p.add_argument("--linger", type=float, default=1.0,
                   help="seconds to keep the call up after success, so the other side can finish too")
    p.add_argument("--min-frames", type=int, default=10,
                   help="video frames decoded (audio: packets received) needed per expected inbound stream, "
                        "and video frames encoded per outbound video stream")
    p.add_argument("--min-messages", type=int, default=0,
                   help="data channel messages received needed before the call ends (with --datachannel: the "
                        "echoes of its pings, one every 0.5 s), so that a slow start does not end it short")
    p.add_argument("--video", choices=["send", "recv", "sendrecv"], help="video use (default: by mode)")
    p.add_argument("--audio", choices=["send", "recv", "sendrecv"], help="audio use (default: by mode)")
    p.add_argument("--codec", choices=["vp8", "h264", "vp9", "av1"], help="preferred video codec")
    p.add_argument("--datachannel", action="store_true", help="offer a data channel and ping on it")
    p.add_argument("--dc-modes", action="store_true",
                   help="offer one data channel per reliability mode (reliable, unordered, rexmit0, lifetime500), "
                   "each sending a text and a 1 KiB binary message when open")
    p.add_argument("--dc-echo", action="store_true", help="send every data channel message back as it came")
    p.add_argument("--restart-ice", action="store_true",
                   help="offer mode: once media flows, offer an ICE restart (a second offer on stdout, its answer "
                   "from stdin), then run --duration more")
    p.add_argument("--expect", help="kinds that must be received: video,audio or none (default: those with recv)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--fake-video", metavar="FILE.y4m|FILE.mjpeg", help="camera frames from this file")
    p.add_argument("--fake-audio", metavar="FILE.wav", help="microphone samples from this file")
    p.add_argument("--relay-only", action="store_true")
    p.add_argument("--ice-server", metavar="turn:HOST:PORT|stun:HOST:PORT")
    p.add_argument("--ice-username")
    p.add_argument("--ice-credential")
    p.add_argument("--all-candidates", action="store_true",
                   help="hand out every candidate Chromium gathered (default: loopback ones only)")
    p.add_argument("--fetch-in-page", action="store_true", help="WHIP/WHEP requests from the page (needs CORS)")
    p.add_argument("--save-local", metavar="FILE", help="also write the local SDP to FILE")
    p.add_argument("--result", metavar="FILE", help="also write the JSON result line to FILE")
    p.add_argument("--chromium", default=CHROMIUM)
    p.add_argument("--chromedriver", default=CHROMEDRIVER)
    p.add_argument("--verbose", action="store_true", help="include the page's event log in the JSON")
    args = p.parse_args()
    if args.mode in ("whip", "whep") and not args.url:
        p.error(f"{args.mode} needs a URL")
    defaults = {"offer": ("sendrecv", "sendrecv"), "answer": ("sendrecv", "sendrecv"),
                "whep": ("recv", "recv"), "whip": ("send", "send")}[args.mode]
    args.video = args.video or defaults[0]
    args.audio = args.audio or defaults[1]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s chromium_peer %(message)s")
    logging.getLogger("selenium").setLevel(logging.WARNING)

    peer = ChromiumPeer(args)
    ok, error = run_bounded(peer)
    result = peer.results(ok, error)
    peer.close()
    line = json.dumps(result)
    print(line, flush=True)
    if args.result:
        with open(args.result, "w") as f:
            f.write(line + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if ok else (2 if error == "timeout" else 1))  # no thread left reading stdin may keep us


if __name__ == "__main__":
    main()
