package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Action is what a grant allows.
type Action string

// The actions, in the order Normalize puts grants.
const (
	Produce Action = "produce" // produce to matching topics
	Consume Action = "consume" // consume, ack, nack, extend and replay matching topics
	Create  Action = "create"  // create, patch and delete matching topics
	Admin   Action = "admin"   // everything: users, cluster routes, every topic
)

// Actions lists every action in Normalize's order.
var Actions = []Action{Produce, Consume, Create, Admin}

// Grant is one action over topic patterns (Admin takes none).
type Grant struct {
	Action   Action   `json:"action"`
	Patterns []string `json:"patterns,omitempty"`
}

// Bounds of a user's grants.
const (
	// TopicNameBytesMax is the longest topic name (core/meta.NameBytesMax); a pattern is at
	// most one byte longer (its "*").
	TopicNameBytesMax = 200
	// PatternsMax bounds the patterns of one action after Normalize merged its grants.
	PatternsMax = 64
	// GrantsMax bounds the grants of a request before Normalize merges them.
	GrantsMax = 64
	// PatternBytesMax bounds the bytes of all patterns of a user after Normalize: the
	// grants travel in one metastore entry (core/meta.CommandBytesMax).
	PatternBytesMax = 2048
)

// ErrInvalid is the error of a username, password or grant list that breaks a rule.
var ErrInvalid = errors.New("access: invalid")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Normalize checks grants and merges them: at most one grant per action, in the order of
// Actions, each with sorted, distinct patterns. It fails on an unknown action, admin with
// patterns, another action without any, an invalid pattern, or more than GrantsMax grants
// or PatternsMax patterns of one action.
func Normalize(grants []Grant) ([]Grant, error) {
	if len(grants) > GrantsMax {
		return nil, invalid("at most %d grants", GrantsMax)
	}
	byAction := map[Action][]string{}
	for _, g := range grants {
		if !slices.Contains(Actions, g.Action) {
			return nil, invalid("unknown action %q (produce, consume, create or admin)", g.Action)
		}
		if err := checkPatterns(g); err != nil {
			return nil, err
		}
		byAction[g.Action] = append(byAction[g.Action], g.Patterns...)
		if g.Action == Admin {
			byAction[Admin] = []string{} // present, with no patterns
		}
	}
	out, total := []Grant{}, 0
	for _, a := range Actions {
		ps, ok := byAction[a]
		if !ok {
			continue
		}
		slices.Sort(ps)
		ps = slices.Compact(ps)
		if len(ps) > PatternsMax {
			return nil, invalid("at most %d patterns for %s", PatternsMax, a)
		}
		for _, p := range ps {
			total += len(p)
		}
		if total > PatternBytesMax {
			return nil, invalid("at most %d bytes of patterns in all", PatternBytesMax)
		}
		g := Grant{Action: a}
		if len(ps) > 0 {
			g.Patterns = ps
		}
		out = append(out, g)
	}
	return out, nil
}

func checkPatterns(g Grant) error {
	if g.Action == Admin {
		if len(g.Patterns) > 0 {
			return invalid("admin takes no patterns")
		}
		return nil
	}
	if len(g.Patterns) == 0 {
		return invalid("%s needs at least one pattern", g.Action)
	}
	if len(g.Patterns) > PatternsMax {
		return invalid("at most %d patterns for %s", PatternsMax, g.Action)
	}
	for _, p := range g.Patterns {
		if !ValidPattern(p) {
			return invalid("pattern %q: a topic name, or a prefix of one followed by *", p)
		}
	}
	return nil
}

// ValidPattern reports whether p is an exact topic name or a prefix of one followed by "*".
func ValidPattern(p string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return len(prefix) < TopicNameBytesMax && topicChars(prefix)
	}
	return len(p) > 0 && len(p) <= TopicNameBytesMax && p != "." && p != ".." && topicChars(p)
}

// topicChars reports whether every byte of s may be in a topic name: [A-Za-z0-9._-].
func topicChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// Match reports whether pattern covers topic.
func Match(pattern, topic string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(topic, prefix)
	}
	return pattern == topic
}

// Allows reports whether grants allow action on topic. Admin allows everything; for the
// routes that name no topic (users, cluster) ask for Admin.
func Allows(grants []Grant, action Action, topic string) bool {
	for _, g := range grants {
		if g.Action == Admin {
			return true
		}
		if g.Action == action && action != Admin &&
			slices.ContainsFunc(g.Patterns, func(p string) bool { return Match(p, topic) }) {
			return true
		}
	}
	return false
}

// Sees reports whether grants let their holder see topic in a listing: some grant of any
// action covers it.
func Sees(grants []Grant, topic string) bool {
	return slices.ContainsFunc(Actions, func(a Action) bool { return Allows(grants, a, topic) })
}

// IsAdmin reports whether grants hold Admin.
func IsAdmin(grants []Grant) bool { return Allows(grants, Admin, "") }
