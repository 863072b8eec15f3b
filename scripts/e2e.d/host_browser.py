#!/usr/bin/env python3
"""The host's pages in a real browser (scripts/test-host-browser).

`onair serve` with 6 DJs on the quiet scenario and `onair host`; the other
DJs connect with a plain HTTP client (scripts/e2e.d/host.py's helpers),
one DJ connects in headless Chromium itself: /connect, the emulator's
consent page (a list of DJs: the browser clicks its DJ), /callback, which
gives the browser the DJ's session cookie. The admin logs in through
/admin/login in a browser context of its own (its cookies apart). Chromium
is driven over the Chrome DevTools Protocol (--remote-debugging-port, a
WebSocket client written here on the standard library).

Checked: the DJ's dashboard shows their bot and no other; the admin's shows
every DJ's bot with its state; the pages' script runs under the
Content-Security-Policy (no violation reported, no script error) and rows,
the card and the event log update over the live stream (SSE); no secret
on any page. Screenshots of the admin's dashboard, the DJ's dashboard and
the DJ's bot page under target/. Exit 0 only when all of it holds.
Standard library only.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import e2e  # noqa: E402
import host as judge  # noqa: E402

STATES = {"starting", "connected", "connecting", "waiting", "backing_off", "refreshing",
          "needs_consent", "stopped", "disabled"}

# Records every Content-Security-Policy violation of a page (run by the
# browser before the page's own scripts, outside the page's policy).
CSP_WATCH = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline'));
});
"""


class WebSocket:
    """A WebSocket client (RFC 6455), text frames only: enough for CDP."""

    def __init__(self, url, timeout=30):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            byte = self.sock.recv(1)
            if not byte:
                raise ConnectionError("the browser closed the DevTools connection")
            head += byte
        accept = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        if not head.startswith(b"HTTP/1.1 101") or accept.encode() not in head:
            raise ConnectionError(f"no WebSocket: {head[:80]!r}")
        self.buf = b""

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            header = bytes([0x81, 0x80 | n])
        elif n < 1 << 16:
            header = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            header = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def _take(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        """The next text message (pings answered, fragments joined)."""
        message = b""
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(self._take(2), "big")
            elif n == 127:
                n = int.from_bytes(self._take(8), "big")
            mask = self._take(4) if b1 & 0x80 else None
            data = self._take(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode == 0x9:  # ping
                self.sock.sendall(bytes([0x8A, 0x80]) + os.urandom(4))
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += data
                if b0 & 0x80:
                    return message.decode()


class Cdp:
    """Chrome DevTools Protocol calls over one browser connection (targets
    attached flat: each page's calls carry its session id)."""

    def __init__(self, url):
        self.ws = WebSocket(url)
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        ask = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            ask["sessionId"] = session
        self.ws.send(json.dumps(ask))
        deadline = time.monotonic() + timeout
        while True:
            self.ws.sock.settimeout(max(0.1, deadline - time.monotonic()))
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)


class Tab:
    """One page in a browser context (its own cookies)."""

    def __init__(self, cdp, context):
        self.cdp = cdp
        target = cdp.call("Target.createTarget", {"url": "about:blank", "browserContextId": context})
        self.session = cdp.call("Target.attachToTarget",
                                {"targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_WATCH})

    def call(self, method, params=None):
        return self.cdp.call(method, params, session=self.session)

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def wait(self, expression, what, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.eval(expression)
            except RuntimeError as e:
                # Asked while the page was being replaced (Chromium's
                # "Inspected target navigated or closed", or no context
                # yet): asked again on the new one.
                if "navigated or closed" not in str(e) and "context" not in str(e):
                    raise
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"not within {timeout} s: {what}")

    def settle(self, what):
        """Waits for the document that replaces the current one to load."""
        self.wait("!window.__old && document.readyState === 'complete'", what)

    def goto(self, url):
        self.eval("window.__old = true")
        self.call("Page.navigate", {"url": url})
        self.settle(url)

    def click(self, selector):
        self.eval("window.__old = true")
        found = self.eval(f"(function(){{var e = document.querySelector({json.dumps(selector)});"
                          f" if (!e) return false; e.click(); return true;}})()")
        if not found:
            raise RuntimeError(f"nothing to click at {selector}")
        self.settle(selector)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def problems(self):
        """CSP violations, script errors and security messages of this tab."""
        found = [f"CSP violation: {v}" for v in (self.eval("window.__csp || []") or [])]
        for e in self.cdp.events:
            if e.get("sessionId") != self.session:
                continue
            params = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                found.append(f"script error: {params.get('exceptionDetails', {}).get('text')}")
            elif e["method"] == "Log.entryAdded":
                entry = params.get("entry", {})
                text = entry.get("text", "")
                if entry.get("source") == "security" or "Content Security Policy" in text:
                    found.append(f"console: {text}")
            elif e["method"] == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(f"console.error: {params.get('args')}")
        return found


def start_chromium(work):
    profile = os.path.join(work, "chromium-profile")
    proc = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--window-size=1280,900", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--no-first-run",
         "--no-default-browser-check", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        if not ready:
            continue
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        match = re.search(r"DevTools listening on (ws://\S+)", line)
        if match:
            # Keep reading its stderr so the browser never blocks on it.
            log = open(os.path.join(work, "chromium.log"), "w")
            log.writelines(seen)
            subprocess.Popen(["cat"], stdin=proc.stderr, stdout=log)
            return proc, match.group(1)
    proc.kill()
    raise RuntimeError("chromium did not open its DevTools port: " + "".join(seen[-5:]))


def rows_of(dom):
    return {int(b): (s, cells) for b, s, cells in re.findall(
        r'<tr id="bot-(\d+)"[^>]*data-state="([a-z_]+)"[^>]*>(.*?)</tr>', dom, re.S)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--onair", required=True)
    parser.add_argument("--out", default="target")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="onair-host-browser-")
    serve = subprocess.Popen(
        [args.onair, "serve", "--json", "--scenario", "quiet", "--speed", "1", "--djs", "5"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"),
    )
    host = browser = None
    try:
        ready, _, _ = select.select([serve.stdout], [], [], 30)
        if not ready:
            print("host browser: onair serve did not start")
            return 1
        info = json.loads(serve.stdout.readline())
        control, base = info["controlUrl"], info["baseUrl"]
        port = judge.free_port()
        url = f"http://127.0.0.1:{port}"
        app = e2e.http_json(f"{control}/apps", {"redirectUri": f"{url}/callback"})
        config = os.path.join(work, "host.toml")
        with open(config, "w") as f:
            f.write(f"""{judge.app_section(base, app["clientId"])}[host]
listen = "127.0.0.1:{port}"
start_spread_ms = 500
{judge.KIT}""")
        admin = secrets.token_urlsafe(24)
        env = dict(os.environ, ONAIR_HOST_CLIENT_SECRET=app["clientSecret"],
                   ONAIR_HOST_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
                   ONAIR_HOST_ADMIN_TOKEN=admin)
        host = judge.Host(args.onair, config, env, os.path.join(work, "host.log"), url, admin)
        host.start()
        djs = [d["dj"] for d in e2e.http_json(f"{control}/djs")["djs"]]
        mine, others = djs[0], djs[1:]
        bots = {dj: judge.connect(url, dj)[0] for dj in others}

        browser, devtools = start_chromium(work)
        cdp = Cdp(devtools)
        dj_tab = Tab(cdp, cdp.call("Target.createBrowserContext")["browserContextId"])
        admin_tab = Tab(cdp, cdp.call("Target.createBrowserContext")["browserContextId"])

        # The DJ connects in the browser: /connect, the consent page's link
        # for this DJ, /callback, their bot's page (and a session cookie).
        dj_tab.goto(f"{url}/connect")
        dj_tab.click(f'a[href$="dj={urllib.parse.quote_plus(mine)}"]')
        path = dj_tab.wait(
            "location.pathname.startsWith('/bots/') && location.pathname", "the DJ's bot page")
        bots[mine] = int(path.rsplit("/", 1)[1])
        mine_bot = bots[mine]

        # The admin logs in with the token through the form.
        admin_tab.goto(f"{url}/admin/login")
        admin_tab.eval(f"document.querySelector('input[name=token]').value = {json.dumps(admin)}")
        admin_tab.click('form[action="/admin/login"] button')

        # Some events first, so the pages have something to show.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            views = host.api("/api/bots")["bots"]
            if len(views) == len(djs) and all(
                    v["status"] and v["status"]["counters"]["chat"] > 0 for v in views):
                break
            time.sleep(0.3)

        problems = []
        # The DJ's bot page: its card and log update over the live stream.
        dj_tab.goto(f"{url}/bots/{mine_bot}")
        dj_tab.eval("document.getElementById('card').__old = true;"
                    "var first = document.querySelector('#log li'); if (first) first.__old = true")
        try:
            dj_tab.wait("!document.getElementById('card').__old",
                        "the bot's card replaced by a live update")
            dj_tab.wait("document.querySelector('#log li') && !document.querySelector('#log li').__old",
                        "a log line added by a live update")
        except TimeoutError as e:
            problems.append(f"the DJ's bot page: {e}")
        bot_dom = dj_tab.eval("document.documentElement.outerHTML")
        os.makedirs(args.out, exist_ok=True)
        bot_shot = os.path.abspath(os.path.join(args.out, "host-bot.png"))
        dj_tab.screenshot(bot_shot)
        problems += [f"the DJ's bot page: {p}" for p in dj_tab.problems()]

        # The DJ's dashboard: their bot only, its row replaced live.
        dj_tab.goto(f"{url}/")
        try:
            dj_tab.wait(f"!!document.getElementById('bot-{mine_bot}')", "the DJ's row")
            dj_tab.eval(f"document.getElementById('bot-{mine_bot}').__old = true")
            dj_tab.wait(f"document.getElementById('bot-{mine_bot}') &&"
                        f" !document.getElementById('bot-{mine_bot}').__old",
                        "the DJ's row replaced by a live update")
        except TimeoutError as e:
            problems.append(f"the DJ's dashboard: {e}")
        dj_dom = dj_tab.eval("document.documentElement.outerHTML")
        dj_shot = os.path.abspath(os.path.join(args.out, "host-dj.png"))
        dj_tab.screenshot(dj_shot)
        problems += [f"the DJ's dashboard: {p}" for p in dj_tab.problems()]
        seen = set(rows_of(dj_dom))
        if seen != {mine_bot}:
            problems.append(f"the DJ's dashboard shows bots {sorted(seen)}, not only {mine_bot}")

        # The admin's dashboard: every DJ's bot with its state, live.
        admin_tab.goto(f"{url}/")
        first = bots[others[0]]
        try:
            admin_tab.eval(f"document.getElementById('bot-{first}').__old = true")
            admin_tab.wait(f"document.getElementById('bot-{first}') &&"
                           f" !document.getElementById('bot-{first}').__old",
                           "a row replaced by a live update")
        except (TimeoutError, RuntimeError) as e:
            problems.append(f"the admin's dashboard: {e}")
        dom = admin_tab.eval("document.documentElement.outerHTML")
        shot = os.path.abspath(os.path.join(args.out, "host-dashboard.png"))
        admin_tab.screenshot(shot)
        problems += [f"the admin's dashboard: {p}" for p in admin_tab.problems()]

        for path in (shot, dj_shot, bot_shot):
            if not os.path.exists(path) or os.path.getsize(path) < 5000:
                problems.append(f"no screenshot at {path}")
        if "<table id=\"bots\"" not in dom:
            problems.append("the admin's dashboard has no table")
        rows = rows_of(dom)
        for dj, bot in bots.items():
            if bot not in rows:
                problems.append(f"{dj}'s bot {bot}: no row on the admin's dashboard")
                continue
            state, cells = rows[bot]
            if state not in STATES:
                problems.append(f"{dj}'s bot {bot}: unknown state {state!r}")
            if f'href="/bots/{bot}"' not in cells:
                problems.append(f"{dj}'s bot {bot}: no link to its page")
            if not re.search(r'class="state state-[a-z_]+">[^<]+<', cells):
                problems.append(f"{dj}'s bot {bot}: its state is not shown")
        if 'id="card"' not in bot_dom or 'id="log"' not in bot_dom:
            problems.append("the bot's page has no state card or event log")
        if "<li data-kind=" not in bot_dom:
            problems.append("the bot's page shows no event")
        for secret in (admin, app["clientSecret"], env["ONAIR_HOST_KEY"]):
            if secret in dom or secret in bot_dom or secret in dj_dom:
                problems.append("a secret is on a page")
        code = host.stop()
        host = None
        if code != 0:
            problems.append(f"the host exited with {code} on SIGTERM")
        if problems:
            print(f"host browser FAILED ({len(rows)} rows; logs: {work})")
            for p in problems:
                print(f"  - {p}")
            print("0 passed, 1 failed")
            return 1
        print(f"host browser ok — Chromium logged in as a DJ (their bot only) and as the admin "
              f"({len(rows)} bots for {len(djs)} DJs, each with its state); the script ran under "
              f"the CSP and rows, card and log updated live; screenshots: {shot}, {dj_shot}, {bot_shot}")
        print("1 passed, 0 failed")
        shutil.rmtree(work, ignore_errors=True)
        return 0
    finally:
        if browser is not None and browser.poll() is None:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait()
        if host is not None and host.proc is not None and host.proc.poll() is None:
            os.killpg(host.proc.pid, signal.SIGKILL)
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=10)
        except subprocess.TimeoutExpired:
            serve.kill()


if __name__ == "__main__":
    sys.exit(main())
