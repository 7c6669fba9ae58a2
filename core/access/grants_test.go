package access_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/narad/narad/core/access"
)

func TestNormalizeMergesSortsAndOrders(t *testing.T) {
	got, err := access.Normalize([]access.Grant{
		{Action: access.Create, Patterns: []string{"b.*"}},
		{Action: access.Produce, Patterns: []string{"orders", "billing.*"}},
		{Action: access.Produce, Patterns: []string{"orders"}},
		{Action: access.Admin},
	})
	want := []access.Grant{
		{Action: access.Produce, Patterns: []string{"billing.*", "orders"}},
		{Action: access.Create, Patterns: []string{"b.*"}},
		{Action: access.Admin},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Normalize = %+v, %v; want %+v", got, err, want)
	}
	if got, err := access.Normalize(nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no grants: %#v, %v", got, err)
	}
}

func TestNormalizeRefusesBadGrants(t *testing.T) {
	many := make([]string, access.PatternsMax+1)
	for i := range many {
		many[i] = strings.Repeat("a", i+1)
	}
	long := make([]string, 21) // 21 patterns of 100 bytes: 2100 bytes over two actions
	for i := range long {
		long[i] = strings.Repeat(string(rune('a'+i)), 100)
	}
	cases := map[string][]access.Grant{
		"unknown action":     {{Action: "read", Patterns: []string{"a"}}},
		"admin with pattern": {{Action: access.Admin, Patterns: []string{"a"}}},
		"no pattern":         {{Action: access.Produce}},
		"slash":              {{Action: access.Consume, Patterns: []string{"a/b"}}},
		"inner star":         {{Action: access.Consume, Patterns: []string{"a*b"}}},
		"two stars":          {{Action: access.Consume, Patterns: []string{"a**"}}},
		"dot dot":            {{Action: access.Consume, Patterns: []string{".."}}},
		"empty":              {{Action: access.Consume, Patterns: []string{""}}},
		"too long":           {{Action: access.Consume, Patterns: []string{strings.Repeat("a", access.TopicNameBytesMax+1)}}},
		"too many patterns":  {{Action: access.Consume, Patterns: many}},
		"merged over bound":  {{Action: access.Consume, Patterns: many[:40]}, {Action: access.Consume, Patterns: many[40:]}},
		"too many grants":    make([]access.Grant, access.GrantsMax+1),
		"too many bytes":     {{Action: access.Produce, Patterns: long[:11]}, {Action: access.Consume, Patterns: long[11:]}},
	}
	for name, gs := range cases {
		if _, err := access.Normalize(gs); !errors.Is(err, access.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestAllows(t *testing.T) {
	gs := []access.Grant{
		{Action: access.Produce, Patterns: []string{"orders", "billing.*"}},
		{Action: access.Consume, Patterns: []string{"*"}},
	}
	cases := []struct {
		a     access.Action
		topic string
		want  bool
	}{
		{access.Produce, "orders", true},
		{access.Produce, "orders2", false},
		{access.Produce, "billing.eu", true},
		{access.Produce, "billing", false},
		{access.Consume, "anything", true},
		{access.Create, "orders", false},
		{access.Admin, "", false},
	}
	for _, c := range cases {
		if got := access.Allows(gs, c.a, c.topic); got != c.want {
			t.Errorf("Allows(%s, %q) = %v", c.a, c.topic, got)
		}
	}
	admin := []access.Grant{{Action: access.Admin}}
	if !access.Allows(admin, access.Create, "x") || !access.IsAdmin(admin) || access.IsAdmin(gs) {
		t.Fatal("admin covers everything, and only admin is admin")
	}
	if !access.Sees(gs, "x") || access.Sees(gs[:1], "x") || !access.Sees(gs[:1], "billing.x") {
		t.Fatal("Sees")
	}
}

func TestUsernamesAndPasswords(t *testing.T) {
	for _, ok := range []string{"a", "Al.ice_-9", strings.Repeat("x", access.UsernameBytesMax)} {
		if !access.ValidUsername(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "a b", "ü", "a:b", strings.Repeat("x", access.UsernameBytesMax+1)} {
		if access.ValidUsername(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, n := range []int{access.PasswordBytesMin, access.PasswordBytesMax} {
		if err := access.CheckPassword(strings.Repeat("p", n)); err != nil {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	for _, n := range []int{0, access.PasswordBytesMin - 1, access.PasswordBytesMax + 1} {
		if err := access.CheckPassword(strings.Repeat("p", n)); !errors.Is(err, access.ErrInvalid) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}
