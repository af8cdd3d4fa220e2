"""``ptcflow trace export``: a journal replayed into OTLP spans, as a file and over OTLP/HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ptcflow.cli import main
from ptcflow.trace import Mission, otlp_request

from .support import JOURNAL, KINDS

SPANS = KINDS["run"] + KINDS["llm"] + KINDS["program"] + KINDS["tool"]  # turns are not spans


def _spans(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in body["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]]


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def _validate(body: dict[str, Any]) -> ExportTraceServiceRequest:
    """Parse with the OTLP protobuf schema (unknown fields and wrong types fail); ids are
    hex in OTLP JSON, so check them and turn them into the bytes protobuf expects."""
    import base64

    copy = json.loads(json.dumps(body))
    for span in _spans(copy):
        for key, size in (("traceId", 32), ("spanId", 16), ("parentSpanId", 16)):
            if key in span:
                assert len(span[key]) == size and int(span[key], 16) >= 0
                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    message: ExportTraceServiceRequest = json_format.ParseDict(copy, ExportTraceServiceRequest())
    return message


def test_the_file_is_otlp_json_with_genai_spans_nested_like_live_telemetry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "spans.json"
    assert main(["trace", "export", str(JOURNAL), "-o", str(out)]) == 0
    assert f"wrote {SPANS} spans" in capsys.readouterr().out
    body = json.loads(out.read_text())
    message = _validate(body)
    assert len(message.resource_spans[0].scope_spans[0].spans) == SPANS
    spans = _spans(body)
    by_id = {s["spanId"]: s for s in spans}
    names = [s["name"] for s in spans]
    assert names.count("invoke_agent analyst") == 3 and names[0] == "invoke_agent planner"
    assert names.count("execute_tool run_program") == KINDS["program"]
    assert names.count("chat scripted") == KINDS["llm"]
    assert len({s["traceId"] for s in spans}) == 1
    counter = next(s for s in spans if s["name"] == "invoke_agent counter")
    parent = by_id[counter["parentSpanId"]]
    assert parent["name"] == "execute_tool counter"  # a child run under the call that started it
    assert by_id[parent["parentSpanId"]]["name"] == "invoke_agent analyst"
    orders = next(s for s in spans if s["name"] == "execute_tool orders")
    assert by_id[orders["parentSpanId"]]["name"] == "execute_tool run_program"
    chat = next(s for s in spans if s["name"] == "chat scripted")
    assert chat["kind"] == 3 and _attrs(chat)["gen_ai.operation.name"] == "chat"
    assert int(_attrs(chat)["gen_ai.usage.input_tokens"]) > 0
    failed = next(s for s in spans if _attrs(s).get("ptcflow.program.error.line") == "2")
    assert failed["status"] == {"code": 2, "message": "type"}  # tool data: the type only
    assert _attrs(failed)["error.type"] == "type"
    retried = next(s for s in spans if "ptcflow.attempts" in _attrs(s))
    assert _attrs(retried)["ptcflow.attempts"] == "2"
    assert all(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) for s in spans)
    assert not any("gen_ai.tool.call.arguments" in _attrs(s) for s in spans)  # opt-in only


def test_content_is_exported_only_when_asked_for() -> None:
    body = otlp_request(Mission.from_journal(JOURNAL), capture_content=True)
    _validate(body)
    spans = _spans(body)
    fetch = next(s for s in spans if s["name"] == "execute_tool fetch_sales")
    assert json.loads(_attrs(fetch)["gen_ai.tool.call.arguments"])["region"] in {
        "emea",
        "apac",
        "amer",
    }
    program = next(s for s in spans if "ptcflow.program.source" in _attrs(s))
    assert '(call "analyst"' in _attrs(program)["ptcflow.program.source"]  # the planner's
    chat = next(s for s in spans if "gen_ai.output.messages" in _attrs(s))
    assert json.loads(_attrs(chat)["gen_ai.output.messages"])[0]["role"] == "assistant"


def test_exporting_twice_gives_the_same_ids() -> None:
    one = otlp_request(Mission.from_journal(JOURNAL))
    two = otlp_request(Mission.from_journal(JOURNAL))
    assert [s["spanId"] for s in _spans(one)] == [s["spanId"] for s in _spans(two)]


class _Receiver(BaseHTTPRequestHandler):
    """A local OTLP/HTTP receiver: keeps what was posted to /v1/traces."""

    received: list[tuple[str, str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, self.headers["Content-Type"], body))
        status = 200 if self.path == "/v1/traces" else 404
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    received: list[tuple[str, str, bytes]] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize("protocol", ["json", "protobuf"])
def test_export_posts_the_spans_to_an_otlp_http_receiver(
    receiver: tuple[str, list[tuple[str, str, bytes]]],
    protocol: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, received = receiver
    code = main(["trace", "export", str(JOURNAL), "--otlp", url, "--protocol", protocol])
    assert code == 0
    assert f"sent {SPANS} spans to {url}/v1/traces" in capsys.readouterr().out
    ((path, content_type, body),) = received
    assert path == "/v1/traces"
    if protocol == "json":
        assert content_type == "application/json"
        message = _validate(json.loads(body))
    else:
        assert content_type == "application/x-protobuf"
        message = ExportTraceServiceRequest.FromString(body)
    spans = message.resource_spans[0].scope_spans[0].spans
    assert len(spans) == SPANS and spans[0].name == "invoke_agent planner"
    assert len(spans[0].trace_id) == 16 and len(spans[0].span_id) == 8


def test_an_endpoint_that_refuses_or_is_absent_is_a_clear_error(
    receiver: tuple[str, list[tuple[str, str, bytes]]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = receiver
    assert main(["trace", "export", str(JOURNAL), "--otlp", url + "/wrong/"]) == 2
    assert "refused the spans: HTTP 404" in capsys.readouterr().err
    assert main(["trace", "export", str(JOURNAL), "--otlp", "localhost:4318"]) == 2
    assert "takes an http(s) URL" in capsys.readouterr().err
