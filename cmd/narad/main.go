// Command narad is the Narad broker daemon.
//
//	narad serve [-data DIR] [-addr HOST:PORT] [-log-level LEVEL]
//	narad version
//
// This first version runs the ingress write-ahead log only: it accepts produce requests
// and answers 202 once each record is durable in the WAL. There is no metastore yet, so
// topics are not created or looked up: every valid topic name is accepted. See usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.0.0-dev"

const usageText = `usage:
  narad serve [flags]   run the broker (ingress WAL and HTTP API)
  narad version         print the version
  narad help            print this text

serve flags (each falls back to an environment variable, then to a default):
  -data DIR             data directory (NARAD_DATA, default ./data)
  -addr HOST:PORT       HTTP listen address (NARAD_ADDR, default 127.0.0.1:7942)
  -log-level LEVEL      debug, info, warn or error (NARAD_LOG_LEVEL, default info)

This version stores produced records in the ingress WAL only. There is no metastore yet:
topics cannot be created or listed, and every valid topic name is accepted by produce
(unknown topics are not detected, so produce never answers 404 for now).
`

func main() {
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// run executes the command line args and returns the exit status. A value on stop begins
// a clean shutdown of serve; a second one cuts the wait for in-flight requests short.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stderr, stop)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return 0
	default:
		fmt.Fprintf(stderr, "narad: unknown command %q\n\n", args[0])
		fmt.Fprint(stderr, usageText)
		return 2
	}
}

func versionString() string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("narad %s%s %s/%s %s", version, rev, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// config is what serve runs with.
type config struct {
	data     string     // data directory; the WAL lives in data/wal
	addr     string     // HTTP listen address
	logLevel slog.Level // minimum level logged
}

// parseServeFlags reads serve's flags; an unset flag falls back to its environment
// variable, then to its default.
func parseServeFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("narad serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	data := fs.String("data", envOr("NARAD_DATA", "./data"), "data directory (NARAD_DATA)")
	addr := fs.String("addr", envOr("NARAD_ADDR", "127.0.0.1:7942"), "HTTP listen address (NARAD_ADDR)")
	level := fs.String("log-level", envOr("NARAD_LOG_LEVEL", "info"), "debug|info|warn|error (NARAD_LOG_LEVEL)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	cfg := config{data: *data, addr: *addr}
	if err := cfg.logLevel.UnmarshalText([]byte(*level)); err != nil || !validLevel(*level) {
		return config{}, fmt.Errorf("bad log level %q: want debug, info, warn or error", *level)
	}
	if cfg.data == "" {
		return config{}, fmt.Errorf("empty data directory")
	}
	return cfg, nil
}

// validLevel accepts exactly the four level names (slog also takes forms like "info+2").
func validLevel(s string) bool {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
