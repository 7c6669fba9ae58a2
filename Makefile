# Narad. `make test` is what CI runs (.ci/run); `make run` starts a single node.
GO     ?= go
SEEDS  ?= 1-40
BIN    := bin
MUTATIONS := narad_mut_ackearly narad_mut_trustsync

.PHONY: all build run test unit sim sim-long determinism mutation bench fuzz lint clean

all: build

build:
	$(GO) build -o $(BIN)/narad ./cmd/narad
	$(GO) build -o $(BIN)/narad-sim ./cmd/narad-sim

run:
	$(GO) run ./cmd/narad serve

# The whole suite: lint, unit and property tests under the race detector (fuzz seed
# corpora included), a short seed sweep, the cross-process determinism check and the
# mutation check.
test: lint unit sim determinism mutation

unit:
	$(GO) test -race -count=1 ./...

sim: build
	./$(BIN)/narad-sim -seeds $(SEEDS)

sim-long: build
	./$(BIN)/narad-sim -seeds 1-1000

# The same seed, run in two separate processes, must print the same trace hash.
determinism: build
	@for s in 7 1234; do \
	  a=$$(./$(BIN)/narad-sim -seed $$s | tail -n 1); \
	  b=$$(./$(BIN)/narad-sim -seed $$s | tail -n 1); \
	  echo "$$a"; \
	  if [ "$$a" != "$$b" ]; then echo "determinism: seed $$s gave '$$a' then '$$b'"; exit 1; fi; \
	done

# Each deliberate bug, built in behind its tag, must be caught within 200 seeds.
mutation:
	@for tag in $(MUTATIONS); do \
	  $(GO) build -tags $$tag -o $(BIN)/narad-sim-$$tag ./cmd/narad-sim || exit 1; \
	  if ./$(BIN)/narad-sim-$$tag -seeds 1-200 -stop > $(BIN)/mutation-$$tag.out; then \
	    echo "mutation $$tag: NOT caught in seeds 1-200"; exit 1; \
	  fi; \
	  echo "mutation $$tag: caught: $$(tail -n 1 $(BIN)/mutation-$$tag.out)"; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 100000x ./io/walshell/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 30s ./core/wal/
	$(GO) test -run '^$$' -fuzz FuzzDecodeCheckpoint -fuzztime 30s ./core/wal/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
