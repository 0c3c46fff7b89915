"""An OTLP/HTTP trace receiver for the tests: POST /v1/traces, in
http/protobuf or http/json, decoded with the OpenTelemetry project's own
message classes (PyPI `opentelemetry-proto`), each span written to stdout as
one JSON line:

    {"name", "kind", "trace_id", "span_id", "parent_span_id", "status",
     "attributes": {key: value}, "links": [{"trace_id", "span_id"}],
     "service": "...", "content_type": "..."}

Listens on 127.0.0.1 on a free port and says `listening PORT` first."""

import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status


def ids_as_base64(node):
    """OTLP/JSON writes trace and span ids in hex, where the protobuf JSON
    mapping reads bytes as base64: convert them before parsing."""
    if isinstance(node, dict):
        for key, item in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                node[key] = base64.b64encode(bytes.fromhex(item)).decode()
            else:
                ids_as_base64(item)
    elif isinstance(node, list):
        for item in node:
            ids_as_base64(item)
    return node


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def spans(request, content_type):
    for resource_spans in request.resource_spans:
        attributes = {a.key: value(a.value) for a in resource_spans.resource.attributes}
        service = attributes.get("service.name")
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "name": span.name,
                    "kind": Span.SpanKind.Name(span.kind),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "status": Status.StatusCode.Name(span.status.code),
                    "attributes": {a.key: value(a.value) for a in span.attributes},
                    "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()} for l in span.links],
                    "scope": scope_spans.scope.name,
                    "service": service,
                    "content_type": content_type,
                }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        content_type = self.headers.get("content-type", "")
        request = ExportTraceServiceRequest()
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        if content_type.startswith("application/json"):
            json_format.ParseDict(ids_as_base64(json.loads(body)), request)
        else:
            request.ParseFromString(body)
        for span in spans(request, content_type):
            sys.stdout.write(json.dumps(span) + "\n")
        sys.stdout.flush()
        answer = ExportTraceServiceResponse()
        if content_type.startswith("application/json"):
            payload, kind = json_format.MessageToJson(answer).encode(), "application/json"
        else:
            payload, kind = answer.SerializeToString(), "application/x-protobuf"
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening {server.server_address[1]}", flush=True)
server.serve_forever()
