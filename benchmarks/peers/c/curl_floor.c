// The floor of the HTTP library hubcast is built on: libcurl's multi interface POSTing hubcast's
// template send (same headers and body size as benchmarks/lib/template-send.lua) with `connections`
// transfers in flight, handles and header list reused, nothing else: no Kafka, no JSON, no threads.
// Whatever hubcast spends per send is this plus its own work; bench.py runs one per core.
//
//   curl_floor URL REQUESTS CONNECTIONS   (Authorization from $HUBCAST_SAS; over HTTPS, the CA
//                                          from $CURL_FLOOR_CA_FILE; HTTP/1.1, as hubcast speaks)
// Prints one JSON line: requests, non201, the loop's start and end on CLOCK_MONOTONIC (one clock
// for every process, so that side-by-side runs share a window) and its CPU seconds alone (not
// libcurl's and OpenSSL's start-up).
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

static double seconds(struct timespec t) { return (double)t.tv_sec + (double)t.tv_nsec / 1e9; }

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: curl_floor URL REQUESTS CONNECTIONS\n");
        return 2;
    }
    const char *url = argv[1];
    long total = atol(argv[2]);
    int connections = atoi(argv[3]);
    if (total <= 0 || connections <= 0) {
        fprintf(stderr, "curl_floor: REQUESTS and CONNECTIONS must be positive\n");
        return 2;
    }
    const char *sas = getenv("HUBCAST_SAS");
    const char *ca_file = getenv("CURL_FLOOR_CA_FILE");
    char authorization[1024];
    snprintf(authorization, sizeof authorization, "Authorization: %s", sas ? sas : "none");
    static const char body[] = "{\"messageParam\":\"Breaking World News : Earthquake of magnitude 6.1 strikes off the coast\","
                               "\"headline\":\"Earthquake of magnitude 6.1 strikes off the coast\",\"category\":\"World\",\"id\":\"bench-0001\"}";

    curl_global_init(CURL_GLOBAL_ALL);
    CURLM *multi = curl_multi_init();
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json;charset=utf-8");
    headers = curl_slist_append(headers, "ServiceBusNotification-Format: template");
    headers = curl_slist_append(headers, "ServiceBusNotification-Tags: World");
    headers = curl_slist_append(headers, "x-ms-version: 2020-06");
    headers = curl_slist_append(headers, authorization);
    headers = curl_slist_append(headers, "Expect:");

    long started = 0, done = 0, non201 = 0;
    for (int i = 0; i < connections && started < total; i++, started++) {
        CURL *easy = curl_easy_init();
        if (!easy) {
            fprintf(stderr, "curl_floor: curl_easy_init failed\n");
            return 2;
        }
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)(sizeof body - 1));
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        if (ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file);
        if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
            fprintf(stderr, "curl_floor: curl_multi_add_handle failed\n");
            return 2;
        }
    }
    struct timespec t0, t1;
    double cpu0 = cpu_seconds();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (done < total) {
        int running, left;
        if (curl_multi_perform(multi, &running) != CURLM_OK) {
            fprintf(stderr, "curl_floor: curl_multi_perform failed\n");
            return 2;
        }
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &left))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status != 201) non201++;
            curl_multi_remove_handle(multi, easy);
            done++;
            if (started < total) {
                if (curl_multi_add_handle(multi, easy) != CURLM_OK) {
                    fprintf(stderr, "curl_floor: curl_multi_add_handle failed\n");
                    return 2;
                }
                started++;
            } else {
                curl_easy_cleanup(easy);
            }
        }
        if (done < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double cpu = cpu_seconds() - cpu0;
    printf("{\"requests\": %ld, \"non201\": %ld, \"start\": %.6f, \"end\": %.6f, \"cpuSeconds\": %.6f}\n",
           total, non201, seconds(t0), seconds(t1), cpu);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return 0;
}
