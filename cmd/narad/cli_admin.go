package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/narad/narad/client"
)

// newPassword reads a new password: --new-password-file's first line, else
// NARAD_NEW_PASSWORD, else stdin's first line (never an argument: command lines are seen
// by every user of the machine and kept in shell histories).
func (x *cli) newPassword(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usagef("--new-password-file: %v", err)
		}
		return firstLine(string(b)), nil
	}
	if p := x.env.getenv("NARAD_NEW_PASSWORD"); p != "" {
		return p, nil
	}
	line, err := bufio.NewReader(x.env.stdin).ReadString('\n')
	if p := firstLine(line); p != "" {
		return p, nil
	}
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return "", usagef("no new password (--new-password-file, NARAD_NEW_PASSWORD or stdin)")
}

// parseGrants reads --grant values: ACTION or ACTION:PATTERN[,PATTERN...].
func parseGrants(vals []string) []client.Grant {
	gs := []client.Grant{}
	for _, v := range vals {
		action, pats, ok := strings.Cut(v, ":")
		g := client.Grant{Action: action}
		if ok {
			g.Patterns = strings.Split(pats, ",")
		}
		gs = append(gs, g)
	}
	return gs
}

func grantsText(gs []client.Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.Action
		if len(g.Patterns) > 0 {
			parts[i] += ":" + strings.Join(g.Patterns, ",")
		}
	}
	return strings.Join(parts, " ")
}

// showUsers prints v as JSON, or us as a table.
func (x *cli) showUsers(v any, us []client.User) error {
	rows := make([][]string, len(us))
	for i, u := range us {
		rows[i] = []string{u.Username, strconv.FormatBool(u.Root), grantsText(u.Grants)}
	}
	return x.show(v, []string{"USERNAME", "ROOT", "GRANTS"}, rows)
}

const grantUsage = "a grant: ACTION or ACTION:PATTERN[,PATTERN...], e.g. produce:orders,billing.* (repeat the flag)"

// userCreateCommand is user create.
func (x *cli) userCreateCommand() *cobra.Command {
	var createGrants []string
	var createFile string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user; the password comes from --new-password-file, NARAD_NEW_PASSWORD or stdin",
		Args:  cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			p, err := x.newPassword(createFile)
			if err != nil {
				return err
			}
			u, err := x.c.CreateUser(ctx, args[0], p, parseGrants(createGrants))
			if err != nil {
				return err
			}
			return x.showUsers(u, []client.User{u})
		}),
	}
	create.Flags().StringArrayVar(&createGrants, "grant", nil, grantUsage)
	create.Flags().StringVar(&createFile, "new-password-file", "", "file whose first line is the new user's password")
	return create
}

func (x *cli) userCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Users, their passwords and their grants (admin)"}
	var setGrants []string
	var passwdFile string
	create := x.userCreateCommand()
	grants := &cobra.Command{
		Use:   "grants NAME --grant ...",
		Short: "Replace a user's grants (no --grant: none)",
		Args:  cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			u, err := x.c.SetGrants(ctx, args[0], parseGrants(setGrants))
			if err != nil {
				return err
			}
			return x.showUsers(u, []client.User{u})
		}),
	}
	grants.Flags().StringArrayVar(&setGrants, "grant", nil, grantUsage)
	passwd := &cobra.Command{
		Use: "passwd NAME",
		Short: "Change a user's password (an admin for another user; your own with your current one); " +
			"the new one comes from --new-password-file, NARAD_NEW_PASSWORD or stdin",
		Args: cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			return x.passwd(ctx, args[0], passwdFile)
		}),
	}
	passwd.Flags().StringVar(&passwdFile, "new-password-file", "", "file whose first line is the new password")
	cmd.AddCommand(create, grants, passwd, &cobra.Command{
		Use: "list", Short: "List the users", Args: cobra.NoArgs,
		RunE: x.run(func(ctx context.Context, _ []string) error {
			us, err := x.c.ListUsers(ctx)
			if err != nil {
				return err
			}
			return x.showUsers(struct {
				Users []client.User `json:"users"`
			}{us}, us)
		}),
	}, &cobra.Command{
		Use: "get NAME", Short: "Show a user", Args: cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			u, err := x.c.GetUser(ctx, args[0])
			if err != nil {
				return err
			}
			return x.showUsers(u, []client.User{u})
		}),
	}, &cobra.Command{
		Use: "delete NAME", Short: "Delete a user", Args: cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			if err := x.c.DeleteUser(ctx, args[0]); err != nil {
				return err
			}
			return x.done(map[string]string{"deleted": args[0]}, "deleted user "+args[0])
		}),
	})
	return cmd
}

// passwd changes name's password; one's own change sends one's current password.
func (x *cli) passwd(ctx context.Context, name, file string) error {
	p, err := x.newPassword(file)
	if err != nil {
		return err
	}
	current := ""
	if name == x.user {
		if current, err = x.password(); err != nil {
			return err
		}
	}
	if err := x.c.SetPassword(ctx, name, p, current); err != nil {
		return err
	}
	return x.done(map[string]string{"changed": name}, "changed the password of "+name)
}

func (x *cli) clusterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "The cluster's members and partition moves (admin)"}
	cmd.AddCommand(&cobra.Command{
		Use: "members", Short: "List the members", Args: cobra.NoArgs,
		RunE: x.run(func(ctx context.Context, _ []string) error {
			ms, err := x.c.Members(ctx)
			if err != nil {
				return err
			}
			rows := make([][]string, len(ms))
			for i, m := range ms {
				rows[i] = []string{u64(m.ID), m.Addr, m.Status, strconv.FormatBool(m.Leader), strconv.FormatBool(m.Voter),
					strconv.Itoa(m.OwnedPartitions), strconv.FormatBool(m.Draining), strconv.Itoa(m.MovesIn),
					strconv.Itoa(m.MovesOut)}
			}
			return x.show(struct {
				Members []client.Member `json:"members"`
			}{ms}, []string{"ID", "ADDR", "STATUS", "LEADER", "VOTER", "PARTITIONS", "DRAINING", "MOVES IN", "MOVES OUT"}, rows)
		}),
	}, &cobra.Command{
		Use: "moves", Short: "List the partition moves in progress", Args: cobra.NoArgs,
		RunE: x.run(func(ctx context.Context, _ []string) error {
			mv, err := x.c.Moves(ctx)
			if err != nil {
				return err
			}
			rows := make([][]string, len(mv))
			for i, m := range mv {
				rows[i] = []string{m.Topic, u64(uint64(m.Partition)), u64(m.From), u64(m.To), m.State}
			}
			return x.show(struct {
				Moves []client.Move `json:"moves"`
			}{mv}, []string{"TOPIC", "PARTITION", "FROM", "TO", "STATE"}, rows)
		}),
	}, &cobra.Command{
		Use: "rebalance", Short: "Have the metastore leader even out the partitions over the members", Args: cobra.NoArgs,
		RunE: x.run(func(ctx context.Context, _ []string) error {
			if err := x.c.Rebalance(ctx); err != nil {
				return err
			}
			return x.done(map[string]bool{"rebalancing": true}, "rebalancing: see narad cluster moves")
		}),
	}, x.moveCommand(), x.abortCommand(), x.decommissionCommand(), x.forgetCommand())
	return cmd
}

// topicPartition parses TOPIC PARTITION arguments.
func topicPartition(args []string) (string, uint32, error) {
	p, err := strconv.ParseUint(args[1], 10, 32)
	if err != nil {
		return "", 0, usagef("partition %q: want a number", args[1])
	}
	return args[0], uint32(p), nil
}

func (x *cli) moveCommand() *cobra.Command {
	var to uint64
	cmd := &cobra.Command{
		Use: "move TOPIC PARTITION --to ID", Short: "Move a partition to another member", Args: cobra.ExactArgs(2),
		RunE: x.run(func(ctx context.Context, args []string) error {
			topic, p, err := topicPartition(args)
			if err != nil {
				return err
			}
			if err := x.c.StartMove(ctx, topic, p, to); err != nil {
				return err
			}
			return x.done(map[string]any{"topic": topic, "partition": p, "to": to},
				fmt.Sprintf("moving %s/%d to member %d", topic, p, to))
		}),
	}
	cmd.Flags().Uint64Var(&to, "to", 0, "the member that takes the partition")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func (x *cli) abortCommand() *cobra.Command {
	return &cobra.Command{
		Use: "abort TOPIC PARTITION", Short: "Abort a partition move before its cutover", Args: cobra.ExactArgs(2),
		RunE: x.run(func(ctx context.Context, args []string) error {
			topic, p, err := topicPartition(args)
			if err != nil {
				return err
			}
			if err := x.c.AbortMove(ctx, topic, p); err != nil {
				return err
			}
			return x.done(map[string]any{"topic": topic, "partition": p, "aborted": true},
				fmt.Sprintf("aborted the move of %s/%d", topic, p))
		}),
	}
}

func (x *cli) decommissionCommand() *cobra.Command {
	var dryRun, cancel bool
	cmd := &cobra.Command{
		Use:   "decommission ID",
		Short: "Drain a member and remove it from the cluster (--dry-run: whether it would go; --cancel: stop a drain)",
		Args:  cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			id, err := atoiID(args[0])
			if err != nil {
				return err
			}
			if cancel {
				if err := x.c.CancelDecommission(ctx, id); err != nil {
					return err
				}
				return x.done(map[string]any{"member": id, "cancelled": true}, fmt.Sprintf("member %d: drain cancelled", id))
			}
			d, err := x.c.Decommission(ctx, id, dryRun)
			if err != nil {
				return err
			}
			allowed := "-"
			if d.Allowed != nil {
				allowed = strconv.FormatBool(*d.Allowed)
			}
			return x.show(d, []string{"MEMBER", "DRY RUN", "PARTITIONS", "STATE", "ALLOWED", "REFUSAL"},
				[][]string{{u64(d.Member), strconv.FormatBool(d.DryRun), strconv.Itoa(d.Partitions), d.State, allowed, d.Refusal}})
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only say whether it would go, and which guard refuses it")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "stop a drain that has not finished")
	return cmd
}

func (x *cli) forgetCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "forget ID",
		Short: "Give up a dead member for good (its records only it held are lost; --dry-run lists them)",
		Args:  cobra.ExactArgs(1),
		RunE: x.run(func(ctx context.Context, args []string) error {
			id, err := atoiID(args[0])
			if err != nil {
				return err
			}
			f, err := x.c.Forget(ctx, id, dryRun)
			if err != nil {
				return err
			}
			rows := make([][]string, len(f.Partitions))
			for i, p := range f.Partitions {
				rows[i] = []string{p.Topic, u64(uint64(p.Partition)), u64(p.From), u64(p.To), optU64(p.HighWatermark),
					optU64(p.OldestOffset), optU64(p.RecordsLost)}
			}
			return x.show(f, []string{"TOPIC", "PARTITION", "FROM", "TO", "HIGH WATERMARK", "OLDEST", "RECORDS LOST"}, rows)
		}),
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only list what forgetting would give up")
	return cmd
}

func optU64(v *uint64) string {
	if v == nil {
		return "-"
	}
	return u64(*v)
}
