package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/narad/narad/client"
)

// Exit statuses of the client commands (cliUsageText documents them; serve keeps its own:
// 0 clean, 1 failed, 2 usage).
const (
	exitOK          = 0
	exitError       = 1 // a 5xx, a 400, an answer that could not be read, anything else
	exitUsage       = 2
	exitNotFound    = 3 // 404
	exitAccess      = 4 // 401, 403
	exitConflict    = 5 // 409
	exitGone        = 6 // 410
	exitUnavailable = 7 // no node answered, or 503, 429, 507 after the retries
)

// defaultURL is the node the client commands talk to without --url or NARAD_URL: the
// address `narad serve` listens on by default.
const defaultURL = "127.0.0.1:7942"

const cliUsageText = `
client commands (they use the HTTP API of the nodes at --url; narad COMMAND --help):
  narad topic create|list|get|patch|delete     topics
  narad produce TOPIC [MESSAGE]                a message, or one per line of stdin (batched)
  narad consume TOPIC                          take leases; JSON lines on stdout
  narad ack|nack|extend TOPIC [HANDLE...]      settle, release or renew leases (or one
                                               handle per line of stdin)
  narad replay TOPIC --partition P --offset O  read records by offset, without a lease
  narad user create|list|get|delete|passwd|grants
  narad cluster members|moves|move|abort|decommission|forget|rebalance
  narad bench TOPIC                            a load generator producing to TOPIC
  narad completion bash|zsh|fish|powershell    a shell completion script

client flags and environment:
  --url URL[,URL...]        the nodes (NARAD_URL, default 127.0.0.1:7942): host:port or
                            http(s)://host:port; a connection error or a 503 moves to the next
  --user NAME               HTTP Basic user (NARAD_USER, default admin)
  --password-file FILE      the user's password is the file's first line; else NARAD_PASSWORD;
                            neither: no credentials (a node run with -dev)
  -o, --output table|json   how answers are printed (default table)

exit status of the client commands:
  0 ok; 1 an error (a 5xx, a 400, an answer that could not be read); 2 a usage error;
  3 not found (404); 4 credentials refused or a grant missing (401, 403); 5 a conflict
  (409: it exists, or a guard refused); 6 gone (410: a lease no longer valid, an offset
  removed by retention); 7 unavailable (no node answered; 503, 429 or 507 after the
  retries): try again later
`

// cliEnv is what a command runs with: main passes the process's, tests their own.
type cliEnv struct {
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	getenv   func(string) string
	stop     <-chan os.Signal // a signal ends a command's context (serve: a clean shutdown)
	terminal bool             // stdout is a terminal (bench draws a progress line)
}

// cli is the client commands' shared state: the global flags and the client made of them.
type cli struct {
	env          cliEnv
	url          string
	user         string
	passwordFile string
	output       string
	c            *client.Client
}

// cmdError marks an error a command returned once it ran (anything else comes from the
// parsing of the command line: a usage error).
type cmdError struct{ err error }

func (e cmdError) Error() string { return e.err.Error() }
func (e cmdError) Unwrap() error { return e.err }

// runCLI runs the command line args and returns the exit status.
func runCLI(env cliEnv, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.stderr, usageText+cliUsageText)
		return exitUsage
	}
	switch args[0] { // the spellings narad accepted before it had subcommand help
	case "-h", "-help", "--help":
		args = []string{"help"}
	case "-version", "--version":
		args = []string{"version"}
	}
	x := &cli{env: env}
	status := -1
	root := x.rootCommand(&status)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if x.c != nil {
		x.c.Close()
	}
	if status >= 0 {
		return status // serve's own
	}
	return x.report(root, err)
}

// report prints err and returns its exit status.
func (x *cli) report(root *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var ce cmdError
	if !errors.As(err, &ce) {
		fmt.Fprintf(x.env.stderr, "narad: %v\nRun 'narad help' for usage.\n", err)
		return exitUsage
	}
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Fprintf(x.env.stderr, "narad: %d %s: %s (%s %s at %s)\n", e.Status, http.StatusText(e.Status), e.Message,
			e.Method, e.Path, e.Node)
	} else {
		fmt.Fprintf(x.env.stderr, "narad: %v\n", ce.err)
	}
	return exitStatus(err)
}

// exitStatus maps an error to the documented exit status.
func exitStatus(err error) int {
	var ne *client.NodesError
	switch s := client.StatusOf(err); {
	case errors.As(err, &ne):
		return exitUnavailable
	case s == http.StatusNotFound:
		return exitNotFound
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		return exitAccess
	case s == http.StatusConflict:
		return exitConflict
	case s == http.StatusGone:
		return exitGone
	case s == http.StatusServiceUnavailable || s == http.StatusTooManyRequests || s == http.StatusInsufficientStorage:
		return exitUnavailable
	case errors.As(err, new(usageError)):
		return exitUsage
	}
	return exitError
}

// usageError is a bad value a command found after cobra parsed its command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError of a message.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// rootCommand builds the command tree; serve's exit status goes to *status.
func (x *cli) rootCommand(status *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "narad",
		Short:         "Narad: a durable message broker (the daemon and its command line)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(x.env.stdin)
	root.SetOut(x.env.stdout)
	root.SetErr(x.env.stderr)
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			fmt.Fprint(c.OutOrStdout(), usageText+cliUsageText)
			return
		}
		defaultHelp(c, args)
	})
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	pf := root.PersistentFlags()
	pf.StringVar(&x.url, "url", x.envOr("NARAD_URL", defaultURL), "the nodes, comma-separated (NARAD_URL)")
	pf.StringVar(&x.user, "user", x.envOr("NARAD_USER", "admin"), "HTTP Basic user (NARAD_USER)")
	pf.StringVar(&x.passwordFile, "password-file", "", "file whose first line is the password (else NARAD_PASSWORD)")
	pf.StringVarP(&x.output, "output", "o", "table", "table or json")
	root.AddCommand(&cobra.Command{
		Use:                "serve [flags]",
		Short:              "Run a broker node (narad help lists its flags)",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			*status = runServe(args, x.env.stderr, x.env.stop)
			return nil
		},
	}, &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run:   func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), versionString()) },
	})
	root.AddCommand(x.topicCommand(), x.produceCommand(), x.consumeCommand(), x.replayCommand(),
		x.userCommand(), x.clusterCommand(), x.benchCommand())
	root.AddCommand(x.ackCommands()...)
	return root
}

func (x *cli) envOr(name, def string) string {
	if v := x.env.getenv(name); v != "" {
		return v
	}
	return def
}

// run wraps a command's function: it checks --output, makes the client, gives the
// function a context that a signal on stop ends (serve alone reads stop otherwise), and
// marks what the function returns as the command's own error.
func (x *cli) run(f func(ctx context.Context, args []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if x.output != "table" && x.output != "json" {
			return fmt.Errorf("--output %q: want table or json", x.output)
		}
		if err := x.connect(); err != nil {
			return cmdError{err}
		}
		ctx, cancel := context.WithCancel(c.Context())
		defer cancel()
		go func() {
			select {
			case <-x.env.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := f(ctx, args); err != nil {
			return cmdError{err}
		}
		return nil
	}
}

// connect makes the client of --url with the credentials of --user and the password.
func (x *cli) connect() error {
	var opts []client.Option
	password, err := x.password()
	if err != nil {
		return err
	}
	if password != "" {
		opts = append(opts, client.WithBasicAuth(x.user, password))
	}
	c, err := client.New([]string{x.url}, opts...)
	if err != nil {
		return usagef("--url: %v", err)
	}
	x.c = c
	return nil
}

// password is the caller's password: --password-file's first line, else NARAD_PASSWORD.
func (x *cli) password() (string, error) {
	if x.passwordFile == "" {
		return x.env.getenv("NARAD_PASSWORD"), nil
	}
	b, err := os.ReadFile(x.passwordFile)
	if err != nil {
		return "", usagef("--password-file: %v", err)
	}
	return firstLine(string(b)), nil
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// show prints v: as one JSON line with --output json, else as a table of header and
// rows.
func (x *cli) show(v any, header []string, rows [][]string) error {
	if x.output == "json" {
		return x.jsonLine(v)
	}
	tw := tabwriter.NewWriter(x.env.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// jsonLine writes v as one line of JSON.
func (x *cli) jsonLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(x.env.stdout, "%s\n", b)
	return err
}

// done prints a one-line outcome ("deleted topic orders") in table mode, or v as JSON.
func (x *cli) done(v any, text string) error {
	if x.output == "json" {
		return x.jsonLine(v)
	}
	_, err := fmt.Fprintln(x.env.stdout, text)
	return err
}
