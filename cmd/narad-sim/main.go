// Command narad-sim runs Narad's deterministic simulator.
//
//	narad-sim -seed N        run one seed: its options, its stats, then
//	                         "seed=N trace=<hash> verdict=ok", or "verdict=violation
//	                         check=<name>" naming the check that found it (exit 1)
//	narad-sim -seeds A-B     run a range in parallel; exit 1 naming every failing seed,
//	                         or a summary with "traces=<digest>" of every seed's trace
//	-sim node|wal|meta|cluster|cluster-nousers|cluster-local
//	                         what runs: the whole single-node broker (default), the
//	                         ingress WAL alone, a 3- or 5-replica metastore cluster, a
//	                         3- or 5-node broker cluster, or one whose clients act as the
//	                         system whatever the seed drew (a regression seed from before
//	                         the cluster simulator had users)
//
// Everything a run does is drawn from its seed, so a failing seed reproduces from its
// number alone, in any process.
package main

import (
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("narad-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "run one seed")
	seeds := fs.String("seeds", "", "run a range of seeds, A-B inclusive")
	workers := fs.Int("j", runtime.GOMAXPROCS(0), "seeds run at once with -seeds")
	stop := fs.Bool("stop", false, "with -seeds: stop starting seeds after the first violation (mutation checks)")
	simName := fs.String("sim", "node", "simulation: node (the single-node broker), wal (the ingress WAL alone) meta (a metastore cluster), cluster (a broker cluster), cluster-nousers (a cluster seed without users) or cluster-local (a cluster seed whose members keep keyless messages on their own partitions)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sim, ok := simulations[*simName]
	if !ok {
		fmt.Fprintf(stderr, "narad-sim: unknown -sim %q: want node, wal, meta, cluster, cluster-nousers or cluster-local\n", *simName)
		return 2
	}
	if *seeds != "" {
		lo, hi, err := parseRange(*seeds)
		if err != nil {
			fmt.Fprintln(stderr, "narad-sim:", err)
			return 2
		}
		return runRange(sim, lo, hi, *workers, *stop, stdout)
	}
	if !isSet(fs, "seed") {
		fmt.Fprintln(stderr, "narad-sim: give -seed N or -seeds A-B")
		return 2
	}
	return runOne(sim, *seed, stdout)
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func parseRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := strconv.ParseUint(a, 10, 64)
	hi, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || hi < lo {
		return 0, 0, fmt.Errorf("bad -seeds %q: want A-B with A <= B", s)
	}
	return lo, hi, nil
}

func runOne(sim func(uint64) outcome, seed uint64, out io.Writer) int {
	res := sim(seed)
	fmt.Fprintln(out, res.options)
	for _, line := range res.stats {
		fmt.Fprintln(out, line)
	}
	return verdict(seed, res, out)
}

func verdict(seed uint64, res outcome, out io.Writer) int {
	if res.violation != nil {
		fmt.Fprintln(out, "violation:", res.violation)
		fmt.Fprintf(out, "seed=%d trace=%s verdict=violation check=%s\n", seed, res.trace, checkName(res.violation))
		return 1
	}
	fmt.Fprintf(out, "seed=%d trace=%s verdict=ok\n", seed, res.trace)
	return 0
}

// runRange runs seeds lo..hi on workers goroutines and prints, in seed order, a line per
// failing seed and a summary. With stop, no new seed starts after a violation. A passing
// summary ends with a digest of every seed's trace hash, so that two builds can be shown to
// run a whole sweep identically (a refactoring that must not change behaviour).
func runRange(sim func(uint64) outcome, lo, hi uint64, workers int, stop bool, out io.Writer) int {
	n := int(hi - lo + 1)
	results := make([]outcome, n)
	next := make(chan int)
	var wg sync.WaitGroup
	var violated atomic.Bool
	for w := 0; w < max(1, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = sim(lo + uint64(i))
				if results[i].violation != nil {
					violated.Store(true)
				}
			}
		}()
	}
	for i := 0; i < n && !(stop && violated.Load()); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	var failing []string
	digest := fnv.New64a()
	for i, res := range results {
		fmt.Fprintf(digest, "%d %s\n", lo+uint64(i), res.trace)
		if res.violation != nil {
			verdict(lo+uint64(i), res, out)
			failing = append(failing, strconv.FormatUint(lo+uint64(i), 10))
		}
	}
	if len(failing) > 0 {
		fmt.Fprintf(out, "seeds=%d-%d failed=%d: %s\n", lo, hi, len(failing), strings.Join(failing, " "))
		return 1
	}
	fmt.Fprintf(out, "seeds=%d-%d failed=0 verdict=ok traces=%016x\n", lo, hi, digest.Sum64())
	return 0
}
