# Narad. `make test` is what CI runs (.ci/run); `make run` starts a single node.
GO     ?= go
SEEDS  ?= 1-40
BIN    := bin
# Deliberate bugs behind build tags, as tag:simulation:seeds — each must make narad-sim
# report a violation within that many seeds.
MUTATIONS := narad_mut_ackearly:wal:200 narad_mut_trustsync:wal:200 \
	narad_mut_skipreadback:node:500 narad_mut_ckptearly:node:500 narad_mut_hwbeforesync:node:500 \
	narad_mut_rerouteinflight:cluster:1000 narad_mut_discardnoconfirm:cluster:1000 narad_mut_ckptpastskip:cluster:1000 \
	narad_mut_nocarnation:cluster:50:invariant-8

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
	./$(BIN)/narad-sim -sim wal -seeds $(SEEDS)
	./$(BIN)/narad-sim -sim node -seeds $(SEEDS)
	./$(BIN)/narad-sim -sim meta -seeds $(SEEDS)
	./$(BIN)/narad-sim -sim cluster -seeds $(SEEDS)

sim-long: build
	./$(BIN)/narad-sim -sim wal -seeds 1-1000
	./$(BIN)/narad-sim -sim node -seeds 1-500
	./$(BIN)/narad-sim -sim meta -seeds 1-500
	./$(BIN)/narad-sim -sim cluster -seeds 1-1000

# The same seed, run in two separate processes, must print the same trace hash.
determinism: build
	@for sim in wal node meta cluster; do for s in 7 1234; do \
	  a=$$(./$(BIN)/narad-sim -sim $$sim -seed $$s | tail -n 1); \
	  b=$$(./$(BIN)/narad-sim -sim $$sim -seed $$s | tail -n 1); \
	  echo "$$sim: $$a"; \
	  if [ "$$a" != "$$b" ]; then echo "determinism: $$sim seed $$s gave '$$a' then '$$b'"; exit 1; fi; \
	done; done

# Each deliberate bug, built in behind its tag, must be caught within its seed bound.
mutation:
	@for m in $(MUTATIONS); do \
	  tag=$${m%%:*}; rest=$${m#*:}; sim=$${rest%%:*}; n=$${rest#*:}; \
	  $(GO) build -tags $$tag -o $(BIN)/narad-sim-$$tag ./cmd/narad-sim || exit 1; \
	  if ./$(BIN)/narad-sim-$$tag -sim $$sim -seeds 1-$$n -stop > $(BIN)/mutation-$$tag.out; then \
	    echo "mutation $$tag: NOT caught by -sim $$sim in seeds 1-$$n"; exit 1; \
	  fi; \
	  echo "mutation $$tag ($$sim): caught: $$(tail -n 1 $(BIN)/mutation-$$tag.out)"; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchtime 100000x ./io/walshell/

# Every decoder of a disk or wire format and of batch bodies, 30 s each (their seed corpora run in every make test).
FUZZ := core/wal:FuzzDecodeFrame core/wal:FuzzDecodeCheckpoint core/plog:FuzzDecodeBatch \
	core/lease:FuzzDecodeAckFrame core/lease:FuzzDecodeSnapshot core/meta:FuzzDecodeLogFrame \
	core/meta:FuzzDecodeSnapFile core/meta:FuzzDecodeCommand io/httpapi:FuzzDecodeBatchBody \
	core/wire:FuzzDecode io/net:FuzzReadEnvelope

fuzz:
	@for f in $(FUZZ); do \
	  $(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime 30s ./$${f%%:*}/ || exit 1; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
