import Testing
import TestSupport

@testable import NetMonitor

@Suite("Target redaction")
struct RedactionTests {
  static let table: [(target: String, expected: String)] = [
    ("/", "/"),
    ("/search?q=swift&page=2", "/search?q=swift&page=2"),
    ("/a?access_token=abc", "/a?access_token=REDACTED"),
    (
      "/a?api_key=1&apiKey=2&x-api-key=3&key=4&APIKey=5&privateKey=6",
      "/a?api_key=REDACTED&apiKey=REDACTED&x-api-key=REDACTED&key=REDACTED&APIKey=REDACTED&privateKey=REDACTED"
    ),
    (
      "/a?keyword=x&monkey=y&zipcode=z&signal=w&design=v",
      "/a?keyword=x&monkey=y&zipcode=z&signal=w&design=v"
    ),
    (
      "/bucket/obj?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20240101&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FwoG&X-Amz-Signature=abcdef0123",
      "/bucket/obj?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date=20240101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"
    ),
    (
      "/o?X-Goog-Signature=ab&X-Goog-Credential=cd",
      "/o?X-Goog-Signature=REDACTED&X-Goog-Credential=REDACTED"
    ),
    ("/blob?sv=2021-08-06&sig=abc%2Bdef%3D&se=2025", "/blob?sv=2021-08-06&sig=REDACTED&se=2025"),
    (
      "/cf?Signature=abc&Key-Pair-Id=K2J&Policy=eyJ",
      "/cf?Signature=REDACTED&Key-Pair-Id=REDACTED&Policy=eyJ"
    ),
    ("/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyz", "/cb?code=REDACTED&state=xyz"),
    (
      "/token?code_verifier=abc&grant_type=authorization_code",
      "/token?code_verifier=REDACTED&grant_type=authorization_code"
    ),
    ("/login?user=bob&password=hunter2", "/login?user=bob&password=REDACTED"),
    (
      "/login?passwd=a&pwd=b&pass=c&passphrase=d&Passcode=e",
      "/login?passwd=REDACTED&pwd=REDACTED&pass=REDACTED&passphrase=REDACTED&Passcode=REDACTED"
    ),
    (
      "/x?client_secret=s&refresh_token=t&id_token=u&secret=v",
      "/x?client_secret=REDACTED&refresh_token=REDACTED&id_token=REDACTED&secret=REDACTED"
    ),
    (
      "/x?SESSIONID=1&PHPSESSID=2&jsessionid=3&sid=4&session_key=5",
      "/x?SESSIONID=REDACTED&PHPSESSID=REDACTED&jsessionid=REDACTED&sid=REDACTED&session_key=REDACTED"
    ),
    (
      "/x?auth=1&authorization=2&authKey=3&author=bob&authority=x",
      "/x?auth=REDACTED&authorization=REDACTED&authKey=REDACTED&author=bob&authority=x"
    ),
    (
      "/x?jwt=abc&otp=123456&pin=1234&hmac=ff",
      "/x?jwt=REDACTED&otp=REDACTED&pin=REDACTED&hmac=REDACTED"
    ),
    (
      "/x?next=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
      "/x?next=REDACTED"
    ),
    ("/x?t=eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "/x?t=REDACTED"),
    ("/x?jwe=eyJhbGciOiJSU0EifQ.a.b.c.d", "/x?jwe=REDACTED"),
    ("/x?host=www.example.com&v=1.2.3&ip=10.0.0.1", "/x?host=www.example.com&v=1.2.3&ip=10.0.0.1"),
    ("/x?token=", "/x?token="),
    ("/x?token", "/x?token"),
    ("/x?a=1&&b=2&", "/x?a=1&&b=2&"),
    ("/x?", "/x?"),
    ("/x?q=a%3Db&token=x=y#frag", "/x?q=a%3Db&token=REDACTED#frag"),
    (
      "/cb#access_token=abc&token_type=bearer&expires_in=3600",
      "/cb#access_token=REDACTED&token_type=REDACTED&expires_in=3600"
    ),
    (
      "/x?%74oken=abc&api%5Fkey=def&my+secret=g",
      "/x?%74oken=REDACTED&api%5Fkey=REDACTED&my+secret=REDACTED"
    ),
    ("http://user:secret@proxy.example/path?x=1", "http://user:REDACTED@proxy.example/path?x=1"),
    ("https://ghp_abc123@github.com/o/r.git", "https://REDACTED@github.com/o/r.git"),
    ("http://example.com/a@b?x=1", "http://example.com/a@b?x=1"),
    ("/path/with@sign/eyJhbGciOiJIUzI1NiJ9.eyJ.x", "/path/with@sign/eyJhbGciOiJIUzI1NiJ9.eyJ.x"),
    ("/x?country_code=US", "/x?country_code=REDACTED"),
    ("/ünï?pässword=ü&q=日本", "/ünï?pässword=ü&q=日本"),
    ("/x?password=%E2%9C%93&q=%ZZ", "/x?password=REDACTED&q=%ZZ"),
    ("/shop/cart;jsessionid=0A1B2C?item=3", "/shop/cart;jsessionid=REDACTED?item=3"),
    ("/a;v=1;token=t/b;sid=2;x/c", "/a;v=1;token=REDACTED/b;sid=REDACTED;x/c"),
    ("/a;jsessionid=", "/a;jsessionid="),
    (
      "http://u:p@host;x=1/p;JSESSIONID=abc?q=1",
      "http://u:REDACTED@host;x=1/p;JSESSIONID=REDACTED?q=1"
    ),
    ("/matrix;color=red;size=2", "/matrix;color=red;size=2"),
  ]

  @Test("redaction table", arguments: table)
  func redaction(target: String, expected: String) {
    #expect(TargetRedaction.redact(target) == expected)
    // Idempotent: what is already redacted stays as it is.
    #expect(TargetRedaction.redact(expected) == expected)
  }

  @Test(
    "secret names",
    arguments: [
      ("token", true), ("Access-Token", true), ("apiKey", true), ("API_KEY", true),
      ("X-Amz-Signature", true), ("sig", true), ("code", true), ("auth_code", true),
      ("keyword", false), ("signal", false), ("author", false), ("q", false), ("page", false),
      ("", false), ("state", false), ("redirect_uri", false),
    ])
  func secretNames(name: String, secret: Bool) {
    #expect(TargetRedaction.isSecretName(name) == secret)
  }

  @Test(
    "JWT-looking values",
    arguments: [
      ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", true), ("eyJhbGciOiJub25lIn0.eyJ9.", true),
      ("eyJ.x.y", false), ("a.b.c", false), ("www.example.com", false), ("1.2.3", false),
      ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0", false), ("eyJhbGci OiJ9.eyJ.x", false),
      ("eyJhbGciOiJIUzI1NiJ9%2EeyJzdWIiOiIxIn0%2Ec2ln", true),
    ])
  func jwt(value: String, looksLikeJWT: Bool) {
    #expect(TargetRedaction.looksLikeJWT(value) == looksLikeJWT)
  }

  @Test("camelCase and acronyms split into words")
  func words() {
    #expect(TargetRedaction.splitWords("X-Amz-Signature") == ["x", "amz", "signature"])
    #expect(TargetRedaction.splitWords("apiKey") == ["api", "key"])
    #expect(TargetRedaction.splitWords("APIKey") == ["api", "key"])
    #expect(TargetRedaction.splitWords("oauth2Token_v1") == ["oauth2", "token", "v1"])
  }

  @Test("HTTPRecord keeps its target redacted, at creation and on assignment")
  func recordTarget() {
    var record = RecordSamples.http
    #expect(record.target == "/search?q=swift&access_token=REDACTED")
    record.target = "/next?password=hunter2"
    #expect(record.target == "/next?password=REDACTED")
  }

  @Test("targets without a query come back unchanged (the fast path)")
  func fastPath() {
    let target = "/static/app.js"
    #expect(TargetRedaction.redact(target) == target)
  }

  /// Pieces the generated targets are made of: secret and harmless names (camelCase, acronyms,
  /// separators, escapes), JWT-like and ordinary values, user information, non-ASCII text and
  /// stray separators.
  static let namePieces = [
    "token", "Token", "access_token", "apiKey", "APIKey", "X-Amz-Signature", "key", "keyword", "monkey",
    "sig", "signal", "pass", "passwd", "code", "zipcode", "auth", "author", "authority", "authKey",
    "q", "page", "id", "%74oken", "api%5Fkey", "my+secret", "session", "PHPSESSID", "otp", "pin",
    "ünï", "日本", "%E2%9C%93", "%ZZ", "", "_", "-", "2", "V1",
  ]
  static let valuePieces = [
    "1", "abc", "", "eyJhbGciOiJIUzI1NiJ9", ".", "eyJzdWIiOiIxIn0", "%2E", "c2ln", "www.example.com",
    "1.2.3", "x=y", "ü", "%ZZ", "+", "eyJ", "-_=",
  ]
  static let pathPieces = [
    "/", "/a", "http://", "https://", "user", ":", "secret", "@", "proxy.example", "/p@th", "ghp_abc",
    "ünï", "%40", ";", ";jsessionid=", ";v=", "=", "token",
  ]

  static func generatedTarget(_ random: inout SplitMix64) -> String {
    func pick(_ pieces: [String], upTo count: Int) -> String {
      (0..<Int.random(in: 0...count, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }
    var target = pick(pathPieces, upTo: 5)
    for _ in 0..<Int.random(in: 0...2, using: &random) {
      target += ["?", "#", "&", "=", "@"].randomElement(using: &random)!
      for index in 0..<Int.random(in: 0...4, using: &random) {
        if index > 0 { target += Bool.random(using: &random) ? "&" : "&&" }
        target += pick(namePieces, upTo: 2)
        if Bool.random(using: &random) { target += "=" + pick(valuePieces, upTo: 6) }
      }
    }
    return target
  }

  @Test("the byte rules give what the string rules gave, on 20,000 generated targets (seeded)")
  func sameAsReference() {
    var random = SplitMix64(state: 7)
    // One memo of name verdicts across them all, as a consumer keeps one for its ring.
    var names = SecretNameMemo()
    for _ in 0..<20_000 {
      let target = Self.generatedTarget(&random)
      let expected = ReferenceRedaction.redact(target)
      #expect(TargetRedaction.redact(target) == expected, "\(target)")
      let bytes = Array(target.utf8)
      #expect(bytes.withUnsafeBytes { TargetRedaction.redact($0) } == expected, "bytes of \(target)")
      #expect(bytes.withUnsafeBytes { TargetRedaction.redact($0, names: &names) } == expected, "memo, \(target)")
    }
  }

  @Test("targets that grow the most when redacted: every value one byte, the user information empty")
  func mostGrowth() {
    var names = SecretNameMemo()
    for count in [0, 1, 2, 7, 64, 300] {
      let values = String(repeating: "sid=1&", count: count) + "key=2"
      for target in [
        "/?" + values, "/p;" + values.replacingOccurrences(of: "&", with: ";"), "http://:@h/?" + values,
        "http://@h/;t=1?" + values + "#" + values, "?" + String(repeating: "&", count: count) + "token=x",
      ] {
        let expected = ReferenceRedaction.redact(target)
        #expect(TargetRedaction.redact(target) == expected, "\(target)")
        #expect(Array(target.utf8).withUnsafeBytes { TargetRedaction.redact($0, names: &names) } == expected)
      }
    }
  }

  @Test("invalid UTF-8 in a target: redacted as the text it decodes to")
  func invalidBytes() {
    let targets: [[UInt8]] = [
      Array("/a?pass".utf8) + [0xFF] + Array("word=x&q=".utf8) + [0xC3],
      Array("/".utf8) + [0xE2, 0x9C] + Array("?token=1#frag".utf8),
      Array("http://u:".utf8) + [0x80] + Array("@h/?x=eyJ".utf8) + [0xFE] + Array(".a.b".utf8),
    ]
    for bytes in targets {
      let decoded = String(decoding: bytes, as: UTF8.self)
      #expect(bytes.withUnsafeBytes { TargetRedaction.redact($0) } == ReferenceRedaction.redact(decoded))
    }
  }
}
