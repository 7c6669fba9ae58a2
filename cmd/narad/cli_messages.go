package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/narad/narad/client"
)

// Bounds of the CLI's batches.
const (
	produceBatchDefault = 100
	// produceBatchBytesMax bounds a batch's payloads: base64 makes 4 bytes of 3, and the
	// body must stay within client.BatchBytesMax.
	produceBatchBytesMax = client.BatchBytesMax / 2
	lineBytesMax         = client.MessageBytesMax + 1 // a longer line is a message the server refuses
	replayCountMax       = 1_000_000
)

// produceFlags are the flags of produce.
type produceFlags struct {
	key          string
	partition    uint32
	batch        int
	mayDuplicate bool
}

func (x *cli) produceCommand() *cobra.Command {
	var f produceFlags
	cmd := &cobra.Command{
		Use:   "produce TOPIC [MESSAGE]",
		Short: "Produce a message, or one message per line of stdin (batched)",
		Long: "Produce MESSAGE, or without it one message per line of stdin (empty lines are skipped).\n" +
			"Lines are sent in batch produces of up to --batch messages: what stdin holds at once goes\n" +
			"together, so a pipe is sent in full batches and a line typed at a terminal at once.\n" +
			"Each answer 202 means the messages are durable at the node that took them.",
		Args: cobra.RangeArgs(1, 2),
	}
	fs := cmd.Flags()
	fs.StringVar(&f.key, "key", "", "the message key (picks the partition by hash)")
	fs.Uint32Var(&f.partition, "partition", 0, "pin the partition (wins over --key)")
	fs.IntVar(&f.batch, "batch", produceBatchDefault, "messages per batch produce from stdin (1 to 1000)")
	fs.BoolVar(&f.mayDuplicate, "retry-may-duplicate", false, "retry after a 503 or a cut connection: a message may be stored twice")
	cmd.RunE = x.run(func(ctx context.Context, args []string) error {
		if f.batch < 1 || f.batch > client.BatchMax {
			return usagef("--batch %d: want 1 to %d", f.batch, client.BatchMax)
		}
		var key *string
		var part *uint32
		if fs.Changed("key") {
			key = &f.key
		}
		if fs.Changed("partition") {
			part = &f.partition
		}
		var opts []client.ProduceOption
		if f.mayDuplicate {
			opts = append(opts, client.RetryMayDuplicate())
		}
		if len(args) == 2 {
			return x.produceOne(ctx, args[0], []byte(args[1]), key, part, opts)
		}
		n, err := x.produceLines(ctx, args[0], f.batch, key, part, opts)
		if err != nil {
			return fmt.Errorf("%w (%d messages accepted before)", err, n)
		}
		return x.done(map[string]int{"accepted": n}, fmt.Sprintf("accepted %d", n))
	})
	return cmd
}

func (x *cli) produceOne(ctx context.Context, topic string, msg []byte, key *string, part *uint32, opts []client.ProduceOption) error {
	if key != nil {
		opts = append(opts, client.WithKey(*key))
	}
	if part != nil {
		opts = append(opts, client.WithPartition(*part))
	}
	if err := x.c.Produce(ctx, topic, msg, opts...); err != nil {
		return err
	}
	return x.done(map[string]int{"accepted": 1}, "accepted 1")
}

// produceLines sends stdin's lines in batches and returns how many were accepted.
func (x *cli) produceLines(ctx context.Context, topic string, batch int, key *string, part *uint32, opts []client.ProduceOption) (int, error) {
	lines := make(chan []byte, batch)
	readErr := make(chan error, 1)
	go func() { readErr <- readLines(x.env.stdin, lines) }()
	defer func() { // on an early return the reader may wait to send: let it finish
		go func() {
			for range lines {
			}
		}()
	}()
	accepted := 0
	var msgs []client.BatchMessage
	pending := 0 // the payload bytes of msgs
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		n, err := x.c.ProduceBatch(ctx, topic, msgs, opts...)
		accepted += n
		msgs, pending = msgs[:0], 0
		return err
	}
	for {
		var line []byte
		var ok bool
		select {
		case line, ok = <-lines:
		default: // nothing more at once: send what there is, then wait
			if err := flush(); err != nil {
				return accepted, err
			}
			line, ok = <-lines
		}
		if !ok {
			if err := flush(); err != nil {
				return accepted, err
			}
			return accepted, <-readErr
		}
		if len(msgs) == batch || pending+len(line) > produceBatchBytesMax {
			if err := flush(); err != nil {
				return accepted, err
			}
		}
		msgs = append(msgs, client.BatchMessage{Payload: line, Key: key, Partition: part})
		pending += len(line)
	}
}

// readLines sends r's non-empty lines (without their line breaks) to out, then closes it.
func readLines(r io.Reader, out chan<- []byte) error {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), lineBytesMax)
	for sc.Scan() {
		line := sc.Bytes()
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) > 0 {
			out <- append([]byte(nil), line...)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	return nil
}

// consumeFlags are the flags of consume.
type consumeFlags struct {
	max       int
	wait      time.Duration
	partition uint32
	follow    bool
	count     int
	ack       bool
}

func (x *cli) consumeCommand() *cobra.Command {
	var f consumeFlags
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Take leases on records and print them as JSON lines",
		Long: "Take leases on up to --max records and print each as a JSON line (the API's Message,\n" +
			"with its receipt_handle for narad ack, nack or extend). With --ack each page is\n" +
			"acknowledged once printed (and the handles are left out). One poll, unless --follow\n" +
			"(until interrupted) or --count (until that many records).",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.IntVar(&f.max, "max", 1, "leases per poll (1 to 100)")
	fs.DurationVar(&f.wait, "wait", 0, "long-poll up to this long for a record (at most 10s; --follow: default 10s)")
	fs.Uint32Var(&f.partition, "partition", 0, "consume this partition only")
	fs.BoolVar(&f.follow, "follow", false, "keep polling until interrupted")
	fs.IntVar(&f.count, "count", 0, "stop after this many records (polling until then)")
	fs.BoolVar(&f.ack, "ack", false, "acknowledge each record once printed")
	cmd.RunE = x.run(func(ctx context.Context, args []string) error {
		if f.max < 1 || f.max > client.ConsumeMax || f.count < 0 {
			return usagef("--max %d: want 1 to %d (and --count 0 or more)", f.max, client.ConsumeMax)
		}
		if f.follow && !fs.Changed("wait") {
			f.wait = client.WaitMax
		}
		var part *uint32
		if fs.Changed("partition") {
			part = &f.partition
		}
		return x.consume(ctx, args[0], f, part)
	})
	return cmd
}

// consume polls as f says and prints what it gets.
func (x *cli) consume(ctx context.Context, topic string, f consumeFlags, part *uint32) error {
	for got := 0; ; {
		max := f.max
		if f.count > 0 {
			max = min(max, f.count-got)
		}
		msgs, err := x.c.Consume(ctx, topic, client.ConsumeOptions{Max: max, Wait: f.wait, Partition: part})
		if err != nil {
			if ctx.Err() != nil && (f.follow || f.count > 0) {
				return nil // interrupted
			}
			return err
		}
		if err := x.printMessages(ctx, topic, msgs, f.ack); err != nil {
			return err
		}
		got += len(msgs)
		if (!f.follow && f.count == 0) || (f.count > 0 && got >= f.count) {
			return nil
		}
	}
}

// printMessages prints msgs as JSON lines, then acks them when ack is set.
func (x *cli) printMessages(ctx context.Context, topic string, msgs []client.Message, ack bool) error {
	handles := make([]string, 0, len(msgs))
	for _, m := range msgs {
		handles = append(handles, m.ReceiptHandle)
		if ack {
			m.ReceiptHandle = ""
		}
		if err := x.jsonLine(m); err != nil {
			return err
		}
	}
	if !ack || len(handles) == 0 {
		return nil
	}
	_, err := x.settle(context.WithoutCancel(ctx), topic, handles, client.Settle)
	return err
}

// settle applies mode to handles in batches of at most 100 and returns how many
// succeeded; it reports each failure on stderr and returns the first.
func (x *cli) settle(ctx context.Context, topic string, handles []string, mode client.AckMode) (int, error) {
	if len(handles) == 1 {
		err := x.ackOne(ctx, topic, handles[0], mode)
		if err != nil {
			return 0, err
		}
		return 1, nil
	}
	done := 0
	var first error
	for i := 0; i < len(handles); i += client.AckBatchMax {
		chunk := handles[i:min(i+client.AckBatchMax, len(handles))]
		res, err := x.c.AckBatch(ctx, topic, chunk, mode)
		if err != nil {
			return done, err
		}
		for j, r := range res {
			if r.Err == nil {
				done++
				continue
			}
			fmt.Fprintf(x.env.stderr, "narad: handle %d: %d %s\n", i+j+1, r.Status, errMessage(r.Err))
			if first == nil {
				first = r.Err
			}
		}
	}
	return done, first
}

func (x *cli) ackOne(ctx context.Context, topic, handle string, mode client.AckMode) error {
	switch mode {
	case client.Extend:
		return x.c.Extend(ctx, topic, handle)
	case client.Release:
		return x.c.Nack(ctx, topic, handle)
	}
	return x.c.Ack(ctx, topic, handle)
}

// errMessage is the server's message of an *client.Error, else err's text.
func errMessage(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// ackCommands are ack, nack and extend.
func (x *cli) ackCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for _, a := range []struct {
		name, short, past string
		mode              client.AckMode
	}{
		{"ack", "Acknowledge leases: their records are done", "acked", client.Settle},
		{"nack", "Release leases: their records are deliverable again at once", "released", client.Release},
		{"extend", "Renew leases for a full visibility timeout", "extended", client.Extend},
	} {
		cmds = append(cmds, &cobra.Command{
			Use:   a.name + " TOPIC [HANDLE...]",
			Short: a.short + " (handles as arguments, or one per line of stdin)",
			Args:  cobra.MinimumNArgs(1),
			RunE: x.run(func(ctx context.Context, args []string) error {
				handles, err := x.handles(args[1:])
				if err != nil {
					return err
				}
				n, err := x.settle(ctx, args[0], handles, a.mode)
				if err != nil && len(handles) == 1 {
					return err
				}
				if perr := x.done(map[string]int{a.past: n, "failed": len(handles) - n},
					fmt.Sprintf("%s %d of %d", a.past, n, len(handles))); perr != nil {
					return perr
				}
				return err
			}),
		})
	}
	return cmds
}

// handles is args, or stdin's lines when there is none.
func (x *cli) handles(args []string) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	lines := make(chan []byte, 128)
	readErr := make(chan error, 1)
	go func() { readErr <- readLines(x.env.stdin, lines) }()
	var hs []string
	for l := range lines {
		hs = append(hs, string(l))
	}
	if err := <-readErr; err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return nil, usagef("no receipt handle (as arguments or on stdin)")
	}
	return hs, nil
}

func (x *cli) replayCommand() *cobra.Command {
	var partition uint32
	var offset uint64
	var count int
	cmd := &cobra.Command{
		Use:   "replay TOPIC --partition P --offset O",
		Short: "Print records by offset as JSON lines, without taking leases",
		Long: "Print the record at --offset of --partition and the ones after it, up to --count,\n" +
			"as JSON lines; it stops at the end of the partition.",
		Args: cobra.ExactArgs(1),
	}
	fs := cmd.Flags()
	fs.Uint32Var(&partition, "partition", 0, "the partition")
	fs.Uint64Var(&offset, "offset", 0, "the first offset")
	fs.IntVar(&count, "count", 1, "records to print at most")
	_ = cmd.MarkFlagRequired("partition")
	_ = cmd.MarkFlagRequired("offset")
	cmd.RunE = x.run(func(ctx context.Context, args []string) error {
		if count < 1 || count > replayCountMax {
			return usagef("--count %d: want 1 to %d", count, replayCountMax)
		}
		for i := range uint64(count) {
			m, err := x.c.Replay(ctx, args[0], partition, offset+i)
			if err != nil || m == nil {
				return err
			}
			if err := x.jsonLine(m); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}

// atoiID parses a member id.
func atoiID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, usagef("member id %q: want a number, 1 or more", s)
	}
	return id, nil
}
