# hubcast: the two quick-start targets are `make demo` and `make test`; both run `setup` first.
.PHONY: setup build test tsan lint format demo bench bench-quick bench-tools bench-emulator bench-micro bench-backend faults deploy-check image image-test clean

setup:
	@bash deploy/setup.sh

build: setup
	swift build

# Builds the hubcast binary too: integration tests drive the real executable.
test: build
	swift build --build-tests
	bash deploy/tansu.sh
	swift test --skip-build

# The thread sanitizer on the C seam it can check: the libcurl transport and the client's suites.
# (librdkafka starts C11 threads the sanitizer does not intercept: the Kafka suites cannot run
# under it; docs/architecture.md, "Thread safety at the C seams".) A build of its own, ~8 min cold.
tsan: setup
	swift build --build-tests --sanitize=thread --scratch-path .build-tsan
	TSAN_OPTIONS="suppressions=$(CURDIR)/Tests/tsan-suppressions.txt" swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "NotificationHubsTests|ThreadsTests"

# Style: swift-format (the toolchain's `swift format`) with .swift-format; `make format` rewrites in place.
SWIFT_SOURCES = Package.swift Sources Tests benchmarks/micro/Package.swift benchmarks/micro/Benchmarks
lint:
	swift format lint --strict --recursive --parallel $(SWIFT_SOURCES)

format:
	swift format format --in-place --recursive --parallel $(SWIFT_SOURCES)

# The whole product on loopback: dev broker, emulator, sample news, pipeline, summary.
demo: build
	$$(swift build --show-bin-path)/hubcast demo

# Benchmarks need wrk, Python's venv, Go, the Go sender and a release build; they are never part of `make test`.
# Each prints a table and writes benchmarks/results/ (see benchmarks/README.md). HUBCAST_BIN=/path/to/hubcast
# measures a binary built elsewhere (then nothing is built here).
bench: bench-tools
	python3 benchmarks/bench.py
	$(MAKE) bench-micro

# The same figures, smaller: 20,000 items, 10 s of each quota, no 1 M-item run, 5-second wrk runs.
bench-quick: bench-tools
	python3 benchmarks/bench.py --items 20000 --memory-items 10000 --quota-seconds 10 --seconds 5 --priority-backlog 5000 --priority-seconds 10 --fair-flood 20000
	HUBCAST_MICRO_SECONDS=1 $(MAKE) bench-micro

PEERS_BUILD = benchmarks/.peers-build
bench-tools: setup
	@command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null)
	@python3 -c 'import ensurepip, venv' 2>/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null)
	@(command -v go >/dev/null && [ -d /usr/share/gocode/src/github.com/confluentinc/confluent-kafka-go/kafka ]) || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go golang-github-confluentinc-confluent-kafka-go-dev >/dev/null)
	cd benchmarks/peers/go && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$(CURDIR)/$(PEERS_BUILD)/cache \
		go build -tags dynamic -o $(CURDIR)/$(PEERS_BUILD)/gosender .
	cc -O2 -Wall -o $(PEERS_BUILD)/curl_floor benchmarks/peers/c/curl_floor.c -lcurl
	@if [ -z "$$HUBCAST_BIN" ]; then swift build -c release --product hubcast; fi

# ordo-one/benchmark in its own package (benchmarks/micro), merged into results/latest.json.
bench-micro:
	cd benchmarks/micro && swift package --allow-writing-to-package-directory benchmark --no-progress \
		--format jsonSmallerIsBetter --path ../results/micro
	python3 benchmarks/bench.py --micro-json benchmarks/results/micro/Current_run.json

bench-emulator: bench-tools
	HUBCAST_BIN=$$(swift build -c release --show-bin-path)/hubcast bash benchmarks/emulator.sh

# hubcast backend under load (benchmarks/backend.py): registrations/s and secure fetches/s, p99, bcrypt's
# share, SQLite vs PostgreSQL; results/backend.json.
bench-backend: bench-tools
	HUBCAST_BIN=$$(swift build -c release --show-bin-path)/hubcast python3 benchmarks/backend.py

# Fault injection on loopback (benchmarks/faults.py): eleven scenarios, a table, results/faults.json; exits 1
# if an item is lost or a hard expectation fails. Its own release build in .build-faults (or HUBCAST_BIN).
faults: setup
	@if [ -z "$$HUBCAST_BIN" ]; then swift build -c release --product hubcast --scratch-path .build-faults; fi
	python3 benchmarks/faults.py

# Deployment files (deploy/Dockerfile, compose.yaml, k8s/, systemd/) checked offline by maintained linters,
# which it installs into .build-deploycheck/; then shows that a deliberately broken copy fails each check.
deploy-check:
	bash deploy/deploy-check.sh
	bash deploy/check/self-test.sh

# The container image without a registry: a release binary with the Swift runtime linked in (its own
# scratch path), fed to deploy/Dockerfile's runtime stage on a debootstrapped bookworm, by podman.
image: setup
	swift build -c release --static-swift-stdlib --product hubcast --scratch-path .build-image
	bash deploy/image.sh build

# `hubcast demo` inside the image: exit 0 only if every valid item was delivered.
image-test: image
	bash deploy/image.sh test

clean:
	rm -rf .build
