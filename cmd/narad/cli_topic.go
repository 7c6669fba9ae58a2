package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/narad/narad/client"
)

// topicSettings are the flags of topic create and patch.
type topicSettings struct {
	partitions  uint32
	retention   time.Duration
	visibility  time.Duration
	maxInFlight uint32
}

func (s *topicSettings) flags(fs *pflag.FlagSet, create bool) {
	what := "partitions (default 3)"
	if !create {
		what = "partitions (they only grow)"
	}
	fs.Uint32Var(&s.partitions, "partitions", 0, what)
	fs.DurationVar(&s.retention, "retention", 0, "how long records are kept, 0: forever (default 168h)")
	fs.DurationVar(&s.visibility, "visibility-timeout", 0, "a lease's length (default 30s)")
	fs.Uint32Var(&s.maxInFlight, "max-in-flight", 0, "leases in flight per partition (default 1024)")
}

// patch is the fields whose flags were given.
func (s *topicSettings) patch(fs *pflag.FlagSet) client.TopicPatch {
	var p client.TopicPatch
	if fs.Changed("partitions") {
		p.Partitions = client.Ptr(s.partitions)
	}
	if fs.Changed("retention") {
		p.RetentionMs = client.Ptr(s.retention.Milliseconds())
	}
	if fs.Changed("visibility-timeout") {
		p.VisibilityTimeoutMs = client.Ptr(s.visibility.Milliseconds())
	}
	if fs.Changed("max-in-flight") {
		p.MaxInFlightPerPartition = client.Ptr(s.maxInFlight)
	}
	return p
}

func (x *cli) topicCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "topic", Short: "Create, list, read, change and delete topics"}
	var create, patch topicSettings
	createCmd := &cobra.Command{Use: "create NAME", Short: "Create a topic", Args: cobra.ExactArgs(1)}
	create.flags(createCmd.Flags(), true)
	createCmd.RunE = x.run(func(ctx context.Context, args []string) error {
		p := create.patch(createCmd.Flags())
		t, err := x.c.CreateTopic(ctx, client.TopicConfig{Name: args[0], Partitions: p.Partitions,
			RetentionMs: p.RetentionMs, VisibilityTimeoutMs: p.VisibilityTimeoutMs,
			MaxInFlightPerPartition: p.MaxInFlightPerPartition})
		if err != nil {
			return err
		}
		return x.showTopics(t, []client.Topic{t})
	})
	patchCmd := &cobra.Command{Use: "patch NAME", Short: "Change a topic's settings", Args: cobra.ExactArgs(1)}
	patch.flags(patchCmd.Flags(), false)
	patchCmd.RunE = x.run(func(ctx context.Context, args []string) error {
		t, err := x.c.PatchTopic(ctx, args[0], patch.patch(patchCmd.Flags()))
		if err != nil {
			return err
		}
		return x.showTopics(t, []client.Topic{t})
	})
	cmd.AddCommand(createCmd, patchCmd, &cobra.Command{
		Use: "list", Short: "List the topics you may see", Args: cobra.NoArgs,
		RunE: x.run(func(ctx context.Context, _ []string) error {
			ts, err := x.c.ListTopics(ctx)
			if err != nil {
				return err
			}
			return x.showTopics(struct {
				Topics []client.Topic `json:"topics"`
			}{ts}, ts)
		}),
	}, &cobra.Command{
		Use: "get NAME", Short: "Show a topic and its partitions", Args: cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			t, err := x.c.GetTopic(ctx, args[0])
			if err != nil {
				return err
			}
			return x.showTopic(t)
		}),
	}, &cobra.Command{
		Use: "delete NAME", Short: "Delete a topic and its records", Args: cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			if err := x.c.DeleteTopic(ctx, args[0]); err != nil {
				return err
			}
			return x.done(map[string]string{"deleted": args[0]}, "deleted topic "+args[0])
		}),
	})
	return cmd
}

// topicHeader: the incarnation id comes last, a detail beside the settings.
var topicHeader = []string{"NAME", "PARTITIONS", "RETENTION", "VISIBILITY", "MAX IN FLIGHT", "ID"}

func topicRow(t client.Topic) []string {
	retention := "forever"
	if t.RetentionMs > 0 {
		retention = (time.Duration(t.RetentionMs) * time.Millisecond).String()
	}
	return []string{t.Name, u64(uint64(t.Partitions)), retention,
		(time.Duration(t.VisibilityTimeoutMs) * time.Millisecond).String(), u64(uint64(t.MaxInFlightPerPartition)), u64(t.ID)}
}

// showTopics prints v as JSON, or ts as a table.
func (x *cli) showTopics(v any, ts []client.Topic) error {
	rows := make([][]string, len(ts))
	for i, t := range ts {
		rows[i] = topicRow(t)
	}
	return x.show(v, topicHeader, rows)
}

// showTopic prints a topic, then its partitions' statistics.
func (x *cli) showTopic(t client.Topic) error {
	if x.output == "json" {
		return x.jsonLine(t)
	}
	if err := x.show(nil, topicHeader, [][]string{topicRow(t)}); err != nil {
		return err
	}
	fmt.Fprintln(x.env.stdout)
	rows := make([][]string, len(t.PartitionStats))
	for i, p := range t.PartitionStats {
		state := p.State
		if state == "" {
			state = "ok"
		}
		rows[i] = []string{u64(uint64(p.Index)), p.OwnerNode, u64(p.OldestOffset), u64(p.HighWatermark),
			u64(p.NextOffset), strconv.Itoa(p.InFlight), strconv.FormatInt(p.SizeBytes, 10), state}
	}
	return x.show(nil, []string{"PARTITION", "OWNER", "OLDEST", "HIGH WATERMARK", "NEXT", "IN FLIGHT", "BYTES", "STATE"}, rows)
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
