# backend.py: serves page.html and mints a user token for the signed-in user.
import json
import os
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HUB = os.environ["AGUI_HUB"]  # e.g. http://127.0.0.1:8000
KEY = os.environ["AGUI_KEY"]  # manage.py create_api_key TENANT --scope runtime: it stays on this server


def mint_token(user_id: str) -> dict:
    body = {"user": user_id, "agents": ["assistant"], "ttlSeconds": 900}
    request = urllib.request.Request(
        f"{HUB}/api/v1/tokens",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        return json.load(response)  # {"token": "...", "expiresAt": "..."}


class App(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/agui-token":
            content, kind = json.dumps({**mint_token("alice"), "hub": HUB}).encode(), "application/json"
        else:
            with open("page.html", "rb") as page:
                content, kind = page.read(), "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(content)


ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "3000"))), App).serve_forever()
