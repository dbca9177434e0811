/* A libcurl client for the in-process tests, built at test time and dlopen'ed into the test
 * process, so libcurl, libssl and libcrypto arrive after NetMonitor started (as python's do).
 * fetch() performs one GET and fills `out` with libcurl's own account of it:
 *   0 status, 1 namelookup, 2 connect, 3 appconnect, 4 pretransfer, 5 starttransfer, 6 total
 *   (seconds since the start of the transfer), 7 request size, 8 header size, 9 download size.
 * Returns curl's CURLcode (0 on success). */
#include <curl/curl.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
  (void)data, (void)context;
  return size * count;
}

int fetch(const char *url, const char *ca_file, double out[10]) {
  CURL *curl = curl_easy_init();
  if (!curl) return -1;
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  if (ca_file) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
  CURLcode code = curl_easy_perform(curl);
  long status = 0, request_size = 0, header_size = 0;
  curl_off_t download = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(curl, CURLINFO_NAMELOOKUP_TIME, &out[1]);
  curl_easy_getinfo(curl, CURLINFO_CONNECT_TIME, &out[2]);
  curl_easy_getinfo(curl, CURLINFO_APPCONNECT_TIME, &out[3]);
  curl_easy_getinfo(curl, CURLINFO_PRETRANSFER_TIME, &out[4]);
  curl_easy_getinfo(curl, CURLINFO_STARTTRANSFER_TIME, &out[5]);
  curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME, &out[6]);
  curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &request_size);
  curl_easy_getinfo(curl, CURLINFO_HEADER_SIZE, &header_size);
  curl_easy_getinfo(curl, CURLINFO_SIZE_DOWNLOAD_T, &download);
  out[0] = (double)status;
  out[7] = (double)request_size;
  out[8] = (double)header_size;
  out[9] = (double)download;
  curl_easy_cleanup(curl);
  return (int)code;
}
