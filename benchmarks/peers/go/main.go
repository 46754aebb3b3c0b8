// Command gosender does the same job as `hubcast run`, written plainly the way a competent Go
// engineer would: the Go peer hubcast is compared with in benchmarks/bench.py.
//
// A confluent-kafka-go consumer in a group (auto-commit off) reads batches of up to --batch
// messages; each item is decoded and checked and handed to --concurrency goroutines that POST the
// template send to its category tag through one net/http client (keep-alive pool of --concurrency
// connections), with the SAS token computed once and the same headers and body as hubcast. A 429
// is retried after its Retry-After; 5xx and transport errors a few times with backoff. The batch's
// offsets are committed after its sends finish. Exits once no message has arrived for --idle;
// prints one JSON summary line on stdout.
//
// Build (Debian's golang-go and golang-github-confluentinc-confluent-kafka-go-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -tags dynamic -o gosender .
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/kafka"
)

var categories = []string{"World", "Politics", "Business", "Technology", "Science", "Sports"}

type newsItem struct {
	ID       string `json:"id"`
	Headline string `json:"headline"`
	Category string `json:"category"`
}

// templateBody is hubcast's template properties, in hubcast's field order.
type templateBody struct {
	MessageParam string `json:"messageParam"`
	Headline     string `json:"headline"`
	Category     string `json:"category"`
	ID           string `json:"id"`
}

type job struct {
	item newsItem
	done *sync.WaitGroup
}

type sender struct {
	client        *http.Client
	url           string
	authorization string
	maxAttempts   int

	sent, failed, throttled int64
}

func sasToken(connectionString, hubURL string, ttl time.Duration) (string, error) {
	parts := map[string]string{}
	for _, p := range strings.Split(connectionString, ";") {
		if k, v, ok := strings.Cut(p, "="); ok {
			parts[k] = v
		}
	}
	if parts["SharedAccessKey"] == "" || parts["SharedAccessKeyName"] == "" {
		return "", fmt.Errorf("connection string has no SharedAccessKeyName/SharedAccessKey")
	}
	resource, _, _ := strings.Cut(hubURL, "/messages")
	uri := strings.ToLower(url.QueryEscape(resource))
	expiry := strconv.FormatInt(time.Now().Add(ttl).Unix(), 10)
	mac := hmac.New(sha256.New, []byte(parts["SharedAccessKey"]))
	mac.Write([]byte(uri + "\n" + expiry))
	signature := url.QueryEscape(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return fmt.Sprintf("SharedAccessSignature sr=%s&sig=%s&se=%s&skn=%s", uri, signature, expiry, parts["SharedAccessKeyName"]), nil
}

func retryAfter(h string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return time.Until(t)
	}
	return time.Second
}

// send posts one item until it is accepted or gives up; returns the accepted attempt's duration.
func (s *sender) send(item newsItem) (time.Duration, bool) {
	body, err := json.Marshal(templateBody{
		MessageParam: "Breaking " + item.Category + " News : " + item.Headline,
		Headline:     item.Headline, Category: item.Category, ID: item.ID,
	})
	if err != nil {
		return 0, false
	}
	backoff := 100 * time.Millisecond
	for failures := 0; failures < s.maxAttempts; {
		req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
		if err != nil {
			return 0, false
		}
		// Assigned directly, not with Header.Set, so the names go out spelled as hubcast spells them.
		req.Header["Authorization"] = []string{s.authorization}
		req.Header["Content-Type"] = []string{"application/json;charset=utf-8"}
		req.Header["ServiceBusNotification-Format"] = []string{"template"}
		req.Header["ServiceBusNotification-Tags"] = []string{item.Category}
		req.Header["x-ms-version"] = []string{"2020-06"}
		started := time.Now()
		resp, err := s.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusCreated:
				return time.Since(started), true
			case resp.StatusCode == http.StatusTooManyRequests:
				// Throttling is the hub asking to wait, not a failure: wait as long as it says, then retry.
				atomic.AddInt64(&s.throttled, 1)
				time.Sleep(retryAfter(resp.Header.Get("Retry-After")))
				continue
			case resp.StatusCode < 500:
				return 0, false
			}
		}
		failures++
		time.Sleep(backoff)
		backoff *= 2
	}
	return 0, false
}

func (s *sender) worker(jobs <-chan job, latencies *[]time.Duration) {
	for j := range jobs {
		if d, ok := s.send(j.item); ok {
			atomic.AddInt64(&s.sent, 1)
			*latencies = append(*latencies, d)
		} else {
			atomic.AddInt64(&s.failed, 1)
		}
		j.done.Done()
	}
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "Kafka bootstrap servers")
	hubURL := flag.String("url", "", "http://host:port/hub/messages/?api-version=2020-06")
	connectionString := flag.String("connection-string", "", "the hub's connection string")
	topicPrefix := flag.String("topic-prefix", "news.", "category topics are prefix + lowercased category")
	group := flag.String("group", "go-sender", "consumer group")
	concurrency := flag.Int("concurrency", 64, "sending goroutines and keep-alive connections")
	batchSize := flag.Int("batch", 500, "messages read before their sends are awaited and committed")
	idle := flag.Duration("idle", 2*time.Second, "exit once no message has arrived for this long")
	flag.Parse()
	if *hubURL == "" || *connectionString == "" {
		log.Fatal("--url and --connection-string are required")
	}

	authorization, err := sasToken(*connectionString, *hubURL, 20*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	s := &sender{
		client: &http.Client{
			Timeout: 30 * time.Second,
			Transport: &http.Transport{
				MaxIdleConns:        *concurrency,
				MaxIdleConnsPerHost: *concurrency,
				IdleConnTimeout:     90 * time.Second,
				DisableCompression:  true,
			},
		},
		url: *hubURL, authorization: authorization, maxAttempts: 5,
	}

	consumer, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  *brokers,
		"group.id":           *group,
		"enable.auto.commit": false,
		"auto.offset.reset":  "earliest",
		"fetch.wait.max.ms":  100,
	})
	if err != nil {
		log.Fatal(err)
	}
	topics := make([]string, len(categories))
	for i, c := range categories {
		topics[i] = *topicPrefix + strings.ToLower(c)
	}
	if err := consumer.SubscribeTopics(topics, nil); err != nil {
		log.Fatal(err)
	}

	jobs := make(chan job, *concurrency)
	perWorker := make([][]time.Duration, *concurrency)
	var workers sync.WaitGroup
	for i := 0; i < *concurrency; i++ {
		workers.Add(1)
		go func(i int) {
			defer workers.Done()
			s.worker(jobs, &perWorker[i])
		}(i)
	}

	var invalid int64
	started := time.Now()
	var first, lastMessage, done time.Time
	for {
		batch := make([]newsItem, 0, *batchSize)
		got := 0
		// Block briefly for the first message of a batch, then take what is already fetched.
		for timeout := 100; got < *batchSize; timeout = 0 {
			ev := consumer.Poll(timeout)
			if ev == nil {
				break
			}
			switch e := ev.(type) {
			case *kafka.Message:
				got++
				var item newsItem
				if json.Unmarshal(e.Value, &item) != nil || item.ID == "" || item.Headline == "" || item.Category == "" {
					invalid++
					continue
				}
				batch = append(batch, item)
			case kafka.Error:
				log.Printf("consume error: %v", e)
			}
		}
		now := time.Now()
		if got == 0 {
			// Joining the group may take seconds; after the first message, --idle ends the run.
			if lastMessage.IsZero() && now.Sub(started) >= time.Minute || !lastMessage.IsZero() && now.Sub(lastMessage) >= *idle {
				break
			}
			continue
		}
		if first.IsZero() {
			first = now
		}
		lastMessage = now
		var sends sync.WaitGroup
		sends.Add(len(batch))
		for _, item := range batch {
			jobs <- job{item: item, done: &sends}
		}
		sends.Wait()
		if _, err := consumer.Commit(); err != nil {
			if ke, ok := err.(kafka.Error); !ok || ke.Code() != kafka.ErrNoOffset {
				log.Printf("commit: %v", err)
			}
		}
		done = time.Now()
	}
	close(jobs)
	workers.Wait()
	consumer.Close()

	var latencies []time.Duration
	for _, l := range perWorker {
		latencies = append(latencies, l...)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pick := func(q float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		i := int(q * float64(len(latencies)))
		if i >= len(latencies) {
			i = len(latencies) - 1
		}
		return float64(latencies[i].Microseconds()) / 1000
	}
	elapsed := 0.0
	if !first.IsZero() {
		elapsed = done.Sub(first).Seconds()
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(s.sent) / elapsed
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"sent": s.sent, "failed": s.failed, "invalid": invalid, "throttled": s.throttled,
		"seconds": elapsed, "sendsPerSec": rate, "p50Ms": pick(0.5), "p99Ms": pick(0.99),
	})
}
