# hubcast: the two quick-start targets are `make demo` and `make test`; both run `setup` first.
.PHONY: setup build test demo bench bench-quick bench-tools bench-emulator bench-micro bench-backend faults clean

setup:
	@bash deploy/setup.sh

build: setup
	swift build

# Builds the hubcast binary too: integration tests drive the real executable.
test: build
	swift build --build-tests
	bash deploy/tansu.sh
	swift test

# The whole product on loopback: dev broker, emulator, sample news, pipeline, summary.
demo: build
	$$(swift build --show-bin-path)/hubcast demo

# Benchmarks need wrk, Python's venv and a release build; they are never part of `make test`.
# Each prints a table and writes benchmarks/results/ (see benchmarks/README.md).
bench: bench-tools
	python3 benchmarks/bench.py
	$(MAKE) bench-micro

# The same figures, smaller: 10,000 items, 5-second wrk runs, micro-benchmarks briefly.
bench-quick: bench-tools
	python3 benchmarks/bench.py --items 10000 --peer-items 10000 --seconds 5
	HUBCAST_MICRO_SECONDS=1 $(MAKE) bench-micro

bench-tools: setup
	@command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null)
	@python3 -c 'import ensurepip, venv' 2>/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null)
	swift build -c release --product hubcast

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

# Fault injection on loopback (benchmarks/faults.py): nine scenarios, a table, results/faults.json; exits 1
# if an item is lost or a hard expectation fails. Its own release build in .build-faults (or HUBCAST_BIN).
faults: setup
	@if [ -z "$$HUBCAST_BIN" ]; then swift build -c release --product hubcast --scratch-path .build-faults; fi
	python3 benchmarks/faults.py

clean:
	rm -rf .build
