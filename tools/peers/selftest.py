#!/usr/bin/env python3
"""Proves the test peers work on this machine, on 127.0.0.1 only: two aiortc peers against each
other (VP8, H.264, Opus, data channel), through a local coturn relay-only, Chromium against aiortc
(offer/answer both ways), and WHIP/WHEP against a small aiortc-based server stub.

Usage: tools/peers/.venv/bin/python tools/peers/selftest.py [SCENARIO ...] [--fixtures DIR] [--verbose]
Runs itself in a new network namespace with only lo (tools/peers/loopback-only) when root.
Prints one line per scenario with its time and a closing 'N passed, N failed' line.
"""

import argparse
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from signaling import read_sdp

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = sys.executable


def peer_command(script, *args):
    return [PYTHON, os.path.join(HERE, script), *args]


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


class Process:
    """A peer subprocess whose stderr is collected in a thread."""

    def __init__(self, command, name):
        self.name = name
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr = []
        self.thread = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self.thread.start()

    def finish(self, timeout):
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self.thread.join(timeout=2)
        result = last_json(out or "")
        if result is None:
            sys.stderr.write(f"--- {self.name} printed no JSON; stderr:\n" + "".join(self.stderr[-30:]))
        return self.proc.returncode, result


def offer_answer(offer_command, answer_command, timeout=60):
    """Runs an offerer and an answerer, passing the SDPs between their stdin and stdout."""
    offerer = Process(offer_command, "offerer")
    answerer = Process(answer_command, "answerer")
    offer = read_sdp(offerer.proc.stdout)
    answerer.proc.stdin.write(offer + "\n")
    answerer.proc.stdin.flush()
    answer = read_sdp(answerer.proc.stdout)
    offerer.proc.stdin.write(answer + "\n")
    offerer.proc.stdin.flush()
    offer_code, offer_result = offerer.finish(timeout)
    answer_code, answer_result = answerer.finish(timeout)
    return (offer_code, offer_result, offer), (answer_code, answer_result, answer)


def frames(result, kind):
    return [r["frames"] for r in (result or {}).get("received", []) if r["kind"] == kind]


def check(condition, message, failures):
    if not condition:
        failures.append(message)


# --- scenarios -----------------------------------------------------------------------------

def aiortc_pair(codec, extra_offer=(), extra_answer=(), relay=None):
    common = ["--timeout", "30", "--duration", "3", "--min-frames", "20"]
    offer_cmd = peer_command("aiortc_peer.py", "offer", "--send-video", "pattern", "--codec", codec,
                             "--send-audio", "tone", "--recv", "video,audio", "--datachannel",
                             *common, *extra_offer)
    answer_cmd = peer_command("aiortc_peer.py", "answer", "--send-video", "pattern", "--codec", codec,
                              "--send-audio", "tone", *common, *extra_answer)
    (oc, o, _), (ac, a, _) = offer_answer(offer_cmd, answer_cmd)
    failures = []
    for name, code, result in (("offerer", oc, o), ("answerer", ac, a)):
        check(code == 0 and result and result["ok"], f"{name} exit {code}: {result and result.get('error')}", failures)
        if not result:
            continue
        check(result["reached_connected"], f"{name} never connected", failures)
        check(result["dtls_state"] == "connected" or result["reached_connected"], f"{name} DTLS {result['dtls_state']}", failures)
        check(min(frames(result, "video") or [0]) >= 20, f"{name} video frames {frames(result, 'video')}", failures)
        check(min(frames(result, "audio") or [0]) >= 20, f"{name} audio frames {frames(result, 'audio')}", failures)
        want = {"vp8": "VP8", "h264": "H264"}[codec]
        check({"kind": "video", "codec": want} in result["codecs"], f"{name} codecs {result['codecs']}", failures)
        if relay:
            pair = result.get("selected_pair") or {}
            check(pair.get("local", "").startswith("relay"), f"{name} selected pair {pair}", failures)
    check(o and o.get("datachannel_messages_received"), "offerer got no data channel message", failures)
    return failures, {"offerer": o, "answerer": a}


def scenario_aiortc_vp8(ctx):
    return aiortc_pair("vp8", extra_answer=["--record-video", os.path.join(ctx.tmp, "vp8.y4m"),
                                            "--record-audio", os.path.join(ctx.tmp, "opus.wav")])


def scenario_aiortc_h264(ctx):
    failures, results = aiortc_pair("h264", extra_offer=["--save-local", os.path.join(ctx.tmp, "aiortc-offer.sdp")],
                                    extra_answer=["--save-local", os.path.join(ctx.tmp, "aiortc-answer.sdp")])
    if ctx.fixtures and not failures:
        for name in ("aiortc-offer.sdp", "aiortc-answer.sdp"):
            shutil.copy(os.path.join(ctx.tmp, name), os.path.join(ctx.fixtures, name))
    return failures, results


def start_turnserver(ctx, port=3478, user="sluice", password="sluice-secret", realm="sluice.test"):
    command = ["turnserver", "-n", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
               f"--listening-port={port}", "--min-port=49160", "--max-port=49200",
               "--lt-cred-mech", f"--user={user}:{password}", f"--realm={realm}",
               "--allow-loopback-peers", "--no-tls", "--no-dtls", "--no-cli", "--no-tcp-relay",
               "--fingerprint", "--log-file=stdout", "--simple-log", "--pidfile", os.path.join(ctx.tmp, "turnserver.pid")]
    log = open(os.path.join(ctx.tmp, "turnserver.log"), "w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # wait until it answers a STUN binding request
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.2)
        try:
            s.sendto(bytes.fromhex("000100002112a442") + os.urandom(12), ("127.0.0.1", port))
            s.recvfrom(2048)
            return proc, (user, password)
        except OSError:
            time.sleep(0.1)
        finally:
            s.close()
    proc.kill()
    raise RuntimeError("turnserver did not start")


def scenario_turn(ctx):
    proc, (user, password) = start_turnserver(ctx)
    try:
        relay = ["--relay-only", "--ice-server", "turn:127.0.0.1:3478?transport=udp",
                 "--ice-username", user, "--ice-credential", password]
        failures, results = aiortc_pair("vp8", relay, relay, relay=True)
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    return failures, results


def chromium_inbound(result, kind):
    return [s for s in (result or {}).get("inbound", []) if s["kind"] == kind]


def check_chromium_received(name, result, failures, codec=None, min_frames=20):
    video = chromium_inbound(result, "video")
    audio = chromium_inbound(result, "audio")
    check(video and min(s["frames_decoded"] or 0 for s in video) >= min_frames,
          f"{name} video frames decoded {[s['frames_decoded'] for s in video]}", failures)
    check(audio and min(s["packets_received"] or 0 for s in audio) >= min_frames,
          f"{name} audio packets {[s['packets_received'] for s in audio]}", failures)
    if codec:
        check(all(s["codec"] == codec for s in video), f"{name} video codec {[s['codec'] for s in video]}", failures)


def check_ok(name, code, result, failures):
    check(code == 0 and result and result["ok"], f"{name} exit {code}: {result and result.get('error')}", failures)
    check(result and result.get("reached_connected"), f"{name} never connected", failures)


def chromium_and_aiortc(ctx, chromium_offers, codec, relay=None, save=None):
    common = ["--timeout", "40", "--duration", "3", "--min-frames", "20"]
    # Chromium is left to offer every codec it has for VP8 (the saved fixtures show them all);
    # for H.264 its setCodecPreferences is used
    chromium = peer_command("chromium_peer.py", "offer" if chromium_offers else "answer",
                            *(["--codec", codec] if codec != "vp8" else []), *common, *(relay or []))
    aiortc = peer_command("aiortc_peer.py", "answer" if chromium_offers else "offer", "--codec", codec,
                          "--send-video", "pattern", "--send-audio", "tone", *common, *(relay or []))
    if chromium_offers:
        chromium += ["--datachannel"]
        (cc, c, c_sdp), (ac, a, a_sdp) = offer_answer(chromium, aiortc)
    else:
        aiortc += ["--recv", "video,audio", "--datachannel"]
        (ac, a, a_sdp), (cc, c, c_sdp) = offer_answer(aiortc, chromium)
    failures = []
    check_ok("chromium", cc, c, failures)
    check_ok("aiortc", ac, a, failures)
    want = {"vp8": "VP8", "h264": "H264"}[codec]
    check_chromium_received("chromium", c, failures, codec=want)
    check(min(frames(a, "video") or [0]) >= 20, f"aiortc video frames {frames(a, 'video')}", failures)
    check(min(frames(a, "audio") or [0]) >= 20, f"aiortc audio frames {frames(a, 'audio')}", failures)
    check(c and c.get("datachannel_messages_received"), "chromium got no data channel message", failures)
    if relay:
        pair = (c or {}).get("selected_pair") or {}
        check(pair.get("local", "").startswith("relay"), f"chromium selected pair {pair}", failures)
    if save and ctx.fixtures and not failures:
        for text, name in ((c_sdp, save[0]), (a_sdp, save[1])):
            with open(os.path.join(ctx.fixtures, name), "w") as f:
                f.write(text.replace("\r\n", "\n").replace("\n", "\r\n"))
    return failures, {"chromium": c, "aiortc": a}


def scenario_chromium_offer_vp8(ctx):
    return chromium_and_aiortc(ctx, True, "vp8", save=("chromium-offer.sdp", "aiortc-answer-to-chromium.sdp"))


def scenario_chromium_answer_vp8(ctx):
    return chromium_and_aiortc(ctx, False, "vp8", save=("chromium-answer.sdp", "aiortc-offer-to-chromium.sdp"))


def scenario_chromium_offer_h264(ctx):
    return chromium_and_aiortc(ctx, True, "h264")


def scenario_chromium_answer_h264(ctx):
    return chromium_and_aiortc(ctx, False, "h264")


def scenario_chromium_turn(ctx):
    proc, (user, password) = start_turnserver(ctx)
    try:
        relay = ["--relay-only", "--ice-server", "turn:127.0.0.1:3478?transport=udp",
                 "--ice-username", user, "--ice-credential", password]
        return chromium_and_aiortc(ctx, True, "vp8", relay=relay)
    finally:
        proc.terminate()
        proc.wait(timeout=5)


class WhipWhepStub:
    """A small WHIP/WHEP server for the proofs: each POST starts `aiortc_peer.py answer` (sending
    a pattern and a tone for WHEP, recording for WHIP), answers 201 with its SDP and a Location;
    DELETE on the Location ends the session. CORS is answered so a page can fetch() it."""

    def __init__(self, ctx, codec="vp8", duration="6"):
        stub = self
        self.sessions = {}
        self.ctx = ctx

        class Handler(http.server.BaseHTTPRequestHandler):
            def cors(self):
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "POST, DELETE, OPTIONS")
                self.send_header("Access-Control-Allow-Headers", "Content-Type")
                self.send_header("Access-Control-Expose-Headers", "Location")

            def do_OPTIONS(self):
                self.send_response(204)
                self.cors()
                self.end_headers()

            def do_POST(self):
                parts = self.path.strip("/").split("/")
                offer = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                if len(parts) != 2 or parts[0] not in ("whip", "whep") or \
                        self.headers.get("Content-Type") != "application/sdp":
                    self.send_response(400)
                    self.cors()
                    self.end_headers()
                    return
                number = len(stub.sessions) + 1
                args = ["answer", "--timeout", "40", "--duration", duration, "--codec", codec, "--min-frames", "20"]
                if parts[0] == "whep":
                    args += ["--send-video", "pattern", "--send-audio", "tone"]
                else:
                    args += ["--record-video", os.path.join(ctx.tmp, f"whip-{number}.y4m"),
                             "--record-audio", os.path.join(ctx.tmp, f"whip-{number}.wav")]
                process = Process(peer_command("aiortc_peer.py", *args), f"{parts[0]} session {number}")
                process.proc.stdin.write(offer + "\n\n")
                process.proc.stdin.flush()
                answer = read_sdp(process.proc.stdout).encode()
                stub.sessions[str(number)] = {"process": process, "deleted": False, "kind": parts[0]}
                self.send_response(201)
                self.cors()
                self.send_header("Content-Type", "application/sdp")
                self.send_header("Location", f"/session/{number}")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def do_DELETE(self):
                session = stub.sessions.get(self.path.rsplit("/", 1)[-1])
                self.send_response(200 if session else 404)
                self.cors()
                self.end_headers()
                if session:
                    session["deleted"] = True

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def finish(self):
        """Waits for every session's answerer and returns (deleted, exit code, result) per session."""
        out = []
        for session in self.sessions.values():
            code, result = session["process"].finish(45)
            out.append((session["deleted"], code, result))
        self.server.shutdown()
        return out


def whep_session_checks(stub, failures):
    sessions = stub.finish()
    check(len(sessions) == 1, f"{len(sessions)} sessions", failures)
    for deleted, code, result in sessions:
        check(deleted, "the session was not DELETEd", failures)
        check_ok("server", code, result, failures)
    return sessions


def scenario_chromium_whep(ctx, fetch_in_page=False):
    stub = WhipWhepStub(ctx)
    command = peer_command("chromium_peer.py", "whep", stub.url + "/whep/pattern", "--timeout", "40",
                           "--duration", "3", "--min-frames", "20", *(["--fetch-in-page"] if fetch_in_page else []))
    code, result = Process(command, "chromium whep").finish(60)
    failures = []
    check_ok("chromium", code, result, failures)
    check_chromium_received("chromium", result, failures, codec="VP8")
    sessions = whep_session_checks(stub, failures)
    return failures, {"chromium": result, **{f"server{i}": s[2] for i, s in enumerate(sessions)}}


def scenario_chromium_whep_fetch(ctx):
    return scenario_chromium_whep(ctx, fetch_in_page=True)


def y4m_frame_count(path):
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        return f.read().count(b"FRAME\n")


def scenario_chromium_whip(ctx):
    stub = WhipWhepStub(ctx, codec="h264", duration="3")
    command = peer_command("chromium_peer.py", "whip", stub.url + "/whip/camera", "--codec", "h264",
                           "--timeout", "40", "--duration", "5", "--min-frames", "20")
    code, result = Process(command, "chromium whip").finish(60)
    failures = []
    check_ok("chromium", code, result, failures)
    outbound = [s for s in (result or {}).get("outbound", []) if s["kind"] == "video"]
    check(outbound and outbound[0]["codec"] == "H264", f"chromium outbound {outbound}", failures)
    sessions = whep_session_checks(stub, failures)
    for _, _, server in sessions:
        check(min(frames(server, "video") or [0]) >= 20, f"server video frames {frames(server, 'video')}", failures)
        check(min(frames(server, "audio") or [0]) >= 20, f"server audio frames {frames(server, 'audio')}", failures)
    recorded = y4m_frame_count(os.path.join(ctx.tmp, "whip-1.y4m"))
    check(recorded >= 20, f"{recorded} frames recorded in whip-1.y4m", failures)
    return failures, {"chromium": result, **{f"server{i}": s[2] for i, s in enumerate(sessions)}}


def scenario_aiortc_whep_whip(ctx):
    failures = []
    results = {}
    stub = WhipWhepStub(ctx, codec="vp8")
    command = peer_command("aiortc_peer.py", "whep", stub.url + "/whep/pattern", "--timeout", "30",
                           "--duration", "3", "--min-frames", "20",
                           "--record-video", os.path.join(ctx.tmp, "whep.y4m"))
    code, results["whep"] = Process(command, "aiortc whep").finish(40)
    check_ok("aiortc whep", code, results["whep"], failures)
    check(min(frames(results["whep"], "video") or [0]) >= 20, "aiortc whep video frames", failures)
    whep_session_checks(stub, failures)
    stub = WhipWhepStub(ctx, codec="h264", duration="3")
    command = peer_command("aiortc_peer.py", "whip", stub.url + "/whip/pattern", "--timeout", "30", "--codec",
                           "h264", "--send-video", "pattern", "--send-audio", "tone", "--duration", "4")
    code, results["whip"] = Process(command, "aiortc whip").finish(40)
    check_ok("aiortc whip", code, results["whip"], failures)
    for _, _, server in whep_session_checks(stub, failures):
        results["whip-server"] = server
        check(min(frames(server, "video") or [0]) >= 20, f"server video frames {frames(server, 'video')}", failures)
    return failures, results


def scenario_bounded(ctx):
    """The answerer vanishes right after answering: each offerer must end by itself, exit 2
    ("timeout") within its --timeout plus a few seconds, and still print its JSON line."""
    failures, results = [], {}
    for offerer in ("aiortc_peer.py", "chromium_peer.py"):
        started = time.monotonic()
        extra = ["--send-video", "pattern"] if offerer == "aiortc_peer.py" else []
        o = Process(peer_command(offerer, "offer", "--timeout", "8", *extra), offerer)
        a = Process(peer_command("aiortc_peer.py", "answer", "--timeout", "8"), "answerer")
        a.proc.stdin.write(read_sdp(o.proc.stdout) + "\n")
        a.proc.stdin.flush()
        answer = read_sdp(a.proc.stdout)
        a.proc.kill()
        a.finish(5)
        o.proc.stdin.write(answer + "\n")
        o.proc.stdin.flush()
        code, result = o.finish(30)
        seconds = time.monotonic() - started
        results[offerer] = result
        check(code == 2 and result and result["error"] == "timeout", f"{offerer} exit {code}", failures)
        check(seconds < 8 + 6, f"{offerer} took {seconds:.1f} s", failures)
    return failures, results


def reference_y4m(ctx, seconds=2):
    """A 640x480 30 fps reference (ffmpeg's testsrc2), made once per run."""
    path = os.path.join(ctx.tmp, "reference.y4m")
    if not os.path.exists(path):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30",
                        "-t", str(seconds), "-pix_fmt", "yuv420p", path], check=True)
    return path


def psnr_of(reference, received, min_db, failures, name):
    run = subprocess.run([PYTHON, os.path.join(HERE, "psnr.py"), reference, received, "--min-db", str(min_db)],
                         capture_output=True, text=True)
    result = last_json(run.stdout)
    check(run.returncode == 0 and result, f"{name} PSNR {result or run.stderr.strip()[-200:]} (min {min_db} dB)",
          failures)
    return result


def scenario_psnr_aiortc(ctx):
    """aiortc sends a Y4M file, the other aiortc records what it decodes: PSNR >= 30 dB."""
    reference = reference_y4m(ctx)
    failures, results = [], {}
    for codec in ("vp8", "h264"):
        received = os.path.join(ctx.tmp, f"psnr-{codec}.y4m")
        common = ["--codec", codec, "--duration", "3", "--min-frames", "20", "--timeout", "30"]
        (oc, o, _), (ac, a, _) = offer_answer(
            peer_command("aiortc_peer.py", "offer", "--send-video", reference, *common),
            peer_command("aiortc_peer.py", "answer", "--record-video", received, *common))
        check_ok(f"{codec} offerer", oc, o, failures)
        check_ok(f"{codec} answerer", ac, a, failures)
        results[f"psnr-{codec}"] = psnr_of(reference, received, 30, failures, codec)
    return failures, results


def scenario_psnr_chromium(ctx):
    """Chromium's fake camera plays a Y4M file and sends it by WHIP; the stub records it: PSNR."""
    reference = reference_y4m(ctx)
    stub = WhipWhepStub(ctx, codec="vp8", duration="3")
    command = peer_command("chromium_peer.py", "whip", stub.url + "/whip/file", "--fake-video", reference,
                           "--timeout", "40", "--duration", "4", "--min-frames", "20")
    code, result = Process(command, "chromium whip").finish(60)
    failures = []
    check_ok("chromium", code, result, failures)
    whep_session_checks(stub, failures)
    received = os.path.join(ctx.tmp, "whip-1.y4m")
    return failures, {"chromium": result, "psnr": psnr_of(reference, received, 25, failures, "chromium")}


SCENARIOS = {
    "aiortc-vp8": scenario_aiortc_vp8,
    "aiortc-h264": scenario_aiortc_h264,
    "turn": scenario_turn,
    "chromium-offer-vp8": scenario_chromium_offer_vp8,
    "chromium-answer-vp8": scenario_chromium_answer_vp8,
    "chromium-offer-h264": scenario_chromium_offer_h264,
    "chromium-answer-h264": scenario_chromium_answer_h264,
    "chromium-turn": scenario_chromium_turn,
    "chromium-whep": scenario_chromium_whep,
    "chromium-whep-fetch": scenario_chromium_whep_fetch,
    "chromium-whip": scenario_chromium_whip,
    "aiortc-whep-whip": scenario_aiortc_whep_whip,
    "psnr-aiortc": scenario_psnr_aiortc,
    "psnr-chromium": scenario_psnr_chromium,
    "bounded": scenario_bounded,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenarios", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    parser.add_argument("--fixtures", help="copy the SDPs seen to this folder")
    parser.add_argument("--verbose", action="store_true", help="print each peer's JSON result")
    parser.add_argument("--no-netns", action="store_true",
                        help="run in this network namespace (default: a new one with only lo, when root)")
    args = parser.parse_args()
    if not args.no_netns and not os.environ.get("SLUICE_LOOPBACK_ONLY") and os.geteuid() == 0 \
            and shutil.which("unshare"):
        os.execv(os.path.join(HERE, "loopback-only"), [os.path.join(HERE, "loopback-only"), PYTHON, *sys.argv])
    if args.fixtures:
        args.fixtures = os.path.abspath(args.fixtures)
    names = args.scenarios or list(SCENARIOS)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="sluice-peers-") as tmp:
        args.tmp = tmp
        for name in names:
            started = time.monotonic()
            try:
                failures, results = SCENARIOS[name](args)
            except Exception as e:
                failures, results = [f"{type(e).__name__}: {e}"], {}
            seconds = time.monotonic() - started
            if args.verbose:
                for role, result in results.items():
                    print(f"  {role}: {json.dumps(result)}")
            if failures:
                failed += 1
                print(f"FAIL {name} ({seconds:.1f} s): " + "; ".join(failures), flush=True)
            else:
                passed += 1
                print(f"ok   {name} ({seconds:.1f} s)", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
