#!/usr/bin/env python3
"""PSNR of a received video (Y4M, as aiortc_peer.py --record-video writes) against its source
(Y4M, as sent with aiortc_peer.py --send-video FILE or chromium_peer.py --fake-video FILE).

The received stream starts anywhere in the (looped) source and may skip frames, so each received
frame is matched to a source frame: the first one against every source frame, the next ones
against the few source frames after the previous match (looping). Received frames of another
size are scaled to the source's size first. PSNR is on luma (Y), 8 bits, per frame, capped at
100 dB for identical frames.

Usage: psnr.py SOURCE.y4m RECEIVED.y4m [--min-db D] [--skip N] [--window K]
Prints one JSON line: frames compared, first match, mean/min/median PSNR; exit 1 below --min-db.
"""

import argparse
import json
import sys

import numpy as np

import av


def y4m_frames(path):
    """Yields (width, height, Y plane as a numpy array) for each frame of a 4:2:0 Y4M file."""
    with open(path, "rb") as f:
        header = f.readline().split()
        if not header or header[0] != b"YUV4MPEG2":
            raise ValueError(f"{path}: not a YUV4MPEG2 file")
        width = int(next(t[1:] for t in header if t.startswith(b"W")))
        height = int(next(t[1:] for t in header if t.startswith(b"H")))
        size = width * height + 2 * ((width + 1) // 2) * ((height + 1) // 2)
        while True:
            line = f.readline()
            if not line.startswith(b"FRAME"):
                return
            data = f.read(size)
            if len(data) < size:
                return
            yield width, height, np.frombuffer(data, dtype=np.uint8, count=width * height).reshape(height, width)


def scaled_luma(luma, width, height):
    """Scales a luma plane to width x height through libswscale (bicubic)."""
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(luma), format="gray")
    return frame.reformat(width=width, height=height).to_ndarray()


def psnr(a, b):
    mse = np.mean((a.astype(np.float32) - b.astype(np.float32)) ** 2)
    return 100.0 if mse == 0 else float(10 * np.log10(255.0 * 255.0 / mse))


def main():
    p = argparse.ArgumentParser(description="PSNR of a received Y4M against its looped source")
    p.add_argument("source")
    p.add_argument("received")
    p.add_argument("--min-db", type=float, default=None, help="exit 1 when the mean PSNR is below this")
    p.add_argument("--skip", type=int, default=0, help="received frames to leave out at the start")
    p.add_argument("--window", type=int, default=6, help="source frames searched after the previous match")
    args = p.parse_args()

    source = [y for _, _, y in y4m_frames(args.source)]
    if not source:
        sys.exit(f"{args.source}: no frames")
    height, width = source[0].shape
    scores, matches = [], []
    previous = None
    scaled = 0
    for index, (w, h, y) in enumerate(y4m_frames(args.received)):
        if index < args.skip:
            continue
        if (w, h) != (width, height):
            y = scaled_luma(y, width, height)
            scaled += 1
        if previous is None:
            candidates = range(len(source))
        else:
            candidates = [(previous + k) % len(source) for k in range(0, args.window + 1)]
        best = max(candidates, key=lambda j: psnr(source[j], y))
        scores.append(psnr(source[best], y))
        matches.append(best)
        previous = best
    if not scores:
        sys.exit(f"{args.received}: no frames to compare")
    mean = float(np.mean(scores))
    result = {
        "frames_compared": len(scores), "frames_scaled": scaled, "source_frames": len(source),
        "first_match": matches[0], "psnr_y_mean": round(mean, 2), "psnr_y_min": round(min(scores), 2),
        "psnr_y_median": round(float(np.median(scores)), 2),
        "ok": args.min_db is None or mean >= args.min_db,
    }
    print(json.dumps(result))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
