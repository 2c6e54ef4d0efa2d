#!/usr/bin/env python3
"""Proves the test peers work on this machine, on 127.0.0.1 only: two aiortc peers against each
other (VP8, H.264, Opus, data channel), through a local coturn relay-only, Chromium against aiortc
(offer/answer both ways), and WHIP/WHEP against a small aiortc-based server stub.

Usage: tools/peers/.venv/bin/python tools/peers/selftest.py [SCENARIO ...] [--fixtures DIR]
Prints one line per scenario with its time and a closing 'N passed, N failed' line.
"""

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = sys.executable


def peer_command(script, *args):
    return [PYTHON, os.path.join(HERE, script), *args]


def read_sdp(stream):
    lines = []
    for line in stream:
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line)
    return "".join(lines)


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


SCENARIOS = {
    "aiortc-vp8": scenario_aiortc_vp8,
    "aiortc-h264": scenario_aiortc_h264,
    "turn": scenario_turn,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenarios", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    parser.add_argument("--fixtures", help="copy the SDPs seen to this folder")
    parser.add_argument("--verbose", action="store_true", help="print each peer's JSON result")
    args = parser.parse_args()
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
