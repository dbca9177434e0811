// Instructions HTTPStreamParser spends per exchange, counted with callgrind (exact on a noisy VM):
//
//   http-parse ROUNDS [whole|split|bytes]
//
// Feeds ROUNDS exchanges of what wrk and nginx send for a 1 KiB file through a request and a response
// parser, as the hooks would: the request in one read, the response head in one write and the body in
// another ("whole"); or each head cut in two in the middle of a line ("split"); or every head fed one
// byte at a time ("bytes", the worst case). Count two round numbers and take the difference, so that
// start-up cancels out (valgrind cannot read the DWARF 5 the Swift toolchain writes: strip it first):
//
//   swift build -c release --product http-parse
//   objcopy --strip-debug .build/release/http-parse /tmp/http-parse
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.1 /tmp/http-parse 1000    # → summary I1
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.2 /tmp/http-parse 11000   # → summary I2
//   instructions per exchange = (I2 - I1) / 10000   (grep summary /tmp/cg.*)
import Glibc
import NetMonitor

let request = Array("GET /1k.bin HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n".utf8)
let responseHead = Array(
  ("HTTP/1.1 200 OK\r\nServer: nginx/1.24.0 (Ubuntu)\r\nDate: Mon, 27 Jul 2009 12:28:53 GMT\r\n"
    + "Content-Type: application/octet-stream\r\nContent-Length: 1024\r\n"
    + "Last-Modified: Mon, 27 Jul 2009 12:00:00 GMT\r\nConnection: keep-alive\r\n"
    + "ETag: \"4a6d9b40-400\"\r\nAccept-Ranges: bytes\r\n\r\n").utf8)
let body = [UInt8](repeating: 0x62, count: 1024)

let arguments = CommandLine.arguments
let mode = arguments.count > 2 ? arguments[2] : "whole"
guard arguments.count >= 2, arguments.count <= 3, let rounds = Int(arguments[1]),
  ["whole", "split", "bytes"].contains(mode)
else {
  print("usage: http-parse ROUNDS [whole|split|bytes]")
  exit(2)
}

/// Where the pieces of a head end: at its end, or also in the middle of a line, or after every byte.
func pieceEnds(_ bytes: [UInt8]) -> [Int] {
  switch mode {
  case "split": [bytes.count / 2, bytes.count]
  case "bytes": Array(1...bytes.count)
  default: [bytes.count]
  }
}

/// Feeds `bytes` in pieces ending at `ends`.
func feed(
  _ parser: inout HTTPStreamParser, _ bytes: UnsafeRawBufferPointer, ends: [Int], as kind: HTTPDirectionKind,
  onEvent: HTTPStreamEventHandler
) {
  var start = 0
  for end in ends {
    parser.feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: kind, onEvent: onEvent)
    start = end
  }
}

@inline(never)
func run() -> Int {
  var requests = HTTPStreamParser()
  var responses = HTTPStreamParser()
  var completed = 0
  let requestEnds = pieceEnds(request)
  let headEnds = pieceEnds(responseHead)
  request.withUnsafeBytes { request in
    responseHead.withUnsafeBytes { head in
      body.withUnsafeBytes { body in
        for _ in 0..<rounds {
          feed(&requests, request, ends: requestEnds, as: .requests) { event, head in
            if case .headComplete = event { responses.expectResponse(to: head.pointee.requestKind) }
          }
          feed(&responses, head, ends: headEnds, as: .responses) { _, _ in }
          responses.feed(body, as: .responses) { event, _ in
            if case .messageComplete = event { completed &+= 1 }
          }
        }
      }
    }
  }
  return completed
}

let completed = run()
guard completed == rounds else {
  print("\(completed) of \(rounds) exchanges completed")
  exit(1)
}
