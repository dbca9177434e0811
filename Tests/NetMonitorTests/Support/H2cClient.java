// Java's own HTTP/2 client (java.net.http.HttpClient) on a cleartext URL: it asks for h2c with an
// HTTP/1.1 upgrade request (its HTTP2-Settings announce a 16 KiB header table, which the server's
// encoder takes up at once), sends from one thread and reads on another. Then eight requests at
// once on the same connection, and a POST.
//
// Usage: java H2cClient.java http://127.0.0.1:PORT : prints "PATH VERSION STATUS" per response.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

public class H2cClient {
  public static void main(String[] arguments) throws Exception {
    String base = arguments[0];
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpResponse.BodyHandler<String> text = HttpResponse.BodyHandlers.ofString();
    print(client.send(HttpRequest.newBuilder(URI.create(base + "/first?size=10")).build(), text));
    List<CompletableFuture<HttpResponse<String>>> concurrent = new ArrayList<>();
    for (int index = 0; index < 8; index++) {
      URI uri = URI.create(base + "/c" + index + "?size=" + (100 + index));
      concurrent.add(client.sendAsync(HttpRequest.newBuilder(uri).build(), text));
    }
    for (CompletableFuture<HttpResponse<String>> response : concurrent) print(response.get());
    HttpRequest post = HttpRequest.newBuilder(URI.create(base + "/post?size=3"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"a\":1}")).build();
    print(client.send(post, text));
  }

  static void print(HttpResponse<String> response) {
    System.out.println(response.uri().getPath() + " " + response.version() + " " + response.statusCode());
  }
}
