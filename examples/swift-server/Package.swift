// swift-tools-version:6.0
import PackageDescription

// Its own package, so that users of elfhook's NetMonitor do not pull Hummingbird.
let package = Package(
  name: "swift-server-example",
  platforms: [.macOS(.v14)],
  dependencies: [
    .package(name: "elfhook", path: "../.."),
    .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
    .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
  ],
  targets: [
    .executableTarget(
      name: "swift-server-example",
      dependencies: [
        .product(name: "NetMonitor", package: "elfhook"),
        .product(name: "NetMonitorMetrics", package: "elfhook"),
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "HummingbirdCore", package: "hummingbird"),
        .product(name: "HummingbirdTLS", package: "hummingbird"),
        .product(name: "AsyncHTTPClient", package: "async-http-client"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOSSL", package: "swift-nio-ssl"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
      ],
      path: "Sources/SwiftServerExample"
    )
  ]
)
