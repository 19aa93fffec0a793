"""The web server's inputs are bounded (issue 16, items 5, 15, 16): a large
body is refused (413) without being read, a 422 does not echo the request,
an alias bomb is answered at once while the server keeps answering, and a
second run start names the run that is going."""

import json
import socket
import threading
import time

from tests.cli import wait_for
from tests.yaml_bomb import BOMB as UNIT_BOMB
from tests.webserver import Server, start_server

LIMIT = 2 * 1024**2  # web/security.py MAX_BODY_BYTES
# The billion laughs of the unit tests, as a plan whose workloads are the bomb.
BOMB = "name: p\n" + UNIT_BOMB.replace("i: &i", "workloads: &i")


def raw_post(server: Server, framing: str) -> tuple[socket.socket, "Answer"]:
    """A POST /api/validate whose headers are sent (with the CSRF token),
    and the reader of its answer; the body is the caller's to send."""
    csrf = server.client().headers["X-CSRF-Token"]
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.sendall(f"POST /api/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 f"X-CSRF-Token: {csrf}\r\nCookie: iofleet_csrf={csrf}\r\n{framing}\r\n\r\n".encode())
    answer = Answer(sock)
    answer.start()
    return sock, answer


class Answer(threading.Thread):
    """Reads the server's answer as it comes: a server that answers before
    the body's end closes with unread data, and the reset that follows would
    discard an answer not read yet."""

    def __init__(self, sock: socket.socket):
        super().__init__(daemon=True)
        self.sock, self.data = sock, b""

    def run(self):
        try:
            while chunk := self.sock.recv(65536):
                self.data += chunk
        except OSError:  # reset after the answer, or the timeout
            pass

    def answered(self) -> bool:
        return b"\r\n\r\n" in self.data

    def result(self) -> tuple[int, dict]:
        """(status, JSON body), once the server has closed (10 s at most)."""
        self.join(15)
        head, _, body = self.data.partition(b"\r\n\r\n")
        assert head, "no answer within 10 s"
        return int(head.split()[1]), json.loads(body)


def test_a_body_over_the_limit_is_refused_by_its_length_before_it_is_read(server):
    sock, answer = raw_post(server, "Content-Length: 300000000")  # 300 MB announced, 64 KiB sent
    sock.sendall(b'{"yaml": "' + b"x" * 65536)
    status, body = answer.result()  # answered now, not after 300 MB
    assert (status, body) == (413, {"error": "request body of 300,000,000 bytes is too large (limit 2,097,152 "
                                             "bytes); a plan is a few KiB"})
    assert server.client().get("/api/session").status_code == 200


def test_a_length_or_event_id_of_thousands_of_digits_is_refused_not_converted(server):
    sock, answer = raw_post(server, "Content-Length: " + "9" * 5000)
    answer.join(15)
    assert answer.data.split()[1] in (b"400", b"413"), answer.data[:200]  # the HTTP layer's refusal, or ours
    # The event stream's Last-Event-ID: a number it cannot take is no number (the stream starts over).
    client = server.client()
    with client.stream("GET", "/api/runs/current/events", headers={"Last-Event-ID": "9" * 5000}) as r:
        assert r.status_code == 200 and "event: status" in next(r.iter_text())
    assert client.get("/api/session").status_code == 200


def test_a_chunked_body_is_stopped_once_past_the_limit(server):
    sock, answer = raw_post(server, "Transfer-Encoding: chunked")  # a body without a length
    chunk, sent = b'{"yaml": "' + b"x" * (65536 - 10), 0
    try:
        while sent < 32 * LIMIT and not answer.answered():  # send until the server answers
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
    except OSError:
        pass  # the server answered and closed
    status, body = answer.result()
    assert sent < 32 * LIMIT, "no answer while 64 MiB were sent: the server reads the whole body"
    assert (status, body) == (413, {"error": "request body of more than 2,097,152 bytes is too large (limit "
                                             "2,097,152 bytes); a plan is a few KiB"})
    assert server.client().get("/api/session").status_code == 200


def test_a_422_names_the_field_without_echoing_the_request(server):
    secret = "SECRET-" + "y" * 250_000
    r = server.client().post("/api/validate", json={"yaml": secret, "targets": "not-a-list"})
    assert r.status_code == 422
    assert "SECRET" not in r.text and len(r.text) < 2000  # FastAPI's default sent the 250 KB back
    assert r.json() == {
        "error": "body.yaml: String should have at most 200000 characters",
        "problems": ["body.yaml: String should have at most 200000 characters",
                     "body.targets: Input should be a valid list"],
        "fields": [{"field": "body.yaml", "message": "String should have at most 200000 characters"},
                   {"field": "body.targets", "message": "Input should be a valid list"}]}


def test_alias_bomb_is_answered_at_once_and_the_server_keeps_answering(server):
    client = server.client()
    answers: dict = {}

    def post_bomb():
        start = time.monotonic()
        answers["bomb"] = client.post("/api/validate", json={"yaml": BOMB}, timeout=60)
        answers["bomb_s"] = time.monotonic() - start

    poster = threading.Thread(target=post_bomb)
    poster.start()
    start = time.monotonic()
    assert server.client().get("/api/session", timeout=20).status_code == 200  # timed out (20 s) before
    assert time.monotonic() - start < 5
    poster.join(60)
    assert answers["bomb_s"] < 5  # was minutes, and 1.85 GB
    message = "too many YAML aliases (they would add more than 10,000 values); write the values out"
    assert answers["bomb"].status_code == 200
    assert answers["bomb"].json() | {"fields": None} == {
        "ok": False, "error": f"plan: {message}", "problems": [f"plan: {message}"], "fields": None}


def test_a_second_start_while_the_first_is_starting_says_so(tmp_path):
    # A fleet host that accepts connections and never answers keeps the first
    # run in its start (the fio server check) until the listener is closed.
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(8)
    inventory = tmp_path / "inventory.yaml"
    port = mute.getsockname()[1]
    inventory.write_text(f"hosts:\n  - address: 127.0.0.1:{port}\n    targets: [/srv/t]\n")
    server = start_server(tmp_path / "data", "--hosts", str(inventory))
    try:
        client = server.client()
        first: dict = {}
        starter = threading.Thread(target=lambda: first.update(r=client.post(
            "/api/runs", json={"yaml": "name: slow\nworkloads: [{name: w}]\n", "fleet": True})))
        starter.start()
        wait_for(lambda: client.get("/api/runs/current").json().get("state") == "starting", timeout=30,
                 what="the first run to be starting")
        second = server.client().post("/api/runs", json={"yaml": "name: other\nworkloads: [{name: w}]\n",
                                                         "fleet": True})
        assert second.status_code == 409
        assert second.json() == {"error": "a run of plan slow is starting on this store; stop it or wait for it "
                                          "to end before starting another"}  # was "run None (slow) is still going"
    finally:
        mute.close()  # the first run's check fails at once
        starter.join(60)
        server.stop()
    # Closed while checked: "does not answer as a fio server", or refused when it connects after the close.
    assert first["r"].status_code == 400
    assert f"127.0.0.1:{port}" in first["r"].json()["error"]
