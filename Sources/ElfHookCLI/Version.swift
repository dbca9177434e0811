/// elfhook's version: what `elfhook --version` prints, the release bundle's name
/// (`scripts/package`: elfhook-VERSION-linux-ARCH.tar.gz), and the version of the OTLP
/// instrumentation scope spans and metrics are exported under.
public enum ElfHookVersion {
  /// Semantic versioning; raised by hand when a release is cut.
  public static let current = "0.1.0"
}
