# hubcast: the two quick-start targets are `make demo` and `make test`; both run `setup` first.
.PHONY: setup build test demo clean

setup:
	@bash deploy/setup.sh

build: setup
	swift build

# Builds the hubcast binary too: integration tests drive the real executable.
test: build
	swift build --build-tests
	swift test

demo: build
	@bash deploy/demo.sh

clean:
	rm -rf .build
