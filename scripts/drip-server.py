#!/usr/bin/env python3
"""A model server that never finishes: it answers every POST with 200 and an SSE stream that
sends one byte every DRIP seconds (the slow drip the silence limit must end). Listens on 127.0.0.1 only
and stops by itself after LIFETIME seconds.

usage: drip-server.py PORT_FILE [DRIP_SECONDS=3] [LIFETIME_SECONDS=3600]
The chosen port is written to PORT_FILE.
"""
import http.server
import sys
import threading
import time


class Drip(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + LIFETIME
        try:
            # An SSE comment line that never ends: every byte resets an idle timer.
            for byte in b":" + b"." * 100000:
                if time.monotonic() > deadline:
                    break
                self.wfile.write(b"1\r\n" + bytes([byte]) + b"\r\n")
                self.wfile.flush()
                time.sleep(DRIP)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port_file = sys.argv[1]
    DRIP = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    LIFETIME = float(sys.argv[3]) if len(sys.argv) > 3 else 3600.0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    with open(port_file, "w") as f:
        f.write(str(server.server_address[1]))
    threading.Timer(LIFETIME, server.shutdown).start()
    server.serve_forever()
