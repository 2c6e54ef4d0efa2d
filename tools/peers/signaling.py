"""Signaling shared by the test peers: SDPs over stdin/stdout (one SDP, then an empty line)
and the WHIP/WHEP HTTP requests (RFC 9725 and the WHEP draft: POST application/sdp, 201,
Location, DELETE)."""

import sys
import urllib.error
import urllib.parse
import urllib.request


def read_sdp(stream):
    """Reads one SDP: its lines up to an empty line (after at least one line) or EOF."""
    lines = []
    for line in stream:
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line.rstrip("\r\n"))
    return "\r\n".join(lines) + "\r\n" if lines else ""


def read_sdp_from_stdin():
    sdp = read_sdp(sys.stdin)
    if not sdp:
        raise RuntimeError("no SDP on stdin")
    return sdp


def print_sdp(sdp):
    """Prints an SDP with \\n line ends, then an empty line that ends it."""
    sys.stdout.write(sdp.replace("\r\n", "\n").rstrip("\n") + "\n\n")
    sys.stdout.flush()


def http_request(method, url, body=None, headers=None):
    """Returns (status, headers, body), HTTP errors included."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def post_offer(url, offer, mode):
    """POSTs an offer to a WHIP/WHEP endpoint; returns (answer, absolute Location or None)."""
    status, headers, body = http_request("POST", url, offer.encode(), {"Content-Type": "application/sdp"})
    if status != 201:
        raise RuntimeError(f"{mode.upper()} POST returned {status}: {body[:200]!r}")
    location = headers.get("Location") or headers.get("location")
    return body.decode(), (urllib.parse.urljoin(url, location) if location else None)
