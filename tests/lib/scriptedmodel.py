"""A scripted Responses API standing in for the model (tests/activation/codex.py,
tests/openclaw.py).

Every POST is answered with SSE events: while cmd is set and no tool output has
come back, one tool call running cmd (exec_command when the request offers that
tool, the shell tool otherwise); after a tool output (or with no cmd), a final
assistant message.  The tool outputs received are collected in .outputs, the
POSTs counted in .requests.  GETs (the model list) get an empty list.
"""
import http.server
import json
import threading


class ScriptedModel:
    def __init__(self, cmd=None, final_text="done", shell="sh"):
        self.cmd = cmd
        self.final_text = final_text
        self.shell = shell          # runs cmd when the shell tool is offered instead
        self.outputs = []
        self.requests = 0
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, ctype, body):
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self.reply("application/json", b'{"models": [], "data": []}')

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self.reply("text/event-stream", model.answer(req))

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def item(self, req):
        """The one output item answering req."""
        outs = [i.get("output") for i in req.get("input", [])
                if i.get("type") == "function_call_output"]
        self.outputs += outs
        tools = [x.get("name") for x in req.get("tools", [])]
        if outs or not self.cmd:
            return {"type": "message", "role": "assistant", "id": "m1",
                    "content": [{"type": "output_text", "text": self.final_text}]}
        if "exec_command" in tools:
            return {"type": "function_call", "name": "exec_command", "call_id": "call_1",
                    "arguments": json.dumps({"cmd": self.cmd})}
        return {"type": "function_call", "name": "shell", "call_id": "call_1",
                "arguments": json.dumps({"command": [self.shell, "-c", self.cmd]})}

    def answer(self, req):
        """The SSE body answering the Responses API request req."""
        self.requests += 1
        usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                 "output_tokens_details": None, "total_tokens": 2}
        ev = [{"type": "response.created", "response": {"id": "r1"}},
              {"type": "response.output_item.done", "item": self.item(req)},
              {"type": "response.completed", "response": {"id": "r1", "usage": usage}}]
        return "".join("event: %s\ndata: %s\n\n" % (e["type"], json.dumps(e)) for e in ev).encode()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()
