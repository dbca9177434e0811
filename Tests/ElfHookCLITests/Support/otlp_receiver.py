#!/usr/bin/env python3
"""A minimal OTLP/HTTP receiver for the export tests, built on the official OpenTelemetry
protobuf messages (PyPI: opentelemetry-proto, protobuf).

It parses every POST to /v1/traces and /v1/metrics as ExportTraceServiceRequest /
ExportMetricsServiceRequest and appends what it got to --output as JSON Lines:
  {"type": "request", "path": "/v1/traces", "status": 200, "spans": 3}   one per request
  {"type": "span", ...}                                                 one per span
  {"type": "metrics", "metrics": [...]}                                  one per metrics request
Lines of a request are written (and flushed) before its answer. The port it listens on
(127.0.0.1 only) is printed on stdout as the first line.

Failure modes, to test the exporter: --fail-first K answers 503 to the first K requests,
--fail-seconds S answers 503 for the first S seconds, --reject answers 400 to every trace
request, --delay S waits S seconds before answering each one.
"""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value_of(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(key_values):
    return {kv.key: value_of(kv.value) for kv in key_values}


def spans_of(request):
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "type": "span",
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "name": span.name,
                    "kind": span.kind,
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "status_code": span.status.code,
                    "attributes": attributes(span.attributes),
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                }


def metrics_of(request):
    metrics = []
    for resource_metrics in request.resource_metrics:
        resource = attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.WhichOneof("data") != "histogram":
                    continue
                metrics.append({
                    "name": metric.name,
                    "unit": metric.unit,
                    "temporality": metric.histogram.aggregation_temporality,
                    "resource": resource,
                    "points": [{
                        "attributes": attributes(point.attributes),
                        "count": point.count,
                        "sum": point.sum,
                        "bucket_counts": list(point.bucket_counts),
                        "explicit_bounds": list(point.explicit_bounds),
                        "start": point.start_time_unix_nano,
                        "time": point.time_unix_nano,
                    } for point in metric.histogram.data_points],
                })
    return metrics


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    lock = threading.Lock()
    requests = 0
    started = time.monotonic()
    options = None
    output = None

    def log_message(self, *args):
        pass

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def write(self, lines):
        for line in lines:
            self.output.write(json.dumps(line) + "\n")
        self.output.flush()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        options = self.options
        with self.lock:
            Receiver.requests += 1
            number = Receiver.requests
        if options.delay:
            time.sleep(options.delay)
        failing = number <= options.fail_first or time.monotonic() - self.started < options.fail_seconds
        with self.lock:
            if self.headers.get("Content-Type") != "application/x-protobuf":
                self.write([{"type": "request", "path": self.path, "status": 415}])
                return self.answer(415)
            if failing:
                self.write([{"type": "request", "path": self.path, "status": 503}])
                return self.answer(503)
            if self.path == "/v1/traces":
                if options.reject:
                    self.write([{"type": "request", "path": self.path, "status": 400}])
                    return self.answer(400, b"rejected by the test receiver")
                request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                spans = list(spans_of(request))
                self.write([{"type": "request", "path": self.path, "status": 200, "spans": len(spans)}] + spans)
                return self.answer(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString())
            if self.path == "/v1/metrics":
                request = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
                self.write([{"type": "request", "path": self.path, "status": 200},
                            {"type": "metrics", "metrics": metrics_of(request)}])
                return self.answer(200, metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString())
            self.write([{"type": "request", "path": self.path, "status": 404}])
            return self.answer(404)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--fail-seconds", type=float, default=0)
    parser.add_argument("--reject", action="store_true")
    parser.add_argument("--delay", type=float, default=0)
    options = parser.parse_args()
    Receiver.options = options
    Receiver.output = open(options.output, "a")
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Receiver)
    server.daemon_threads = True
    Receiver.started = time.monotonic()
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
