"""Writes aiortc-offer.sdp and aiortc-answer.sdp (see README.md): aiortc's offer with a video and an
audio transceiver and a data channel, and aiortc's answer to sluice-offer.sdp, which it must accept.
With --accept-answer it writes nothing: a peer connection like the offering one takes sluice-answer.sdp
(Sluice's answer to aiortc-offer.sdp) as its remote description, which must succeed.

    python3 -m venv /tmp/venv-jsep && /tmp/venv-jsep/bin/pip install aiortc
    /tmp/venv-jsep/bin/python aiortc-sdp.py  # in this folder
    /tmp/venv-jsep/bin/python aiortc-sdp.py --accept-answer

aioice's host address lookup is replaced by 127.0.0.1 so that the candidates do not name this machine.
"""
import asyncio
import sys
from pathlib import Path

import aioice.ice
import aiortc
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import AudioStreamTrack, VideoStreamTrack

aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
HERE = Path(__file__).parent


async def offering() -> RTCPeerConnection:
    pc = RTCPeerConnection()
    pc.addTransceiver(VideoStreamTrack(), direction="sendrecv")
    pc.addTransceiver(AudioStreamTrack(), direction="sendrecv")
    pc.createDataChannel("chat")
    await pc.setLocalDescription(await pc.createOffer())  # returns once ICE gathering is complete
    return pc


async def offer() -> str:
    pc = await offering()
    sdp = pc.localDescription.sdp
    await pc.close()
    return sdp


async def accept_answer(sluice_answer: str) -> None:
    pc = await offering()
    await pc.setRemoteDescription(RTCSessionDescription(sdp=sluice_answer, type="answer"))
    print(f"aiortc {aiortc.__version__} accepted sluice-answer.sdp:",
          [(t.mid, t.kind, t.currentDirection) for t in pc.getTransceivers()], "sctp:", pc.sctp is not None,
          file=sys.stderr)
    await pc.close()


async def answer(sluice_offer: str) -> str:
    pc = RTCPeerConnection()
    await pc.setRemoteDescription(RTCSessionDescription(sdp=sluice_offer, type="offer"))
    for transceiver in pc.getTransceivers():
        track = AudioStreamTrack() if transceiver.kind == "audio" else VideoStreamTrack()
        pc.addTrack(track)
    await pc.setLocalDescription(await pc.createAnswer())
    sdp = pc.localDescription.sdp
    print(f"aiortc {aiortc.__version__} accepted sluice-offer.sdp:",
          [(t.mid, t.kind, t.currentDirection) for t in pc.getTransceivers()], "sctp:", pc.sctp is not None,
          file=sys.stderr)
    await pc.close()
    return sdp


async def main() -> None:
    if "--accept-answer" in sys.argv:
        await accept_answer((HERE / "sluice-answer.sdp").read_text())
        return
    (HERE / "aiortc-offer.sdp").write_bytes((await offer()).encode())
    (HERE / "aiortc-answer.sdp").write_bytes((await answer((HERE / "sluice-offer.sdp").read_text())).encode())


asyncio.run(main())
