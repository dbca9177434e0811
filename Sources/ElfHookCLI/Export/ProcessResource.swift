/// The OTLP resource of the records of one process: `service.name` (the process's short name,
/// or `--service-name`), `process.pid`, `process.executable.name`.
struct ProcessResource: Hashable, Codable, Sendable {
  var pid: Int32
  var process: String

  /// The OTLP `Resource`; `serviceName` overrides the service's name when given.
  func otlp(serviceName: String?) -> OTLPResource {
    var list = AttributeList()
    list.add("service.name", serviceName ?? process)
    list.add("process.pid", pid)
    list.add("process.executable.name", process)
    var resource = OTLPResource()
    resource.attributes = list.otlp
    return resource
  }

  /// The instrumentation scope spans and metrics are reported under.
  static var scope: OTLPScope {
    var scope = OTLPScope()
    scope.name = "elfhook"
    scope.version = ElfHookVersion.current
    return scope
  }
}
