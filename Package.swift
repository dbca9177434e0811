// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "elfhook",
  products: [
    // The rebinding engine as a C library: `cc prog.c -lCElfHook`.
    .library(name: "CElfHook", type: .dynamic, targets: ["CElfHook"]),
    // Swift API over the engine.
    .library(name: "ElfHook", targets: ["ElfHook"]),
    // `ElfFile`, the on-disk reader built on libelf.
    .library(name: "ElfFileReader", targets: ["ElfFileReader"]),
    // The network hooks, the transaction recorder and its sinks: what a Swift server links.
    .library(name: "NetMonitor", targets: ["NetMonitor"]),
    // What `LD_PRELOAD` injects: a small C library, configured by ELFHOOK_* variables, that loads
    // the monitor at the process's first connect, accept or getaddrinfo (elfhook_preload.h).
    .library(name: "ElfHookPreload", type: .dynamic, targets: ["CElfHookPreload"]),
    // The monitor it loads, self-contained (static Swift stdlib), beside it.
    .library(name: "ElfHookMonitor", type: .dynamic, targets: ["ElfHookMonitor"]),
    // A `TransactionSink` that emits through swift-metrics (OpenTelemetry semantic-convention names).
    // Its own product so that NetMonitor, injected into every process, stays free of swift-metrics.
    .library(name: "NetMonitorMetrics", targets: ["NetMonitorMetrics"]),
    // The command line: `elfhook run`, `inspect`, `report`.
    .executable(name: "elfhook", targets: ["elfhook"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    // OTLP's protobuf messages (the generated code in Sources/OTLPProto needs the runtime only).
    .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
    // `elfhook export --otlp`: the HTTP client that POSTs to the collector (http and https).
    .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    // NIOCore, NIOHTTP1 and NIOPosix: the types of async-http-client's API (and the Prometheus endpoint's server).
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
  ],
  targets: [
    .target(
      name: "CElfHook",
      path: "CShims/CElfHook",
      cSettings: [.define("_GNU_SOURCE")],
      linkerSettings: [.linkedLibrary("dl")]
    ),
    .systemLibrary(
      name: "CLibElf",
      path: "CShims/CLibElf",
      pkgConfig: "libelf",
      providers: [.apt(["libelf-dev"])]
    ),
    .target(name: "ElfHook", dependencies: ["CElfHook"]),
    // ElfFile: the on-disk reader built on libelf. Its own module, so that what is injected into
    // every process (ElfHookPreload) does not need libelf.so.1 on every machine.
    .target(name: "ElfFileReader", dependencies: ["CLibElf"]),
    // HTTP/2's frames and HPACK, read from one direction's bytes (plain C: preallocated, no allocation).
    .target(name: "CHTTP2", path: "CShims/CHTTP2", cSettings: [.define("_GNU_SOURCE")]),
    .target(
      name: "CNetMonitor",
      dependencies: ["CHTTP2"],
      path: "CShims/CNetMonitor",
      cSettings: [.define("_GNU_SOURCE")]
    ),
    .target(name: "NetMonitor", dependencies: ["ElfHook", "CElfHook", "CNetMonitor", "CHTTP2"]),
    // The OpenTelemetry protocol's messages (common, resource, trace, metrics and the collector's
    // export requests), generated once by scripts/generate-otlp-protos and committed.
    .target(name: "OTLPProto", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]),
    .target(
      name: "NetMonitorMetrics",
      dependencies: ["NetMonitor", .product(name: "CoreMetrics", package: "swift-metrics")]
    ),
    // `elfhook run`'s prctl (variadic in C, so not callable from Swift).
    .target(name: "CProcessControl", path: "CShims/CProcessControl"),
    .target(
      name: "ElfHookCLI",
      dependencies: [
        "ElfHook", "ElfFileReader", "NetMonitor", "NetMonitorMetrics", "OTLPProto", "CProcessControl",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
      ]
    ),
    .executableTarget(
      name: "elfhook",
      dependencies: ["ElfHookCLI"],
      linkerSettings: [
        // Linked by lld for DT_RELR: its ~117,000 relative relocations (the release bundle's static
        // binary) packed in a few KB, not 2.8 MB read and applied one by one at every start. Nothing
        // exported that no library needs: with the standard library linked in, the bundle's binary
        // exported its 33,800 symbols, which the Swift runtime's start-up `dladdr` walks one by one
        // (1.0 M instructions of `elfhook run -- true`'s 5.5 M).
        .unsafeFlags([
          "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker", "--no-export-dynamic",
        ])
      ]
    ),
    .target(
      name: "CElfHookPreload",
      dependencies: ["CNetMonitor", "CElfHook"],
      path: "CShims/CElfHookPreload",
      exclude: ["exports.map"],
      // Without frame pointers (SwiftPM compiles C with them): every process's read, write and
      // close pass the forwarders (io_forwarders.c), whose common path is then a test and a jump.
      cSettings: [.define("_GNU_SOURCE"), .unsafeFlags(["-fomit-frame-pointer"])],
      linkerSettings: [
        // Plain C: without Swift's start-up object (which would need the Swift runtime), libc only.
        .unsafeFlags([
          "-nostartfiles", "-no-toolchain-stdlib-rpath",
          "-Xlinker", "--version-script=CShims/CElfHookPreload/exports.map",
        ])
      ]
    ),
    .target(
      name: "ElfHookMonitor",
      dependencies: ["NetMonitor", "CNetMonitor"],
      exclude: ["exports.map", "link"],
      linkerSettings: [
        // Self-contained: the Swift runtime and its C++ runtime inside (link/libstdc++.so says how),
        // no toolchain path needed on the host. Linked by lld for DT_RELR (glibc 2.36, already the
        // bundle's floor): the runtime's 16,554 relative relocations in 2.8 KB, not 398 KB read at
        // every load (gold cannot pack them). GCC's unwinder (libgcc_eh.a, which the runtime's C++
        // needs) inside too: loading libgcc_s.so.1 cost every process that loads the monitor
        // ~0.05-0.08 ms, its constructor's CPUID instructions each a trap to the hypervisor in a VM.
        .unsafeFlags([
          "-static-stdlib", "-use-ld=lld", "-L", "Sources/ElfHookMonitor/link", "-Xclang-linker", "-static-libgcc",
          "-Xlinker", "--version-script=Sources/ElfHookMonitor/exports.map",
          "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        ])
      ]
    ),
    // Benchmarks (scripts/bench-hooks): instructions the hooks add, counted with callgrind.
    .executableTarget(name: "hook-cost", dependencies: ["NetMonitor"], path: "Benchmarks/hook-cost"),
    // Instructions per HTTP exchange spent in the head parser (Benchmarks/http-parse/main.swift).
    .executableTarget(name: "http-parse", dependencies: ["NetMonitor"], path: "Benchmarks/http-parse"),
    // What the test targets share: waiting for a condition, the seeded generator, scratch
    // directories, finding the built products, running a program. Used by tests only.
    .target(name: "TestSupport", path: "Tests/TestSupport"),
    .testTarget(name: "ElfHookTests", dependencies: ["ElfHook", "ElfFileReader", "TestSupport"]),
    .testTarget(name: "HTTP2ReaderTests", dependencies: ["CHTTP2", "TestSupport"]),
    .testTarget(
      name: "ElfHookCLITests",
      dependencies: ["ElfHookCLI", "NetMonitor", "NetMonitorMetrics", "OTLPProto", "TestSupport"],
      exclude: ["Support/otlp_receiver.py"]),
    .testTarget(
      name: "NetMonitorMetricsTests",
      dependencies: [
        "NetMonitorMetrics", "NetMonitor", .product(name: "MetricsTestKit", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
      ]
    ),
    .testTarget(
      name: "NetMonitorTests", dependencies: ["NetMonitor", "TestSupport"], exclude: [
        "Support/loopback_server.py", "Support/counting_upstream.py", "Support/curl_fetch.c",
        "Support/split_thread_client.c", "Support/upgrade_client.c", "Support/hold_send.c", "Support/h2_server.py", "Support/h2_client.py",
        "Support/grpc_calls.py", "Support/tls_get.c", "Support/tls_pair.c", "Support/H2cClient.java", "Support/connect_proxy.py",
      ]),
  ]
)
