"""Headless Chromium driven over the DevTools protocol (``--remote-debugging-pipe``), and a PNG reader.

Just what the HTML viewer's test needs, with nothing to install but Debian's ``chromium``: open a page,
press keys, evaluate JavaScript, take a screenshot. The pipe protocol is JSON messages ended by NUL:
Chromium reads commands on its fd 3 and writes replies and events on its fd 4.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
import zlib

import numpy as np

KEYS = {"ArrowLeft": 37, "ArrowRight": 39, "Home": 36, "End": 35}


def chromium_binary():
    """The Chromium binary, or None (Debian's package ``chromium`` installs ``chromium``)."""
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    """One headless Chromium with one page; ``timeout`` bounds every reply."""

    def __init__(self, binary, width=1280, height=800, timeout=30):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        self.timeout, self._buf, self._id = timeout, b"", 0

        def fds():                           # in the child: our pipe ends as its fd 3 and fd 4
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False, session=True)

    def call(self, method, session=False, **params):
        """Send a command and wait for its reply (events in between are dropped)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._r], [], [], left)[0]:
                    raise TimeoutError(f"chromium did not answer {method} within {self.timeout} s")
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium exited during {method}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url, ready="document.body && document.body.dataset.step !== undefined"):
        self.call("Page.navigate", url=url, session=True)
        self.wait(ready)

    def eval(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression):
        deadline = time.monotonic() + self.timeout
        while not self.eval(f"!!({expression})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"page never satisfied {expression}")
            time.sleep(0.05)

    def press(self, key):
        """A real key press (keyDown then keyUp), as the user's keyboard sends it."""
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=key,
                      windowsVirtualKeyCode=KEYS[key], session=True)

    def screenshot(self):
        return base64.b64decode(self.call("Page.captureScreenshot", format="png", session=True)["data"])

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)


def read_png(data):
    """An 8-bit RGB or RGBA, non-interlaced PNG as a (height, width, channels) uint8 array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h = int.from_bytes(chunk[:4], "big"), int.from_bytes(chunk[4:8], "big")
            depth, colour, interlace = chunk[8], chunk[9], chunk[12]
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unsupported PNG"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, w * bpp + 1)
    out = np.zeros((h, w * bpp), dtype=np.uint8)
    prior = np.zeros(w * bpp, dtype=np.int32)
    for y in range(h):
        f, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if f == 0:
            cur = line
        elif f == 1:                                             # Sub: a running sum per channel
            cur = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) % 256
        elif f == 2:                                             # Up
            cur = (line + prior) % 256
        else:                                                    # Average, Paeth: pixel by pixel
            cur, p, x = [0] * (w * bpp), prior.tolist(), line.tolist()
            for i in range(w * bpp):
                a = cur[i - bpp] if i >= bpp else 0
                b, c = p[i], p[i - bpp] if i >= bpp else 0
                if f == 3:
                    cur[i] = (x[i] + (a + b) // 2) % 256
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    cur[i] = (x[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) % 256
            cur = np.array(cur, dtype=np.int32)
        out[y] = cur
        prior = cur
    return out.reshape(h, w, bpp)
