"""An HTTP server whose connections cannot exhaust it (the review page's transport).

Reads: requests on its listening socket. Writes: nothing of its own.
Refuses: a connection that has not sent its whole request head (request line and headers)
within `head_timeout` seconds, or a head over `max_head` bytes (closed); beyond `max_waiting`
connections still sending their head, the oldest is closed, so a flood of idle or trickling
connections cannot crowd out a curator's next request.

How: one thread (the `serve_forever` loop) accepts connections and collects their heads with a
selector, never blocking on any of them; a request whose head is complete goes to a fixed pool
of `workers` threads, which read its body and answer with `io_timeout` seconds per socket read
or write. A worker is therefore never held by a client that is not sending, and the number of
threads never grows with the number of connections (`ThreadingHTTPServer` starts one thread
per connection and keeps it for as long as the client stays silent).
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

log = logging.getLogger(__name__)

_HEAD_END = (b"\r\n\r\n", b"\n\n")


@dataclass
class _Waiting:
    """A connection still sending its request head."""

    sock: socket.socket
    address: Any
    deadline: float
    head: bytearray = field(default_factory=bytearray)


class _HeadThenSocket(io.RawIOBase):
    """The bytes already read from a connection (its head), then the connection itself."""

    def __init__(self, head: bytes, sock: socket.socket):
        self._head = memoryview(head)
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._sock.recv_into(buffer)


class BoundedHandler(BaseHTTPRequestHandler):
    """A request handler that reads the head its server collected before the socket."""

    timeout = 10.0  # seconds per socket read or write while a request is handled

    def setup(self) -> None:
        super().setup()
        head = getattr(self.server, "take_head", lambda: b"")()
        self.rfile.close()  # the socket stays open; its head was read already
        self.rfile = io.BufferedReader(_HeadThenSocket(head, self.connection))


class BoundedHTTPServer(HTTPServer):
    """`HTTPServer` with a waiting room for request heads and a fixed pool of workers."""

    request_queue_size = 128  # listen backlog: a burst of connections is queued, not dropped
    workers = 8
    max_waiting = 256
    head_timeout = 10.0
    max_head = 64 << 10

    def __init__(self, address: tuple[str, int], handler: type[BoundedHandler]):
        super().__init__(address, handler)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="http-worker")
        self._waiting: OrderedDict[int, _Waiting] = OrderedDict()  # by fd, oldest first
        self._heads = threading.local()
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()

    # -- the accepting and head-collecting loop ----------------------------------------------

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stop.clear()
        self._stopped.clear()
        self.socket.setblocking(False)
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(self.socket, selectors.EVENT_READ)
                while not self._stop.is_set():
                    for key, _ in sel.select(self._wait_time(poll_interval)):
                        if key.fileobj is self.socket:
                            self._accept(sel)
                        else:
                            self._read_head(sel, key.fd)
                    self._expire(sel)
                for fd in list(self._waiting):
                    self._drop(sel, fd)
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop `serve_forever` and wait until it has returned."""
        self._stop.set()
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def waiting(self) -> int:
        """Connections still sending their request head."""
        return len(self._waiting)

    def _wait_time(self, poll_interval: float) -> float:
        if not self._waiting:
            return poll_interval
        first = next(iter(self._waiting.values()))
        return max(0.0, min(poll_interval, first.deadline - time.monotonic()))

    def _accept(self, sel: selectors.BaseSelector) -> None:
        while True:  # drain the backlog: a burst must not wait a loop turn per connection
            try:
                sock, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # e.g. out of file descriptors: try again next turn
                log.warning("accept failed: %s", exc)
                return
            sock.setblocking(False)
            if len(self._waiting) >= self.max_waiting:
                self._drop(sel, next(iter(self._waiting)))  # the oldest makes room
            deadline = time.monotonic() + self.head_timeout
            self._waiting[sock.fileno()] = _Waiting(sock, address, deadline)
            sel.register(sock, selectors.EVENT_READ)

    def _read_head(self, sel: selectors.BaseSelector, fd: int) -> None:
        conn = self._waiting.get(fd)
        if conn is None:
            return
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data or len(conn.head) + len(data) > self.max_head:
            self._drop(sel, fd)
            return
        conn.head += data
        if any(end in conn.head for end in _HEAD_END):
            sel.unregister(conn.sock)
            del self._waiting[fd]
            conn.sock.setblocking(True)
            self._pool.submit(self._handle, conn.sock, conn.address, bytes(conn.head))

    def _expire(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        while self._waiting:
            fd, conn = next(iter(self._waiting.items()))
            if conn.deadline > now:
                return
            self._drop(sel, fd)

    def _drop(self, sel: selectors.BaseSelector, fd: int) -> None:
        conn = self._waiting.pop(fd)
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(conn.sock)
        self.shutdown_request(conn.sock)

    # -- a worker ----------------------------------------------------------------------------

    def _handle(self, sock: socket.socket, address: Any, head: bytes) -> None:
        self._heads.value = head
        try:
            self.finish_request(sock, address)
        except Exception:
            self.handle_error(sock, address)
        finally:
            self._heads.value = b""
            self.shutdown_request(sock)

    def take_head(self) -> bytes:
        """The request head collected for the connection this worker thread handles."""
        head: bytes = getattr(self._heads, "value", b"")
        self._heads.value = b""
        return head
