"""A tiny status server for the notes service."""

import json
from http.server import BaseHTTPRequestHandler, HTTPServer


class Status(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


def main():
    server = HTTPServer(("127.0.0.1", 8421), Status)
    print("listening on http://127.0.0.1:8421")
    server.serve_forever()


if __name__ == "__main__":
    main()
