# hubcast: the two quick-start targets are `make demo` and `make test`; both run `setup` first.
.PHONY: setup build test demo bench-emulator clean

setup:
	@bash deploy/setup.sh

build: setup
	swift build

# Builds the hubcast binary too: integration tests drive the real executable.
test: build
	swift build --build-tests
	swift test

# The whole product on loopback: dev broker, emulator, sample news, pipeline, summary.
demo: build
	$$(swift build --show-bin-path)/hubcast demo

# Benchmarks need wrk and a release build; they are never part of `make test`.
bench-emulator: setup
	@command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null)
	swift build -c release --product hubcast
	HUBCAST_BIN=$$(swift build -c release --show-bin-path)/hubcast bash benchmarks/emulator.sh

clean:
	rm -rf .build
