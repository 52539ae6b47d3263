#!/usr/bin/env python3
"""`qkv serve` end to end, with real HTTP clients (http.client, urllib).

Each test class starts the built server on a free loopback port (--port 0; the port is read
from its "listening on" line) and stops it with SIGTERM, which must exit 0. Answers are
compared with `qkv translate` / `qkv score` run on the same sentences. Every wait is
bounded: a server that does not start, answer or stop fails the test instead of hanging.

Environment: QKV_TOOL (the qkv binary), QKV_COMPAT_DIR (tests/compat), QKV_DATA_DIR
(data/multi30k), QKV_SERVE_LOAD ("CLIENTSxREQUESTS", default 8x50), QKV_TEST_OUTPUT_DIR (the
screenshot of the page goes there).

Run one class: python3 serve_test.py ApiTest
"""

import gzip
import http.client
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

QKV = os.environ.get("QKV_TOOL", "qkv")
COMPAT = os.environ.get("QKV_COMPAT_DIR", "tests/compat")
DATA = os.environ.get("QKV_DATA_DIR", "data/multi30k")
TRANSFORMER = os.path.join(COMPAT, "models", "transformer")
RNN = os.path.join(COMPAT, "models", "rnn-additive")
START_TIMEOUT = 120  # seconds: loading models under AddressSanitizer is slow
REQUEST_TIMEOUT = 60


def sentences(count=200):
    """Multi30k test sentences of mixed lengths, and the compatibility inputs."""
    with gzip.open(os.path.join(DATA, "test_2016_flickr.en.gz"), "rt", encoding="utf-8") as f:
        lines = [next(f).rstrip("\n") for _ in range(count)]
    with open(os.path.join(COMPAT, "input.en"), encoding="utf-8") as f:
        lines += [line.rstrip("\n") for line in f if line.strip()]
    return lines


def cli_translations(model, lines):
    """What `qkv translate` writes for `lines`, one output line per input line."""
    run = subprocess.run([QKV, "translate", "--model", model], input="\n".join(lines) + "\n",
                         capture_output=True, text=True, timeout=600, check=True)
    out = run.stdout.split("\n")
    assert out[-1] == "" and len(out) == len(lines) + 1, run.stderr
    return out[:-1]


class Server:
    """`qkv serve` on 127.0.0.1 and a free port; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, *flags):
        # The server writes through the same open file; reading with pread never moves the
        # offset it writes at (a seek would make its next lines overwrite the first ones).
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([QKV, "serve", "--port", "0", *flags], stdout=subprocess.DEVNULL,
                                     stderr=self.log, text=True)
        deadline = time.monotonic() + START_TIMEOUT
        self.port = None
        while self.port is None:
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+)\n", self.stderr())
            if match:
                self.port = int(match.group(1))
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("qkv serve did not start:\n" + self.stderr())
            else:
                time.sleep(0.05)

    def stderr(self):
        fd = self.log.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode("utf-8", errors="replace")

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, headers, decoded JSON or text) of one request."""
        own = conn is None
        conn = conn or self.connection()
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            conn.request(method, path, body=body, headers=headers or {})
            res = conn.getresponse()
            data = res.read()
            kind = res.getheader("Content-Type", "")
            value = json.loads(data) if kind.startswith("application/json") else data.decode()
            return res.status, dict(res.getheaders()), value
        finally:
            if own:
                conn.close()

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def stop(self, timeout=60):
        if self.proc.poll() is None and self.proc.pid > 0:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError("qkv serve did not stop within %d s after SIGTERM" % timeout)

    def __del__(self):
        self.log.close()


class ApiTest(unittest.TestCase):
    """The endpoints: answers equal the CLI's; models, health, metrics, score."""

    @classmethod
    def setUpClass(cls):
        cls.lines = sentences(20)
        cls.expected = cli_translations(TRANSFORMER, cls.lines)
        cls.server = Server("--model", TRANSFORMER, "--model", "en-de=" + RNN, "--threads", "2")

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.stderr()

    def test_translate_a_string_and_a_list_as_the_cli_does(self):
        status, _, body = self.server.post("/translate", {"q": self.lines[0], "source": "en",
                                                          "target": "de", "format": "text",
                                                          "model": "transformer"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body, {"translatedText": self.expected[0]})
        status, _, body = self.server.post("/translate", {"q": self.lines[:8]})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["translatedText"], self.expected[:8])

    def test_the_language_pair_picks_the_model(self):
        expected = cli_translations(RNN, self.lines[:3])
        status, _, body = self.server.post("/translate", {"q": self.lines[:3], "source": "en",
                                                          "target": "de"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["translatedText"], expected)

    def test_alignment_and_n_best_equal_the_clis(self):
        for kind in ("hard", "soft"):
            cli = subprocess.run([QKV, "translate", "--model", TRANSFORMER, "--alignment", kind],
                                 input="\n".join(self.lines[:4]) + "\n", capture_output=True,
                                 text=True, timeout=300, check=True).stdout.splitlines()
            status, _, body = self.server.post("/translate", {"q": self.lines[:4],
                                                              "alignment": kind})
            self.assertEqual(status, 200, body)
            got = [d["hypotheses"][0]["text"] + " ||| " + d["hypotheses"][0]["alignment"]
                   for d in body["details"]]
            self.assertEqual(got, cli)
        cli = subprocess.run([QKV, "translate", "--model", TRANSFORMER, "--n-best", "3"],
                             input=self.lines[1] + "\n", capture_output=True, text=True,
                             timeout=300, check=True).stdout.splitlines()
        status, _, body = self.server.post("/translate", {"q": self.lines[1], "n_best": 3,
                                                          "scores": True})
        self.assertEqual(status, 200, body)
        got = ["0 ||| %s ||| %.6f" % (h["text"], h["score"]) for h in body["details"]["hypotheses"]]
        self.assertEqual(got, cli)

    def test_attention_has_layers_heads_target_source_with_tokens(self):
        status, _, body = self.server.post("/translate", {"q": "A dog runs.", "attention": True})
        self.assertEqual(status, 200, body)
        att = body["details"]["hypotheses"][0]["attention"]
        self.assertEqual(att["source_tokens"][-1], "</s>")
        weights = att["weights"]
        self.assertEqual((len(weights), len(weights[0])), (att["layers"], att["heads"]))
        self.assertEqual(len(weights[0][0]), len(att["target_tokens"]))
        self.assertEqual(len(weights[0][0][0]), len(att["source_tokens"]))
        for row in weights[-1][0]:
            self.assertAlmostEqual(sum(row), 1.0, places=4)

    def test_score_equals_qkv_score(self):
        pairs = [("A dog runs.", "Ein Hund läuft."), ("Two men.", "Zwei Männer.")]
        cli = subprocess.run([QKV, "score", "--model", TRANSFORMER],
                             input="".join("%s ||| %s\n" % p for p in pairs), capture_output=True,
                             text=True, timeout=300, check=True).stdout.splitlines()
        status, _, body = self.server.post("/score", {"q": [p[0] for p in pairs],
                                                      "translation": [p[1] for p in pairs]})
        self.assertEqual(status, 200, body)
        got = ["%.6f %.6f" % (s["log_prob"], s["per_token"]) for s in body["scores"]]
        self.assertEqual(got, cli)

    def test_models_health_and_metrics(self):
        status, _, models = self.server.request("GET", "/models")
        self.assertEqual(status, 200)
        self.assertEqual([m["name"] for m in models], ["transformer", "en-de"])
        self.assertEqual((models[1]["source"], models[1]["target"]), ("en", "de"))
        self.assertEqual(models[0]["config"]["type"], "transformer")
        self.assertEqual(self.server.request("GET", "/health")[:1], (200,))
        self.server.post("/translate", {"q": ["a", "b"]})
        status, headers, text = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        self.assertRegex(text, r'qkv_requests_total\{endpoint="/translate",status="200"\} [1-9]')
        self.assertRegex(text, r"\nqkv_sentences_total [1-9]")
        self.assertRegex(text, r'\nqkv_request_seconds_bucket\{endpoint="/translate",le="\+Inf"\} [1-9]')
        self.assertIn("\nqkv_batch_sentences_count ", text)
        self.assertIn("\nqkv_queue_sentences ", text)


def assert_refused(test, server, body, status, field=None, raw=False):
    """POSTs `body` to /translate and checks the refusal's status and field."""
    got, headers, answer = server.post("/translate", body if raw else json.dumps(body))
    test.assertEqual(got, status, answer)
    test.assertIsInstance(answer, dict)
    test.assertIn("error", answer)
    if field is not None:
        test.assertEqual(answer.get("field", ""), field, answer)
    return headers


class BadInputTest(unittest.TestCase):
    """Each kind of bad input gets its status (and field); the server keeps serving."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("--model", TRANSFORMER, "--max-body-bytes", "2000",
                            "--max-sentences", "4", "--max-sentence-bytes", "100")

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0, cls.server.stderr()

    def tearDown(self):
        status, _, body = self.server.post("/translate", {"q": "A dog runs."})
        self.assertEqual(status, 200, "the server stopped serving: %s" % body)

    def test_malformed_json(self):
        assert_refused(self, self.server, '{"q": "a",', 400, "", raw=True)

    def test_wrong_types(self):
        assert_refused(self, self.server, {"q": 5}, 400, "q")
        assert_refused(self, self.server, {"q": ["a", None]}, 400, "q[1]")
        assert_refused(self, self.server, {"q": "a", "beam_size": "4"}, 400, "beam_size")
        assert_refused(self, self.server, {"q": "a", "attention": "yes"}, 400, "attention")

    def test_unknown_field(self):
        assert_refused(self, self.server, {"q": "a", "beamsize": 4}, 400, "beamsize")

    def test_invalid_utf8(self):
        assert_refused(self, self.server, b'{"q": ["ok", "caf\xe9"]}', 400, "q[1]", raw=True)

    def test_bad_values(self):
        assert_refused(self, self.server, {"q": "a", "model": "nope"}, 400, "model")
        assert_refused(self, self.server, {"q": "a", "alignment": "fuzzy"}, 400, "alignment")
        assert_refused(self, self.server, {"q": "a", "format": "html"}, 400, "format")
        assert_refused(self, self.server, {"q": "a\u0007b"}, 400, "q")

    def test_limits_are_413(self):
        assert_refused(self, self.server, {"q": "a" * 3000}, 413)  # the body
        assert_refused(self, self.server, {"q": ["a"] * 5}, 413, "q")
        assert_refused(self, self.server, {"q": ["a", "b" * 101]}, 413, "q[1]")

    def test_unknown_endpoint_is_404_json(self):
        status, _, body = self.server.request("GET", "/nope")
        self.assertEqual(status, 404)
        self.assertIn("error", body)


class QueueAndTimeoutTest(unittest.TestCase):
    """A full queue answers 503 with Retry-After; a request past --timeout 504."""

    def test_full_queue_and_timeout(self):
        # One worker; a batch of one sentence waits the 1 s window, longer than the 400 ms
        # timeout, while two sentences fill a batch (--max-batch 2) and go at once. The
        # first request waits in the worker's window, the second in the queue (one
        # sentence fits), the others find it full.
        server = Server("--model", TRANSFORMER, "--threads", "1", "--batch-window", "1000",
                        "--max-batch", "2", "--timeout", "400", "--queue-size", "1")
        try:
            replies = [None] * 6

            def send(i):  # each its own beam size: no two share a batch
                replies[i] = server.post("/translate", {"q": "sentence %d" % i,
                                                        "beam_size": 1 + i})
            threads = [threading.Thread(target=send, args=(i,)) for i in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(REQUEST_TIMEOUT)
            statuses = sorted(r[0] for r in replies)
            self.assertIn(504, statuses)
            self.assertIn(503, statuses)
            self.assertTrue(set(statuses) <= {503, 504}, statuses)
            for status, headers, body in replies:
                if status == 503:
                    self.assertEqual(headers.get("Retry-After"), "1")
                    self.assertIn("queue is full", body["error"])
            time.sleep(1.2)  # the first batch's window has passed; the worker is free
            status, _, body = server.post("/translate", {"q": ["A dog.", "A cat."]})
            self.assertEqual(status, 200, body)
        finally:
            self.assertEqual(server.stop(), 0, server.stderr())


class ApiKeyTest(unittest.TestCase):
    def test_every_endpoint_but_health_needs_the_key(self):
        server = Server("--model", TRANSFORMER, "--api-key", "s3cret")
        try:
            self.assertEqual(server.post("/translate", {"q": "a"})[0], 401)
            self.assertEqual(server.post("/translate", {"q": "a", "api_key": "x"})[0], 401)
            self.assertEqual(server.post("/translate", {"q": "a", "api_key": "s3cret"})[0], 200)
            self.assertEqual(server.post("/translate", {"q": "a"},
                                         headers={"X-API-Key": "s3cret"})[0], 200)
            self.assertEqual(server.post("/translate", {"q": "a"},
                                         headers={"Authorization": "Bearer s3cret"})[0], 200)
            self.assertEqual(server.request("GET", "/models")[0], 401)
            self.assertEqual(server.request("GET", "/metrics")[0], 401)
            self.assertEqual(server.request("GET", "/models?api_key=s3cret")[0], 200)
            self.assertEqual(server.request("GET", "/")[0], 401)
            self.assertEqual(server.request("GET", "/?api_key=s3cret")[0], 200)
            self.assertEqual(server.request("GET", "/health")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0, server.stderr())


class StartupTest(unittest.TestCase):
    """Errors before serving name the flag and exit non-zero."""

    def run_serve(self, *flags):
        return subprocess.run([QKV, "serve", *flags], capture_output=True, text=True,
                              timeout=START_TIMEOUT)

    def test_a_missing_model_and_a_taken_port(self):
        run = self.run_serve("--model", "/nonexistent/model", "--port", "0")
        self.assertEqual(run.returncode, 1)
        self.assertIn("--model: /nonexistent/model", run.stderr)
        server = Server("--model", TRANSFORMER)
        try:
            run = self.run_serve("--model", TRANSFORMER, "--port", str(server.port))
            self.assertEqual(run.returncode, 1)
            self.assertIn("--port %d: cannot listen there" % server.port, run.stderr)
        finally:
            self.assertEqual(server.stop(), 0, server.stderr())
        run = self.run_serve("--model", TRANSFORMER, "--model", TRANSFORMER)
        self.assertEqual(run.returncode, 2)
        self.assertIn("given twice", run.stderr)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class LoadTest(unittest.TestCase):
    """Concurrent clients on keep-alive connections: no failure, every answer the CLI's.

    Prints p50/p99 latency and throughput beside `qkv translate` on the same sentences as one
    file (its own timing, model loading excluded)."""

    def test_concurrent_clients(self):
        clients, per_client = (int(n) for n in os.environ.get("QKV_SERVE_LOAD", "8x50").split("x"))
        lines = sentences(200)
        rng = random.Random(1)
        plans = [[rng.sample(lines, rng.choice((1, 1, 1, 2, 4))) for _ in range(per_client)]
                 for _ in range(clients)]
        everything = [s for plan in plans for batch in plan for s in batch]
        run = subprocess.run([QKV, "translate", "--model", TRANSFORMER],
                             input="\n".join(everything) + "\n", capture_output=True, text=True,
                             timeout=1800, check=True)
        outputs = run.stdout.split("\n")[:-1]
        self.assertEqual(len(outputs), len(everything))
        expected = dict(zip(everything, outputs))
        cli_seconds = float(re.search(r"in ([0-9.]+) s", run.stderr).group(1))
        server = Server("--model", TRANSFORMER, "--threads", os.environ.get("QKV_SERVE_THREADS", "1"))
        latencies, failures, lock = [], [], threading.Lock()

        def client(plan):
            conn = server.connection()
            try:
                for batch in plan:
                    start = time.monotonic()
                    try:
                        status, _, body = server.post("/translate", {"q": batch}, conn=conn)
                    except (OSError, http.client.HTTPException) as e:
                        conn.close()
                        conn = server.connection()
                        status, body = -1, repr(e)
                    took = time.monotonic() - start
                    with lock:
                        latencies.append(took)
                        if status != 200:
                            failures.append((status, body))
                        elif body["translatedText"] != [expected[s] for s in batch]:
                            failures.append(("wrong answer", batch, body))
            finally:
                conn.close()

        try:
            start = time.monotonic()
            threads = [threading.Thread(target=client, args=(plan,)) for plan in plans]
            for t in threads:
                t.start()
            for t in threads:
                t.join(1200)
            seconds = time.monotonic() - start
            self.assertFalse(any(t.is_alive() for t in threads), "clients still running")
            requests = clients * per_client
            self.assertEqual(len(latencies), requests)
            self.assertEqual(failures[:3], [])
            metrics = server.request("GET", "/metrics")[2]
            batches = int(re.search(r"\nqkv_batch_sentences_count (\d+)", metrics).group(1))
            n = len(everything)
            print("\nqkv serve load: %d clients x %d requests (%d sentences) in %.2f s: "
                  "%.1f requests/s, %.1f sentences/s; latency p50 %.1f ms, p99 %.1f ms; "
                  "%.2f sentences per batch. qkv translate, the same sentences as one file: "
                  "%.2f s, %.1f sentences/s; the server reaches %.0f %% of it"
                  % (clients, per_client, n, seconds, requests / seconds, n / seconds,
                     1000 * statistics.median(latencies), 1000 * percentile(latencies, 0.99),
                     n / max(1, batches), cli_seconds, n / cli_seconds,
                     100 * cli_seconds / seconds))
        finally:
            self.assertEqual(server.stop(), 0, server.stderr())


class ShutdownTest(unittest.TestCase):
    """SIGTERM with requests in flight: every one is answered, then the server exits 0."""

    def test_requests_in_flight_are_answered(self):
        lines = sentences(8)[:8]
        expected = cli_translations(TRANSFORMER, lines)
        # A 5 s window holds all eight inside; the stop must not wait it out.
        server = Server("--model", TRANSFORMER, "--batch-window", "5000")
        replies = [None] * len(lines)

        def send(i):
            try:
                replies[i] = server.post("/translate", {"q": lines[i]})
            except (OSError, http.client.HTTPException) as e:
                replies[i] = (-1, {}, repr(e))
        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(lines))]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while True:  # until all eight are inside the server (waiting in the batch window)
            metrics = server.request("GET", "/metrics")[2]
            if re.search(r"\nqkv_requests_in_flight 8\n", metrics):
                break
            self.assertLess(time.monotonic(), deadline, metrics)
            time.sleep(0.01)
        stop_started = time.monotonic()
        code = server.stop()
        stop_seconds = time.monotonic() - stop_started
        for t in threads:
            t.join(REQUEST_TIMEOUT)
        self.assertEqual(code, 0, server.stderr())
        self.assertLess(stop_seconds, 4.5, "the stop waited out the batch window")
        self.assertEqual([r[0] for r in replies], [200] * len(lines), replies)
        self.assertEqual([r[2]["translatedText"] for r in replies], expected)
        self.assertIn("SIGTERM: stopping", server.stderr())
        with self.assertRaises(OSError):  # no longer listening
            server.request("GET", "/health")


class PageTest(unittest.TestCase):
    """The page at / in headless Chromium: a sentence typed, its translation and heatmap shown."""

    def test_page_translates_and_draws_the_heatmap(self):
        status, _, html = None, None, None
        server = Server("--model", TRANSFORMER, "--model", "en-de=" + RNN)
        try:
            status, headers, html = server.request("GET", "/")
            self.assertEqual(status, 200)
            self.assertTrue(headers["Content-Type"].startswith("text/html"))
            # Self-contained: no script, style or image from elsewhere.
            self.assertNotRegex(html, r'(src|href)=["\']?(https?:)?//')
            if shutil.which("chromium") is None:
                self.skipTest("chromium is not installed (scripts/setup.sh installs it)")
            sentence = "A dog runs on the grass."
            expected = cli_translations(TRANSFORMER, [sentence])[0]
            out = os.environ.get("QKV_TEST_OUTPUT_DIR", tempfile.mkdtemp())
            os.makedirs(out, exist_ok=True)
            url = "http://127.0.0.1:%d/?type=%s" % (server.port, urllib.request.quote(sentence))
            with tempfile.TemporaryDirectory() as profile:
                base = ["timeout", "120", "chromium", "--headless", "--disable-gpu", "--no-sandbox",
                        "--no-first-run", "--user-data-dir=" + profile, "--enable-logging=stderr",
                        "--v=0", "--virtual-time-budget=10000"]
                dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True,
                                     timeout=150)
                self.assertEqual(dom.returncode, 0, dom.stderr)
                console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
                self.assertEqual(console, [])
                shot = os.path.join(out, "serve_page.png")
                if os.path.exists(shot):
                    os.remove(shot)
                png = subprocess.run(base + ["--window-size=1100,900", "--screenshot=" + shot, url],
                                     capture_output=True, text=True, timeout=150)
                self.assertEqual(png.returncode, 0, png.stderr)
                self.assertGreater(os.path.getsize(shot), 10000)
            page = dom.stdout
            translation = re.search(r'<div id="translation">(.*?)</div>', page, re.S)
            self.assertIsNotNone(translation, page[:2000])
            self.assertEqual(translation.group(1), expected.replace("&", "&amp;"))
            self.assertIn('<table class="heatmap">', page)
            # Target pieces down (with </s>), source pieces across: rows x columns cells.
            self.assertGreater(page.count("<td "), 10)
            self.assertIn('data-typed="done"', page)
        finally:
            self.assertEqual(server.stop(), 0, server.stderr())


if __name__ == "__main__":
    unittest.main(verbosity=2)
