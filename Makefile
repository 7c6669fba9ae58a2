# Narad. `make test` is what CI runs (.ci/run); `make run` starts a single node.
GO     ?= go
SEEDS  ?= 1-40
BIN    := bin
# Deliberate bugs behind build tags, as tag:simulation:seeds:check — each must make
# narad-sim report a violation from that check within that many seeds, or within the
# range A-B given as seeds (a regression seed of a rare scenario) (sim/doc.go lists
# what each bug is and why that check sees it).
MUTATIONS := narad_mut_ackearly:wal:200:invariant-1 narad_mut_skipaftertorn:wal:20:invariant-1 \
	narad_mut_skipreadback:node:500:invariant-4 narad_mut_ckptearly:node:500:invariant-1 \
	narad_mut_hwbeforesync:node:500:invariant-4 narad_mut_trusttail:node:41-41:invariant-4 \
	narad_mut_nopromote:cluster:100:voters narad_mut_norelay:cluster:160-170:voters \
	narad_mut_epochzero:cluster:20:invariant-4 narad_mut_nodemote:cluster:209-209:voters \
	narad_mut_dropreassigned:cluster:20:invariant-2 narad_mut_ackunanswered:cluster:20:invariant-9 \
	narad_mut_removeearly:cluster:50:invariant-2 narad_mut_drainplace:cluster:150:decommission \
	narad_mut_keepforgotten:cluster:20:decommission narad_mut_removedtakes:cluster:1488-1488:invariant-2 \
	narad_mut_rerouteinflight:cluster:1000:dispatch narad_mut_discardnoconfirm:cluster:1000:invariant-1 \
	narad_mut_ckptpastskip:cluster:1000:invariant-1 narad_mut_applyearly:meta:100:invariant-6 \
	narad_mut_keepforgotten:meta:30:forget narad_mut_notombstone:meta:30:forget \
	narad_mut_cutoversameepoch:meta:20:moves \
	narad_mut_cutoverunverified:cluster:20:invariant-2 narad_mut_releaseearly:cluster:20:reclaim \
	narad_mut_frozendrop:cluster:20:invariant-1 \
	narad_mut_importlost:cluster:378869-378869:invariant-9 \
	narad_mut_moveinstance:cluster:2986-2986:moves \
	narad_mut_emptysourcecopy:cluster:3806-3806:invariant-2 \
	narad_mut_sendfailsilent:cluster:50:invariant-11 \
	narad_mut_readbackcache:node:20:invariant-1 \
	narad_mut_nacksettle:node:20:invariant-9 narad_mut_leasestale:node:20:invariant-9 narad_mut_keyoffbyone:node:20:invariant-8 \
	narad_mut_statshw:node:20:linearizability narad_mut_nocarnation:cluster:50:invariant-8 \
	narad_mut_acksnotdurable:node:20:invariant-9 narad_mut_redispatchall:cluster:100:invariant-10 \
	narad_mut_ownernocheck:cluster:50:access narad_mut_cachestale:cluster:50:access \
	narad_mut_reroutealive:cluster:20:dispatch \
	narad_mut_readyearly:cluster:20:readiness narad_mut_reclaimlive:cluster:20:reclaim \
	narad_mut_poisonnode:cluster:20:poison narad_mut_noreopen:node:33-33:poison \
	narad_mut_reopentail:node:150-250:invariant-10 narad_mut_nospacefatal:node:20:nospace

# Deliberate bugs no simulator seed within the sweeps reaches, each caught by a unit test
# that builds its scenario on purpose (tag:package:test): the test must fail with the tag.
MUTATION_TESTS := narad_mut_foreignconsume:./core/node:TestStaleReplicaDeliversNoRecordsOfAnotherIncarnation \
	narad_mut_poisonnode:./core/node:TestFailedPartitionStaysLocalAndReopens \
	narad_mut_reopentail:./core/plog:TestReopenCutsFramesPastTheVerifiedEnd \
	narad_mut_zeroskept:./core/plog:TestCutLaysZerosAgain \
	narad_mut_zeroheader:./core/plog:TestRecoveryR4ZeroedMiddleFrameIsNotTheEnd \
	narad_mut_servestale:./core/node:TestForgetGivesBackAPartitionMovedAwayAndItsOldCopyIsDropped \
	narad_mut_sharedreadback:./io/osfs:TestConcurrentReadDevicesGetTheirOwnBytes \
	narad_mut_walzeroheader:./core/wal:TestRecoveryR6ZeroedMiddleFrameIsNotTheEnd \
	narad_mut_nospacefatal:./core/wal:TestNoSpaceRefusesTheGroupAndGivesItsSeqsBack \
	narad_mut_loststate:./core/node:TestWipedMemberStopsAndTheClusterGoesOn \
	narad_mut_readctx:./core/node:TestLateReadAnswerOfAnEarlierProcessConfirmsNothing \
	narad_mut_noforgottenstop:./core/node:TestForgetDeadMember \
	narad_mut_noownstop:./core/node:TestForgottenNodeBehindAOneWayCutStops \
	narad_mut_novotersguard:./core/meta:TestForgetGuards \
	narad_mut_noquorumguard:./core/node:TestDecommissionRefusedByTheQuorumGuard \
	narad_mut_removeearly:./core/node:TestDecommissionedNodeDeliversWhatItAccepted \
	narad_mut_noforwarddedupe:./core/meta:TestForwardedCopyAppliedOnce \
	narad_mut_nomarkstable:./core/node:TestForgetDeadLeaderReportsItsMarks \
	narad_mut_noconsumecancel:./core/node:TestSpreadConsumeAnsweredCancelsTheOtherOwners \
	narad_mut_localignored:./core/node:TestProduceLocalPartitionsStayOnTheirNode

.PHONY: all build run test unit coverage sim sim-long determinism mutation bench bench-ratios bench-move fuzz lint ops-check clean

all: build

build:
	$(GO) build -o $(BIN)/narad ./cmd/narad
	$(GO) build -o $(BIN)/narad-sim ./cmd/narad-sim

run:
	$(GO) run ./cmd/narad serve

# The whole suite: lint, unit and property tests under the race detector (fuzz seed
# corpora included), the operations kit's check, a short seed sweep, the cross-process
# determinism check and the mutation check.
test: lint unit ops-check coverage sim determinism mutation

# The operations kit (ops/): the alert rules and the Grafana dashboard's queries parse
# (promtool, of Debian's prometheus package, which .ci/run installs), and every metric
# they name is one a real node exports (a test that scrapes one; unit runs these tests
# too, under -race, but skips the dashboard's without promtool).
ops-check:
	@command -v promtool >/dev/null 2>&1 || { echo "ops-check: no promtool (apt-get install prometheus)"; exit 1; }
	promtool check rules ops/prometheus/narad-alerts.yml
	NARAD_OPS_CHECK=1 $(GO) test -count=1 -run '^(TestOpsKitNamesExportedMetrics|TestPromqlMetricNames|TestDashboardQueriesParse)$$' ./cmd/narad/

unit:
	$(GO) test -race -count=1 ./...

# Over seeds 1-100 every fault class of each simulator fires and every check does work
# (sweeps too long for the race detector: unit leaves them out, NARAD_COVERAGE runs them).
coverage:
	NARAD_COVERAGE=1 $(GO) test -count=1 -timeout 20m -run 'EveryFaultAndCheckRuns|SeedsCoverFaultsAndCheckers|FaultsAndCheckersCovered' ./sim/...

# The seed sweep: WAL and metastore seeds 1-$(SEEDS), 300 node and 300 cluster seeds, 100
# cluster seeds whose members keep keyless messages on their own partitions, and a window
# of 200 cluster seeds that starts at a number derived from the commit (printed; rerun a
# failure with -seed), so that every commit explores seeds no earlier one ran.
sim: build
	./$(BIN)/narad-sim -sim wal -seeds $(SEEDS)
	./$(BIN)/narad-sim -sim meta -seeds $(SEEDS)
	./$(BIN)/narad-sim -sim node -seeds 1-300
	./$(BIN)/narad-sim -sim cluster -seeds 1-300
	./$(BIN)/narad-sim -sim cluster-local -seeds 1-100
	@start=$$(( 1000 + 0x$$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0) % 1000000 )); \
	  echo "cluster window from the commit: seeds $$start-$$((start + 199))"; \
	  ./$(BIN)/narad-sim -sim cluster -seeds $$start-$$((start + 199))

sim-long: build
	./$(BIN)/narad-sim -sim wal -seeds 1-1000
	./$(BIN)/narad-sim -sim node -seeds 1-500
	./$(BIN)/narad-sim -sim meta -seeds 1-500
	./$(BIN)/narad-sim -sim cluster -seeds 1-1000

# The same seed, run in two separate processes, must print the same output, every line of
# it (options, stats, trace hash, verdict). The seeds are ones that do work in every
# simulation (a vacuous seed would prove nothing).
DETERMINISM_SEEDS := 3 1234
determinism: build
	@for sim in wal node meta cluster; do for s in $(DETERMINISM_SEEDS); do \
	  ./$(BIN)/narad-sim -sim $$sim -seed $$s > $(BIN)/det-a.out; \
	  ./$(BIN)/narad-sim -sim $$sim -seed $$s > $(BIN)/det-b.out; \
	  echo "$$sim: $$(tail -n 1 $(BIN)/det-a.out)"; \
	  if ! cmp -s $(BIN)/det-a.out $(BIN)/det-b.out; then echo "determinism: $$sim seed $$s printed two outputs:"; \
	    diff $(BIN)/det-a.out $(BIN)/det-b.out | head -n 20; exit 1; fi; \
	done; done

# Each deliberate bug, built in behind its tag, must be caught within its seed bound by the
# check named for it: narad-sim must print "verdict=violation check=<check>". Another check
# firing instead, a clean sweep, a build failure or a crash of narad-sim (exit status
# other than 1) fails the target.
mutation:
	GO=$(GO) BIN=$(BIN) ./scripts/mutation.sh $(MUTATIONS) --unit $(MUTATION_TESTS)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 100000x ./io/walshell/

# Issue 16's comparisons in one run (fdatasync, bare handler, one node, three nodes) and
# their ratios against the targets (docs/benchmarks.md).
bench-ratios: build
	$(GO) build -o $(BIN)/narad-bench ./cmd/narad-bench
	$(GO) run ./scripts/benchratios -narad $(BIN)/narad -bench $(BIN)/narad-bench

# A partition move under load on a three-node cluster (docs/benchmarks.md); MOVE_MIB sets
# the partition's size (default 1024).
bench-move:
	./scripts/bench-move.sh

# Every decoder of a disk or wire format and of batch bodies, 30 s each (their seed corpora run in every make test).
FUZZ := core/frame:FuzzRead core/wal:FuzzDecodeFrame core/wal:FuzzDecodeCheckpoint core/wal:FuzzDecodeCheckpointV2Body core/plog:FuzzDecodeBatch \
	core/lease:FuzzDecodeAckFrame core/lease:FuzzDecodeSnapshot core/meta:FuzzDecodeLogFrame \
	core/meta:FuzzDecodeSnapFile core/meta:FuzzDecodeCommand io/httpapi:FuzzDecodeBatchBody \
	core/wire:FuzzDecode io/peernet:FuzzReadEnvelope io/httpapi:FuzzAuthorizationHeader io/httpapi:FuzzUsersBody

fuzz:
	@for f in $(FUZZ); do \
	  $(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime 30s ./$${f%%:*}/ || exit 1; \
	done

# staticcheck (its default checks, unused code among them) and errcheck (an unchecked
# error in non-test code; the calls it may skip are listed, with why, in
# .errcheck-excludes) at pinned versions, fetched from the module proxy by go run: no tool
# to install beforehand. internal/stylecheck holds STYLE.md's sizes: functions of at most
# 70 lines, files of at most 700, core lines of at most 100 columns, one assert helper.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
ERRCHECK := github.com/kisielk/errcheck@v1.30.0

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ERRCHECK) -ignoretests -exclude .errcheck-excludes ./...
	$(GO) test -count=1 ./internal/stylecheck/

clean:
	rm -rf $(BIN)
