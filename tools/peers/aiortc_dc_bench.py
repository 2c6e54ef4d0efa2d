#!/usr/bin/env python3
"""Data channel throughput between two aiortc peers in one process over 127.0.0.1: the figure
pipebench's "datachannel.throughput" sets Sluice's beside (issue 15, point 6).

Two transfers on one reliable ordered channel, each timed from the first send to the last byte
received: BYTES in MESSAGE-byte binary messages (throughput, MB/s), and COUNT small messages
(message rate). The sender keeps at most 1 MiB buffered (bufferedAmountLow), as a browser app would.
Prints one JSON line: {"throughput_mb_s", "messages_per_s", "bytes", "message_size", "count", "small_size"}.
Run through tools/peers/.venv (tools/peers/setup makes it).
"""

import argparse
import asyncio
import json
import time

from aiortc import RTCPeerConnection

from aiortc_peer import patch_host_addresses

HIGH_WATER = 1 << 20


async def connected_channel_pair():
    offerer, answerer = RTCPeerConnection(), RTCPeerConnection()
    sending = offerer.createDataChannel("bench")
    receiving = asyncio.get_running_loop().create_future()
    answerer.on("datachannel", lambda channel: receiving.set_result(channel))
    opened = asyncio.get_running_loop().create_future()
    sending.on("open", lambda: opened.set_result(True))
    await offerer.setLocalDescription(await offerer.createOffer())
    await answerer.setRemoteDescription(offerer.localDescription)
    await answerer.setLocalDescription(await answerer.createAnswer())
    await offerer.setRemoteDescription(answerer.localDescription)
    await asyncio.wait_for(opened, 20)
    return offerer, answerer, sending, await asyncio.wait_for(receiving, 20)


async def transfer(sending, receiving, message, count):
    """Sends `message` `count` times with back-pressure; seconds until the receiver had them all."""
    expected = len(message) * count
    received = {"bytes": 0}
    done = asyncio.get_running_loop().create_future()

    def on_message(data):
        received["bytes"] += len(data)
        if received["bytes"] >= expected and not done.done():
            done.set_result(True)

    receiving.remove_all_listeners("message")
    receiving.on("message", on_message)
    drained = asyncio.Event()
    sending.bufferedAmountLowThreshold = HIGH_WATER // 2
    sending.on("bufferedamountlow", drained.set)
    begin = time.monotonic()
    for _ in range(count):
        if sending.bufferedAmount > HIGH_WATER:
            drained.clear()
            await drained.wait()
        sending.send(message)
    await asyncio.wait_for(done, 120)
    return time.monotonic() - begin


async def main(args):
    patch_host_addresses("loopback")
    offerer, answerer, sending, receiving = await connected_channel_pair()
    try:
        bulk = await transfer(sending, receiving, bytes(args.message_size), args.bytes // args.message_size)
        small = await transfer(sending, receiving, bytes(args.small_size), args.count)
    finally:
        await offerer.close()
        await answerer.close()
    print(json.dumps({"throughput_mb_s": args.bytes / bulk / 1e6, "messages_per_s": args.count / small,
                      "bytes": args.bytes, "message_size": args.message_size, "count": args.count,
                      "small_size": args.small_size}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=16 << 20, help="bulk transfer size (default 16 MiB)")
    parser.add_argument("--message-size", type=int, default=64 << 10, help="bulk message size (default 64 KiB)")
    parser.add_argument("--count", type=int, default=20000, help="small messages to send (default 20000)")
    parser.add_argument("--small-size", type=int, default=100, help="small message size (default 100 bytes)")
    asyncio.run(main(parser.parse_args()))
