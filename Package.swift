// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "elfhook",
  products: [
    // The rebinding engine as a C library: `cc prog.c -lCElfHook`.
    .library(name: "CElfHook", type: .dynamic, targets: ["CElfHook"]),
    // Swift API over the engine, and `ElfFile`, the on-disk reader built on libelf.
    .library(name: "ElfHook", targets: ["ElfHook"]),
    // The network hooks, the transaction recorder and its sinks: what a Swift server links.
    .library(name: "NetMonitor", targets: ["NetMonitor"]),
    // The command line: `elfhook inspect`, …
    .executable(name: "elfhook", targets: ["elfhook"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
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
    .target(name: "ElfHook", dependencies: ["CElfHook", "CLibElf"]),
    .target(
      name: "CNetMonitor",
      path: "CShims/CNetMonitor",
      cSettings: [.define("_GNU_SOURCE")]
    ),
    .target(name: "NetMonitor", dependencies: ["ElfHook", "CNetMonitor"]),
    .target(
      name: "ElfHookCLI",
      dependencies: ["ElfHook", .product(name: "ArgumentParser", package: "swift-argument-parser")]
    ),
    .executableTarget(name: "elfhook", dependencies: ["ElfHookCLI"]),
    // Benchmarks (scripts/bench-hooks): instructions the hooks add, counted with callgrind.
    .executableTarget(name: "hook-cost", dependencies: ["NetMonitor"], path: "Benchmarks/hook-cost"),
    .testTarget(name: "ElfHookTests", dependencies: ["ElfHook"]),
    .testTarget(
      name: "NetMonitorTests", dependencies: ["NetMonitor"], exclude: ["Support/loopback_server.py", "Support/curl_fetch.c"]),
  ]
)
